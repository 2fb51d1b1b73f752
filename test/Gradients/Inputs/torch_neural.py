#!/usr/bin/python3
"""Gradients of convolution, pooling and training-mode batch normalization
through nn-autodiff and the CPU compiler, against torch.autograd.

    torch_neural.py --bin BUILD/bin

Builds one f64 module per case (a small CNN block written both as nn ops and
as torch modules), differentiates it with `pipedream-opt --nn-autodiff`,
compiles it with `pipedream-compile`, runs `f_forward` and `f_backward` on
the same seeded inputs and cotangent as torch, and compares the outputs,
the updated running statistics and every gradient (rtol 1e-9, atol 1e-11).
Prints `PASS name` / `FAIL name: why`.
"""

import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import gradcheck  # noqa: E402  (Program, parse_signatures, attr helpers)

RTOL, ATOL = 1e-9, 1e-11


def arr(values):
    return "array<i64: " + ", ".join(str(v) for v in values) + ">"


def ttype(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


def torch_pads(pads):
    n = len(pads) // 2
    out = []
    for i in reversed(range(n)):
        out += [pads[i], pads[n + i]]
    return out


CASES = []


def case(fn):
    CASES.append(fn)
    return fn


@case
def conv_bn_maxpool():
    """conv (stride, padding, dilation, bias) -> batch_norm_train ->
    max_pool (overlapping, padded) -> global_average_pool."""
    x_shape, w_shape = (4, 3, 9, 8), (5, 3, 3, 2)
    strides, pads, dil = [1, 2], [1, 0, 2, 1], [2, 1]
    mp = dict(kernel=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    eps, momentum = 1e-5, 0.9

    def torch_fn(x, w, b, s, c, rm, rv):
        y = F.conv2d(F.pad(x, torch_pads(pads)), w, b, stride=strides,
                     dilation=dil)
        y = F.batch_norm(y, rm, rv, s, c, training=True,
                         momentum=1 - momentum, eps=eps)
        y = F.max_pool2d(F.pad(y, torch_pads(mp["pads"]), value=-np.inf),
                         mp["kernel"], mp["strides"])
        return y.mean(dim=(2, 3), keepdim=True)

    return x_shape, w_shape, strides, pads, dil, 1, mp, eps, momentum, \
        torch_fn, "max"


@case
def grouped_conv_bn_avgpool():
    """grouped conv (no bias) -> batch_norm_train -> average_pool
    (count_include_pad = false, ceil_mode) -> global_average_pool."""
    x_shape, w_shape = (3, 4, 7, 7), (6, 2, 3, 3)
    strides, pads, dil = [2, 1], [1, 1, 1, 1], [1, 1]
    ap = dict(kernel=[2, 3], strides=[2, 2], pads=[0, 1, 0, 1])
    eps, momentum = 1e-3, 0.8

    def torch_fn(x, w, b, s, c, rm, rv):
        y = F.conv2d(F.pad(x, torch_pads(pads)), w, None, stride=strides,
                     dilation=dil, groups=2)
        y = F.batch_norm(y, rm, rv, s, c, training=True,
                         momentum=1 - momentum, eps=eps)
        y = F.avg_pool2d(y, ap["kernel"], ap["strides"],
                         padding=[ap["pads"][0], ap["pads"][1]],
                         ceil_mode=True, count_include_pad=False)
        return y.mean(dim=(2, 3), keepdim=True)

    return x_shape, w_shape, strides, pads, dil, 2, ap, eps, momentum, \
        torch_fn, "avg"


def build(name, spec):
    (x_shape, w_shape, strides, pads, dil, group, pool, eps, momentum,
     torch_fn, kind) = spec
    rng = np.random.default_rng(7)
    m = w_shape[0]
    x = rng.uniform(-2, 2, x_shape)
    w = rng.uniform(-1, 1, w_shape)
    b = rng.uniform(-1, 1, (m,)) if group == 1 else None
    s, c = rng.uniform(0.5, 1.5, (m,)), rng.uniform(-1, 1, (m,))
    rm, rv = rng.uniform(-1, 1, (m,)), rng.uniform(0.5, 2, (m,))

    tensors = [torch.from_numpy(v.copy()).requires_grad_(i < 5)
               if v is not None else None
               for i, v in enumerate([x, w, b, s, c, rm, rv])]
    y = torch_fn(*tensors)
    cot = rng.uniform(-1, 1, tuple(y.shape))
    y.backward(torch.from_numpy(cot))
    want = {"y": y.detach().numpy(), "rm": tensors[5].detach().numpy(),
            "rv": tensors[6].detach().numpy()}
    for i, key in enumerate(["x", "w", "b", "s", "c"]):
        if tensors[i] is not None:
            want["d" + key] = tensors[i].grad.numpy()

    pool_in = tuple(F.conv2d(F.pad(torch.from_numpy(x), torch_pads(pads)),
                             torch.from_numpy(w), stride=strides,
                             dilation=dil, groups=group).shape)
    z = torch.zeros(pool_in, dtype=torch.float64)
    if kind == "max":
        pooled = F.max_pool2d(F.pad(z, torch_pads(pool["pads"])),
                              pool["kernel"], pool["strides"])
    else:
        pooled = F.avg_pool2d(z, pool["kernel"], pool["strides"],
                              padding=[pool["pads"][0], pool["pads"][1]],
                              ceil_mode=True)
    args = [f"%x: {ttype(x_shape)}", f"%w: {ttype(w_shape)}"]
    inputs = [x, w]
    operands = "%x, %w"
    types = f"{ttype(x_shape)}, {ttype(w_shape)}"
    if b is not None:
        args.append(f"%b: {ttype((m,))}")
        inputs.append(b)
        operands += ", %b"
        types += f", {ttype((m,))}"
    vec = ttype((m,))
    args += [f"%s: {vec}", f"%c: {vec}", f"%rm: {vec} {{nn.no_grad}}",
             f"%rv: {vec} {{nn.no_grad}}"]
    inputs += [s, c, rm, rv]
    if kind == "max":
        pool_op = (f"nn.max_pool %1#0 {{ceil_mode = false, dilations = "
                   f"{arr([1, 1])}, kernel_shape = {arr(pool['kernel'])}, "
                   f"pads = {arr(pool['pads'])}, strides = "
                   f"{arr(pool['strides'])}}}")
    else:
        pool_op = (f"nn.average_pool %1#0 {{ceil_mode = true, "
                   f"count_include_pad = false, kernel_shape = "
                   f"{arr(pool['kernel'])}, pads = {arr(pool['pads'])}, "
                   f"strides = {arr(pool['strides'])}}}")
    y_shape = tuple(y.shape)
    pooled_type = ttype(tuple(pooled.shape))
    text = f"""func.func @{name}({", ".join(args)})
    -> ({ttype(y_shape)}, {vec}, {vec}) {{
  %0 = nn.conv {operands} {{dilations = {arr(dil)}, group = {group} : i64,
      pads = {arr(pads)}, strides = {arr(strides)}}}
      : ({types}) -> {ttype(pool_in)}
  %1:3 = nn.batch_norm_train %0, %s, %c, %rm, %rv {{epsilon = {eps:.17e} : f64,
      momentum = {momentum:.17e} : f64}}
      : ({ttype(pool_in)}, {vec}, {vec}, {vec}, {vec})
      -> ({ttype(pool_in)}, {vec}, {vec})
  %2 = {pool_op} : ({ttype(pool_in)}) -> POOLED
  %3 = nn.global_average_pool %2 : (POOLED) -> {ttype(y_shape)}
  return %3, %1#1, %1#2 : {ttype(y_shape)}, {vec}, {vec}
}}
"""
    return text.replace("POOLED", pooled_type), inputs, cot, want


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    failures = 0
    for fn in CASES:
        name = fn.__name__
        spec = fn()
        text, inputs, cot, want = build(name, spec)
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "f.mlir")
            ad = os.path.join(tmp, "ad.mlir")
            bundle = os.path.join(tmp, "bundle")
            with open(src, "w") as f:
                f.write(text)
            subprocess.run([os.path.join(args.bin, "pipedream-opt"), src,
                            "--nn-autodiff", "-o", ad], check=True)
            subprocess.run([os.path.join(args.bin, "pipedream-compile"), ad,
                            "--inference", "-o", bundle], check=True)
            with open(ad) as f:
                sigs = gradcheck.parse_signatures(f.read())
            program = gradcheck.Program(bundle)
            fwd = program.call(name + "_forward", inputs)
            bsig = sigs[name + "_backward"]
            bargs = []
            for t in bsig["args"]:
                r = gradcheck.attr_int(t, "nn.residual")
                g = gradcheck.attr_int(t, "nn.grad_of_result")
                if r is not None:
                    bargs.append(fwd[3 + r])
                elif g == 0:
                    bargs.append(cot)
                else:
                    bargs.append(np.zeros_like(fwd[g]))
            grads = program.call(name + "_backward", bargs)
        keys = ["x", "w", "b", "s", "c"] if "db" in want else \
            ["x", "w", "s", "c"]
        got = {"y": fwd[0], "rm": fwd[1], "rv": fwd[2]}
        for t, grad in zip(bsig["results"], grads):
            got["d" + keys[gradcheck.attr_int(t, "nn.grad_of")]] = grad
        why = None
        for key, value in want.items():
            if key not in got:
                why = f"no {key}"
            elif not np.allclose(got[key], value, rtol=RTOL, atol=ATOL):
                err = np.max(np.abs(got[key] - value))
                why = f"{key} differs from torch by {err:.3g}"
            if why:
                break
        print(f"FAIL {name}: {why}" if why else f"PASS {name}", flush=True)
        failures += bool(why)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
