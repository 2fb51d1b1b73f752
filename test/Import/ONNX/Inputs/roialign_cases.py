#!/usr/bin/python3
"""RoiAlign (mode avg) cases beyond ONNX's two node conformance tests:
batch indices into a batch of 2, regions reaching outside the image,
spatial_scale, half_pixel and output_half_pixel (tiny regions: the size-1
floor), sampling ratios 1 to 3, opset 10's form. X, rois and batch_indices
are graph inputs.

    roialign_cases.py OUT.onnx [--opset10] [--f64]
    roialign_cases.py --invalid DIR

make_reference.py feeds it feeds() and writes onnxruntime's outputs
(roialign_reference.npz) for roialign.test.
"""

import sys

import numpy as np
import onnx
from onnx import TensorProto, helper

F, I64 = TensorProto.FLOAT, TensorProto.INT64
N, C, H, W = 2, 3, 6, 7
CASES = [
    # name, opset-16 attributes (None: an opset 10 node), number of rois
    ("half", dict(coordinate_transformation_mode="half_pixel", output_height=3,
                  output_width=4, sampling_ratio=2, spatial_scale=0.5), 3),
    ("output_half", dict(coordinate_transformation_mode="output_half_pixel",
                         output_height=2, output_width=2, sampling_ratio=1), 4),
    ("ratio3", dict(output_height=2, output_width=3, sampling_ratio=3), 2),
]


def build(opset=16, f64=False):
    F = TensorProto.DOUBLE if f64 else TensorProto.FLOAT
    ins = [helper.make_tensor_value_info("x", F, [N, C, H, W])]
    nodes, outs = [], []
    for name, attrs, rois in CASES:
        if opset < 16:
            attrs = {k: v for k, v in attrs.items()
                     if k != "coordinate_transformation_mode"}
        ins += [helper.make_tensor_value_info(f"{name}_rois", F, [rois, 4]),
                helper.make_tensor_value_info(f"{name}_batch", I64, [rois])]
        outs.append(helper.make_tensor_value_info(name, F, None))
        nodes.append(helper.make_node(
            "RoiAlign", ["x", f"{name}_rois", f"{name}_batch"], [name],
            name=name, **attrs))
    m = helper.make_model(helper.make_graph(nodes, "roialign", ins, outs),
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def feeds(model, rng):
    out = {"x": rng.uniform(-1, 1, [N, C, H, W]).astype(np.float32)}
    for name, _, rois in CASES:
        x1 = rng.uniform(-3, W, rois)
        y1 = rng.uniform(-3, H, rois)
        boxes = np.stack([x1, y1, x1 + rng.uniform(0.2, 9, rois),
                          y1 + rng.uniform(0.2, 8, rois)], 1)
        if name == "output_half":
            boxes[0, 2] = boxes[0, 0] + 0.3  # narrower than one pixel
        out[f"{name}_rois"] = boxes.astype(np.float32)
        out[f"{name}_batch"] = rng.integers(0, N, rois).astype(np.int64)
    return out


def single(**attrs):
    node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], name="roi",
                            **attrs)
    graph = helper.make_graph(
        [node], "bad", [helper.make_tensor_value_info("x", F, [1, 1, 4, 4]),
                        helper.make_tensor_value_info("r", F, [2, 4]),
                        helper.make_tensor_value_info("b", I64, [2])],
        [helper.make_tensor_value_info("y", F, None)])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    return m


INVALID = {
    "roi_adaptive": lambda: single(),
    "roi_max": lambda: single(mode="max", sampling_ratio=2),
}


def main():
    if sys.argv[1] == "--invalid":
        for name, make in INVALID.items():
            onnx.save(make(), f"{sys.argv[2]}/{name}.onnx")
        return
    onnx.save(build(10 if "--opset10" in sys.argv[2:] else 16,
                    "--f64" in sys.argv[2:]), sys.argv[1])


if __name__ == "__main__":
    main()
