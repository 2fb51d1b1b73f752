#!/usr/bin/python3
"""RNN / GRU / LSTM / ReverseSequence cases beyond ONNX's node conformance
tests (both directions, reverse, sequence_lens masking, initial states,
peepholes, input_forget, linear_before_reset, clip, non-default
activations), as one ONNX model whose weights and states are graph inputs.

    recurrent_cases.py OUT.onnx [--f64]
    recurrent_cases.py --invalid DIR     (one small model per bad case)

Used by make_recurrent_reference.py (which evaluates the f32 model with
onnxruntime into recurrent_reference.npz) and by recurrent-gradients.test
(the f64 model, through gradcheck.py's finite differences). Needs only
onnx and numpy (Debian's python3-onnx 1.12 is enough).
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

S, B, I, H = 4, 3, 2, 3
LENS = [4, 2, 3]


def build(dtype):
    elem = TensorProto.DOUBLE if dtype == np.float64 else TensorProto.FLOAT
    inputs, outputs, nodes = [], [], []

    def inp(name, shape):
        inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def out(name):
        outputs.append(helper.make_tensor_value_info(name, elem, None))
        return name

    nodes.append(helper.make_node(
        "Constant", [], ["lens"], name="lens",
        value=numpy_helper.from_array(np.array(LENS, np.int32))))
    nodes.append(helper.make_node(
        "Constant", [], ["lens64"], name="lens64",
        value=numpy_helper.from_array(np.array(LENS, np.int64))))
    x = inp("x", [S, B, I])

    def cell(op, tag, gates, dirs, extra_inputs, outs, **attrs):
        w = inp(f"{tag}_w", [dirs, gates * H, I])
        r = inp(f"{tag}_r", [dirs, gates * H, H])
        b = inp(f"{tag}_b", [dirs, 2 * gates * H])
        ins = [x, w, r, b]
        for name in extra_inputs:
            if name == "lens":
                ins.append("lens")
            elif name == "":
                ins.append("")
            elif name == "p":
                ins.append(inp(f"{tag}_p", [dirs, 3 * H]))
            else:
                ins.append(inp(f"{tag}_{name}", [dirs, B, H]))
        names = [out(f"{tag}_{o}") if o else "" for o in outs]
        nodes.append(helper.make_node(op, ins, names, name=tag,
                                      hidden_size=H, **attrs))

    cell("LSTM", "lstm_bi", 4, 2, ["lens", "h0", "c0", "p"], ["y", "yh", "yc"],
         direction="bidirectional")
    cell("LSTM", "lstm_rev", 4, 1, ["", "h0", "c0"], ["y", "yh", "yc"],
         direction="reverse", input_forget=1, clip=1.5)
    cell("GRU", "gru_bi", 3, 2, ["lens", "h0"], ["y", "yh"],
         direction="bidirectional", linear_before_reset=1)
    cell("GRU", "gru_rev", 3, 1, ["lens", "h0"], ["y", "yh"],
         direction="reverse", activations=["HardSigmoid", "Softsign"])
    cell("GRU", "gru_clip", 3, 1, ["", "h0"], ["y", "yh"], clip=0.8)
    cell("RNN", "rnn_bi", 1, 2, ["lens", "h0"], ["y", "yh"],
         direction="bidirectional", activations=["Softsign", "Tanh"])
    cell("RNN", "rnn_rev", 1, 1, ["lens"], ["", "yh"], direction="reverse",
         activations=["Softplus"])
    nodes.append(helper.make_node("ReverseSequence", [x, "lens64"],
                                  [out("revseq")], name="revseq",
                                  time_axis=0, batch_axis=1))
    graph = helper.make_graph(nodes, "recurrent", inputs, outputs)
    m = helper.make_model(graph, producer_name="recurrent_cases",
                          opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


def single(op, gates, attrs=None, w_shape=None, lens_input=False,
           p_shape=None):
    """One node (named 'cell') on graph inputs, for the invalid cases."""
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("x", f, [S, B, I]),
           helper.make_tensor_value_info("w", f, w_shape or [1, gates * H, I]),
           helper.make_tensor_value_info("r", f, [1, gates * H, H])]
    names = ["x", "w", "r"]
    if lens_input or p_shape:
        ins.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [B]))
        names += ["", "lens" if lens_input else ""]
    if p_shape:
        ins.append(helper.make_tensor_value_info("p", f, p_shape))
        names += ["", "", "p"]
    node = helper.make_node(op, names, ["y"], name="cell",
                            **{"hidden_size": H, **(attrs or {})})
    graph = helper.make_graph([node], "bad", ins,
                              [helper.make_tensor_value_info("y", f, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    m.ir_version = 8
    return m


INVALID = {
    "alpha": lambda: single("RNN", 1, {"activations": ["LeakyRelu"],
                                       "activation_alpha": [0.5]}),
    "affine": lambda: single("GRU", 3, {"activations": ["Affine", "Tanh"]}),
    "acts_count": lambda: single("LSTM", 4, {"activations": ["Sigmoid"]}),
    "direction": lambda: single("RNN", 1, {"direction": "sideways"}),
    "w_shape": lambda: single("GRU", 3, w_shape=[1, 8, I]),
    "lens_dynamic": lambda: single("LSTM", 4, lens_input=True),
    "peephole_shape": lambda: single("LSTM", 4, p_shape=[1, 2 * H]),
    "hidden_size": lambda: single("RNN", 1, {"hidden_size": H + 1}),
}


def main():
    if sys.argv[1] == "--invalid":
        for name, make in INVALID.items():
            onnx.save(make(), f"{sys.argv[2]}/{name}.onnx")
        return
    dtype = np.float64 if "--f64" in sys.argv[2:] else np.float32
    onnx.save(build(dtype), sys.argv[1])


if __name__ == "__main__":
    main()
