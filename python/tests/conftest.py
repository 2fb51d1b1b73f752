"""Shared fixtures: the compiled torch MLP, the tools' directory."""

import os

import numpy as np
import pytest

import pipedream


def pytest_report_header(config):
    return "pipedream package: %s" % os.path.dirname(pipedream.__file__)


@pytest.fixture(scope="session")
def bin_dir():
    """pipedream-compile and pipedream-run: $PIPEDREAM_BIN, else the bin/
    next to the build's python/ the package was imported from."""
    path = os.environ.get("PIPEDREAM_BIN")
    if not path:
        build = os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(pipedream.__file__))))
        path = os.path.join(build, "bin")
    for tool in ("pipedream-compile", "pipedream-run"):
        assert os.access(os.path.join(path, tool), os.X_OK), (
            "%s not found in %s (set PIPEDREAM_BIN)" % (tool, path))
    return path


# The model and settings every test shares: a 16 -> 32 -> 32 -> 10 MLP,
# micro-batches of 4 samples, K = 2 stages, M = 4 micro-batches.
MICROBATCH = 4
STAGES = 2
MICROBATCHES = 4
SETTINGS = dict(stages=STAGES, schedule="1f1b", microbatches=MICROBATCHES,
                loss="cross-entropy", optimizer="adam", lr=1e-2)


def make_mlp():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 32), torch.nn.ReLU(),
                               torch.nn.Linear(32, 10))


@pytest.fixture(scope="session")
def mlp_model(tmp_path_factory):
    import torch

    example = torch.randn(MICROBATCH, 16)
    return pipedream.compile(make_mlp(), example_inputs=(example,),
                             output_dir=tmp_path_factory.mktemp("mlp"),
                             **SETTINGS)


@pytest.fixture(scope="session")
def mlp_data():
    """48 samples: three batches of M x 4 = 16."""
    rng = np.random.default_rng(1)
    return {"x": rng.standard_normal((48, 16)).astype(np.float32),
            "labels": rng.integers(0, 10, size=48).astype(np.int64)}
