#!/usr/bin/env python3
"""Writes the onnxruntime references of recurrent_cases.py's f32 model
(recurrent_reference.npz), maxpool_indices_cases.py's model
(maxpool_indices_reference.npz) and gridsample_cases.py's models
(gridsample_reference.npz, gridsample20_reference.npz) and roialign_cases.py's
(roialign_reference.npz, roialign10_reference.npz): seeded inputs (`in.NAME`) and the outputs
onnxruntime, an independent implementation, computes (`out.NAME`), for
check_reference.py in recurrent.test, maxpool-indices.test,
gridsample.test and roialign.test.

    /opt/venv/bin/python make_reference.py   (needs onnxruntime, onnx)

Writes next to this script.
"""

import os
import sys

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gridsample_cases  # noqa: E402
import maxpool_indices_cases  # noqa: E402
import recurrent_cases  # noqa: E402
import roialign_cases  # noqa: E402


def reference(model, out, seed, integers=False, low=-1.0, high=1.0,
              make_feeds=None):
    rng = np.random.default_rng(seed)
    feeds = make_feeds(model, rng) if make_feeds else {}
    for vi in model.graph.input if not make_feeds else []:
        shape = [d.dim_value for d in vi.type.tensor_type.shape.dim]
        if integers:
            # Small integers: ties inside windows check the first maximum.
            feeds[vi.name] = rng.integers(-3, 4, shape).astype(np.float32)
        else:
            feeds[vi.name] = rng.uniform(low, high, shape).astype(np.float32)
    sess = ort.InferenceSession(model.SerializeToString(),
                                providers=["CPUExecutionProvider"])
    names = [o.name for o in model.graph.output]
    results = sess.run(names, feeds)
    arrays = {f"in.{k}": v for k, v in feeds.items()}
    arrays.update({f"out.{k}": v for k, v in zip(names, results)})
    np.savez(os.path.join(HERE, out), **arrays)
    print(f"{out}: onnxruntime {ort.__version__}, {len(names)} outputs")


def main():
    reference(recurrent_cases.build(np.float32), "recurrent_reference.npz", 14)
    reference(maxpool_indices_cases.build(), "maxpool_indices_reference.npz",
              8, integers=True)
    # Grid points up to 1.4 outside [-1, 1] exercise every padding mode.
    reference(gridsample_cases.build(), "gridsample_reference.npz", 16,
              low=-2.4, high=2.4)
    reference(gridsample_cases.build20(), "gridsample20_reference.npz", 20,
              low=-1.5, high=1.5)
    reference(roialign_cases.build(), "roialign_reference.npz", 10,
              make_feeds=roialign_cases.feeds)
    reference(roialign_cases.build(10), "roialign10_reference.npz", 10,
              make_feeds=roialign_cases.feeds)


if __name__ == "__main__":
    main()
