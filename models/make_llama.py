#!/opt/venv/bin/python
"""A Llama of TinyLlama-1.1B's shape (or a smaller one), randomly
initialized, exported to ONNX with its weights as external data, and
optionally PyTorch's losses for a few training steps as the reference.

    /opt/venv/bin/python models/make_llama.py OUT_DIR [--size tinyllama|small]
        [--layers L --hidden D --heads H --kv-heads G --intermediate F
         --vocab V] [--microbatch B] [--seq T] [--seed S]
        [--microbatches M] [--reference STEPS --lr LR] [--no-export]

writes
  OUT_DIR/model.onnx        the graph (input_ids i64[B, T] -> logits
                            f32[B, T, V]); every initializer's data in
  OUT_DIR/model.onnx.data   one side file, 64-byte aligned offsets (ONNX
                            external data: location, offset, length)
  OUT_DIR/config.json       the LlamaConfig and the parameter count
  OUT_DIR/data.npz          input_ids and labels, i64[M*B, T] (one batch,
                            used for every step), from --seed
and with --reference (--no-export: only these, for the same model):
  OUT_DIR/reference.json    {"losses": [...]}: PyTorch (float32) training
                            with SGD (lr, no momentum), M micro-batches of B
                            per step (gradient accumulation: the step loss
                            is the mean of the micro-batch losses and the
                            update uses the mean gradient), mean
                            cross-entropy over every position of the logits.

--size tinyllama (the default) is TinyLlama-1.1B's configuration: 22
layers, hidden 2048, 32 heads, 4 KV heads, intermediate 5632, vocab 32000,
rotary embeddings, RMSNorm (eps 1e-5), untied LM head (its
tie_word_embeddings is false): 1.1e9 parameters, 4.4 GB of float32.
--size small is the same architecture at about 100 MB (the CI-sized
variant, bench/scale.py --size small). The explicit flags override
either. transformers builds the model from the config alone (no hub
download); initialization is transformers' (normal, std 0.02) from --seed.

The torchscript exporter (dynamo=False, opset 17) is used, as for the
corpus's llama-ts (docs/Models.md). It writes models over 2 GB as one file
per tensor; either way the weights are then moved into model.onnx.data,
one tensor at a time, so the script never holds a second copy of them.
Needs the venv (torch 2.x, transformers); not run in CI.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import warnings

import numpy as np
import onnx
import torch

from make_corpus import ids_to_logits

SIZES = {
    "tinyllama": dict(layers=22, hidden=2048, heads=32, kv_heads=4,
                      intermediate=5632, vocab=32000),
    "small": dict(layers=4, hidden=512, heads=8, kv_heads=2,
                  intermediate=1408, vocab=8000),
}
ALIGN = 64


def build(args):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                      intermediate_size=args.intermediate,
                      num_hidden_layers=args.layers,
                      num_attention_heads=args.heads,
                      num_key_value_heads=args.kv_heads,
                      max_position_embeddings=max(2048, args.seq),
                      rms_norm_eps=1e-5, rope_theta=10000.0,
                      hidden_act="silu", use_cache=False,
                      tie_word_embeddings=False, attention_bias=False,
                      bos_token_id=1, eos_token_id=2, pad_token_id=None)
    cfg._attn_implementation = "eager"
    torch.manual_seed(args.seed)
    model = ids_to_logits(LlamaForCausalLM)(cfg)
    model.eval()
    return model, cfg


def to_single_file(src_dir, out_dir):
    """Moves every initializer's data (raw_data, or torch's one file per
    tensor) into out_dir/model.onnx.data, one tensor at a time."""
    proto = onnx.load(os.path.join(src_dir, "model.onnx"),
                      load_external_data=False)
    # Tensors in node attributes (Constant values) that torch wrote as
    # external data too: small, put back inline.
    for node in proto.graph.node:
        for attr in node.attribute:
            for t in ([attr.t] if attr.HasField("t") else []) + list(attr.tensors):
                if t.data_location != onnx.TensorProto.EXTERNAL:
                    continue
                fields = {e.key: e.value for e in t.external_data}
                with open(os.path.join(src_dir, fields["location"]), "rb") as f:
                    f.seek(int(fields.get("offset", 0)))
                    n = fields.get("length")
                    t.raw_data = f.read(int(n)) if n is not None else f.read()
                del t.external_data[:]
                t.data_location = onnx.TensorProto.DEFAULT
    data_path = os.path.join(out_dir, "model.onnx.data")
    offset = 0
    with open(data_path, "wb") as data:
        for t in proto.graph.initializer:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                fields = {e.key: e.value for e in t.external_data}
                with open(os.path.join(src_dir, fields["location"]), "rb") as f:
                    f.seek(int(fields.get("offset", 0)))
                    n = fields.get("length")
                    raw = f.read(int(n)) if n is not None else f.read()
            elif (t.HasField("raw_data") and len(t.raw_data) >= 1024 and
                  t.data_type == onnx.TensorProto.FLOAT):
                # Weights; small and integer constants stay in the model,
                # so pipedream-run --save-onnx can write it without the
                # side file.
                raw = t.raw_data
            else:
                continue
            pad = (-offset) % ALIGN
            data.write(b"\0" * pad)
            offset += pad
            data.write(raw)
            t.ClearField("raw_data")
            del t.external_data[:]
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", "model.onnx.data"),
                               ("offset", str(offset)),
                               ("length", str(len(raw)))):
                e = t.external_data.add()
                e.key, e.value = key, value
            offset += len(raw)
            del raw
    with open(os.path.join(out_dir, "model.onnx"), "wb") as f:
        f.write(proto.SerializeToString())
    return offset


def export(model, args):
    example = torch.zeros((args.microbatch, args.seq), dtype=torch.int64)
    tmp = tempfile.mkdtemp(prefix="make_llama-", dir=args.out)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(model, (example,), os.path.join(tmp, "model.onnx"),
                              dynamo=False, opset_version=17,
                              input_names=["input_ids"],
                              output_names=["logits"],
                              do_constant_folding=True)
        return to_single_file(tmp, args.out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def make_data(args):
    rng = np.random.default_rng(args.seed)
    rows = args.microbatches * args.microbatch
    ids = rng.integers(0, args.vocab, size=(rows, args.seq)).astype(np.int64)
    labels = rng.integers(0, args.vocab, size=(rows, args.seq)).astype(np.int64)
    np.savez(os.path.join(args.out, "data.npz"), input_ids=ids, labels=labels)
    return ids, labels


def reference(model, args):
    ids, labels = make_data(args)
    params = [p for p in model.parameters()]
    losses = []
    for _ in range(args.reference):
        for p in params:
            p.grad = None
        total = 0.0
        for m in range(args.microbatches):
            rows_m = slice(m * args.microbatch, (m + 1) * args.microbatch)
            logits = model(torch.from_numpy(ids[rows_m]))
            loss = torch.nn.functional.cross_entropy(
                logits.reshape(-1, args.vocab),
                torch.from_numpy(labels[rows_m]).reshape(-1))
            (loss / args.microbatches).backward()
            total += loss.item()
            del logits, loss
        losses.append(total / args.microbatches)
        with torch.no_grad():
            for p in params:
                p.sub_(args.lr * p.grad)
    with open(os.path.join(args.out, "reference.json"), "w") as f:
        json.dump({"losses": losses, "lr": args.lr,
                   "microbatches": args.microbatches,
                   "microbatch": args.microbatch, "seq": args.seq,
                   "dtype": "float32"}, f, indent=1)
    return losses


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("out")
    p.add_argument("--size", choices=sorted(SIZES), default="tinyllama")
    for name in ("layers", "hidden", "heads", "kv-heads", "intermediate",
                 "vocab"):
        p.add_argument("--" + name, type=int)
    p.add_argument("--microbatch", type=int, default=1)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reference", type=int, default=0, metavar="STEPS")
    p.add_argument("--microbatches", type=int, default=8)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--no-export", action="store_true",
                   help="only data.npz and, with --reference, the losses "
                        "(the same model: same seed and sizes)")
    args = p.parse_args()
    for key, value in SIZES[args.size].items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(max(1, os.cpu_count() or 1))
    model, cfg = build(args)
    n = sum(p.numel() for p in model.parameters())
    print(f"llama: {args.layers} layers, hidden {args.hidden}, {n} "
          f"parameters ({4 * n / 1e9:.2f} GB f32)", flush=True)
    if not args.no_export:
        with torch.no_grad():
            data_bytes = export(model, args)
        print(f"wrote {args.out}/model.onnx and model.onnx.data "
              f"({data_bytes} bytes)", flush=True)
        with open(os.path.join(args.out, "config.json"), "w") as f:
            json.dump({"parameters": n, "microbatch": args.microbatch,
                       "seq": args.seq, "seed": args.seed,
                       "config": cfg.to_dict()}, f, indent=1, default=str)
    make_data(args)
    if args.reference:
        losses = reference(model, args)
        print("reference losses: " + " ".join(f"{l:.6f}" for l in losses),
              flush=True)


if __name__ == "__main__":
    sys.exit(main())
