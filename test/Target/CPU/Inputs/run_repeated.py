#!/usr/bin/python3
"""Calls a bundle's function several times in one process, then unloads it.

    run_repeated.py BUNDLE_DIR IN.npz REF.npz [--calls N]

For cpu-cache-allocations: the second and later calls run on the buffers
the first one parked, so each call's outputs are compared with REF.npz
(`OK call i`); the outputs are refilled with garbage between calls. Then
program.so is closed (its destructor frees the parked buffers) and opened
again for one more checked call.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import _ctypes
import argparse
import ctypes
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from run_bundle import DTYPES, aligned_empty  # noqa: E402


def call_all(bundle, manifest, inputs, expected, label):
    library = ctypes.CDLL(os.path.join(bundle, manifest["library"]))
    for fn in manifest["functions"]:
        arrays, outputs = [], {}
        for b in fn["buffers"]:
            dtype = DTYPES[b["dtype"]]
            if b["role"] == "input":
                array = aligned_empty(b["shape"], dtype, 0)
                array[...] = inputs[b["name"]]
            else:
                array = aligned_empty(b["shape"], dtype, 7)
                outputs[b["name"]] = array
            arrays.append(array)
        pointers = (ctypes.c_void_p * len(arrays))(
            *[a.ctypes.data for a in arrays])
        getattr(library, fn["symbol"])(pointers)
        for name, want in expected.items():
            if name in outputs and not np.allclose(outputs[name], want,
                                                   rtol=1e-5, atol=1e-5):
                print(f"MISMATCH {label} {name}")
                return False
    print(f"OK {label}")
    _ctypes.dlclose(library._handle)
    return True


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("inputs")
    parser.add_argument("expected")
    parser.add_argument("--calls", type=int, default=3)
    args = parser.parse_args()
    with open(os.path.join(args.bundle, "bundle.json")) as f:
        manifest = json.load(f)
    inputs, expected = np.load(args.inputs), np.load(args.expected)
    # One load: the library stays open across the calls.
    library = ctypes.CDLL(os.path.join(args.bundle, manifest["library"]))
    ok = all(call_all(args.bundle, manifest, inputs, expected, f"call {i}")
             for i in range(args.calls))
    _ctypes.dlclose(library._handle)
    ok = ok and call_all(args.bundle, manifest, inputs, expected, "reloaded")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
