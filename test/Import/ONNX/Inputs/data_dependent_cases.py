#!/usr/bin/python3
"""NonZero, Unique and NonMaxSuppression beyond ONNX's node tests, for
data-dependent.test: every input type and attribute, inputs seeded with
duplicates and overlaps, each model's data-dependent output declared with
the size its input gives.

    data_dependent_cases.py OUT_DIR
        (Debian's python3-onnx) writes OUT_DIR/NAME.onnx and NAME.npz
        (`in.X` / `out.Y`, check_reference.py's format) per case, from
        data_dependent_reference.npz; and the malformed models.
    /opt/venv/bin/python data_dependent_cases.py --reference
        (needs onnxruntime) runs every case's model through onnxruntime,
        an independent implementation, and writes the seeded inputs and
        its outputs to data_dependent_reference.npz next to this script.

The models declare each data-dependent output with the size onnxruntime
gives, as an exporter that traced the model would.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = os.path.join(HERE, "data_dependent_reference.npz")
F, I64 = TensorProto.FLOAT, TensorProto.INT64


def nonzero_case(name, dtype, shape):
    return dict(op="NonZero", name=name, attrs={},
                inputs=[("X", dtype, shape)], outputs=["Y"])


def unique_case(name, dtype, shape, **attrs):
    return dict(op="Unique", name=name, attrs=attrs, inputs=[("X", dtype, shape)],
                outputs=["Y", "indices", "inverse_indices", "counts"])


def nms_case(name, batches, classes, boxes, thresholds, **attrs):
    inputs = [("boxes", F, [batches, boxes, 4]),
              ("scores", F, [batches, classes, boxes])]
    for i, (n, t, shape) in enumerate([("max_output_boxes_per_class", I64, [1]),
                                       ("iou_threshold", F, [1]),
                                       ("score_threshold", F, [])]):
        if i < thresholds:
            inputs.append((n, t, shape))
    return dict(op="NonMaxSuppression", name=name, attrs=attrs, inputs=inputs,
                outputs=["selected"])


CASES = [
    nonzero_case("nonzero_f32", F, [3, 4]),
    nonzero_case("nonzero_bool", TensorProto.BOOL, [2, 3, 4]),
    nonzero_case("nonzero_i32", TensorProto.INT32, [7]),
    unique_case("unique_flat", F, [3, 4]),
    unique_case("unique_unsorted", I64, [10], sorted=0),
    unique_case("unique_rows", F, [6, 3], axis=0),
    unique_case("unique_axis1", F, [2, 5, 2], axis=1),
    unique_case("unique_cols_unsorted", I64, [4, 6], axis=-1, sorted=0),
    nms_case("nms_corners", 2, 3, 12, 3),
    nms_case("nms_center", 1, 2, 16, 2, center_point_box=1),
    nms_case("nms_max_only", 1, 1, 8, 1),
]


def feeds_for(case, rng):
    feeds = {}
    for name, dtype, shape in case["inputs"]:
        if case["op"] == "NonMaxSuppression":
            continue
        if dtype == TensorProto.BOOL:
            feeds[name] = rng.random(shape) < 0.4
        elif dtype == F:
            # Few distinct values: zeros for NonZero, duplicates for Unique
            # (whole rows too: the first rows repeat).
            a = rng.integers(-2, 3, shape).astype(np.float32)
            if case["op"] == "Unique" and "axis" in case["attrs"]:
                a = np.moveaxis(a, case["attrs"]["axis"], 0)
                a[len(a) // 2:] = a[: len(a) - len(a) // 2]
                a = np.moveaxis(a, 0, case["attrs"]["axis"])
            feeds[name] = np.ascontiguousarray(a)
        else:
            np_type = np.int32 if dtype == TensorProto.INT32 else np.int64
            a = rng.integers(-1, 3, shape).astype(np_type)
            if case["op"] == "Unique" and "axis" in case["attrs"]:
                a = np.moveaxis(a, case["attrs"]["axis"], 0)
                a[len(a) // 2:] = a[: len(a) - len(a) // 2]
                a = np.moveaxis(a, 0, case["attrs"]["axis"])
            feeds[name] = np.ascontiguousarray(a)
    if case["op"] == "NonMaxSuppression":
        (_, _, (b, n, _)), (_, _, (_, c, _)) = case["inputs"][:2]
        # Clusters of overlapping boxes: corners around a few centres, some
        # with the corners given in the other order (flipped).
        centres = rng.uniform(0, 10, (b, 4, 2))
        pick = rng.integers(0, 4, (b, n))
        ctr = np.take_along_axis(centres, pick[..., None], axis=1)
        ctr = ctr + rng.normal(0, 0.6, (b, n, 2))
        size = rng.uniform(1.0, 3.0, (b, n, 2))
        if case["attrs"].get("center_point_box"):
            boxes = np.concatenate([ctr, size], axis=-1)
        else:
            lo, hi = ctr - size / 2, ctr + size / 2
            boxes = np.concatenate([lo, hi], axis=-1)[..., [1, 0, 3, 2]]
            flip = rng.random((b, n)) < 0.3
            boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
        feeds["boxes"] = boxes.astype(np.float32)
        feeds["scores"] = rng.random((b, c, n)).astype(np.float32)
        values = {"max_output_boxes_per_class": np.array([4], np.int64),
                  "iou_threshold": np.array([0.3], np.float32),
                  "score_threshold": np.array(0.2, np.float32)}
        for name, _, _ in case["inputs"][2:]:
            feeds[name] = values[name]
    return feeds


def build(case, sizes):
    """The case's model; `sizes` (None: unknown) gives each output's shape."""
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in case["inputs"]]
    out_types = {"NonZero": [I64], "Unique": [case["inputs"][0][1], I64, I64, I64],
                 "NonMaxSuppression": [I64]}[case["op"]]
    outs = [helper.make_tensor_value_info(o, t, sizes[o] if sizes else None)
            for o, t in zip(case["outputs"], out_types)]
    node = helper.make_node(case["op"], [n for n, _, _ in case["inputs"]],
                            case["outputs"], name=case["name"], **case["attrs"])
    m = helper.make_model(helper.make_graph([node], case["name"], ins, outs),
                          opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def write_reference():
    import onnxruntime as ort
    arrays = {}
    for seed, case in enumerate(CASES):
        feeds = feeds_for(case, np.random.default_rng(100 + seed))
        sess = ort.InferenceSession(build(case, None).SerializeToString(),
                                    providers=["CPUExecutionProvider"])
        results = sess.run(case["outputs"], feeds)
        for k, v in feeds.items():
            arrays[f"{case['name']}/in.{k}"] = v
        for k, v in zip(case["outputs"], results):
            arrays[f"{case['name']}/out.{k}"] = v
        print(case["name"], [v.shape for v in results])
    np.savez(REFERENCE, **arrays)
    print(f"{REFERENCE}: onnxruntime {ort.__version__}")


def malformed(out):
    # NonZero whose output the model does not declare (no static size).
    case = nonzero_case("undeclared", F, [3, 4])
    onnx.save(build(case, None), os.path.join(out, "undeclared.onnx"))
    # Unique whose outputs disagree on the number of unique values.
    case = unique_case("disagree", F, [6])
    onnx.save(build(case, {"Y": [3], "indices": [4], "inverse_indices": [6],
                           "counts": [3]}), os.path.join(out, "disagree.onnx"))
    # NonMaxSuppression's selected indices declared with 2 columns.
    case = nms_case("columns", 1, 1, 4, 3)
    onnx.save(build(case, {"selected": [2, 2]}), os.path.join(out, "columns.onnx"))


def training(out):
    """A model that trains through a NonZero: out = gather(x W, cols of
    NonZero(mask)) with 5 nonzeros per micro-batch of 4 samples declared;
    data.npz keeps that, bad.npz has 6 in its second micro-batch."""
    from onnx import numpy_helper
    nodes = [helper.make_node("MatMul", ["x", "W"], ["h"]),
             helper.make_node("NonZero", ["mask"], ["nz"], name="nz"),
             helper.make_node("Constant", [], ["one"],
                              value=numpy_helper.from_array(np.array(1, np.int64))),
             helper.make_node("Gather", ["nz", "one"], ["cols"], axis=0),
             helper.make_node("Gather", ["h", "cols"], ["out"], axis=1)]
    rng = np.random.default_rng(7)
    w = rng.standard_normal((5, 6)).astype(np.float32)
    g = helper.make_graph(
        nodes, "train_nonzero",
        [helper.make_tensor_value_info("x", F, [4, 5]),
         helper.make_tensor_value_info("mask", F, [4, 6])],
        [helper.make_tensor_value_info("out", F, [4, 5])],
        [numpy_helper.from_array(w, "W")],
        value_info=[helper.make_tensor_value_info("nz", I64, [2, 5])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "train_nonzero.onnx"))
    mask = np.zeros((8, 6), np.float32)
    for r, c in [(0, 1), (1, 3), (2, 0), (3, 5), (3, 2)]:
        mask[r, c] = 1.0 + r
    mask[4:] = mask[:4]
    x = rng.standard_normal((8, 5)).astype(np.float32)
    labels = rng.standard_normal((8, 5)).astype(np.float32)
    np.savez(os.path.join(out, "data.npz"), x=x, mask=mask, labels=labels)
    bad = mask.copy()
    bad[5, 4] = 1.0
    np.savez(os.path.join(out, "bad.npz"), x=x, mask=bad, labels=labels)
    # Gradients through Unique's Y: h = x * W (W per column), Y = the
    # distinct rows of h (axis 1 of [1, 8, 3], sorted), out = Y V. x's rows 4..7 repeat
    # rows 0..3 and rows 0..3 are distinct, so Y holds 4 rows; the same
    # model with Y = Gather(h, the rows numpy's unique picks) must train the
    # same (unique_train.onnx vs gather_train.onnx, one micro-batch of 8).
    xs = rng.integers(-3, 4, (4, 3)).astype(np.float32)
    xs[:, 0] = [0, 1, 2, 3]  # distinct rows
    xu = np.concatenate([xs, xs[[2, 0, 3, 1]]])
    _, first = np.unique(xu, axis=0, return_index=True)
    wcol = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    v = rng.standard_normal((3, 2)).astype(np.float32)
    for name, picked in (("unique_train", None), ("gather_train", first)):
        if picked is None:
            select = [helper.make_node("Unique", ["h"], ["y"], name="u", axis=1)]
            info = [helper.make_tensor_value_info("y", F, [1, 4, 3])]
        else:
            select = [helper.make_node("Constant", [], ["idx"],
                                       value=numpy_helper.from_array(picked.astype(np.int64))),
                      helper.make_node("Gather", ["h", "idx"], ["y"], axis=1)]
            info = []
        g = helper.make_graph(
            [helper.make_node("Mul", ["x", "w"], ["h"])] + select +
            [helper.make_node("MatMul", ["y", "v"], ["out"])], name,
            [helper.make_tensor_value_info("x", F, [1, 8, 3])],
            [helper.make_tensor_value_info("out", F, [1, 4, 2])],
            [numpy_helper.from_array(wcol, "w"), numpy_helper.from_array(v, "v")],
            value_info=info)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, name + ".onnx"))
    # One sample (batch axis 0) of 8 rows.
    np.savez(os.path.join(out, "unique_data.npz"), x=xu[None],
             labels=rng.standard_normal((1, 4, 2)).astype(np.float32))
    # Inference feeds with more and fewer nonzeros than nonzero_f32's 8.
    np.savez(os.path.join(out, "more.npz"), X=np.ones((3, 4), np.float32))
    np.savez(os.path.join(out, "fewer.npz"), X=np.zeros((3, 4), np.float32))


def main():
    if sys.argv[1] == "--reference":
        write_reference()
        return
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    ref = np.load(REFERENCE)
    for case in CASES:
        prefix = case["name"] + "/"
        arrays = {k[len(prefix):]: ref[k] for k in ref.files if k.startswith(prefix)}
        sizes = {o: list(arrays[f"out.{o}"].shape) for o in case["outputs"]}
        m = build(case, sizes)
        onnx.checker.check_model(m)
        onnx.save(m, os.path.join(out, case["name"] + ".onnx"))
        np.savez(os.path.join(out, case["name"] + ".npz"), **arrays)
    malformed(out)
    training(out)


if __name__ == "__main__":
    main()
