"""The pipedream package against the command-line tools and PyTorch."""

import csv
import os
import subprocess

import numpy as np
import pytest

import pipedream
from conftest import MICROBATCH, MICROBATCHES, SETTINGS, STAGES


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    assert done.returncode == 0, "%s failed:\n%s%s" % (
        " ".join(cmd), done.stdout, done.stderr)
    return done


# -- Compile and inspect -----------------------------------------------------


def test_report(mlp_model):
    r = mlp_model.report
    assert r["verified"] is True
    assert r["schedule"] == {"kind": "1f1b", "K": STAGES, "M": MICROBATCHES,
                             "V": 1, "placement": "loop"}
    assert r["partition"]["stages"] == STAGES
    assert r["partition"]["microbatches"] == MICROBATCHES
    assert [s["index"] for s in r["stages"]] == list(range(STAGES))
    # Every ONNX node is in one stage: the first stage starts at the first.
    assert r["stages"][0]["first_op"] == "/0/Gemm"
    # Synchronous 1F1B with unit costs: (K-1)/(M+K-1).
    assert r["bubble_fraction_unit_costs"] == pytest.approx(
        (STAGES - 1) / (MICROBATCHES + STAGES - 1))
    assert 0 < r["bubble_fraction"] < 1
    assert len(r["peak_memory_bytes"]) == STAGES
    # The bundle and the report.json pipedream-compile writes next to it.
    bundle = os.path.join(mlp_model.bundle_dir, "bundle.json")
    assert os.path.exists(bundle)
    with open(os.path.join(mlp_model.bundle_dir, "report.json")) as f:
        import json
        assert json.load(f) == r


def without_timing(report):
    """The report less the partitioner's measured run time."""
    report = dict(report, partition=dict(report["partition"]))
    del report["partition"]["dp_seconds"]
    return report


def test_report_equals_cli(mlp_model, bin_dir, tmp_path):
    """The dict is the JSON of pipedream-compile --report-json."""
    import json

    cmd = [os.path.join(bin_dir, "pipedream-compile"), mlp_model.model_path,
           "-o", str(tmp_path / "b"), "--stages", str(STAGES), "--schedule",
           "1f1b", "--microbatches", str(MICROBATCHES), "--loss",
           "cross-entropy", "--optimizer", "adam", "--lr", "0.01",
           "--report-json", str(tmp_path / "r.json")]
    run(cmd)
    with open(tmp_path / "r.json") as f:
        assert without_timing(json.load(f)) == without_timing(
            mlp_model.report)


def test_mlir_phases(mlp_model):
    nn = mlp_model.mlir("nn")
    assert "func.func @main" in nn and "nn." in nn
    train = mlp_model.mlir("train")
    assert "train_microbatch" in train
    assert "linalg." in mlp_model.mlir("linalg")
    scheduled = mlp_model.mlir("scheduled")
    assert "pipe.program" in scheduled
    assert mlp_model.mlir("scheduled") is scheduled  # cached
    with pytest.raises(ValueError, match="phase 'bundle'"):
        mlp_model.mlir("bundle")


def test_mlir_equals_cli(mlp_model, bin_dir):
    done = run([os.path.join(bin_dir, "pipedream-compile"),
                mlp_model.model_path, "--emit", "scheduled", "--stages",
                str(STAGES), "--schedule", "1f1b", "--microbatches",
                str(MICROBATCHES), "--loss", "cross-entropy", "--optimizer",
                "adam", "--lr", "0.01"])
    assert done.stdout == mlp_model.mlir("scheduled")


# -- Training ------------------------------------------------------------------


def read_losses(path):
    with open(path) as f:
        return [float(row["loss"]) for row in csv.DictReader(f)]


def test_train_equals_cli(mlp_model, mlp_data, bin_dir, tmp_path):
    """3 steps with K = 2 in-process equal pipedream-compile + pipedream-run
    (threads) on the same ONNX model and data: losses and trained weights."""
    steps = 3
    model = pipedream.compile(mlp_model.model_path,
                              output_dir=tmp_path / "py", **SETTINGS)
    assert model.input_names == ["x"] and model.labels_name == "labels"
    assert model.batch_size == MICROBATCHES * MICROBATCH
    before = model.weights()
    losses = model.train(mlp_data, steps=steps)
    assert len(losses) == steps and all(np.isfinite(losses))
    model.save_onnx(tmp_path / "py.onnx")

    bundle = str(tmp_path / "cli")
    run([os.path.join(bin_dir, "pipedream-compile"), mlp_model.model_path,
         "-o", bundle, "--stages", str(STAGES), "--schedule", "1f1b",
         "--microbatches", str(MICROBATCHES), "--loss", "cross-entropy",
         "--optimizer", "adam", "--lr", "0.01"])
    np.savez(tmp_path / "data.npz", **mlp_data)
    run([os.path.join(bin_dir, "pipedream-run"), bundle, "--data",
         str(tmp_path / "data.npz"), "--steps", str(steps), "--loss-log",
         str(tmp_path / "loss.csv"), "--save-onnx",
         str(tmp_path / "cli.onnx")])
    cli = read_losses(tmp_path / "loss.csv")
    np.testing.assert_allclose(losses, cli, rtol=1e-6, atol=0)

    import onnx
    from onnx import numpy_helper

    def initializers(path):
        graph = onnx.load(str(path)).graph
        return {t.name: numpy_helper.to_array(t) for t in graph.initializer}

    ours, theirs = initializers(tmp_path / "py.onnx"), initializers(
        tmp_path / "cli.onnx")
    after = model.weights()
    assert set(after) == set(before) and after
    for name, value in after.items():
        np.testing.assert_allclose(ours[name], value, rtol=0, atol=0)
        np.testing.assert_allclose(theirs[name], value, rtol=1e-6, atol=1e-7)
        assert not np.array_equal(value, before[name]), name  # trained


def test_train_continues(mlp_model, mlp_data, tmp_path):
    """Two calls of 2 steps are one run of 4 (state carries over)."""
    one = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "a",
                            **SETTINGS)
    two = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "b",
                            **SETTINGS)
    split = one.train(mlp_data, steps=2) + one.train(mlp_data, steps=2)
    whole = two.train(mlp_data, steps=4)
    assert split == whole
    assert one.steps_trained == 4


def test_lr_schedule_keywords(mlp_model, mlp_data, tmp_path):
    """lr_schedule= / warmup_steps= / total_steps= are the pipedream-compile
    flags: with one warm-up step the first update runs at rate 0 (no weight
    moves), the second at the full rate; a linear decay to 0 at step 2
    leaves step 3 at rate 0. Their checks come back as CompileError."""
    model = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "w",
                              lr_schedule="linear", warmup_steps=1,
                              total_steps=2, **SETTINGS)
    before = model.weights()
    model.train(mlp_data, steps=1)
    first = model.weights()
    assert all(np.array_equal(first[n], before[n]) for n in before)
    model.train(mlp_data, steps=1)
    second = model.weights()
    assert any(not np.array_equal(second[n], first[n]) for n in first)
    model.train(mlp_data, steps=1)
    third = model.weights()
    assert all(np.array_equal(third[n], second[n]) for n in second)
    with pytest.raises(pipedream.CompileError,
                       match="^--lr-schedule cosine needs --total-steps"):
        pipedream.compile(mlp_model.model_path, lr_schedule="cosine",
                          **SETTINGS)


def test_clip_grad_norm_keyword(mlp_model, mlp_data, tmp_path):
    """clip_grad_norm= is --clip-grad-norm: with plain SGD one step moves
    the weights (all stages together) by exactly lr x the largest norm
    when the gradients' norm is above it; grad_norms reports the norm
    before clipping. A bad value is a CompileError."""
    settings = dict(SETTINGS, optimizer="sgd", lr=0.5)
    model = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "c",
                              clip_grad_norm=1e-3, **settings)
    before = model.weights()
    model.train(mlp_data, steps=1)
    after = model.weights()
    step = np.sqrt(sum(np.sum((after[n].astype(np.float64) - before[n]) ** 2)
                       for n in before))
    assert step == pytest.approx(0.5 * 1e-3, rel=1e-3)
    # grad_norms: the step's norm before clipping. A bound never reached
    # leaves the SGD step lr x g, whose size gives the norm independently.
    (norm,) = model.grad_norms
    loose = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "l",
                              clip_grad_norm=1e9, **settings)
    loose.train(mlp_data, steps=1)
    moved = loose.weights()
    unclipped = np.sqrt(sum(
        np.sum((moved[n].astype(np.float64) - before[n]) ** 2)
        for n in before)) / 0.5
    assert loose.grad_norms == [pytest.approx(unclipped, rel=1e-3)]
    assert norm == pytest.approx(loose.grad_norms[0], rel=1e-6)
    assert norm > 100 * 1e-3
    with pytest.raises(pipedream.CompileError,
                       match="^--clip-grad-norm -1: the largest gradient"):
        pipedream.compile(mlp_model.model_path, clip_grad_norm=-1,
                          **SETTINGS)


def test_auto_schedule_with_recompute(mlp_model, mlp_data, tmp_path):
    """schedule="auto" with recompute="full": the search's choice, every
    stage recomputing, trains as that kind compiled by name with the same
    recomputation."""
    settings = dict(SETTINGS, schedule="auto")
    model = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "a",
                              recompute="full", **settings)
    r = model.report
    chosen = r["schedule"]["kind"]
    assert chosen in ("gpipe", "1f1b", "zb-h1", "interleaved-1f1b",
                      "interleaved-zb", "zb-v", "dualpipe-v")
    assert all(s["recompute"] for s in r["stages"])
    named = pipedream.compile(
        mlp_model.model_path, output_dir=tmp_path / "n", recompute="full",
        **dict(settings, schedule=chosen,
               virtual_stages=r["schedule"]["V"]))
    losses = model.train(mlp_data, steps=2)
    np.testing.assert_allclose(losses, named.train(mlp_data, steps=2),
                               rtol=1e-6, atol=0)
    for name, value in named.weights().items():
        np.testing.assert_allclose(model.weights()[name], value, rtol=1e-6,
                                   atol=1e-7)


def test_train_matches_torch(mlp_data, tmp_path):
    """The first step's loss is PyTorch's cross-entropy of the initial
    model on the first batch (an independent reference)."""
    import torch
    from conftest import make_mlp

    module = make_mlp()
    model = pipedream.compile(module,
                              example_inputs=(torch.zeros(MICROBATCH, 16),),
                              output_dir=tmp_path, **SETTINGS)
    batch = model.batch_size
    with torch.no_grad():
        logits = module(torch.from_numpy(mlp_data["x"][:batch]))
        expected = torch.nn.functional.cross_entropy(
            logits, torch.from_numpy(mlp_data["labels"][:batch])).item()
    loss = model.train(mlp_data, steps=1)[0]
    assert loss == pytest.approx(expected, rel=1e-5)


def test_bad_data(mlp_model):
    bad = {"x": np.zeros((16, 16), np.float32),
           "labels": np.full(16, 12, np.int64)}
    model = pipedream.compile(mlp_model.model_path, **SETTINGS)
    with pytest.raises(ValueError, match="labels"):
        model.train(bad, steps=1)
    with pytest.raises(ValueError, match="x"):
        model.train({"labels": bad["labels"]}, steps=1)


# -- Timeline ------------------------------------------------------------------


def test_timeline_png(mlp_model, tmp_path):
    from matplotlib import image

    events = mlp_model.schedule_events()
    # 1F1B: every micro-batch goes forward and backward on every rank.
    assert sorted((e["rank"], e["action"], e["microbatch"]) for e in events
                  if e["action"] in "FB") \
        == sorted((r, a, m) for r in range(STAGES) for a in "FB"
                  for m in range(MICROBATCHES))
    for r in range(STAGES):
        mine = sorted((e for e in events if e["rank"] == r),
                      key=lambda e: e["start"])
        assert all(a["end"] <= b["start"] + 1e-9
                   for a, b in zip(mine, mine[1:]))  # one box at a time
    fig = mlp_model.timeline(figsize=(8, 2.5))
    path = tmp_path / "schedule.png"
    fig.savefig(path, dpi=100)
    assert path.stat().st_size > 1000
    pixels = image.imread(str(path))  # decodes the PNG
    assert pixels.shape[:2] == (250, 800)
    rgb = pixels[..., :3]
    assert rgb.std() > 0.05  # not blank
    # Forward and backward boxes are there in their colors.
    from pipedream._timeline import COLORS
    import matplotlib.colors as mcolors
    for action in "FB":
        color = np.array(mcolors.to_rgb(COLORS[action]))
        close = np.all(np.abs(rgb - color) < 0.02, axis=-1)
        assert close.sum() > 200, action


# -- Errors --------------------------------------------------------------------


def unsupported_model(path):
    import onnx
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("DFT", ["x"], ["y"], name="my_dft")], "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("",
                                                                        17)])
    onnx.save(model, str(path))
    return model


def test_compile_error(bin_dir, tmp_path):
    path = str(tmp_path / "dft.onnx")
    model = unsupported_model(path)
    with pytest.raises(pipedream.CompileError) as info:
        pipedream.compile(path, loss=None)
    message = str(info.value)
    assert message == ("%s: node 'my_dft' (op 'DFT', opset 17): not "
                       "supported" % path)
    # The same line as the command line's.
    done = subprocess.run([os.path.join(bin_dir, "pipedream-compile"), path,
                           "-o", str(tmp_path / "out"), "--inference"],
                          capture_output=True, text=True)
    assert (done.returncode, done.stdout, done.stderr) == (
        1, "", "error: %s\n" % message)
    # An onnx.ModelProto and a training compilation fail alike.
    with pytest.raises(pipedream.CompileError,
                       match="node 'my_dft' \\(op 'DFT', opset 17\\)"):
        pipedream.compile(model)


def test_option_errors(mlp_model):
    with pytest.raises(pipedream.CompileError,
                       match="^--schedule bogus: expected gpipe, 1f1b"):
        pipedream.compile(mlp_model.model_path, schedule="bogus")
    with pytest.raises(pipedream.CompileError,
                       match="^--target nope: expected cpu or cuda"):
        pipedream.compile(mlp_model.model_path, target="nope")
    with pytest.raises(TypeError, match="unknown option 'colour'"):
        pipedream.compile(mlp_model.model_path, colour="blue")
    # Keywords are parsed by pipedream-compile's own flags: the same type
    # checks and messages (CommandLine.h, parseCompileArguments).
    with pytest.raises(pipedream.CompileError,
                       match="^--stages=two: invalid value$"):
        pipedream.compile(mlp_model.model_path, stages="two")
    with pytest.raises(pipedream.CompileError,
                       match="^-O4: the optimization level is 0 to 3$"):
        pipedream.compile(mlp_model.model_path, opt_level=4)
    with pytest.raises(TypeError, match="unknown option 'help'"):
        pipedream.compile(mlp_model.model_path, help=True)
    with pytest.raises(TypeError, match="example_inputs"):
        pipedream.compile(__import__("torch").nn.Linear(2, 2))
    with pytest.raises(TypeError, match="model must be"):
        pipedream.compile(42)


def test_freeze_train_options(mlp_model):
    """freeze= / train= are --freeze / --train: the report lists the classes
    and the overrides' errors come back as CompileError."""
    r = mlp_model.report["weights"]
    names = r["trainable"]["names"]
    assert r["frozen"]["count"] == 0 and len(names) == 6
    frozen = pipedream.compile(mlp_model.model_path, freeze=[names[0]],
                               **SETTINGS).report["weights"]
    assert frozen["frozen"]["names"] == [{"name": names[0],
                                          "reason": "--freeze"}]
    assert frozen["trainable"]["names"] == names[1:]
    with pytest.raises(pipedream.CompileError,
                       match="--train 'nope.*' matches no weight"):
        pipedream.compile(mlp_model.model_path, train=["nope.*"], **SETTINGS)


def mlp_eval_loss(weights, data):
    """The MLP's mean cross-entropy on `data` with `weights`, in float64."""
    names = sorted(n for n in weights if n.endswith(".weight"))
    h = data["x"].astype(np.float64)
    for i, name in enumerate(names):
        h = h @ weights[name].astype(np.float64).T + \
            weights[name[:-len("weight")] + "bias"]
        if i + 1 < len(names):
            h = np.maximum(h, 0)
    h -= h.max(axis=1, keepdims=True)
    log_p = h - np.log(np.exp(h).sum(axis=1, keepdims=True))
    return -np.mean(log_p[np.arange(len(h)), data["labels"]])


def test_evaluate(mlp_model, mlp_data, bin_dir, tmp_path):
    """evaluate=True and CompiledModel.evaluate: the mean eval-mode loss
    through the ranks' evaluation programs equals the cross-entropy of the
    MLP's forward with the current weights (numpy, float64), before and
    after training, equals pipedream-run --eval-data's, and changes
    nothing: training after evaluating equals training alone."""
    model = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "e",
                              evaluate=True, **SETTINGS)
    held_out = {"x": mlp_data["x"][:12], "labels": mlp_data["labels"][:12]}

    def reference(weights):
        return mlp_eval_loss(weights, held_out)

    before = model.evaluate(held_out)
    assert before == pytest.approx(reference(model.weights()), rel=1e-6)
    losses = model.train(mlp_data, steps=2)
    after = model.evaluate(held_out)
    assert after == pytest.approx(reference(model.weights()), rel=1e-6)
    assert after != before
    plain = pipedream.compile(mlp_model.model_path,
                              output_dir=tmp_path / "p", **SETTINGS)
    assert plain.train(mlp_data, steps=2) == losses
    # pipedream-run evaluates the same bundle alike.
    np.savez(tmp_path / "data.npz", **mlp_data)
    np.savez(tmp_path / "eval.npz", **held_out)
    out = subprocess.run(
        [os.path.join(bin_dir, "pipedream-run"), model.bundle_dir, "--data",
         str(tmp_path / "data.npz"), "--steps", "2", "--eval-data",
         str(tmp_path / "eval.npz")], check=True, capture_output=True,
        text=True).stdout
    assert "eval loss after step 2: %.9g" % after in out
    with pytest.raises(ValueError, match="10 samples, not a multiple of the "
                                         "micro-batch size 4"):
        model.evaluate({n: a[:10] for n, a in held_out.items()})
    with pytest.raises(RuntimeError, match="compile it with evaluate=True"):
        plain.evaluate(held_out)
    # Still usable after the refusals.
    assert model.evaluate(held_out) == after


def test_evaluate_replicas(mlp_model, mlp_data, tmp_path):
    """With replicated stages (replicas=2) the replicas share the
    evaluation's micro-batches (3 of 4 samples: 2 on replica 0, 1 on
    replica 1): the loss still equals the float64 forward of the weights,
    before and after training, and evaluating changes no step."""
    model = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "r",
                              evaluate=True, replicas=2, **SETTINGS)
    held_out = {"x": mlp_data["x"][:12], "labels": mlp_data["labels"][:12]}

    def reference(weights):
        return mlp_eval_loss(weights, held_out)

    assert model.evaluate(held_out) == pytest.approx(
        reference(model.weights()), rel=1e-6)
    losses = model.train(mlp_data, steps=2)
    after = model.evaluate(held_out)
    assert after == pytest.approx(reference(model.weights()), rel=1e-6)
    plain = pipedream.compile(mlp_model.model_path, output_dir=tmp_path / "p",
                              replicas=2, **SETTINGS)
    assert plain.train(mlp_data, steps=2) == losses


def test_evaluate_failed_check_keeps_the_trainer(tmp_path):
    """A token id outside GPT-2's embedding fails the evaluation on the
    rank that reads it; every rank agrees (RuntimeError naming the node),
    and the trainer stays usable: the next evaluation and training run."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    model = pipedream.compile(
        os.path.join(root, "models", "corpus", "gpt2-ts.onnx"), stages=2,
        schedule="1f1b", microbatches=2, batch_size=4, loss="cross-entropy",
        optimizer="sgd", lr=0.1, opt_level=0, evaluate=True,
        output_dir=tmp_path / "gpt")
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 64, size=(4, 8))
    data = {"input_ids": ids, "labels": ids}
    good = model.evaluate(data)
    bad = dict(data, input_ids=ids.copy())
    bad["input_ids"][3, 1] = 500
    with pytest.raises(RuntimeError,
                       match="evaluation micro-batch 1, rank 0: node "
                             "'/transformer/wte/Gather' \\(op Gather\\): "
                             "index 500 out of range"):
        model.evaluate(bad)
    assert model.evaluate(data) == good
    (loss,) = model.train(data, steps=1)
    assert np.isfinite(loss)
