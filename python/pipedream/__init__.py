"""pipedream from Python: compile, inspect, train and plot.

    import torch, pipedream
    model = pipedream.compile(torch_module, example_inputs=(x,), stages=2,
                              schedule="1f1b", microbatches=4)
    model.report                  # the JSON report (pipedream-compile
                                  # --report-json), as a dict
    model.mlir("scheduled")       # IR after a phase
    model.timeline().savefig("schedule.png")
    losses = model.train({"x": X, "labels": y}, steps=100)
    model.weights()["fc1.weight"] # numpy arrays
    model.save_onnx("trained.onnx")

The compiler runs in this process (the library behind pipedream-compile)
and training runs every pipeline rank on a thread of this process through
the runtime's pipeline C API, as `pipedream-run --transport threads` does.
See python/README.md.
"""

import json
import os
import shutil
import tempfile
import weakref

from . import _pipedream

__all__ = ["CompileError", "CompiledModel", "compile", "PHASES"]

#: The phases `CompiledModel.mlir` can stop after (pipedream-compile --emit).
PHASES = ("nn", "train", "linalg", "llvm-dialect", "llvm", "partitioned",
          "scheduled")


class CompileError(Exception):
    """A compilation failed; the message is pipedream-compile's one-line
    error (without its "error: " prefix), e.g. the ONNX node, op and opset
    the importer cannot handle."""


def _native_compile(options):
    result = _pipedream.compile(options)
    if result["error"]:
        raise CompileError(result["error"])
    return result


def _export_torch(module, example_inputs, path, input_names, output_names,
                  opset):
    import torch  # only needed for torch modules

    if example_inputs is None:
        raise TypeError("compile: a torch.nn.Module needs example_inputs "
                        "(a tensor or a tuple of tensors of one "
                        "micro-batch)")
    if not isinstance(example_inputs, tuple):
        example_inputs = (example_inputs,)
    if input_names is None:
        input_names = (["x"] if len(example_inputs) == 1 else
                       ["x%d" % i for i in range(len(example_inputs))])
    if output_names is None:
        output_names = ["y"]
    torch.onnx.export(module, example_inputs, path,
                      input_names=list(input_names),
                      output_names=list(output_names),
                      opset_version=opset, do_constant_folding=True)


class CompiledModel:
    """A compiled bundle (docs/Bundle.md) and what produced it.

    Attributes: `bundle_dir` (the bundle), `model_path` (the ONNX model it
    was compiled from), `report` (dict), `report_text` (the human-readable
    report of `pipedream-compile --report`), `options` (the driver options).
    """

    def __init__(self, options, result, work_dir, model_path, temporary):
        self.options = dict(options)
        self.bundle_dir = options["output"]
        self.model_path = model_path
        self.work_dir = work_dir
        self.report = (json.loads(result["report_json"])
                       if result["report_json"] else {})
        self.report_text = result["report_text"]
        self._trace_path = options.get("trace")
        self._ir = {}
        self._trainer = None
        if temporary:
            self._cleanup = weakref.finalize(self, shutil.rmtree, work_dir,
                                             ignore_errors=True)

    def __repr__(self):
        schedule = self.report.get("schedule", {})
        return ("<pipedream.CompiledModel %s K=%s M=%s at %s>" %
                (schedule.get("kind", "inference"), schedule.get("K", 1),
                 schedule.get("M", 1), self.bundle_dir))

    # -- Inspection ---------------------------------------------------------

    def mlir(self, phase="scheduled"):
        """The IR after `phase` (one of PHASES; `llvm` is LLVM IR), as
        `pipedream-compile --emit PHASE` prints it."""
        if phase not in PHASES:
            raise ValueError("mlir: phase %r: expected one of %s" %
                             (phase, ", ".join(PHASES)))
        if phase not in self._ir:
            options = {k: v for k, v in self.options.items()
                       if k not in ("output", "trace", "report_json",
                                    "timeline", "report")}
            options["emit"] = phase
            # Pipeline flags only apply to the partitioned/scheduled phases.
            if phase not in ("partitioned", "scheduled"):
                for key in ("stages", "virtual_stages", "schedule",
                            "split_after", "partition", "cost_model",
                            "device", "memory_limit", "replicas",
                            "shard_optimizer", "ranks", "recompute"):
                    options.pop(key, None)
            self._ir[phase] = _native_compile(options)["ir"]
        return self._ir[phase]

    def schedule_events(self):
        """The simulated schedule the report is computed from: a list of
        dicts (rank, action "F"/"B"/"W", microbatch, stage, chunk, start,
        end) in microseconds of the cost model's stage costs."""
        if not self._trace_path or not os.path.exists(self._trace_path):
            raise RuntimeError("this model has no pipeline schedule "
                               "(compiled with loss=None?)")
        with open(self._trace_path) as f:
            trace = json.load(f)
        events = []
        for e in trace["traceEvents"]:
            if e.get("ph") != "X":
                continue
            a = e["args"]
            events.append({"rank": a["rank"], "action": a["action"],
                           "microbatch": a["microbatch"],
                           "stage": a["stage"], "chunk": a["chunk"],
                           "start": e["ts"], "end": e["ts"] + e["dur"]})
        return events

    def timeline(self, ax=None, figsize=None, labels=True):
        """The pipeline schedule as a matplotlib Figure: one row per rank,
        one box per forward (F), backward (B) and weight-gradient (W) step
        of each micro-batch, at the simulated times. Draws into `ax` when
        given. Save it with `.savefig("schedule.png")`."""
        from . import _timeline

        return _timeline.plot(self, ax=ax, figsize=figsize, labels=labels)

    # -- Training -----------------------------------------------------------

    def _pipeline(self):
        if self._trainer is None:
            if self.options.get("inference"):
                raise RuntimeError("an inference bundle does not train "
                                   "(compile with a loss)")
            self._trainer = _pipedream.PipelineTrainer(self.bundle_dir)
        return self._trainer

    @property
    def input_names(self):
        """The data arrays a training step reads besides the labels."""
        return list(self._pipeline().input_names)

    @property
    def labels_name(self):
        return self._pipeline().labels_name

    @property
    def batch_size(self):
        """Samples per optimizer step (micro-batches x micro-batch size)."""
        return self._pipeline().batch_size

    @property
    def steps_trained(self):
        return self._pipeline().steps

    def train(self, data, steps=1):
        """Runs `steps` optimizer steps on `data` ({name: array}: every input
        of `input_names` and the labels, samples on the first axis); step s
        (counted over every call) uses samples [s*B, (s+1)*B) modulo the
        data's length, B = batch_size, as pipedream-run does. Returns the
        step losses (floats). Weights and optimizer state carry over to the
        next call."""
        if steps < 0:
            raise ValueError("train: steps must be >= 0")
        return list(self._pipeline().train(dict(data), int(steps)))

    def evaluate(self, data):
        """The mean loss of the model as trained so far in eval mode
        (Dropout off, BatchNorm with its running statistics) over every
        sample of `data` ({name: array}, as for train; the number of samples
        a multiple of the micro-batch size), through each rank's evaluation
        program; changes nothing. Needs compile(..., evaluate=True)."""
        return float(self._pipeline().evaluate(dict(data)))

    @property
    def grad_norms(self):
        """With clip_grad_norm=: the gradient norm of every step so far,
        before clipping (what torch.nn.utils.clip_grad_norm_ returns; the
        grad_norm column of pipedream-run --loss-log); NaN without it."""
        return list(self._pipeline().grad_norms)

    def weights(self):
        """{name: numpy array}: every weight as trained so far (copies)."""
        return self._pipeline().weights()

    def save_onnx(self, path):
        """Writes the model (ONNX) with the trained weights to `path`, as
        `pipedream-run --save-onnx` does."""
        self._pipeline().save_onnx(os.fspath(path))


def compile(model, stages=4, schedule="1f1b", microbatches=8,
            loss="cross-entropy", optimizer="adam", lr=1e-3, target="cpu", *,
            example_inputs=None, input_names=None, output_names=None,
            opset=17, output_dir=None, **options):
    """Compiles `model` into a pipeline training bundle (or, with loss=None,
    a single-rank inference bundle).

    model: an ONNX file path, an onnx.ModelProto, or a torch.nn.Module with
      `example_inputs` (one micro-batch; exported with torch.onnx.export,
      `input_names` default ["x"], `output_names` ["y"], `opset`).
    stages, schedule, microbatches, loss, optimizer, lr, target: as the
      pipedream-compile flags of the same names (docs/CLI.md).
    output_dir: where the bundle goes (OUTPUT_DIR/bundle); a temporary
      directory removed with the model by default.
    **options: any other pipedream-compile flag, '-' written '_':
      virtual_stages, replicas, shard_optimizer, ranks, recompute,
      batch_size,
      labels_name, momentum, nesterov,
      weight_decay, beta1, beta2, eps, lr_schedule, warmup_steps,
      total_steps, clip_grad_norm, evaluate, partition, split_after,
      cost_model,
      device, memory_limit, input_shapes, target_cpu, opt_level, gemm,
      onnx_checker (False for --no-onnx-checker), freeze / train (lists
      of weight names or regular expressions, as --freeze / --train).

    Raises CompileError with pipedream-compile's one-line message.
    """
    temporary = output_dir is None
    work_dir = (tempfile.mkdtemp(prefix="pipedream-") if temporary
                else os.path.abspath(os.fspath(output_dir)))
    try:
        os.makedirs(work_dir, exist_ok=True)
        model_path = _model_path(model, work_dir, example_inputs,
                                 input_names, output_names, opset)
        driver = {"input": model_path,
                  "output": os.path.join(work_dir, "bundle"),
                  "target": target}
        if loss is None:
            driver["inference"] = True
        else:
            driver.update(loss=loss, stages=stages, schedule=schedule,
                          microbatches=microbatches, optimizer=optimizer,
                          lr=lr, trace=os.path.join(work_dir,
                                                    "schedule.trace.json"))
        for key, value in options.items():
            if value is not None:
                driver[key] = value
        result = _native_compile(driver)
    except BaseException:
        if temporary:
            shutil.rmtree(work_dir, ignore_errors=True)
        raise
    return CompiledModel(driver, result, work_dir, model_path, temporary)


def _model_path(model, work_dir, example_inputs, input_names, output_names,
                opset):
    if isinstance(model, (str, os.PathLike)):
        return os.path.abspath(os.fspath(model))
    path = os.path.join(work_dir, "model.onnx")
    if hasattr(model, "SerializeToString") and hasattr(model, "graph"):
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path
    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None and isinstance(model, torch.nn.Module):
        _export_torch(model, example_inputs, path, input_names, output_names,
                      opset)
        return path
    raise TypeError("compile: model must be an ONNX path, an "
                    "onnx.ModelProto or a torch.nn.Module, not %s" %
                    type(model).__name__)
