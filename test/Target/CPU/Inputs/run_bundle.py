#!/usr/bin/python3
"""Runs the functions of a compiled bundle through ctypes, for the tests.

    run_bundle.py BUNDLE_DIR IN.npz OUT.npz [--function NAME]

Runs every function of the bundle (or only NAME) and writes all their
outputs to OUT.npz (output names must be unique across functions).
Follows docs/Bundle.md on its own (independent of runtime/): reads
bundle.json, loads weights.bin at the listed offsets, takes each `input`
buffer from IN.npz by name (dtype and shape must match exactly), allocates
64-byte aligned output buffers filled with NaN/garbage, calls
`void <symbol>(void **buffers)` and writes the `output` buffers to OUT.npz.
It also checks that inputs and weights were not written.

Uses Debian's /usr/bin/python3 with python3-numpy.
"""

import argparse
import ctypes
import json
import os
import sys

import numpy as np

DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16,
    "i64": np.int64, "i32": np.int32, "i8": np.int8, "i1": np.uint8,
    "u8": np.uint8,
}


def aligned_empty(shape, dtype, fill):
    """A C-contiguous array whose data pointer is 64-byte aligned."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=np.int64))
    raw = np.empty(count * dtype.itemsize + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64
    array = raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)
    array.fill(fill)
    return array


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("bundle")
    parser.add_argument("inputs")
    parser.add_argument("outputs")
    parser.add_argument("--function", default=None)
    args = parser.parse_args()

    with open(os.path.join(args.bundle, "bundle.json")) as f:
        manifest = json.load(f)
    assert manifest["format"] == "pipedream-bundle", manifest["format"]
    assert manifest["version"] == 2

    blob = np.fromfile(os.path.join(args.bundle, manifest["weights_file"]),
                       dtype=np.uint8)
    weights = {}
    for w in manifest["weights"]:
        assert w["offset"] % 64 == 0, w
        data = blob[w["offset"]:w["offset"] + w["bytes"]]
        array = aligned_empty(w["shape"], DTYPES[w["dtype"]], 0)
        array.reshape(-1).view(np.uint8)[:] = data
        weights[w["name"]] = array

    functions = [f for f in manifest["functions"]
                 if args.function in (None, f["name"])]
    if not functions:
        sys.exit("no function %s in the bundle" % args.function)
    library = ctypes.CDLL(os.path.join(os.path.abspath(args.bundle),
                                       manifest["library"]))
    inputs = np.load(args.inputs)
    outputs = {}
    for function in functions:
        run_function(library, function, weights, inputs, outputs)
    np.savez(args.outputs, **outputs)


def run_function(library, function, weights, inputs, outputs):
    entry = getattr(library, function["symbol"])
    entry.restype = None
    entry.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    buffers, readonly = [], []
    for b in function["buffers"]:
        dtype = DTYPES[b["dtype"]]
        if b["role"] == "input":
            value = inputs[b["name"]]
            if value.dtype != dtype or list(value.shape) != b["shape"]:
                sys.exit("input %s: got %s%s, bundle wants %s%s" % (
                    b["name"], value.dtype, list(value.shape), b["dtype"],
                    b["shape"]))
            array = aligned_empty(b["shape"], dtype, 0)
            array[...] = value
            readonly.append((b["name"], array, array.copy()))
        elif b["role"] == "weight":
            array = weights[b["name"]]
            assert list(array.shape) == b["shape"], b
            readonly.append((b["name"], array, array.copy()))
        else:
            garbage = np.nan if np.issubdtype(dtype, np.floating) else 0x5a
            array = aligned_empty(b["shape"], dtype, garbage)
            if b["name"] in outputs:
                sys.exit("output %s is produced twice" % b["name"])
            outputs[b["name"]] = array
        buffers.append(array.ctypes.data)

    pointers = (ctypes.c_void_p * len(buffers))(*buffers)
    entry(pointers)
    for name, array, before in readonly:
        if not np.array_equal(array, before, equal_nan=True):
            sys.exit("buffer %s was written by %s" % (name, function["name"]))


if __name__ == "__main__":
    main()
