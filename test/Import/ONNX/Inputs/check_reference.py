#!/usr/bin/python3
"""Compiles an ONNX model with `pipedream-compile --inference`, runs it with
`pipedream-run` on the `in.NAME` arrays of a reference .npz and compares
every output with the reference's `out.NAME` (rtol/atol below). Prints
`PASS NAME (max abs error E)` or `FAIL NAME: why` per output; exits 1 when
any fails.

    check_reference.py MODEL.onnx REF.npz --bin BUILD/bin --work DIR
"""

import argparse
import os
import subprocess
import sys
import zipfile

import numpy as np


def save_npz(path, arrays):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, array in arrays.items():
            with zf.open(name + ".npy", "w") as f:
                np.lib.format.write_array(f, np.asarray(array), allow_pickle=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("reference")
    ap.add_argument("--bin", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--rtol", type=float, default=1e-4)
    ap.add_argument("--atol", type=float, default=1e-5)
    ap.add_argument("--exact-dtype", action="store_true",
                    help="outputs must have the reference's dtype, integers "
                         "equal exactly (unsigned types)")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    ref = np.load(args.reference)
    feeds = {k[3:]: ref[k] for k in ref.files if k.startswith("in.")}
    expected = {k[4:]: ref[k] for k in ref.files if k.startswith("out.")}
    bundle = os.path.join(args.work, "bundle")
    subprocess.run([os.path.join(args.bin, "pipedream-compile"), args.model,
                    "--inference", "-o", bundle], check=True)
    in_npz = os.path.join(args.work, "in.npz")
    out_npz = os.path.join(args.work, "out.npz")
    save_npz(in_npz, feeds)
    subprocess.run([os.path.join(args.bin, "pipedream-run"), bundle,
                    "--inputs", in_npz, "--outputs", out_npz], check=True)
    got = np.load(out_npz)
    failed = False
    for name, want in expected.items():
        if name not in got.files:
            print(f"FAIL {name}: missing")
            failed = True
            continue
        have = got[name]
        if have.shape != want.shape:
            print(f"FAIL {name}: shape {have.shape} != {want.shape}")
            failed = True
            continue
        if (have.dtype.kind in "iub") != (want.dtype.kind in "iub"):
            print(f"FAIL {name}: dtype {have.dtype} != {want.dtype}")
            failed = True
            continue
        if args.exact_dtype and have.dtype != want.dtype:
            print(f"FAIL {name}: dtype {have.dtype} != {want.dtype}")
            failed = True
            continue
        if args.exact_dtype and want.dtype.kind in "iub":
            if np.array_equal(have, want):
                print(f"PASS {name} (exact, {want.dtype})")
            else:
                print(f"FAIL {name}: {have.tolist()} != {want.tolist()}")
                failed = True
            continue
        err = float(np.max(np.abs(have.astype(np.float64) - want))) if want.size else 0.0
        if not np.allclose(have, want, rtol=args.rtol, atol=args.atol):
            print(f"FAIL {name}: max abs error {err:.3g}")
            failed = True
        else:
            print(f"PASS {name} (max abs error {err:.3g})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
