"""Test helper for pipedream-run's training mode: data, a model.onnx for
--save-onnx, and a numpy reference of the training the bundle does.

The bundles use runtime/test/TestProgram.c as program.so:
  train_linear / update_linear: pred = x . w, mse, M = 2 micro-batches of 2,
      torch.optim.SGD(lr=0.1, momentum=0.9) (w f32[3])
  train_probe / update_probe: cross-entropy labels over 5 classes, x f32[Nx3]

  training.py model DIR [--w-shape DxD] [--keep-external LENGTH]
      DIR/model.onnx: y = MatMul(x, w) with initializers w (from
      DIR/weights.bin, or zeros of --w-shape) and keep (not a weight);
      with --keep-external, keep's 8 bytes are in DIR/keep.bin (ONNX
      external data) and the model says they are LENGTH bytes long, at
      --keep-location (default keep.bin).
  training.py linear-data OUT.npz --samples N [--seed S]
      x f32[Nx3], y f32[N].
  training.py probe-data OUT.npz --samples N [--bad-label ROW=VALUE]
            [--labels-dtype DTYPE] [--labels-samples M] [--x-shape DxD]
            [--drop NAME] [--extra NAME]
      x f32[Nx3], labels i64[N] (r mod 5), made wrong on purpose.
  training.py check-linear DIR DATA.npz --steps N [--loss-log LOSS.csv]
            [--onnx TRAINED.onnx]
      Trains the linear model with numpy from DIR/weights.bin and compares
      the losses of LOSS.csv and the weight in TRAINED.onnx (which must also
      keep the initializer `keep` and pass onnx.checker); prints one line per
      thing checked or exits 1 with the difference.

Runs under Debian's /usr/bin/python3 (lit's %python), which has numpy and
onnx.
"""

import argparse
import csv
import os
import sys

import numpy as np


def load_w(bundle):
    with open(os.path.join(bundle, "weights.bin"), "rb") as f:
        return np.frombuffer(f.read(12), "<f4").copy()


def cmd_model(args):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if args.w_shape:
        w = np.zeros([int(d) for d in args.w_shape.split("x")], np.float32)
    else:
        w = load_w(args.bundle)
    keep = np.array([1.5, -2.5], np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="matmul")],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(keep, "keep")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    if args.keep_external is not None:
        with open(os.path.join(args.bundle, "keep.bin"), "wb") as f:
            f.write(keep.tobytes())
        tensor = model.graph.initializer[1]
        tensor.ClearField("raw_data")
        tensor.data_location = TensorProto.EXTERNAL
        for key, value in (("location", args.keep_location), ("offset", "0"),
                           ("length", str(args.keep_external))):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    onnx.save(model, os.path.join(args.bundle, "model.onnx"))


def linear_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    return x, y


def cmd_linear_data(args):
    x, y = linear_data(args.samples, args.seed)
    np.savez(args.out, x=x, y=y)


def cmd_probe_data(args):
    n = args.samples
    x = (np.arange(n)[:, None] + 0.25 * np.arange(3)[None, :]).astype(np.float32)
    if args.x_shape:
        x = np.zeros([int(d) for d in args.x_shape.split("x")], np.float32)
    m = n if args.labels_samples is None else args.labels_samples
    labels = (np.arange(m) % 5).astype(args.labels_dtype)
    for item in args.bad_label:
        row, value = (int(v) for v in item.split("="))
        labels[row] = value
    arrays = {"x": x, "labels": labels}
    for name in args.drop:
        del arrays[name]
    for name in args.extra:
        arrays[name] = np.zeros(2, np.float32)
    np.savez(args.out, **arrays)


def fail(message):
    sys.exit("training.py: " + message)


def cmd_check_linear(args):
    data = np.load(args.data)
    x, y = data["x"].astype(np.float64), data["y"].astype(np.float64)
    n = len(y)
    w = load_w(args.bundle).astype(np.float64)
    buf = np.zeros(3)
    losses = []
    for s in range(args.steps):
        rows = [(s * 4 + k) % n for k in range(4)]
        err = x[rows] @ w - y[rows]
        losses.append(np.mean(err**2))
        grad = 2 * x[rows].T @ err / 4
        buf = 0.9 * buf + grad
        w = w - 0.1 * buf
    if args.loss_log:
        with open(args.loss_log) as f:
            rows = list(csv.reader(f))
        if rows[0] != ["step", "loss"]:
            fail(f"loss log header {rows[0]}")
        steps = [int(r[0]) for r in rows[1:]]
        got = np.array([float(r[1]) for r in rows[1:]])
        if steps != list(range(1, args.steps + 1)):
            fail(f"loss log steps {steps}")
        if not np.allclose(got, losses, rtol=1e-5, atol=1e-6):
            fail(f"losses {got} != reference {np.array(losses)}")
        print(f"losses of {args.steps} steps ok")
    if args.onnx:
        import onnx
        from onnx import numpy_helper

        model = onnx.load(args.onnx)
        onnx.checker.check_model(model)
        inits = {t.name: t for t in model.graph.initializer}
        got = numpy_helper.to_array(inits["w"])
        if got.dtype != np.float32 or got.shape != (3,):
            fail(f"w is {got.dtype}{got.shape}")
        if inits["w"].external_data or not inits["w"].raw_data:
            fail("w is not stored as raw_data")
        if not np.allclose(got, w, rtol=1e-5, atol=1e-6):
            fail(f"trained w {got} != reference {w}")
        keep = numpy_helper.to_array(inits["keep"])
        if not np.array_equal(keep, np.array([1.5, -2.5], np.float32)):
            fail(f"keep changed: {keep}")
        print("trained weights ok")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("model")
    p.add_argument("bundle")
    p.add_argument("--w-shape")
    p.add_argument("--keep-external", type=int)
    p.add_argument("--keep-location", default="keep.bin")
    p.set_defaults(run=cmd_model)
    p = sub.add_parser("linear-data")
    p.add_argument("out")
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--seed", type=int, default=3)
    p.set_defaults(run=cmd_linear_data)
    p = sub.add_parser("probe-data")
    p.add_argument("out")
    p.add_argument("--samples", type=int, required=True)
    p.add_argument("--bad-label", action="append", default=[])
    p.add_argument("--labels-dtype", default="int64")
    p.add_argument("--labels-samples", type=int)
    p.add_argument("--x-shape")
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("--extra", action="append", default=[])
    p.set_defaults(run=cmd_probe_data)
    p = sub.add_parser("check-linear")
    p.add_argument("bundle")
    p.add_argument("data")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--loss-log")
    p.add_argument("--onnx")
    p.set_defaults(run=cmd_check_linear)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
