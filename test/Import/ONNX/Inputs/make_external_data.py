#!/usr/bin/env python3
"""Models with ONNX external data (weights in side files) for
test/Import/ONNX/external-data.test.

    make_external_data.py OUT_DIR

writes (with onnx and numpy only, fixed seed):

  OUT_DIR/inline/model.onnx   a four-weight MLP, weights as raw_data
  OUT_DIR/ext/model.onnx      the same model, weights in side files:
      w  (4x100 f32) weights.bin at offset 0 (offset and length given)
      b  (100 f32)   weights.bin at offset 1602: not 4-byte aligned, so the
                     importer copies it instead of pointing into the mapping
      w3 (100x64 f32) sub/w3.bin, the whole file (no offset, no length)
      w4 (64x64 f32) weights.bin at offset 2004
    (w3 and w4 are 16 KiB or more: mapped rather than read)
  OUT_DIR/<case>/model.onnx   one bad external reference each (the others
      as in ext/), for the errors: missing (no such file), past_end
      (offset after the end), overrun (offset + length past the end),
      short_length (length != the tensor's bytes), bad_offset (not an
      integer), absolute (/...), dotdot (../), directory (a directory),
      symlink (sub/link.bin, which the test points outside the folder),
      no_location (no location field).
"""

import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def graph_with(initializers):
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["h"], name="mm1"),
        helper.make_node("Add", ["h", "b"], ["hb"], name="add"),
        helper.make_node("Relu", ["hb"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "w3"], ["h3"], name="mm2"),
        helper.make_node("MatMul", ["h3", "w4"], ["y"], name="mm3"),
    ]
    graph = helper.make_graph(
        nodes, "external_data",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])],
        initializers)
    m = helper.make_model(graph, producer_name="make_external_data",
                          opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def values():
    rng = np.random.default_rng(22)
    return {
        "w": rng.standard_normal((4, 100)).astype(np.float32),
        "b": rng.standard_normal(100).astype(np.float32),
        "w3": rng.standard_normal((100, 64)).astype(np.float32),
        "w4": rng.standard_normal((64, 64)).astype(np.float32),
    }


def external(name, array, fields):
    """A TensorProto of `array`'s type and shape whose data is external."""
    t = TensorProto()
    t.name = name
    t.data_type = TensorProto.FLOAT
    t.dims.extend(array.shape)
    t.data_location = TensorProto.EXTERNAL
    for key, value in fields:
        entry = t.external_data.add()
        entry.key = key
        entry.value = str(value)
    return t


def write_ext(out_dir, override=None):
    """The external-data model into out_dir; `override` = (name, fields)
    replaces one tensor's external_data fields."""
    v = values()
    os.makedirs(os.path.join(out_dir, "sub"), exist_ok=True)
    blob = bytearray(v["w"].tobytes())
    blob += b"\0\0"
    b_offset = len(blob)  # 1602: misaligned for f32
    blob += v["b"].tobytes()
    blob += b"\0\0"
    w4_offset = len(blob)  # 2004: 4-byte aligned, inside a page
    blob += v["w4"].tobytes()
    with open(os.path.join(out_dir, "weights.bin"), "wb") as f:
        f.write(blob)
    with open(os.path.join(out_dir, "sub", "w3.bin"), "wb") as f:
        f.write(v["w3"].tobytes())
    fields = {
        "w": [("location", "weights.bin"), ("offset", 0),
              ("length", v["w"].nbytes)],
        "b": [("location", "weights.bin"), ("offset", b_offset),
              ("length", v["b"].nbytes)],
        "w3": [("location", "sub/w3.bin")],
        "w4": [("location", "weights.bin"), ("offset", w4_offset),
               ("length", v["w4"].nbytes)],
    }
    if override:
        fields[override[0]] = override[1]
    inits = [external(n, v[n], fields[n]) for n in ("w", "b", "w3", "w4")]
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(graph_with(inits).SerializeToString())


BAD = {
    "missing": ("w3", [("location", "sub/nothing.bin")]),
    "past_end": ("w", [("location", "weights.bin"), ("offset", 50000),
                       ("length", 1600)]),
    "overrun": ("w4", [("location", "weights.bin"), ("offset", 4096),
                       ("length", 16384)]),
    "short_length": ("w", [("location", "weights.bin"), ("offset", 0),
                           ("length", 800)]),
    "bad_offset": ("w", [("location", "weights.bin"), ("offset", "12abc")]),
    "absolute": ("w3", [("location", "/etc/hostname")]),
    "dotdot": ("w3", [("location", "sub/../../ext/sub/w3.bin")]),
    "directory": ("w3", [("location", "sub")]),
    "symlink": ("w3", [("location", "sub/link.bin")]),
    "no_location": ("w3", [("offset", 0)]),
}


def main():
    out = sys.argv[1]
    if os.path.isdir(out):
        shutil.rmtree(out)
    v = values()
    os.makedirs(os.path.join(out, "inline"))
    inits = [numpy_helper.from_array(v[n], n) for n in ("w", "b", "w3", "w4")]
    onnx.save_model(graph_with(inits), os.path.join(out, "inline",
                                                    "model.onnx"))
    write_ext(os.path.join(out, "ext"))
    for case, override in BAD.items():
        write_ext(os.path.join(out, case), override)


if __name__ == "__main__":
    main()
