"""Test helper for pipedream-run on pipeline bundles: the linear chain of
runtime/test/TestProgram.c (K stages, M = 4 micro-batches of 2 rows of 2
features, mse, SGD with momentum 0.9 and lr 0.1) as a pipeline bundle, its
data, and a numpy reference of its training. Mirrors
runtime/test/PipelineUtil.h, which the unit tests use.

  pipeline.py bundle DIR --stages K [--schedule 1f1b|gpipe]
      DIR/bundle.json (one program per rank), DIR/weights.bin and
      DIR/model.onnx (initializers W0 .. W{K-2}, w); copy the test program
      to DIR/program.so yourself.
  pipeline.py data OUT.npz --samples N
      x f32[Nx2], y f32[N].
  pipeline.py check DIR DATA.npz --steps N [--loss-log LOSS.csv]
            [--onnx TRAINED.onnx]
      Trains the chain in float32 numpy and compares the losses and the
      trained initializers (rtol 1e-5); prints one line per thing checked or
      exits 1 with the difference.
"""

import argparse
import csv
import json
import os
import sys

import numpy as np

M = 4


def weight_names(k):
    return ["W%d" % s for s in range(k - 1)] + ["w"]


def weight_values(k):
    values = []
    for i in range(k - 1):
        a = np.float32(0.1) * np.float32(i)
        values.append(np.array([0.5 + a, -0.3, 0.2, 0.8 - a], np.float32).reshape(2, 2))
    values.append(np.array([0.7, -0.4], np.float32))
    return values


def buf(name, role, shape, updates=None):
    b = {"name": name, "role": role, "dtype": "f32", "shape": shape}
    if updates:
        b["updates"] = updates
    return b


def stage_functions(k):
    functions = []
    for s in range(k):
        last = s == k - 1
        w = "w" if last else "W%d" % s
        ws = [2] if last else [2, 2]
        sym = "pipedream_chain_last_" if last else "pipedream_chain_mid_"
        suffix = "" if last else str(s)
        if last:
            f = [buf("h", "input", [2, 2]), buf("y", "input", [2]), buf(w, "weight", ws),
                 buf("loss", "output", []), buf("res", "output", [2, 2]),
                 buf("err", "output", [2])]
            b = [buf("res", "input", [2, 2]), buf("err", "input", [2]), buf(w, "weight", ws),
                 buf("grad:" + w, "grad", ws), buf("dh", "output", [2, 2]),
                 buf("grad:" + w + "'", "output", ws, "grad:" + w)]
        else:
            f = [buf("h", "input", [2, 2]), buf(w, "weight", ws),
                 buf("out", "output", [2, 2]), buf("res", "output", [2, 2])]
            b = [buf("res", "input", [2, 2]), buf("dout", "input", [2, 2]),
                 buf(w, "weight", ws), buf("grad:" + w, "grad", ws),
                 buf("din", "output", [2, 2]),
                 buf("grad:" + w + "'", "output", ws, "grad:" + w)]
        u = [buf(w, "weight", ws), buf("grad:" + w, "grad", ws),
             buf("momentum_buffer:" + w, "state", ws), buf(w + "'", "output", ws, w),
             buf("momentum_buffer:" + w + "'", "output", ws, "momentum_buffer:" + w)]
        st = "stage%d" % s
        functions.append({"name": st + "_F", "symbol": sym + "F" + suffix,
                          "kind": "forward", "buffers": f})
        functions.append({"name": st + "_B", "symbol": sym + "B" + suffix,
                          "kind": "backward", "buffers": b})
        functions.append({"name": st + "_U", "symbol": sym + "U" + suffix,
                          "kind": "update", "buffers": u})
    return functions


def ranks(k, kind):
    out = []
    for s in range(k):
        last = s == k - 1
        registers, program = [], []
        res, err = {}, {}

        def reg(shape):
            registers.append({"dtype": "f32", "shape": shape})
            return len(registers) - 1

        def forward(m):
            h = reg([2, 2])
            if s == 0:
                program.append({"op": "input", "name": "x", "microbatch": m, "dst": h})
            else:
                program.append({"op": "recv", "dst": h, "peer": s - 1, "tag": 2 * m})
            f = "stage%d_F" % s
            if not last:
                o = reg([2, 2])
                res[m] = reg([2, 2])
                program.append({"op": "call", "function": f, "action": "F", "stage": s,
                                "microbatch": m, "args": [h], "results": [o, res[m]]})
                program.append({"op": "send", "src": o, "peer": s + 1, "tag": 2 * m})
            else:
                y = reg([2])
                loss = reg([])
                res[m] = reg([2, 2])
                err[m] = reg([2])
                program.append({"op": "input", "name": "y", "microbatch": m, "dst": y})
                program.append({"op": "call", "function": f, "action": "F", "stage": s,
                                "microbatch": m, "args": [h, y],
                                "results": [loss, res[m], err[m]]})
                program.append({"op": "loss", "src": loss, "microbatch": m})

        def backward(m):
            b = "stage%d_B" % s
            din = reg([2, 2])
            if last:
                program.append({"op": "call", "function": b, "action": "B", "stage": s,
                                "microbatch": m, "args": [res[m], err[m]], "results": [din]})
            else:
                dout = reg([2, 2])
                program.append({"op": "recv", "dst": dout, "peer": s + 1, "tag": 2 * m + 1})
                program.append({"op": "call", "function": b, "action": "B", "stage": s,
                                "microbatch": m, "args": [res[m], dout], "results": [din]})
            if s > 0:
                program.append({"op": "send", "src": din, "peer": s - 1, "tag": 2 * m + 1})

        if kind == "gpipe":
            for m in range(M):
                forward(m)
            for m in range(M):
                backward(m)
        else:
            warm = min(k - 1 - s, M)
            for m in range(warm):
                forward(m)
            for m in range(M):
                if warm + m < M:
                    forward(warm + m)
                backward(m)
        program.append({"op": "call", "function": "stage%d_U" % s, "action": "U",
                        "stage": s, "args": [], "results": []})
        out.append({"rank": s, "registers": registers, "program": program})
    return out


def cmd_bundle(args):
    k = args.stages
    os.makedirs(args.dir, exist_ok=True)
    weights, blob = [], b""
    for name, value in zip(weight_names(k), weight_values(k)):
        offset = len(blob)
        data = value.astype("<f4").tobytes()
        blob += data + b"\0" * (64 - len(data))
        weights.append({"name": name, "dtype": "f32", "shape": list(value.shape),
                        "offset": offset, "bytes": len(data)})
    manifest = {
        "format": "pipedream-bundle", "version": 2, "model": "model.onnx",
        "library": "program.so", "weights_file": "weights.bin", "weights": weights,
        "functions": stage_functions(k),
        "pipeline": {
            "schedule": {"kind": args.schedule, "stages": k, "microbatches": M,
                         "chunks": 1},
            "loss": "mse", "labels": "y", "inputs": ["x"], "microbatch_size": 2,
            "batch_size": 2 * M,
            "optimizer": {"kind": "momentum", "lr": 0.1, "momentum": 0.9},
            "ranks": ranks(k, args.schedule)}}
    with open(os.path.join(args.dir, "bundle.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    with open(os.path.join(args.dir, "weights.bin"), "wb") as f:
        f.write(blob)

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, prev = [], "x"
    for s in range(k - 1):
        nodes.append(helper.make_node("MatMul", [prev, "W%d" % s], ["h%d" % s]))
        prev = "h%d" % s
    nodes.append(helper.make_node("MatMul", [prev, "w"], ["pred"]))
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2])],
        [helper.make_tensor_value_info("pred", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(v, n) for n, v in zip(weight_names(k), weight_values(k))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(args.dir, "model.onnx"))


def chain_data(n):
    i = np.arange(2 * n, dtype=np.float32)
    x = np.sin(np.float32(0.7) * i + np.float32(0.3)).astype(np.float32).reshape(n, 2)
    y = np.cos(np.float32(1.3) * np.arange(n, dtype=np.float32)).astype(np.float32)
    return x, y


def cmd_data(args):
    x, y = chain_data(args.samples)
    np.savez(args.out, x=x, y=y)


def train(k, x, y, steps):
    """float32 numpy, the operations of TestProgram.c's chain."""
    f32 = np.float32
    weights = [v.copy() for v in weight_values(k)]
    bufs = [np.zeros_like(v) for v in weights]
    n, batch, losses = len(x), 2 * M, []
    for s in range(steps):
        grads = [np.zeros_like(v) for v in weights]
        total = 0.0
        for m in range(M):
            rows = [(s * batch + m * 2 + r) % n for r in range(2)]
            hs = [x[rows].astype(np.float32)]
            for l in range(k - 1):
                hs.append((hs[-1] @ weights[l]).astype(np.float32))
            pred = (hs[-1] @ weights[-1]).astype(np.float32)
            e = (pred - y[rows]).astype(np.float32)
            total += float(f32((e * e).sum()) / f32(2))
            d = (f32(0.25) * e).astype(np.float32)
            grads[-1] += (d[:, None] * hs[-1]).sum(0)
            dh = (d[:, None] * weights[-1][None, :]).astype(np.float32)
            for l in range(k - 2, -1, -1):
                grads[l] += hs[l].T @ dh
                dh = (dh @ weights[l].T).astype(np.float32)
        losses.append(total / M)
        for i in range(len(weights)):
            bufs[i] = (f32(0.9) * bufs[i] + grads[i]).astype(np.float32)
            weights[i] = (weights[i] - f32(0.1) * bufs[i]).astype(np.float32)
    return losses, weights


def cmd_check(args):
    with open(os.path.join(args.dir, "bundle.json")) as f:
        k = len(json.load(f)["pipeline"]["ranks"])
    data = np.load(args.data)
    losses, weights = train(k, data["x"], data["y"], args.steps)
    ok = True
    if args.loss_log:
        with open(args.loss_log) as f:
            rows = list(csv.reader(f))
        if rows[0] != ["step", "loss"] or len(rows) != args.steps + 1:
            print("bad loss log header or length: %r" % rows)
            sys.exit(1)
        got = np.array([float(r[1]) for r in rows[1:]])
        if not np.allclose(got, losses, rtol=1e-5, atol=0):
            print("losses differ: got %r, expected %r" % (got.tolist(), losses))
            sys.exit(1)
        print("losses of %d steps ok" % args.steps)
    if args.onnx:
        import onnx
        from onnx import numpy_helper

        model = onnx.load(args.onnx)
        onnx.checker.check_model(model)
        found = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
        for name, value in zip(weight_names(k), weights):
            if not np.allclose(found[name], value, rtol=1e-5, atol=1e-7):
                print("weight %s differs: got %r, expected %r"
                      % (name, found[name].tolist(), value.tolist()))
                sys.exit(1)
        print("trained weights ok")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("bundle")
    p.add_argument("dir")
    p.add_argument("--stages", type=int, required=True)
    p.add_argument("--schedule", default="1f1b")
    p = sub.add_parser("data")
    p.add_argument("out")
    p.add_argument("--samples", type=int, required=True)
    p = sub.add_parser("check")
    p.add_argument("dir")
    p.add_argument("data")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--loss-log")
    p.add_argument("--onnx")
    args = parser.parse_args()
    {"bundle": cmd_bundle, "data": cmd_data, "check": cmd_check}[args.cmd](args)


if __name__ == "__main__":
    main()
