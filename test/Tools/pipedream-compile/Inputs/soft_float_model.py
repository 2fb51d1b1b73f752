#!/usr/bin/python3
"""Writes an ONNX model whose casts LLVM lowers to compiler-rt soft-float
helpers (f64 -> f16 is `__truncdfhf2`: x86 has no instruction for it, and
libc/libm do not provide it), inputs for it, and the expected outputs.

    soft_float_model.py MODEL.onnx IN.npz REF.npz

  d f64[4, 8] -> h = Cast(d, f16)             (__truncdfhf2)
                 hd = Cast(h, f64)            (f16 -> f64)
  f f32[4, 8] -> b = Cast(f, bf16)            (f32 -> bf16, nearest even)
                 bf = Cast(b, f32)

bf16 travels as uint16 bit patterns (docs/Runtime.md). The inputs include
values that round differently under truncation, ties, f16 subnormals and
underflow, the largest finite f16 and signed zeros (no infinities: compare.py
measures errors by subtraction). Uses Debian's /usr/bin/python3 (python3-onnx).
"""

import sys

import numpy as np
from onnx import TensorProto, helper, save


def bf16_rne(values):
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def main():
    model_path, in_path, ref_path = sys.argv[1:4]
    shape = [4, 8]
    nodes = [
        helper.make_node("Cast", ["d"], ["h"], to=TensorProto.FLOAT16),
        helper.make_node("Cast", ["h"], ["hd"], to=TensorProto.DOUBLE),
        helper.make_node("Cast", ["f"], ["b"], to=TensorProto.BFLOAT16),
        helper.make_node("Cast", ["b"], ["bf"], to=TensorProto.FLOAT),
    ]
    graph = helper.make_graph(
        nodes, "soft_float",
        [helper.make_tensor_value_info("d", TensorProto.DOUBLE, shape),
         helper.make_tensor_value_info("f", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("h", TensorProto.FLOAT16, shape),
         helper.make_tensor_value_info("hd", TensorProto.DOUBLE, shape),
         helper.make_tensor_value_info("b", TensorProto.BFLOAT16, shape),
         helper.make_tensor_value_info("bf", TensorProto.FLOAT, shape)])
    model = helper.make_model(graph, producer_name="pipedream-test",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    save(model, model_path)

    rng = np.random.default_rng(7)
    special = [0.0, -0.0, 1.0, -2.5, 65504.0, 65519.0, -65519.0, 6e-8, 1e-9,
               1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 0.1, 1.0 / 3.0,
               1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8, 3.0e4]
    d = np.concatenate([special, rng.standard_normal(32 - len(special)) * 100])
    d = d.reshape(shape).astype(np.float64)
    f = d.astype(np.float32)
    h = d.astype(np.float16)  # numpy rounds f64 -> f16 directly, nearest even
    b = bf16_rne(f)
    np.savez(in_path, d=d, f=f)
    np.savez(ref_path, h=h, hd=h.astype(np.float64), b=b,
             bf=(b.astype(np.uint32) << 16).view(np.float32))


if __name__ == "__main__":
    main()
