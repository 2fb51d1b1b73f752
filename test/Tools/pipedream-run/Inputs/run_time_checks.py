"""Models and data of run-time-checks.test (built with onnx.helper, so the
test needs no committed model files).

  run_time_checks.py embed OUT.onnx [--const-index I]
      tokens `idx` i64[4 x 3] -> Gather (node '/tok/Gather') of a 61 x 8
      embedding -> Flatten -> Gemm to 5 classes (`logits`). With
      --const-index, `idx` is a constant [[I, 0, 1]] (import-time check).
  run_time_checks.py tokens OUT.npz --values V,V,...  one inference input:
      idx = the 12 values (4 x 3), row-major
  run_time_checks.py check-gather IN.npz OUT.npz MODEL.onnx
      checks that OUT's `logits` equal numpy's forward of MODEL with IN's
      idx (numpy wraps negative indices as ONNX does), in float64
  run_time_checks.py data OUT.npz [--bad SAMPLE:VALUE] [--drop FIRST:END]
      32 samples of idx i64[32 x 3] in [0, 61) and labels in [0, 5); with
      --bad, idx[SAMPLE, 1] = VALUE; with --drop, samples [FIRST, END)
      removed (the data a run that skipped those samples' step trained on)
  run_time_checks.py exp OUT.onnx
      x f32[4 x 6] -> Exp -> MatMul(6 x 5) -> `logits`: exp overflows to
      inf for large x (--check-finite)
  run_time_checks.py sqrt OUT.onnx OUT.npz
      x f32[4 x 6] -> MatMul(|w1|) -> Sqrt -> MatMul -> `logits`, and 32
      samples of x >= 0 where sample 13 is all zeros: its forward is finite
      (sqrt(0) = 0) but d sqrt/dh = inf at 0, so grad(w1) = x^T (inf * ...)
      = 0 * inf is NaN
  run_time_checks.py exp-data OUT.npz [--bad SAMPLE] [--drop FIRST:END]
      32 samples of x f32[32 x 6] in [-1, 1), labels in [0, 5); with
      --bad, x[SAMPLE, 0] = 200 (exp(200) is inf in f32); --drop as for
      data
"""

import argparse
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

VOCAB, DIM, TOKENS, CLASSES, BATCH = 61, 8, 3, 5, 4

parser = argparse.ArgumentParser()
parser.add_argument("command")
parser.add_argument("paths", nargs="+")
parser.add_argument("--const-index", type=int)
parser.add_argument("--values")
parser.add_argument("--bad")
parser.add_argument("--drop")
args = parser.parse_args()


def weights():
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((VOCAB, DIM)).astype(np.float32)
    w = (rng.standard_normal((TOKENS * DIM, CLASSES)) * 0.3).astype(np.float32)
    b = np.zeros(CLASSES, np.float32)
    return emb, w, b


def drop(arrays):
    if not args.drop:
        return arrays
    first, end = (int(v) for v in args.drop.split(":"))
    return {k: np.delete(v, np.s_[first:end], axis=0)
            for k, v in arrays.items()}


def save(graph, path):
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    onnx.save(model, path)


if args.command == "embed":
    emb, w, b = weights()
    inits = [numpy_helper.from_array(emb, "tok.weight"),
             numpy_helper.from_array(w, "head.weight"),
             numpy_helper.from_array(b, "head.bias")]
    inputs = []
    if args.const_index is None:
        inputs.append(helper.make_tensor_value_info("idx", TensorProto.INT64,
                                                    [BATCH, TOKENS]))
    else:
        inits.append(numpy_helper.from_array(
            np.array([[args.const_index, 0, 1]] * BATCH, np.int64), "idx"))
        inputs.append(helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                    [BATCH, 1]))
    nodes = [
        helper.make_node("Gather", ["tok.weight", "idx"], ["h"], axis=0,
                         name="/tok/Gather"),
        helper.make_node("Flatten", ["h"], ["f"], axis=1, name="/Flatten"),
        helper.make_node("Gemm", ["f", "head.weight", "head.bias"], ["g"],
                         name="/head/Gemm"),
    ]
    if args.const_index is not None:
        nodes.append(helper.make_node("Add", ["g", "x"], ["logits"],
                                      name="/Add"))
    else:
        nodes[-1].output[0] = "logits"
    graph = helper.make_graph(
        nodes, "embed", inputs,
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [BATCH, CLASSES])], inits)
    save(graph, args.paths[0])
elif args.command == "tokens":
    values = [int(v) for v in args.values.split(",")]
    idx = np.array(values, np.int64).reshape(BATCH, TOKENS)
    np.savez(args.paths[0], idx=idx)
elif args.command == "check-gather":
    idx = np.load(args.paths[0])["idx"]
    got = np.load(args.paths[1])["logits"].astype(np.float64)
    model = onnx.load(args.paths[2])
    init = {t.name: numpy_helper.to_array(t).astype(np.float64)
            for t in model.graph.initializer}
    # Independent reference: numpy indexing (negative indices count from
    # the end, as ONNX Gather's), float64.
    want = init["tok.weight"][idx].reshape(BATCH, -1) @ init["head.weight"] \
        + init["head.bias"]
    err = np.abs(got - want).max()
    if not err < 1e-5:
        sys.exit("logits differ from numpy: max abs error %g" % err)
    print("gather matches numpy (max abs error %.1e)" % err)
elif args.command == "data":
    rng = np.random.default_rng(11)
    idx = rng.integers(0, VOCAB, size=(32, TOKENS)).astype(np.int64)
    labels = rng.integers(0, CLASSES, size=32).astype(np.int64)
    if args.bad:
        sample, value = (int(v) for v in args.bad.split(":"))
        idx[sample, 1] = value
    np.savez(args.paths[0], **drop(dict(idx=idx, labels=labels)))
elif args.command == "exp":
    rng = np.random.default_rng(5)
    w = (rng.standard_normal((6, CLASSES)) * 0.3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("Exp", ["x"], ["e"], name="/Exp"),
         helper.make_node("MatMul", ["e", "w"], ["logits"], name="/MatMul")],
        "exp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [BATCH, CLASSES])],
        [numpy_helper.from_array(w, "w")])
    save(graph, args.paths[0])
elif args.command == "exp-data":
    rng = np.random.default_rng(13)
    x = rng.uniform(-1, 1, size=(32, 6)).astype(np.float32)
    labels = rng.integers(0, CLASSES, size=32).astype(np.int64)
    if args.bad:
        x[int(args.bad), 0] = 200.0
    np.savez(args.paths[0], **drop(dict(x=x, labels=labels)))
elif args.command == "sqrt":
    rng = np.random.default_rng(5)
    w1 = np.abs(rng.standard_normal((6, 4))).astype(np.float32)
    w2 = rng.standard_normal((4, CLASSES)).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"], name="/fc1"),
         helper.make_node("Sqrt", ["h"], ["s"], name="/Sqrt"),
         helper.make_node("MatMul", ["s", "w2"], ["logits"], name="/fc2")],
        "sqrt",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [BATCH, 6])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT,
                                       [BATCH, CLASSES])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")])
    save(graph, args.paths[0])
    x = np.abs(rng.standard_normal((32, 6))).astype(np.float32)
    x[13] = 0
    np.savez(args.paths[1], x=x,
             labels=rng.integers(0, CLASSES, 32).astype(np.int64))
else:
    sys.exit("unknown command " + args.command)
