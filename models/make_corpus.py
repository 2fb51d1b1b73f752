#!/opt/venv/bin/python
"""Builds the model corpus: real transformers/torchvision models as users
export them, with PyTorch float64 references (docs/Models.md).

    /opt/venv/bin/python models/make_corpus.py [--out models/corpus]
        [--only NAME,...] [--no-ort]

Needs the venv's torch 2.x, transformers, torchvision, onnxscript and
onnxruntime (not available in CI: the files it writes are committed and
test/Models/models.py checks pipedream against them with numpy + onnx).

Every model is a small config built in code (no hub download), randomly
initialized from a fixed seed, its float parameters then perturbed by
N(0, 0.02^2) (BatchNorm running statistics likewise) so that no two
initializers are equal (torch.onnx's
torchscript exporter merges equal initializers, and LayerNorm weights of
1 and zero biases would make an initializer's origin ambiguous). Each is
exported with both exporters where they work:

- `ts`: `torch.onnx.export(..., dynamo=False, opset_version=17,
  training=PRESERVE)` (BatchNormalization kept as an op, eval mode),
  constant folding on;
- `dynamo`: `torch.onnx.export(..., dynamo=True, opset_version=18)` with
  the exporter's onnxscript optimizer;
- an entry of OPSETS at its own opset (`unet-dynamo21`: opset 21, where
  nn.GroupNorm becomes the GroupNormalization op).

Default export settings can make the file differ from the PyTorch model
it came from, in ways that no ONNX trainer can undo: both exporters' constant
folding turns the transposed use of a tied embedding (GPT-2's and T5's LM
head) into a second, independent initializer; the dynamo exporter's
optimizer fuses BatchNorm into the convolution (eval-mode arithmetic, no
batch statistics) and folds position embeddings into their used slice.
The script checks that every parameter and BatchNorm running statistic
is exactly one initializer (equal or transposed); where the default export
breaks that, it re-exports with folding limited (`ts`:
do_constant_folding=False; `dynamo`: optimize=False, then the onnxscript
optimizer with the parameters held as graph inputs while it runs, so it
folds shape chains and masks but never a parameter)
and records it in corpus.json (`tie_safe_export`, `default_export_loses`).

Static batch: each export's batch is the micro-batch size B (2), plus a
few `-b4` exports with a static batch of 4 trained with micro-batches of
2 (for the batch re-specialization of DESIGN.md "Batch").

References, in `NAME.npz` next to `NAME.onnx` (float32 storage of float64
values):
- `forward/<input>`, `forward/output`: the float64 model's first output
  (eval mode) for a fixed input of the export's static batch;
- `data/<input>`, `data/labels`: the training samples (3 steps x M x B);
  float inputs (images, multiples of 1/64) are stored as float16, exactly;
- `sgd/loss`, `sgd/w/<initializer>`: 3 steps of SGD (lr from corpus.json),
  one micro-batch of B per step, mean cross-entropy over every position
  of the first output's last axis;
- `pipe/loss`, `pipe/w/<initializer>`: 3 steps with M micro-batches of B
  (gradient accumulation, the step loss the mean of the micro-batch
  losses), which a synchronous pipeline schedule must equal;
- for CLIP_MODELS, in `NAME.clip.npz`, `clip/loss`, `clip/w/<initializer>`:
  the same with torch.nn.utils.clip_grad_norm_(CLIP_MAX) before each step
  (`--clip-references` rewrites only these, from the existing exports).

Trained weights are by ONNX initializer name: the trained model (float64,
rounded to float32) is exported again with the same exporter and settings,
so every initializer, including those the exporter derived from parameters
by folding (a transposed Linear weight, a slice of a position embedding),
has its expected value; an initializer left out of `sgd/w/` must keep its
initial value (a constant: mask, shape, rotary table).
The forward output is also checked against onnxruntime on the exported file.
"""

import argparse
import copy
import json
import os
import sys
import tempfile
import warnings

import numpy as np
import onnx
from onnx import numpy_helper
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
STEPS = 3
MICRO = 2          # micro-batch size B
PIPE_M = 4         # micro-batches of the pipeline reference
# Gradient clipping references (`NAME.clip.npz`): the pipeline reference's
# M micro-batches with torch.nn.utils.clip_grad_norm_(MAX) before each SGD
# step, for models whose pipelines split tied or shared weights (GPT-2's
# head, ALBERT's layers) or hold BatchNorm statistics. MAX is below every
# step's norm, so every step is clipped.
CLIP_MODELS = ("gpt2-ts", "albert-ts", "bert-dynamo", "resnet-ts")
CLIP_MAX = 0.05
SEQ = 8


# ---------------------------------------------------------------- models

def _logits_only(cls, call):
    """A subclass of an HF model whose forward returns only the logits
    (transformers 5's return_dict=False is broken for several models)."""
    return type(cls.__name__, (cls,), {"forward": call})


def ids_to_logits(cls):
    """A subclass of the HF model class `cls` whose forward takes only
    input_ids and returns only the logits. It passes an explicit all-ones
    attention mask: without one, transformers 5 looks for packed sequences
    with torch.diff, which the torchscript exporter cannot export."""
    def forward(self, input_ids):
        return cls.forward(self, input_ids=input_ids,
                           attention_mask=torch.ones_like(input_ids)).logits
    return _logits_only(cls, forward)


def pixels_to_logits(cls):
    """A subclass of the HF image model class `cls` whose forward takes only
    pixel_values and returns only the logits."""
    def forward(self, pixel_values):
        return cls.forward(self, pixel_values=pixel_values).logits
    return _logits_only(cls, forward)


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(n_layer=2, n_embd=32, n_head=2, vocab_size=64,
                     n_positions=16, resid_pdrop=0.0, embd_pdrop=0.0,
                     attn_pdrop=0.0, use_cache=False, bos_token_id=0,
                     eos_token_id=0, tie_word_embeddings=True)
    cfg._attn_implementation = "eager"
    model = ids_to_logits(GPT2LMHeadModel)(cfg)
    assert model.lm_head.weight is model.transformer.wte.weight
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("tokens", (SEQ,), 64)


# pad_token_id=None for BERT and Llama: with a pad token, the embedding is
# nn.Embedding(padding_idx=...), whose padding row PyTorch never updates;
# the ONNX export (a plain Gather) cannot say so, so no ONNX trainer could
# match PyTorch on data that contains the pad token.


def bert():
    from transformers import BertConfig, BertForSequenceClassification
    cfg = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                     num_attention_heads=2, intermediate_size=64,
                     max_position_embeddings=16, type_vocab_size=2,
                     hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                     classifier_dropout=0.0, num_labels=4,
                     pad_token_id=None)
    cfg._attn_implementation = "eager"
    # token_type_ids left to the model: its buffer, gathered along the
    # positions (torch.gather, i.e. GatherElements).
    model = ids_to_logits(BertForSequenceClassification)(cfg)
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("class", (), 4)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, max_position_embeddings=16,
                      use_cache=False, tie_word_embeddings=False,
                      bos_token_id=0, eos_token_id=0, pad_token_id=None)
    cfg._attn_implementation = "eager"
    model = ids_to_logits(LlamaForCausalLM)(cfg)
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("tokens", (SEQ,), 64)


def vit():
    from transformers import ViTConfig, ViTForImageClassification
    cfg = ViTConfig(image_size=16, patch_size=4, num_channels=3,
                    hidden_size=32, num_hidden_layers=2,
                    num_attention_heads=2, intermediate_size=64,
                    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                    num_labels=10)
    cfg._attn_implementation = "eager"
    model = pixels_to_logits(ViTForImageClassification)(cfg)
    return model, {"pixel_values": ("image", (3, 16, 16), None)}, ("class", (), 10)


def t5():
    from transformers import T5Config, T5ForConditionalGeneration
    cfg = T5Config(vocab_size=64, d_model=32, d_kv=16, d_ff=64, num_layers=1,
                   num_decoder_layers=1, num_heads=2,
                   relative_attention_num_buckets=8,
                   relative_attention_max_distance=16, dropout_rate=0.0,
                   use_cache=False, tie_word_embeddings=True,
                   decoder_start_token_id=0, pad_token_id=0, eos_token_id=1)
    cfg._attn_implementation = "eager"
    cls = T5ForConditionalGeneration

    def forward(self, input_ids, decoder_input_ids):
        return cls.forward(
            self, input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            decoder_input_ids=decoder_input_ids,
            decoder_attention_mask=torch.ones_like(decoder_input_ids)).logits
    model = _logits_only(cls, forward)(cfg)
    return (model, {"input_ids": ("tokens", (SEQ,), 64),
                    "decoder_input_ids": ("tokens", (SEQ,), 64)},
            ("tokens", (SEQ,), 64))


def albert():
    """transformers' ALBERT: one set of layer weights shared by every layer
    (cross-layer parameter sharing: a pipeline splits the layers, not the
    weights) and a factorized embedding (16 -> 32)."""
    from transformers import AlbertConfig, AlbertForSequenceClassification
    cfg = AlbertConfig(vocab_size=64, embedding_size=16, hidden_size=32,
                       num_hidden_layers=2, num_attention_heads=2,
                       intermediate_size=64, max_position_embeddings=16,
                       hidden_dropout_prob=0.0,
                       attention_probs_dropout_prob=0.0,
                       classifier_dropout_prob=0.0, num_labels=4,
                       pad_token_id=None)
    cfg._attn_implementation = "eager"
    model = ids_to_logits(AlbertForSequenceClassification)(cfg)
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("class", (), 4)


def wav2vec2():
    """transformers' wav2vec 2.0 on 400 raw audio samples: 1-d
    convolutions with GroupNorm, a convolutional position embedding under
    weight normalization (grouped), GELU, a transformer encoder, mean
    pooling and a classifier."""
    from transformers import Wav2Vec2Config, Wav2Vec2ForSequenceClassification
    cfg = Wav2Vec2Config(hidden_size=32, num_hidden_layers=2,
                         num_attention_heads=2, intermediate_size=64,
                         conv_dim=(16, 16), conv_stride=(5, 2),
                         conv_kernel=(10, 3), num_conv_pos_embeddings=8,
                         num_conv_pos_embedding_groups=4, hidden_dropout=0.0,
                         attention_dropout=0.0, activation_dropout=0.0,
                         feat_proj_dropout=0.0, layerdrop=0.0,
                         mask_time_prob=0.0, classifier_proj_size=16,
                         num_labels=4, feat_extract_norm="group")
    cfg._attn_implementation = "eager"
    cls = Wav2Vec2ForSequenceClassification

    def forward(self, input_values):
        return cls.forward(self, input_values=input_values).logits
    model = _logits_only(cls, forward)(cfg)
    return model, {"input_values": ("image", (400,), None)}, ("class", (), 4)


def unet():
    """A diffusion-style UNet at 8-16 channels (written here: no small
    config of a library's UNet exports without its timestep embedding):
    residual blocks of GroupNorm (2 groups) + SiLU + 3x3 convolution with a
    1x1 skip, a strided convolution down, a transposed convolution up, the
    skip concatenated, a nearest-neighbour upsample, global mean and a
    classifier. With opset 21 torch.onnx exports nn.GroupNorm as
    GroupNormalization (the `unet-dynamo21` entry)."""
    from torch import nn

    class Block(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.n1 = nn.GroupNorm(2, cin)
            self.c1 = nn.Conv2d(cin, cout, 3, padding=1)
            self.n2 = nn.GroupNorm(2, cout)
            self.c2 = nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1)

        def forward(self, x):
            h = self.c1(F.silu(self.n1(x)))
            h = self.c2(F.silu(self.n2(h)))
            return h + self.skip(x)

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.inp = nn.Conv2d(3, 8, 3, padding=1)
            self.d1 = Block(8, 8)
            self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
            self.mid = Block(16, 16)
            self.up = nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
            self.u1 = Block(16, 8)
            self.up2 = nn.Upsample(scale_factor=2, mode="nearest")
            self.head = nn.Linear(8, 10)

        def forward(self, x):
            h0 = self.d1(self.inp(x))
            h = self.mid(self.down(h0))
            h = self.u1(torch.cat([self.up(h), h0], 1))
            return self.head(self.up2(h).mean((2, 3)))

    return UNet(), {"x": ("image", (3, 16, 16), None)}, ("class", (), 10)


def resnet():
    """torchvision's ResNet(BasicBlock, [1, 1, 1, 1]) at 1/16 width
    (stem and stages 4-8-16-32 channels instead of 64-128-256-512),
    without the stem's max-pool."""
    from torch import nn
    from torchvision.models.resnet import BasicBlock, ResNet

    class SmallResNet(ResNet):
        def __init__(self):
            super().__init__(BasicBlock, [1, 1, 1, 1], num_classes=10)

        def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
            if planes == 64:        # the first stage: after the stem
                self.inplanes = 4
            return super()._make_layer(block, planes // 16, blocks, stride,
                                       dilate)

    model = SmallResNet()
    model.conv1 = nn.Conv2d(3, 4, kernel_size=7, stride=2, padding=3,
                            bias=False)
    model.bn1 = nn.BatchNorm2d(4)
    model.fc = nn.Linear(32, 10)
    nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out",
                            nonlinearity="relu")
    # No stem max-pool (the usual adaptation to 32x32 inputs): the last
    # stage sees 2x2 pixels, so its BatchNorms normalize 8 values per
    # channel at batch 2, not 2 (degenerate: outputs +-1, gradients
    # rounding noise).
    model.maxpool = nn.Identity()
    return model, {"x": ("image", (3, 32, 32), None)}, ("class", (), 10)


def mobilenetv2():
    """torchvision's MobileNetV2, width_mult 0.25, its first four inverted
    residual stages and a last convolution to 64 channels (the full model
    has 250k parameters)."""
    from torchvision.models.mobilenetv2 import MobileNetV2
    model = MobileNetV2(num_classes=10, width_mult=0.25,
                        inverted_residual_setting=[[1, 16, 1, 1],
                                                   [6, 24, 2, 2],
                                                   [6, 32, 2, 2],
                                                   [6, 64, 1, 2]])
    # The last 1x1 convolution to 64 channels, not 1280 (which would be
    # three quarters of the parameters).
    from torchvision.ops.misc import Conv2dNormActivation
    from torch import nn
    model.features[-1] = Conv2dNormActivation(16, 64, kernel_size=1,
                                              activation_layer=nn.ReLU6)
    model.classifier[1] = nn.Linear(64, 10)
    model.last_channel = 64
    for m in list(model.features[-1].modules()) + [model.classifier[1]]:
        if isinstance(m, nn.Conv2d):        # torchvision's initialization
            nn.init.kaiming_normal_(m.weight, mode="fan_out")
        elif isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0, 0.01)
            nn.init.zeros_(m.bias)
    model.classifier[0].p = 0.0    # Dropout: not in the eval-mode export
    return model, {"x": ("image", (3, 32, 32), None)}, ("class", (), 10)


def convnext():
    """torchvision's ConvNeXt with two stages of one block each (8 and 16
    channels; the tiny model has 96-768 in 3-3-9-3): depthwise 7x7
    convolutions, LayerNorm over channels (permutes around it), GELU,
    layer scale."""
    from torchvision.models.convnext import CNBlockConfig, ConvNeXt
    model = ConvNeXt([CNBlockConfig(8, 16, 1), CNBlockConfig(16, None, 1)],
                     stochastic_depth_prob=0.0, layer_scale=0.5,
                     num_classes=10)
    return model, {"x": ("image", (3, 32, 32), None)}, ("class", (), 10)


def efficientnet():
    """torchvision's EfficientNet-B0 at width 0.25, its first three MBConv
    stages and a last convolution to 64 channels: SiLU, depthwise
    convolutions, squeeze-and-excitation (a global pool, two 1x1
    convolutions, Sigmoid, a broadcast product), BatchNorm."""
    from torchvision.models.efficientnet import (EfficientNet,
                                                 _efficientnet_conf)
    setting, _ = _efficientnet_conf("efficientnet_b0", width_mult=0.25,
                                    depth_mult=0.5)
    model = EfficientNet(setting[:3], dropout=0.0, stochastic_depth_prob=0.0,
                         num_classes=10, last_channel=64)
    return model, {"x": ("image", (3, 32, 32), None)}, ("class", (), 10)


def swin():
    """torchvision's Swin Transformer (v1) with two stages of one block
    (16 and 32 channels, 2 heads, 4x4 windows) on 16x16 images: shifted
    windows (torch.roll), an attention mask for the shifted windows,
    relative position biases gathered from a table by a buffer of
    indices, patch merging."""
    from torchvision.models.swin_transformer import SwinTransformer
    model = SwinTransformer(patch_size=[2, 2], embed_dim=16, depths=[1, 1],
                            num_heads=[2, 2], window_size=[4, 4],
                            stochastic_depth_prob=0.0, num_classes=10)
    return model, {"x": ("image", (3, 16, 16), None)}, ("class", (), 10)


def deberta():
    """transformers' DeBERTa-v2: disentangled attention (content-to-position
    and position-to-content scores from log-bucketed relative positions,
    int64 positions clamped by Clip and gathered), no absolute position
    embedding."""
    from transformers import (DebertaV2Config,
                              DebertaV2ForSequenceClassification)
    cfg = DebertaV2Config(vocab_size=64, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=64,
                          max_position_embeddings=16,
                          hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0,
                          pooler_dropout=0.0, relative_attention=True,
                          position_buckets=8, max_relative_positions=16,
                          pos_att_type=["p2c", "c2p"], num_labels=4,
                          pad_token_id=None, type_vocab_size=0)
    cfg._attn_implementation = "eager"
    model = ids_to_logits(DebertaV2ForSequenceClassification)(cfg)
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("class", (), 4)


def bloom():
    """transformers' BLOOM: ALiBi attention biases (slopes per head times
    the cumulative sum of the attention mask), fused QKV, an embedding
    LayerNorm, the head tied to the embedding."""
    from transformers import BloomConfig, BloomForCausalLM
    cfg = BloomConfig(vocab_size=64, hidden_size=32, n_layer=2, n_head=4,
                      hidden_dropout=0.0, attention_dropout=0.0,
                      use_cache=False, bos_token_id=0, eos_token_id=0,
                      pad_token_id=None)
    cfg._attn_implementation = "eager"
    model = ids_to_logits(BloomForCausalLM)(cfg)
    return model, {"input_ids": ("tokens", (SEQ,), 64)}, ("tokens", (SEQ,), 64)


def segformer():
    """transformers' SegFormer (MiT encoder) with two stages: overlapping
    patch embeddings (strided convolutions), efficient self-attention whose
    keys and values come from a strided convolution (sequence reduction
    2), Mix-FFN (a depthwise 3x3 convolution between the linears)."""
    from transformers import SegformerConfig, SegformerForImageClassification
    cfg = SegformerConfig(num_channels=3, num_encoder_blocks=2,
                          depths=[1, 1], sr_ratios=[2, 1],
                          hidden_sizes=[16, 32], patch_sizes=[3, 3],
                          strides=[2, 2], num_attention_heads=[1, 2],
                          mlp_ratios=[2, 2], hidden_dropout_prob=0.0,
                          attention_probs_dropout_prob=0.0,
                          classifier_dropout_prob=0.0, drop_path_rate=0.0,
                          num_labels=10)
    cfg._attn_implementation = "eager"
    model = pixels_to_logits(SegformerForImageClassification)(cfg)
    return model, {"pixel_values": ("image", (3, 16, 16), None)}, ("class", (), 10)


def mobilenetv3():
    """torchvision's MobileNetV3-Small at width 0.25, its first four
    inverted residual blocks and a last convolution to 64 channels:
    Hardswish, Hardsigmoid squeeze-and-excitation, depthwise 3x3 and 5x5
    convolutions, BatchNorm."""
    from torchvision.models.mobilenetv3 import (MobileNetV3,
                                                _mobilenet_v3_conf)
    setting, _ = _mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    model = MobileNetV3(setting[:4], 64, num_classes=10, dropout=0.0)
    return model, {"x": ("image", (3, 32, 32), None)}, ("class", (), 10)


BUILDERS = {"gpt2": gpt2, "bert": bert, "llama": llama, "vit": vit,
            "t5": t5, "resnet": resnet, "mobilenetv2": mobilenetv2,
            "convnext": convnext, "efficientnet": efficientnet, "swin": swin,
            "albert": albert, "wav2vec2": wav2vec2, "unet": unet,
            "deberta": deberta, "bloom": bloom, "segformer": segformer,
            "mobilenetv3": mobilenetv3}

# name -> (builder, exporter, static batch)
CORPUS = [(f"{m}-{e}", m, e, MICRO) for m in BUILDERS for e in ("ts", "dynamo")]
CORPUS += [("gpt2-ts-b4", "gpt2", "ts", 4), ("resnet-ts-b4", "resnet", "ts", 4)]
# Entries exported at another opset than their exporter's default (17 for
# ts, 18 for dynamo): name -> opset.
OPSETS = {"unet-dynamo21": 21}
CORPUS += [("unet-dynamo21", "unet", "dynamo", MICRO)]

LR = {"gpt2": 0.1, "bert": 0.1, "llama": 0.1, "vit": 0.1, "t5": 0.1,
      "resnet": 0.02, "mobilenetv2": 0.01, "convnext": 0.02,
      "efficientnet": 0.01, "swin": 0.05, "albert": 0.1, "wav2vec2": 0.05,
      "unet": 0.05, "deberta": 0.05, "bloom": 0.05, "segformer": 0.05,
      "mobilenetv3": 0.01}


# ---------------------------------------------------------------- export

def export(model, example, names, path, exporter, tie_safe, opset):
    args = tuple(example[n] for n in names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if exporter == "ts":
            torch.onnx.export(model, args, path, dynamo=False,
                              opset_version=opset, input_names=list(names),
                              output_names=["logits"],
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=not tie_safe)
        else:
            import contextlib
            import io
            with contextlib.redirect_stdout(io.StringIO()):
                program = torch.onnx.export(model, args, dynamo=True,
                                            opset_version=opset,
                                            input_names=list(names),
                                            output_names=["logits"],
                                            optimize=not tie_safe)
            proto = program.model_proto
            if tie_safe:
                proto = optimize_keeping(proto, tensor_names(model))
            onnx.save(proto, path)
    proto = onnx.load(path)
    onnx.checker.check_model(proto, full_check=True)
    return proto


def tensor_names(model):
    names = {n for n, _ in model.named_parameters(remove_duplicate=False)}
    names.update(n for n, _ in model.named_buffers()
                 if n.endswith(("running_mean", "running_var")))
    return names


def optimize_keeping(proto, keep):
    """The onnxscript optimizer (what torch.onnx.export(optimize=True)
    runs) with the initializers named in `keep` made graph inputs while it
    runs, so that it folds shape chains and masks but no parameter."""
    import onnxscript.optimizer
    from onnx import helper
    g = proto.graph
    held = [i for i in g.initializer if i.name in keep]
    for i in held:
        g.initializer.remove(i)
        g.input.append(helper.make_tensor_value_info(i.name, i.data_type,
                                                     list(i.dims)))
    proto = onnxscript.optimizer.optimize(proto)
    g = proto.graph
    held_names = {i.name for i in held}
    used = {x for n in g.node for x in n.input}
    kept = [i for i in g.input if i.name not in held_names]
    del g.input[:]
    g.input.extend(kept)
    g.initializer.extend(i for i in held if i.name in used)
    return proto


def initializers(proto):
    return {i.name: numpy_helper.to_array(i) for i in proto.graph.initializer}


def unfaithful(model, proto):
    """Parameters (and BatchNorm running statistics) that the export does
    not hold as exactly one initializer (value equal, or transposed): a
    tied weight split in two by a folded transpose, a BatchNorm fused into
    its convolution, a position embedding folded into its slice."""
    inits = [v for v in initializers(proto).values()
             if v.dtype == np.float32]
    tensors = dict(model.named_parameters())
    tensors.update((n, b) for n, b in model.named_buffers()
                   if n.endswith(("running_mean", "running_var")))
    problems = []
    for name, t in tensors.items():
        v = t.detach().numpy()
        hits = sum(1 for i in inits
                   if i.shape == v.shape and np.array_equal(i, v)
                   or v.ndim == 2 and i.shape == v.T.shape
                   and np.array_equal(i, v.T))
        if hits != 1:
            problems.append(f"{name} ({hits} initializers)")
    return problems


def constants(model, proto):
    """Float initializers that are no parameter or BatchNorm statistic of
    the model (equal or transposed): attention masks, scalars, rotary
    tables, Clip bounds. Training must leave them bit-exact."""
    tensors = [t.detach().numpy() for t in model.parameters()]
    tensors += [b.detach().numpy() for n, b in model.named_buffers()
                if n.endswith(("running_mean", "running_var"))]
    out = []
    for name, v in initializers(proto).items():
        if v.dtype != np.float32:
            continue
        if not any(v.shape == t.shape and np.array_equal(v, t)
                   or t.ndim == 2 and v.shape == t.T.shape
                   and np.array_equal(v, t.T) for t in tensors):
            out.append(name)
    return out


def built(model_name):
    """The model as exported: seeded, perturbed, eval mode."""
    torch.manual_seed(0)
    model, specs, label_spec = BUILDERS[model_name]()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.02)
        # BatchNorm running statistics too, as a trained model has them
        # (the torchscript exporter would merge the equal fresh ones).
        for n, b in model.named_buffers():
            if n.endswith("running_mean"):
                b.add_(torch.randn_like(b) * 0.02)
            elif n.endswith("running_var"):
                b.mul_(torch.exp(torch.randn_like(b) * 0.1))
    model.eval()
    return model, specs, label_spec


# ---------------------------------------------------------------- data, training

def make_inputs(specs, rows, rng):
    out = {}
    for name, (kind, shape, vocab) in specs.items():
        if kind == "tokens":
            out[name] = rng.integers(0, vocab, size=(rows,) + shape).astype(np.int64)
        else:
            # Images quantized to multiples of 1/64 in [-2, 2), like 8-bit
            # pixels normalized: exact in float32, and the .npz compresses.
            out[name] = (rng.integers(-128, 128, size=(rows,) + shape)
                         / 64.0).astype(np.float32)
    return out


def make_labels(spec, rows, rng):
    _, shape, classes = spec
    return rng.integers(0, classes, size=(rows,) + shape).astype(np.int64)


def to_torch(arrays, names, rows, double):
    out = []
    for n in names:
        t = torch.from_numpy(arrays[n][rows])
        if t.is_floating_point() and double:
            t = t.double()
        out.append(t)
    return out


def train(model32, names, data, labels, micro, m_count, lr, double=True,
          clip=None):
    """SGD over STEPS steps of m_count micro-batches; with `clip`, the
    gradients are clipped to that 2-norm before each step. Returns the
    losses, the trained model, and the norms clip_grad_norm_ saw."""
    model = copy.deepcopy(model32)
    if double:
        model = model.double()
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    losses, norms = [], []
    for step in range(STEPS):
        opt.zero_grad()
        total = 0.0
        for i in range(m_count):
            lo = (step * m_count + i) * micro
            rows = slice(lo, lo + micro)
            out = model(*to_torch(data, names, rows, double))
            loss = F.cross_entropy(out.reshape(-1, out.shape[-1]),
                                   torch.from_numpy(labels[rows]).reshape(-1))
            (loss / m_count).backward()
            total += loss.item()
        if clip is not None:
            norms.append(float(torch.nn.utils.clip_grad_norm_(
                model.parameters(), clip)))
        opt.step()
        losses.append(total / m_count)
    model.eval()
    return losses, model.float(), norms


def expected_weights(trained, example, names, exporter, tie_safe, initial,
                     opset):
    """The trained model exported again: every initializer's value."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trained.onnx")
        proto = export(trained, example, names, path, exporter, tie_safe,
                       opset)
    after = initializers(proto)
    if {k: v.shape for k, v in after.items()} != \
            {k: v.shape for k, v in initial.items()}:
        raise RuntimeError("re-export of the trained model changed the "
                         "initializers' names or shapes")
    return {k: v for k, v in after.items()
            if v.dtype == np.float32 and not np.array_equal(v, initial[k])}


# ---------------------------------------------------------------- main

def clip_references(name, model_name, out_dir, record):
    """`NAME.clip.npz` (`clip/loss`, `clip/w/<initializer>`): the export's
    own training data and initial weights, M = PIPE_M micro-batches with
    gradient clipping to CLIP_MAX, in float64. Returns corpus.json's
    `clip_grad_norm`, `clip_losses`, `clip_norms`."""
    model, specs, _ = built(model_name)
    names = list(specs)
    ref = dict(np.load(os.path.join(out_dir, name + ".npz")))
    for k, v in ref.items():   # images are stored as float16 (exactly)
        if v.dtype == np.float16:
            ref[k] = v.astype(np.float32)
    data = {n: ref[f"data/{n}"] for n in names}
    labels = ref["data/labels"]
    example = {n: torch.from_numpy(ref[f"forward/{n}"]) for n in names}
    initial = initializers(onnx.load(os.path.join(out_dir, name + ".onnx")))
    losses, trained, norms = train(model, names, data, labels, MICRO, PIPE_M,
                                   LR[model_name], clip=CLIP_MAX)
    if min(norms) <= CLIP_MAX:
        raise RuntimeError(f"{name}: a step's norm {min(norms):.3g} is not "
                           f"above the clipping bound {CLIP_MAX}")
    out = {"clip/loss": np.array(losses)}
    for w, v in expected_weights(trained, example, names, record["exporter"],
                                 record["tie_safe_export"], initial,
                                 record["opset"]).items():
        out[f"clip/w/{w}"] = v
    np.savez_compressed(os.path.join(out_dir, name + ".clip.npz"),
                        **{k: compact(k, v) for k, v in out.items()})
    print(f"{name}: clipped to {CLIP_MAX}, norms "
          f"{' '.join(f'{v:.4g}' for v in norms)}, losses "
          f"{' '.join(f'{v:.4f}' for v in losses)}", flush=True)
    return {"clip_grad_norm": CLIP_MAX, "clip_losses": losses,
            "clip_norms": norms}


def compact(key, value):
    """Image inputs are stored as float16, which holds their values (k/64
    in [-2, 2)) exactly; models.py widens them back to float32."""
    if key.startswith(("data/", "forward/")) and key != "forward/output" \
            and value.dtype == np.float32:
        half = value.astype(np.float16)
        assert np.array_equal(half.astype(np.float32), value)
        return half
    return value


def build_one(name, model_name, exporter, static_batch, out_dir, use_ort,
              opset=None):
    opset = opset or (17 if exporter == "ts" else 18)
    model, specs, label_spec = built(model_name)
    names = list(specs)
    rng = np.random.default_rng(1234)
    fwd = make_inputs(specs, static_batch, rng)
    example = {n: torch.from_numpy(fwd[n]) for n in names}
    path = os.path.join(out_dir, name + ".onnx")

    tie_safe = False
    proto = export(model, example, names, path, exporter, tie_safe, opset)
    split = unfaithful(model, proto)
    if split:
        tie_safe = True
        proto = export(model, example, names, path, exporter, tie_safe, opset)
        still = unfaithful(model, proto)
        if still:
            raise RuntimeError(f"{name}: even with folding limited the "
                               f"export does not hold {', '.join(still)}")
    initial = initializers(proto)

    ref = {}
    with torch.no_grad():
        m64 = copy.deepcopy(model).double().eval()
        fwd_out = m64(*to_torch(fwd, names, slice(None), True)).numpy()
    for n in names:
        ref[f"forward/{n}"] = fwd[n]
    ref["forward/output"] = fwd_out.astype(np.float32)
    scale = float(np.max(np.abs(fwd_out)))
    ort_rel = None
    if use_ort:
        import onnxruntime
        sess = onnxruntime.InferenceSession(path,
                                            providers=["CPUExecutionProvider"])
        got = sess.run(None, {n: fwd[n] for n in names})[0]
        ort_rel = float(np.max(np.abs(got - fwd_out))) / scale
        if ort_rel > 1e-4:
            raise RuntimeError(f"{name}: onnxruntime differs from PyTorch "
                             f"float64 by {ort_rel:.3g}")

    rows = STEPS * PIPE_M * MICRO
    data = make_inputs(specs, rows, rng)
    labels = make_labels(label_spec, rows, rng)
    for n in names:
        ref[f"data/{n}"] = data[n]
    ref["data/labels"] = labels
    record = {"name": name, "model": model_name, "exporter": exporter,
              "opset": opset,
              "file": name + ".onnx", "inputs": names,
              "classes": label_spec[2], "static_batch": static_batch,
              "microbatch_size": MICRO, "lr": LR[model_name],
              "steps": STEPS, "pipeline_microbatches": PIPE_M,
              "tie_safe_export": tie_safe, "default_export_loses": split,
              "onnxruntime_rel_error": ort_rel,
              "constants": constants(model, proto),
              "ops": sorted({n.op_type for n in proto.graph.node}),
              "nodes": len(proto.graph.node),
              "parameters": int(sum(p.numel() for p in model.parameters()))}
    for key, m_count in (("sgd", 1), ("pipe", PIPE_M)):
        losses, trained, _ = train(model, names, data, labels, MICRO, m_count,
                                   LR[model_name])
        ref[f"{key}/loss"] = np.array(losses)
        for w, v in expected_weights(trained, example, names, exporter,
                                     tie_safe, initial, opset).items():
            ref[f"{key}/w/{w}"] = v
        record[f"{key}_losses"] = losses
        # Conditioning: how far PyTorch's own float32 run is from float64
        # (a model whose float32 training drifts by more than about 1e-5
        # cannot be checked to 1e-4).
        l32, t32, _ = train(model, names, data, labels, MICRO, m_count,
                            LR[model_name], double=False)
        drift = max(abs(a - b) / abs(b) for a, b in zip(l32, losses))
        s64 = dict(trained.named_parameters())
        for n, t in t32.named_parameters():
            ref64 = s64[n].detach().double()
            drift = max(drift, float((t.detach().double() - ref64).abs().max()
                                     / max(float(ref64.abs().max()), 1e-12)))
        record[f"{key}_torch_f32_drift"] = drift
    np.savez_compressed(os.path.join(out_dir, name + ".npz"),
                        **{k: compact(k, v) for k, v in ref.items()})
    if name in CLIP_MODELS:
        record.update(clip_references(name, model_name, out_dir, record))
    print(f"{name}: {len(proto.graph.node)} nodes, "
          f"{os.path.getsize(path) // 1024} KB, tie_safe={tie_safe}, "
          f"onnxruntime rel {ort_rel}, sgd losses "
          f"{' '.join(f'{v:.4f}' for v in record['sgd_losses'])}, torch "
          f"f32 drift sgd {record['sgd_torch_f32_drift']:.2g} pipe "
          f"{record['pipe_torch_f32_drift']:.2g}",
          flush=True)
    return record


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(HERE, "corpus"))
    p.add_argument("--only", default="")
    p.add_argument("--no-ort", action="store_true")
    p.add_argument("--refresh-constants", action="store_true",
                   help="only recompute corpus.json's 'constants' of the "
                        "existing exports")
    p.add_argument("--clip-references", action="store_true",
                   help="only (re)write NAME.clip.npz of the CLIP_MODELS "
                        "from their existing exports")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    only = set(filter(None, args.only.split(",")))
    index_path = os.path.join(args.out, "corpus.json")
    index = {}
    if os.path.exists(index_path):
        with open(index_path) as f:
            index = {r["name"]: r for r in json.load(f)["models"]}
    for name, model_name, exporter, batch in CORPUS:
        if only and name not in only:
            continue
        if args.clip_references:
            if name in CLIP_MODELS and name in index:
                index[name].update(clip_references(name, model_name,
                                                   args.out, index[name]))
                write_index(index_path, index)
            continue
        if args.refresh_constants:
            if name in index and "export_error" not in index[name]:
                proto = onnx.load(os.path.join(args.out, name + ".onnx"))
                index[name]["constants"] = constants(built(model_name)[0],
                                                     proto)
                write_index(index_path, index)
            continue
        try:
            index[name] = build_one(name, model_name, exporter, batch,
                                    args.out, not args.no_ort,
                                    OPSETS.get(name))
        except Exception as e:  # an exporter that fails: recorded
            msg = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            print(f"{name}: export failed: {msg}", flush=True)
            index[name] = {"name": name, "model": model_name,
                           "exporter": exporter, "export_error": msg}
            for ext in (".onnx", ".npz"):
                if os.path.exists(os.path.join(args.out, name + ext)):
                    os.remove(os.path.join(args.out, name + ext))
        write_index(index_path, index)
    return 0


def write_index(path, index):
    order = [c[0] for c in CORPUS]
    with open(path, "w") as f:
        json.dump({"models": [index[n] for n in order if n in index]}, f,
                  indent=1)
        f.write("\n")


if __name__ == "__main__":
    sys.exit(main())
