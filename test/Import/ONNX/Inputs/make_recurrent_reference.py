#!/usr/bin/env python3
"""Writes recurrent_reference.npz: seeded inputs of recurrent_cases.py's f32
model and its outputs computed by onnxruntime (an independent
implementation of RNN / GRU / LSTM / ReverseSequence), for
recurrent-reference.test.

    /opt/venv/bin/python make_recurrent_reference.py   (onnxruntime, onnx)

Run from anywhere; writes next to this script.
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import recurrent_cases  # noqa: E402


def main():
    model = recurrent_cases.build(np.float32)
    rng = np.random.default_rng(14)
    feeds = {}
    for vi in model.graph.input:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.uniform(-1, 1, shape).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    results = sess.run(names, feeds)
    arrays = {f"in.{k}": v for k, v in feeds.items()}
    arrays.update({f"out.{k}": v for k, v in zip(names, results)})
    np.savez(os.path.join(HERE, "recurrent_reference.npz"), **arrays)
    print(f"onnxruntime {ort.__version__}: {len(names)} outputs")


if __name__ == "__main__":
    main()
