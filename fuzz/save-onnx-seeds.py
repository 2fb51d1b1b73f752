# Writes the seed corpus of the save-onnx fuzz target (fuzz/make-corpus.sh):
#   /usr/bin/python3 fuzz/save-onnx-seeds.py fuzz/corpus/save-onnx
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
out = sys.argv[1]
def init(name, arr):
    t = numpy_helper.from_array(arr); t.name = name; return t
def ext(name, dims, location, offset=None, length=None, dtype=TensorProto.FLOAT):
    t = TensorProto(); t.name = name; t.data_type = dtype; t.dims.extend(dims)
    t.data_location = TensorProto.EXTERNAL
    for k, v in (("location", location), ("offset", offset), ("length", length)):
        if v is not None:
            e = t.external_data.add(); e.key, e.value = k, v
    return t
def model(inits, name):
    nodes = [helper.make_node("MatMul", ["x", inits[0].name], ["y"], name="mm")]
    g = helper.make_graph(nodes, "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    with open(os.path.join(out, name), "wb") as f:
        f.write(m.SerializeToString())
w = init("w", np.arange(9, dtype=np.float32).reshape(3, 3))
b = init("b", np.ones(3, np.float32))
i64 = init("shape", np.array([2, 3], np.int64))
model([w, b, i64, init("w2", np.zeros((2, 2), np.float64)), init("k", np.zeros(4, np.int8)),
       init("m", np.zeros(2, np.float16))], "plain.onnx")
model([w, ext("keep", [4, 4], "data.bin", "0", "64")], "external-ok.onnx")
model([w, ext("keep", [2, 2], "sub/part.bin", "0", "16")], "external-subdir.onnx")
model([w, ext("keep", [4], "data.bin", "48")], "external-offset-no-length.onnx")
model([w, ext("keep", [2], "out/secret.bin", "0", "8")], "external-through-link.onnx")
model([w, ext("keep", [2], "../secret.bin", "0", "8")], "external-dotdot.onnx")
model([w, ext("keep", [2], "/etc/hostname")], "external-absolute.onnx")
model([w, ext("keep", [2], "dir")], "external-directory.onnx")
model([w, ext("keep", [2], "missing.bin")], "external-missing.onnx")
model([w, ext("keep", [2], "data.bin", "0", "1000000000000000")], "external-too-long.onnx")
model([w, ext("keep", [2], "data.bin", "-1", "8")], "external-negative-offset.onnx")
model([w, ext("keep", [2], "data.bin\nx", "0", "8")], "external-newline.onnx")
model([w, ext("keep", [2], "")], "external-no-location.onnx")
model([w, ext("w", [2], "data.bin", "0", "8"), b, w], "duplicate-names.onnx")
model([init("w", np.zeros((1, 3), np.float32))], "weight-rank.onnx")
