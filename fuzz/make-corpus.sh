#!/usr/bin/env bash
# Remakes the seed corpora fuzz/corpus/<target>/ (docs/Fuzzing.md) from
# files pipedream itself writes, with the tools of a normal build:
#   fuzz/make-corpus.sh [BUILD_DIR=build]
# Small on purpose (a tiny model, a few KiB per file): the fuzzers grow
# their own corpus from these in build-sanitize/fuzz/corpus/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
bin=$build/bin
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
corpus=$root/fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{import-onnx,npy,npz,bundle-json,checkpoint,schedule-csv,profile-json,save-onnx}

# A tiny MLP (x f32[4x6] -> Gemm 6x5 -> Relu -> Gemm 5x3 -> Tanh -> Gemm
# 3x3), and numpy files of every dtype the runtime reads.
"$py" - "$tmp" "$corpus" <<'PY'
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto
tmp, corpus = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(0)
w = lambda *s: numpy_helper.from_array(rng.standard_normal(s).astype(np.float32))
inits = []
for name, shape in [("w1", (6, 5)), ("b1", (5,)), ("w2", (5, 3)), ("b2", (3,)),
                    ("w3", (3, 3)), ("b3", (3,))]:
    t = w(*shape); t.name = name; inits.append(t)
nodes = [
    helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1"),
    helper.make_node("Relu", ["h1"], ["a1"], name="relu"),
    helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
    helper.make_node("Tanh", ["h2"], ["a2"], name="tanh"),
    helper.make_node("Gemm", ["a2", "w3", "b3"], ["y"], name="fc3"),
]
graph = helper.make_graph(
    nodes, "tiny",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])], inits)
m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
m.ir_version = 8
onnx.checker.check_model(m)
onnx.save(m, os.path.join(tmp, "tiny.onnx"))
onnx.save(m, os.path.join(corpus, "import-onnx", "tiny-mlp.onnx"))
# Training data for the checkpoints: x f32[8x6], labels i64[8] in [0, 3)
# (cross-entropy) or f32[8x3] (mse).
np.savez(os.path.join(tmp, "data.npz"),
         x=rng.standard_normal((8, 6)).astype(np.float32),
         labels=rng.integers(0, 3, 8).astype(np.int64))
np.savez(os.path.join(tmp, "data-mse.npz"),
         x=rng.standard_normal((8, 6)).astype(np.float32),
         labels=rng.standard_normal((8, 3)).astype(np.float32))
np.savez(os.path.join(tmp, "in.npz"),
         x=rng.standard_normal((4, 6)).astype(np.float32))
# .npy: every dtype, scalars, empty arrays, Fortran order, format 2.0.
d = os.path.join(corpus, "npy")
arrays = {
    "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
    "f64": np.linspace(0, 1, 4),
    "f16": np.array([1.5, -2], dtype=np.float16),
    "i64": np.array([[1], [-2]], dtype=np.int64),
    "i32": np.array([7], dtype=np.int32),
    "i8": np.array([-1, 2, 3], dtype=np.int8),
    "u8": np.array([255, 0], dtype=np.uint8),
    "bool": np.array([True, False]),
    "bf16-bits": np.array([0x3f80, 0xc000], dtype=np.uint16),
    "scalar": np.float32(3.5),
    "empty": np.zeros((0, 3), dtype=np.float32),
    "fortran": np.asfortranarray(np.arange(24, dtype=np.int32).reshape(2, 3, 4)),
}
for name, a in arrays.items():
    np.save(os.path.join(d, name + ".npy"), a)
with open(os.path.join(d, "v2.npy"), "wb") as f:
    np.lib.format.write_array(f, np.arange(3, dtype=np.float32), version=(2, 0))
d = os.path.join(corpus, "npz")
np.savez(os.path.join(d, "savez.npz"), a=arrays["f32"], b=arrays["i64"],
         c=arrays["scalar"])
np.savez_compressed(os.path.join(d, "savez-compressed.npz"),
                    x=arrays["fortran"], y=arrays["bool"])
PY

# More models: the importer tests' smallest (models/make_onnx_tests.py, also
# its truncated and random files) and a few of ONNX's node tests.
"$py" "$root/models/make_onnx_tests.py" "$tmp/models" > /dev/null
find "$tmp/models" -name '*.onnx' -size -3k | sort | head -n 16 |
  while read -r f; do cp "$f" "$corpus/import-onnx/"; done
# GroupNormalization at opsets 21 and 18 and with an empty batch (its
# import once divided by the zero batch: test/Import/ONNX/Inputs).
"$py" "$root/test/Import/ONNX/Inputs/group_norm_cases.py" "$tmp/gn"
for f in g21 g18 empty_batch; do
  cp "$tmp/gn/$f.onnx" "$corpus/import-onnx/groupnorm-$f.onnx"
done
node=/usr/share/libonnx-testdata/data/node
for t in test_gemm_default_no_bias test_conv_with_strides_padding \
         test_softmax_axis_1 test_reshape_negative_dim test_slice_neg_steps \
         test_gather_0 test_maxpool_2d_pads test_layer_normalization_2d_axis0; do
  [ -f "$node/$t/model.onnx" ] && cp "$node/$t/model.onnx" "$corpus/import-onnx/$t.onnx"
done

# Bundles: inference, training (sgd, adam), pipelines (1f1b, gpipe, zb-h1,
# pipedream), and their bundle.json.
compile() { # NAME ARGS...
  local name=$1; shift
  "$bin/pipedream-compile" "$tmp/tiny.onnx" -o "$tmp/$name" -O 1 "$@" > /dev/null
  cp "$tmp/$name/bundle.json" "$corpus/bundle-json/$name.json"
}
compile inference --inference
compile train-sgd --loss cross-entropy --labels-name labels --microbatches 2
compile train-adam --loss mse --optimizer adam
compile pipe-1f1b --loss cross-entropy --stages 2 --microbatches 2
compile pipe-gpipe --loss cross-entropy --stages 2 --microbatches 2 --schedule gpipe
compile pipe-zbh1 --loss cross-entropy --stages 2 --microbatches 2 --schedule zb-h1
compile pipe-pipedream --loss cross-entropy --stages 3 --microbatches 3 --schedule pipedream

# Arrays pipedream-run writes.
"$bin/pipedream-run" "$tmp/inference" --inputs "$tmp/in.npz" \
  --outputs "$corpus/npz/pipedream-run-outputs.npz" > /dev/null

# Checkpoints (checkpoint.json and rank files) of a training bundle and a
# two-stage pipeline.
"$bin/pipedream-run" "$tmp/train-adam" --data "$tmp/data-mse.npz" --steps 2 \
  --checkpoint-dir "$tmp/ck-train" --checkpoint-every 2 > /dev/null
"$bin/pipedream-run" "$tmp/pipe-1f1b" --data "$tmp/data.npz" --steps 2 \
  --checkpoint-dir "$tmp/ck-pipe" --checkpoint-every 2 > /dev/null
for ck in train pipe; do
  cp "$tmp/ck-$ck/checkpoint.json" "$corpus/checkpoint/$ck-checkpoint.json"
  for f in "$tmp/ck-$ck"/*.pdckpt; do
    cp "$f" "$corpus/checkpoint/$ck-$(basename "$f")"
  done
done

# Profiles: pipedream-profile's output, and the lit test's hand-written one.
"$bin/pipedream-profile" "$tmp/tiny.onnx" -o "$corpus/profile-json/tiny.json" \
  --repeats 1 > /dev/null
cp "$root/test/Dialect/Pipe/Inputs/profile.json" "$corpus/profile-json/lit.json"

# Schedule CSVs in torch's format (compute_only; compute_comms with the
# skipped communication actions), and the lit tests' inputs.
cp "$root"/test/Dialect/Pipe/Inputs/*.csv "$corpus/schedule-csv/"
s=$corpus/schedule-csv
printf '0F0,0F1,0B0,0B1\n,1F0,1B0,1F1,1B1\n' > "$s/gpipe-k2m2.csv"
printf '0F0,0F1,,,0I0,0W0,0I1,0W1\n,1F0,1I0,1F1,1I1,1W0,1W1\r\n\r\n' > "$s/zbh1-k2m2.csv"
printf '0F0,0SEND_F0,,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n' > "$s/comms-k2m1.csv"
printf '0F0,2F0,0F1,2F1,2B0,0B0,2B1,0B1\n1F0,3F0,1F1,3F1,3B0,1B0,3B1,1B1\n' > "$s/interleaved-k2v2.csv"
# --save-onnx's reading of model.onnx: small models whose external data
# points at the files fuzz/save-onnx-fuzzer.cpp puts next to the model
# (inside, through a link, outside, missing, damaged fields).
"$py" "$root/fuzz/save-onnx-seeds.py" "$corpus/save-onnx"

echo "make-corpus: $(find "$corpus" -type f | wc -l) files," \
  "$(du -sk "$corpus" | cut -f1) KiB in $corpus"
