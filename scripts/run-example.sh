#!/usr/bin/env bash
# The README's main job on the bundled example: installs dependencies,
# builds, imports examples/mlp.onnx (a small PyTorch-exported MLP) into the
# nn dialect and prints a summary, compiles its forward to a native bundle and
# runs it on random inputs, then compiles the training program (autodiff,
# cross-entropy, Adam, 4 micro-batches) and trains it for 30 steps on a small
# synthetic classification task, printing the losses and saving the trained
# model as ONNX; finally compiles it into a 2-stage 1F1B pipeline (partition,
# per-stage autodiff, unrolled and verified schedule, report and timeline)
# and trains it over 2 MPI processes (threads when mpirun is missing).
#   scripts/run-example.sh [--no-deps] [MODEL.onnx]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPEDREAM_BUILD_DIR:-$root/build}
if [ "${1:-}" = "--no-deps" ]; then
  shift
else
  "$root/scripts/install-deps.sh" --no-torch
fi
model=${1:-$root/examples/mlp.onnx}
"$root/scripts/build.sh" --target pipedream-translate pipedream-opt pipedream-compile \
  pipedream-run >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "== import: pipedream-translate --import-onnx $(basename "$model") --summary"
"$build/bin/pipedream-translate" --import-onnx "$model" --summary
"$build/bin/pipedream-translate" --import-onnx "$model" -o "$out/model.mlir"
# Round trip through pipedream-opt: the imported IR parses and verifies.
"$build/bin/pipedream-opt" "$out/model.mlir" -o /dev/null

echo
echo "== compile: pipedream-compile --inference -o bundle"
"$build/bin/pipedream-compile" "$model" --inference -o "$out/bundle"
ls -l "$out/bundle" | tail -n +2

echo
echo "== run: pipedream-run bundle --inputs in.npz --outputs out.npz (random inputs)"
# Random inputs shaped as the bundle's manifest says (fixed seed).
/usr/bin/python3 - "$out/bundle/bundle.json" "$out/in.npz" <<'PY'
import json, sys
import numpy as np
manifest = json.load(open(sys.argv[1]))
fn = next(f for f in manifest["functions"] if f["name"] == "main")
rng = np.random.default_rng(0)
arrays = {}
for b in fn["buffers"]:
    if b["role"] != "input":
        continue
    if b["dtype"].startswith("f"):
        arrays[b["name"]] = rng.standard_normal(b["shape"]).astype(np.dtype("float" + b["dtype"][1:]))
    else:
        arrays[b["name"]] = np.zeros(b["shape"], dtype=np.int64)
    print(f"  input  {b['name']}: {b['dtype']}{b['shape']}")
np.savez(sys.argv[2], **arrays)
PY
"$build/bin/pipedream-run" "$out/bundle" --inputs "$out/in.npz" --outputs "$out/out.npz"
/usr/bin/python3 - "$out/out.npz" <<'PY'
import sys
import numpy as np
with np.load(sys.argv[1]) as outs:
    for name in outs.files:
        a = outs[name]
        print(f"  output {name}: {a.dtype}{list(a.shape)} mean {a.mean():.6f} std {a.std():.6f}")
        print("   ", np.array2string(a.reshape(-1)[:6], precision=4), "...")
PY

echo
echo "== train: pipedream-compile --loss cross-entropy --optimizer adam --microbatches 4 --batch-size 32"
"$build/bin/pipedream-compile" "$model" -o "$out/train" --loss cross-entropy \
  --optimizer adam --lr 0.01 --microbatches 4 --batch-size 32
# A learnable task: the label of x is the argmax of a fixed random linear map.
/usr/bin/python3 - "$out/train/bundle.json" "$out/data.npz" <<'PY'
import json, sys
import numpy as np
manifest = json.load(open(sys.argv[1]))
training = manifest["training"]
step = next(f for f in manifest["functions"] if f["name"] == training["step_function"])
x_buf = next(b for b in step["buffers"] if b["name"] == training["inputs"][0])
rng = np.random.default_rng(0)
features = x_buf["shape"][1:]
x = rng.standard_normal([512] + features).astype(np.float32)
proj = rng.standard_normal([int(np.prod(features)), training["num_classes"]])
labels = np.argmax(x.reshape(512, -1) @ proj, axis=1).astype(np.int64)
np.savez(sys.argv[2], **{x_buf["name"]: x, training["labels"]: labels})
print(f"  data   {x_buf['name']}: f32{list(x.shape)}, {training['labels']}: i64[512] "
      f"in [0, {training['num_classes']}); batch {training['batch_size']} = "
      f"{training['microbatches']} x {training['microbatch_size']}")
PY
echo "== train: pipedream-run train --data data.npz --steps 30 --loss-log loss.csv --save-onnx trained.onnx"
"$build/bin/pipedream-run" "$out/train" --data "$out/data.npz" --steps 30 \
  --loss-log "$out/loss.csv" --save-onnx "$out/trained.onnx"
/usr/bin/python3 - "$out/trained.onnx" "$model" <<'PY'
import sys
import onnx
from onnx import numpy_helper
trained, original = (onnx.load(p) for p in sys.argv[1:3])
onnx.checker.check_model(trained)
before = {i.name: numpy_helper.to_array(i) for i in original.graph.initializer}
changed = sum(not (numpy_helper.to_array(i) == before[i.name]).all()
              for i in trained.graph.initializer if i.name in before)
print(f"  trained.onnx passes the ONNX checker; {changed}/{len(before)} weights changed")
PY

echo
echo "== pipeline: pipedream-compile --stages 2 --schedule 1f1b --microbatches 4 --report --trace trace.json"
"$build/bin/pipedream-compile" "$model" -o "$out/pipeline" --loss cross-entropy \
  --optimizer adam --lr 0.01 --stages 2 --schedule 1f1b --microbatches 4 \
  --batch-size 32 --report --report-json "$out/report.json" \
  --trace "$out/trace.json" --timeline "$out/timeline.svg"
if command -v mpirun >/dev/null 2>&1; then
  ranks=(--ranks 2)
  echo "== pipeline: pipedream-run pipeline --ranks 2 (mpirun) --data data.npz --steps 30"
else
  ranks=(--transport threads)
  echo "== pipeline: pipedream-run pipeline --transport threads --data data.npz --steps 30 (no mpirun)"
fi
"$build/bin/pipedream-run" "$out/pipeline" "${ranks[@]}" --data "$out/data.npz" \
  --steps 30 --loss-log "$out/pipeline-loss.csv"
/usr/bin/python3 - "$out/loss.csv" "$out/pipeline-loss.csv" <<'PY'
import csv, sys
single, piped = ([float(r["loss"]) for r in csv.DictReader(open(p))] for p in sys.argv[1:3])
worst = max(abs(a - b) / abs(b) for a, b in zip(piped, single))
print(f"  pipelined losses equal the single-rank run's: worst relative difference {worst:.1e} over {len(single)} steps")
PY
