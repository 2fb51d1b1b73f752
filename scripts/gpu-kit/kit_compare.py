#!/usr/bin/env python3
"""Compares a cuda bundle's results with the references in the GPU kit.

    kit_compare.py npz ACTUAL.npz REF.npz --rtol R
    kit_compare.py bf16 ACTUAL.npz REF16.npz F32REF.npz
    kit_compare.py train ACTUAL_DIR REF_DIR --rtol R

Pure Python (no numpy): the GPU machine's python3 may lack it.

- npz: every array of REF must be in ACTUAL with its dtype and shape;
  floats within R relative to the array's largest magnitude
  (max|a - r| <= R * max|r|), integers and booleans equal.
- bf16: docs/GPU.md's bf16 recipe check (test/Target/GPU/Inputs/
  compare_bf16.py without numpy): REF16 is PyTorch running the recipe
  (bf16 GEMM operands and products, f32 elsewhere); at most 5% of the
  elements outside 1e-4 + 1e-4|ref| (a GEMM product rounded to bf16 the
  other way), all within 1e-3 + 2^-7|ref| (two bf16 ulps), and more than
  40% of F32REF's (the f32 result) outside the tight bound, so a bundle
  that ignored --dtype bf16 fails.
- train: DIR/loss.csv (`pipedream-run --loss-log`) and the checkpoint in
  DIR/ckpt (`--checkpoint-dir`, docs/Runtime.md "Checkpoints"): every
  step's loss within R relative, and each evaluation's (`eval_loss`, after
  the same steps), every checkpointed buffer of every rank (weights and
  optimizer state) within R of its largest magnitude.

Prints `OK ...` with the largest relative error, or `MISMATCH ...`, and
exits 1 on a mismatch or an unreadable file.
"""

import ast
import csv
import json
import math
import os
import struct
import sys
import zipfile

NPY_TYPES = {"<f4": ("f", 4, "f32"), "<f8": ("d", 8, "f64"),
             "<i8": ("q", 8, "i64"), "<i4": ("i", 4, "i32"),
             "|b1": ("?", 1, "i1"), "|u1": ("B", 1, "u8"),
             "|i1": ("b", 1, "i8")}
CKPT_TYPES = {"f32": "f", "f64": "d", "i64": "q", "i32": "i", "i1": "?",
              "u8": "B", "i8": "b"}


class Array:
    def __init__(self, dtype, shape, values):
        self.dtype, self.shape, self.values = dtype, tuple(shape), values

    @property
    def floating(self):
        return self.dtype in ("f32", "f64")


def parse_npy(data, what):
    if data[:6] != b"\x93NUMPY":
        raise ValueError(f"{what}: not a .npy array")
    major = data[6]
    if major == 1:
        (hlen,) = struct.unpack("<H", data[8:10])
        start = 10
    else:
        (hlen,) = struct.unpack("<I", data[8:12])
        start = 12
    header = ast.literal_eval(data[start:start + hlen].decode("latin1"))
    descr = header["descr"]
    if descr not in NPY_TYPES or header.get("fortran_order"):
        raise ValueError(f"{what}: unsupported array type {descr}")
    code, size, dtype = NPY_TYPES[descr]
    shape = header["shape"]
    count = math.prod(shape)
    body = data[start + hlen:start + hlen + count * size]
    if len(body) != count * size:
        raise ValueError(f"{what}: truncated")
    return Array(dtype, shape, struct.unpack(f"<{count}{code}", body))


def read_npz(path):
    out = {}
    with zipfile.ZipFile(path) as z:
        for name in z.namelist():
            key = name[:-4] if name.endswith(".npy") else name
            out[key] = parse_npy(z.read(name), f"{path}:{name}")
    return out


def read_checkpoint(ckpt_dir):
    """{(rank, buffer name): Array} of the latest checkpoint in ckpt_dir."""
    with open(os.path.join(ckpt_dir, "checkpoint.json")) as f:
        manifest = json.load(f)
    out = {}
    for entry in manifest["files"]:
        path = os.path.join(ckpt_dir, entry["file"])
        with open(path, "rb") as f:
            data = f.read()
        if data[:8] != b"PDCKPT01":
            raise ValueError(f"{path}: not a pipedream checkpoint")
        (hlen,) = struct.unpack("<Q", data[8:16])
        header = json.loads(data[16:16 + hlen])
        for b in header["buffers"]:
            code = CKPT_TYPES.get(b["dtype"])
            if code is None:
                continue
            count = math.prod(b["shape"])
            raw = data[b["offset"]:b["offset"] + b["bytes"]]
            size = struct.calcsize(code)
            out[(entry["rank"], b["name"])] = Array(
                b["dtype"], b["shape"],
                struct.unpack(f"<{count}{code}", raw[:count * size]))
    return manifest["step"], out


def rel_error(got, want):
    """max|got - want| / max|want| (absolute when want is all zero)."""
    scale = max((abs(w) for w in want), default=0.0)
    err = 0.0
    for g, w in zip(got, want):
        d = abs(g - w)
        if d != d:  # NaN
            return math.inf
        err = max(err, d)
    return err / scale if scale > 0 else err


def compare_arrays(name, got, want, rtol):
    """(ok, relative error, message)."""
    if got.shape != want.shape:
        return False, math.inf, f"{name}: shape {got.shape}, expected {want.shape}"
    if got.dtype != want.dtype:
        return False, math.inf, f"{name}: dtype {got.dtype}, expected {want.dtype}"
    if not want.floating:
        bad = sum(1 for g, w in zip(got.values, want.values) if g != w)
        return bad == 0, 0.0 if bad == 0 else math.inf, (
            f"{name}: {bad} of {len(want.values)} elements differ")
    err = rel_error(got.values, want.values)
    return err <= rtol, err, f"{name}: relative error {err:.3g} > {rtol:g}"


def cmd_npz(actual, reference, rtol):
    got, want = read_npz(actual), read_npz(reference)
    worst = 0.0
    for name in sorted(want):
        if name not in got:
            print(f"MISMATCH {name}: missing from {actual}")
            return 1
        ok, err, msg = compare_arrays(name, got[name], want[name], rtol)
        if not ok:
            print(f"MISMATCH {msg}")
            return 1
        worst = max(worst, err)
    print(f"OK {len(want)} array(s) {' '.join(sorted(want))}: max relative "
          f"error {worst:.3g} (tolerance {rtol:g})")
    return 0


def cmd_bf16(actual, ref16, f32ref):
    got, want, plain = read_npz(actual), read_npz(ref16), read_npz(f32ref)
    rtol = atol = 1e-4
    loose_rtol, loose_atol = 2.0 ** -7, 1e-3
    for name in sorted(want):
        if name not in got or name not in plain:
            print(f"MISMATCH {name}: missing")
            return 1
        g, w, p = got[name], want[name], plain[name]
        if g.shape != w.shape or p.shape != w.shape:
            print(f"MISMATCH {name}: shapes {g.shape} {w.shape} {p.shape}")
            return 1
        n = len(w.values)
        outside = plain_outside = 0
        err = 0.0
        for a, r, f in zip(g.values, w.values, p.values):
            d = abs(a - r)
            if not d <= loose_atol + loose_rtol * abs(r):
                print(f"MISMATCH {name}: {a!r} vs the bf16 recipe's {r!r} "
                      f"(beyond two bf16 ulps)")
                return 1
            err = max(err, d)
            outside += d > atol + rtol * abs(r)
            plain_outside += abs(f - r) > atol + rtol * abs(r)
        if outside > 0.05 * n:
            print(f"MISMATCH {name}: {outside} of {n} elements beyond "
                  f"{atol:g} + {rtol:g}|ref| of the bf16 recipe")
            return 1
        if plain_outside <= 0.4 * n:
            print(f"MISMATCH {name}: the f32 result is as close to the bf16 "
                  f"recipe ({plain_outside} of {n} outside): the check "
                  f"cannot tell bf16 from f32")
            return 1
        print(f"OK {name} bf16 recipe: max abs error {err:.3g}, "
              f"{outside / n:.1%} outside the tight bound; f32 "
              f"{plain_outside / n:.1%} outside")
    return 0


def read_losses(path):
    with open(path) as f:
        rows = [r for r in csv.reader(f) if r and r[0] != "step"]
    return [float(r[1]) for r in rows]


def read_evals(path):
    """The `eval_loss` column (pipedream-run --eval-data), by step."""
    with open(path) as f:
        return [(int(r["step"]), float(r["eval_loss"]))
                for r in csv.DictReader(f) if r.get("eval_loss")]


def relative_error(what, got, want, rtol):
    """|got - want| / |want|; None, after a MISMATCH line, above rtol."""
    e = abs(got - want) / max(abs(want), 1e-30)
    if not e <= rtol:
        print(f"MISMATCH {what}: {got!r}, expected {want!r} (relative error "
              f"{e:.3g} > {rtol:g})")
        return None
    return e


def cmd_train(actual, reference, rtol):
    got_losses = read_losses(os.path.join(actual, "loss.csv"))
    want_losses = read_losses(os.path.join(reference, "loss.csv"))
    if len(got_losses) != len(want_losses):
        print(f"MISMATCH losses: {len(got_losses)} steps, expected "
              f"{len(want_losses)}")
        return 1
    loss_err = 0.0
    for i, (g, w) in enumerate(zip(got_losses, want_losses)):
        e = relative_error(f"loss of step {i + 1}", g, w, rtol)
        if e is None:
            return 1
        loss_err = max(loss_err, e)
    got_evals = read_evals(os.path.join(actual, "loss.csv"))
    want_evals = read_evals(os.path.join(reference, "loss.csv"))
    if [s for s, _ in got_evals] != [s for s, _ in want_evals]:
        print(f"MISMATCH evaluations after steps {[s for s, _ in got_evals]}"
              f", expected {[s for s, _ in want_evals]}")
        return 1
    for (step, g), (_, w) in zip(got_evals, want_evals):
        e = relative_error(f"evaluation after step {step}", g, w, rtol)
        if e is None:
            return 1
        loss_err = max(loss_err, e)
    got_step, got = read_checkpoint(os.path.join(actual, "ckpt"))
    want_step, want = read_checkpoint(os.path.join(reference, "ckpt"))
    if got_step != want_step:
        print(f"MISMATCH checkpoint of step {got_step}, expected {want_step}")
        return 1
    worst, worst_name = 0.0, ""
    for key in sorted(want):
        if key not in got:
            print(f"MISMATCH rank {key[0]} buffer {key[1]}: not checkpointed")
            return 1
        ok, err, msg = compare_arrays(f"rank {key[0]} {key[1]}", got[key],
                                      want[key], rtol)
        if not ok:
            print(f"MISMATCH {msg}")
            return 1
        if err >= worst:
            worst, worst_name = err, key[1]
    evals = f" and {len(want_evals)} evaluations" if want_evals else ""
    print(f"OK {len(want_losses)} losses{evals} max relative error "
          f"{loss_err:.3g}; "
          f"{len(want)} buffers after step {want_step} max relative error "
          f"{worst:.3g} ({worst_name}); tolerance {rtol:g}")
    return 0


def main(argv):
    try:
        if len(argv) >= 3 and argv[0] in ("npz", "train"):
            rtol = 1e-5
            if "--rtol" in argv:
                rtol = float(argv[argv.index("--rtol") + 1])
            fn = cmd_npz if argv[0] == "npz" else cmd_train
            return fn(argv[1], argv[2], rtol)
        if len(argv) == 4 and argv[0] == "bf16":
            return cmd_bf16(argv[1], argv[2], argv[3])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile,
            struct.error, json.JSONDecodeError) as e:
        print(f"MISMATCH cannot read the results: {e}")
        return 1
    print(__doc__.strip().splitlines()[2], file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
