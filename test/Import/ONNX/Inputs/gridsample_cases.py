#!/usr/bin/python3
"""GridSample cases beyond ONNX's node conformance tests: every mode x
padding_mode x align_corners on a batch of 2 with 2 channels and grid points
reaching outside [-1, 1]; the opset 20 mode names. One ONNX model, X and the
grids graph inputs.

    gridsample_cases.py OUT.onnx [--f64 | --opset20]
    gridsample_cases.py --invalid DIR   (one small model per bad case)

make_reference.py evaluates the f32 model with onnxruntime
(gridsample_reference.npz, for gridsample.test); the f64 model goes through
gradcheck.py in test/Gradients/gridsample.test.
"""

import sys

import onnx
from onnx import TensorProto, helper

N, C, H, W, HO, WO = 2, 2, 3, 4, 2, 3
MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]


def build(f64=False, opset=16):
    elem = TensorProto.DOUBLE if f64 else TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("x", elem, [N, C, H, W])]
    nodes, outs = [], []
    for mode in MODES:
        for padding in PADDINGS:
            for align in (0, 1):
                # gradcheck (f64) gets every padding of linear (not
                # aligned) and cubic (aligned), and nearest once: fast.
                if f64 and (align != (mode == "bicubic") if
                            mode != "nearest" else
                            (padding, align) != ("zeros", 0)):
                    continue
                name = f"{mode}_{padding}_{align}"
                ins.append(helper.make_tensor_value_info(
                    f"{name}_grid", elem, [N, HO, WO, 2]))
                outs.append(helper.make_tensor_value_info(name, elem, None))
                nodes.append(helper.make_node(
                    "GridSample", ["x", f"{name}_grid"], [name], name=name,
                    mode=mode, padding_mode=padding, align_corners=align))
    graph = helper.make_graph(nodes, "gridsample", ins, outs)
    m = helper.make_model(graph, producer_name="gridsample_cases",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def build20():
    """Opset 20's names: linear, cubic."""
    f = TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("x", f, [N, C, H, W]),
           helper.make_tensor_value_info("g", f, [N, HO, WO, 2])]
    nodes = [helper.make_node("GridSample", ["x", "g"], [o], name=o, mode=m,
                              padding_mode="border")
             for o, m in [("linear20", "linear"), ("cubic20", "cubic")]]
    outs = [helper.make_tensor_value_info(o, f, None)
            for o in ["linear20", "cubic20"]]
    m = helper.make_model(helper.make_graph(nodes, "gs20", ins, outs),
                          opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 9
    return m


def single(opset, x_shape, grid_shape, **attrs):
    f = TensorProto.FLOAT
    node = helper.make_node("GridSample", ["x", "g"], ["y"], name="gs",
                            **attrs)
    graph = helper.make_graph(
        [node], "bad", [helper.make_tensor_value_info("x", f, x_shape),
                        helper.make_tensor_value_info("g", f, grid_shape)],
        [helper.make_tensor_value_info("y", f, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


INVALID = {
    "gs_mode": lambda: single(16, [1, 1, 3, 3], [1, 2, 2, 2], mode="linear"),
    "gs_padding": lambda: single(16, [1, 1, 3, 3], [1, 2, 2, 2],
                                 padding_mode="wrap"),
    "gs_grid": lambda: single(16, [1, 1, 3, 3], [2, 2, 2, 2]),
    "gs_5d": lambda: single(20, [1, 1, 2, 3, 3], [1, 2, 2, 2, 3]),
}


def main():
    if sys.argv[1] == "--invalid":
        for name, make in INVALID.items():
            onnx.save(make(), f"{sys.argv[2]}/{name}.onnx")
        return
    if "--opset20" in sys.argv[2:]:
        onnx.save(build20(), sys.argv[1])
    else:
        onnx.save(build("--f64" in sys.argv[2:]), sys.argv[1])


if __name__ == "__main__":
    main()
