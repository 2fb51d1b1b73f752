"""Test helper for pipedream-run: makes the data of a test bundle and checks
pipedream-run's outputs against numpy (an independent reference).

The bundles use runtime/test/TestProgram.c as program.so, whose functions are
  main:   y = x * w + 1
  affine: y = x * w + b (b broadcast over rows), aligned = True
  twice:  m = 2 * n
  bf16:   f = a as f32, neg = -a (a, neg bf16)

numpy has no bfloat16: a bf16 array is a uint16 array of bit patterns, which
is what pipedream-run reads and writes for bf16 buffers.

  bundle.py weights DIR [--seed S]
      weights.bin for every entry of DIR/bundle.json `weights`, random values
      at each entry's offset.
  bundle.py inputs DIR FUNCTION OUT.npz [--seed S] [--compressed]
            [--dtype NAME=NUMPY_DTYPE] [--shape NAME=DxD] [--rename OLD=NEW]
            [--extra NAME]
      Random arrays for FUNCTION's inputs, optionally made wrong on purpose.
  bundle.py check DIR FUNCTION IN.npz OUT.npz
      Recomputes FUNCTION's outputs with numpy; prints one line per output
      ("FUNCTION: NAME DTYPE[SHAPE] ok") or exits 1 with the difference.

Runs under Debian's /usr/bin/python3 (lit's %python), which has numpy.
"""

import argparse
import json
import os
import sys

import numpy as np

NUMPY = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i8": np.int8, "i1": np.bool_,
    "u8": np.uint8, "bf16": np.uint16,
}


def bf16_bits(values):
    """Round-to-nearest-even bf16 bit patterns of float32 values."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_to_f32(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def manifest(bundle):
    with open(os.path.join(bundle, "bundle.json")) as f:
        return json.load(f)


def random_array(rng, dtype, shape):
    if dtype == "bf16":
        return bf16_bits(rng.standard_normal(size=shape))
    dt = NUMPY[dtype]
    if dt == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        return rng.integers(-50, 50, size=shape).astype(dt)
    return rng.standard_normal(size=shape).astype(dt)


def function_of(m, name):
    for f in m["functions"]:
        if f["name"] == name:
            return f
    sys.exit(f"bundle.py: no function {name!r}")


def cmd_weights(args):
    m = manifest(args.bundle)
    rng = np.random.default_rng(args.seed)
    end = max((w["offset"] + w["bytes"] for w in m["weights"]), default=0)
    blob = bytearray(end)
    for w in m["weights"]:
        data = random_array(rng, w["dtype"], w["shape"]).astype("<" + np.dtype(
            NUMPY[w["dtype"]]).str[1:]).tobytes()
        assert len(data) == w["bytes"], (w, len(data))
        blob[w["offset"]:w["offset"] + len(data)] = data
    with open(os.path.join(args.bundle, m["weights_file"]), "wb") as f:
        f.write(bytes(blob))


def pairs(items):
    return dict(item.split("=", 1) for item in items)


def cmd_inputs(args):
    m = manifest(args.bundle)
    rng = np.random.default_rng(args.seed)
    dtypes, shapes, renames = pairs(args.dtype), pairs(args.shape), pairs(args.rename)
    arrays = {}
    for b in function_of(m, args.function)["buffers"]:
        if b["role"] != "input":
            continue
        name = b["name"]
        shape = b["shape"]
        if name in shapes:
            shape = [int(d) for d in shapes[name].split("x")]
        a = random_array(rng, b["dtype"], shape)
        if name in dtypes:
            a = a.astype(np.dtype(dtypes[name]))
        arrays[renames.get(name, name)] = a
    for name in args.extra:
        arrays[name] = np.zeros(3, np.float32)
    save = np.savez_compressed if args.compressed else np.savez
    save(args.out, **arrays)


def reference(m, function, inputs, weights):
    env = dict(inputs)
    env.update(weights)
    if function == "main":
        return {"y": env["x"] * env["w"] + np.float32(1)}
    if function == "affine":
        return {"y": env["x"] * env["w"] + env["b"], "aligned": np.bool_(True)}
    if function == "twice":
        return {"m": 2 * env["n"].astype(np.int64)}
    if function == "bf16":
        return {"f": bf16_to_f32(env["a"]), "neg": bf16_bits(-bf16_to_f32(env["a"]))}
    sys.exit(f"bundle.py: no reference for {function!r}")


def load_weights(bundle, m):
    weights = {}
    if not m.get("weights"):
        return weights
    with open(os.path.join(bundle, m["weights_file"]), "rb") as f:
        blob = f.read()
    for w in m["weights"]:
        dt = np.dtype(NUMPY[w["dtype"]]).newbyteorder("<")
        raw = blob[w["offset"]:w["offset"] + w["bytes"]]
        weights[w["name"]] = np.frombuffer(raw, dt).reshape(w["shape"])
    return weights


def cmd_check(args):
    m = manifest(args.bundle)
    f = function_of(m, args.function)
    inputs = dict(np.load(args.inputs))
    out = np.load(args.outputs)
    expected = reference(m, args.function, inputs, load_weights(args.bundle, m))
    outputs = [b for b in f["buffers"] if b["role"] == "output"]
    if sorted(out.files) != sorted(b["name"] for b in outputs):
        sys.exit(f"outputs {sorted(out.files)} != {[b['name'] for b in outputs]}")
    for b in outputs:
        got = out[b["name"]]
        want = np.asarray(expected[b["name"]])
        if got.dtype != np.dtype(NUMPY[b["dtype"]]) or list(got.shape) != b["shape"]:
            sys.exit(f"{b['name']}: got {got.dtype}{list(got.shape)}, "
                     f"bundle says {b['dtype']}{b['shape']}")
        if want.dtype != got.dtype or want.shape != got.shape:
            sys.exit(f"{b['name']}: reference is {want.dtype}{want.shape}")
        if np.issubdtype(got.dtype, np.floating):
            ok = np.allclose(got, want, rtol=1e-6, atol=1e-6)
        else:
            ok = np.array_equal(got, want)
        if not ok:
            sys.exit(f"{b['name']}: got\n{got}\nexpected\n{want}")
        shape = "x".join(str(d) for d in b["shape"])
        print(f"{args.function}: {b['name']} {b['dtype']}[{shape}] ok")


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("weights")
    p.add_argument("bundle")
    p.add_argument("--seed", type=int, default=1)
    p.set_defaults(run=cmd_weights)
    p = sub.add_parser("inputs")
    p.add_argument("bundle")
    p.add_argument("function")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--compressed", action="store_true")
    p.add_argument("--dtype", action="append", default=[])
    p.add_argument("--shape", action="append", default=[])
    p.add_argument("--rename", action="append", default=[])
    p.add_argument("--extra", action="append", default=[])
    p.set_defaults(run=cmd_inputs)
    p = sub.add_parser("check")
    p.add_argument("bundle")
    p.add_argument("function")
    p.add_argument("inputs")
    p.add_argument("outputs")
    p.set_defaults(run=cmd_check)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
