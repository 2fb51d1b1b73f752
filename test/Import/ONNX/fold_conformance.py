#!/usr/bin/python3
"""Checks the importer's import-time evaluation (folding) against ONNX's own
backend node tests (Debian's libonnx-testdata).

For every selected test, each graph input becomes a Constant node holding
test_data_set_0's value, so the whole graph is constant: the importer must
fold it, and the constants it returns must equal the test's expected outputs
(floats: rtol 1e-4, atol 1e-5). Tests whose graph does not fold completely
(an op with no import-time evaluation, like MatMul) or uses something the
importer rejects are skipped; a folded result that differs is a failure.

  fold_conformance.py --translate build/bin/pipedream-translate [-k REGEX]
                      [-j N] [-v]

Prints `fold-conformance: P passed, F failed, S skipped`; exit status 1 when
a test fails. Uses Debian's /usr/bin/python3 (python3-onnx, python3-numpy).
"""

import argparse
import concurrent.futures
import glob
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

DATA = "/usr/share/libonnx-testdata/data/node"
NUMPY_TYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16,
               "i64": np.int64, "i32": np.int32, "i16": np.int16,
               "i8": np.int8, "i1": np.bool_}


def by_index(paths):
    return sorted(paths, key=lambda p: int(re.findall(r"(\d+)\.pb$", p)[0]))


def load_tensor(path):
    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return t


def decode(hex_data, element, shape):
    """An MLIR hex elements payload as a numpy array (None if unknown)."""
    dtype = NUMPY_TYPES.get(element)
    if dtype is None:
        return None
    raw = bytes.fromhex(hex_data)
    n = int(np.prod(shape)) if shape else 1
    if dtype == np.bool_:
        # i1 is bit-packed unless it is a splat.
        if len(raw) == n or len(raw) == 1:
            a = np.frombuffer(raw, np.uint8).astype(bool)
        else:
            a = np.unpackbits(np.frombuffer(raw, np.uint8),
                              bitorder="little")[:n].astype(bool)
    else:
        a = np.frombuffer(raw, dtype)
    if a.size == 1 and n != 1:
        a = np.full(n, a[0])
    return a.reshape(shape)


def constant_graph(test_dir):
    """The test's model with every graph input replaced by a Constant."""
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    data = os.path.join(test_dir, "test_data_set_0")
    inputs = by_index(glob.glob(os.path.join(data, "input_*.pb")))
    outputs = by_index(glob.glob(os.path.join(data, "output_*.pb")))
    initialized = {t.name for t in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initialized]
    if not outputs or len(inputs) != len(graph_inputs):
        return None, None
    if any(not i.type.HasField("tensor_type") for i in graph_inputs):
        return None, None
    for path, info in zip(inputs, graph_inputs):
        value = load_tensor(path)
        value.name = info.name
        # The test data stores bfloat16 inputs as uint16 bit patterns.
        if (info.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16
                and value.data_type == onnx.TensorProto.UINT16):
            value.data_type = onnx.TensorProto.BFLOAT16
        model.graph.node.insert(0, onnx.helper.make_node(
            "Constant", [], [info.name], name="input_" + info.name,
            value=value))
    kept = [i for i in model.graph.input if i.name in initialized]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    return model, outputs


def check(name, translate, work):
    """('pass'|'fail'|'skip', detail)."""
    try:
        model, outputs = constant_graph(os.path.join(DATA, name))
    except Exception as e:  # unreadable test data
        return "skip", f"cannot load: {e}"
    if model is None:
        return "skip", "no usable test data"
    path = os.path.join(work, name + ".onnx")
    onnx.save(model, path)
    run = subprocess.run(
        [translate, "--import-onnx", path, "--no-onnx-checker",
         "--mlir-print-elementsattrs-with-hex-if-larger=0"],
        capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        return "skip", run.stderr.strip().split(": ", 2)[-1]
    text = run.stdout
    ret = re.search(r"^\s*return (.*) :", text, re.M)
    if not ret:
        return "skip", "no return"
    constants = {m.group(1): m.groups()[1:] for m in re.finditer(
        r"(%\S+) = nn\.constant (dense|dense_resource)<([^>]*)> : "
        r"tensor<([^>]*)>", text)}
    resources = dict(re.findall(r"(\w+): \"0x([0-9A-F]*)\"", text))
    for value, expected_path in zip(ret.group(1).split(", "), outputs):
        if value not in constants:
            return "skip", f"{value} is not folded"
        kind, body, type_text = constants[value]
        parts = type_text.split("x")
        element, shape = parts[-1], [int(d) for d in parts[:-1]]
        if kind == "dense":
            if not body.startswith('"0x'):
                return "skip", "unexpected attribute syntax"
            got = decode(body[3:-1], element, shape)
        else:
            got = decode(resources[body][8:], element, shape)  # 4-byte align
        expected = numpy_helper.to_array(load_tensor(expected_path))
        if got is None or expected.dtype.kind in "OUS":
            return "skip", f"element type {element}"
        if list(expected.shape) != shape:
            return "fail", f"shape {shape}, expected {list(expected.shape)}"
        if expected.dtype.kind == "f":
            same = np.allclose(got.astype(np.float64),
                               expected.astype(np.float64), rtol=1e-4,
                               atol=1e-5, equal_nan=True)
        else:
            same = np.array_equal(got.astype(expected.dtype), expected)
        if not same:
            return "fail", (f"got {got.ravel()[:8]}, expected "
                            f"{expected.ravel()[:8]}")
    return "pass", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--translate", required=True)
    parser.add_argument("-k", default="", help="only tests matching REGEX")
    parser.add_argument("-j", type=int, default=os.cpu_count() or 1)
    parser.add_argument("-v", action="store_true")
    args = parser.parse_args()
    if not os.path.isdir(DATA):
        print(f"fold-conformance: {DATA} missing (install libonnx-testdata)")
        return 1
    names = [n for n in sorted(os.listdir(DATA)) if re.search(args.k, n)]
    results = {}
    with tempfile.TemporaryDirectory() as work, \
            concurrent.futures.ThreadPoolExecutor(args.j) as pool:
        futures = {pool.submit(check, n, args.translate, work): n
                   for n in names}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = future.result()
    counts = {"pass": 0, "fail": 0, "skip": 0}
    for name in names:
        status, detail = results[name]
        counts[status] += 1
        if status == "fail" or args.v:
            print(f"{status.upper()}: {name}" + (f": {detail}" if detail
                                                  else ""))
    print(f"fold-conformance: {counts['pass']} passed, {counts['fail']} "
          f"failed, {counts['skip']} skipped")
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
