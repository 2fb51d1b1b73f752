#!/usr/bin/env python3
"""Finite-difference check of nn-autodiff and the derivative rules.

    gradcheck.py FILE.mlir --bin BUILD/bin [--function NAME] [--keep DIR]

For every public function `@f` of FILE (an nn-level module of small test
functions), runs `pipedream-opt --nn-autodiff`, compiles the result with
`pipedream-compile` into a bundle, calls `f`, `f_forward` and `f_backward`
through ctypes on seeded random inputs and a random cotangent `c`, and
compares the vector-Jacobian product of `f_backward` with central finite
differences of `L(x) = sum_j <c_j, f_j(x)>` evaluated with `f` itself. It
also checks that `f_forward` returns what `f` returns. Prints one line per
function, `PASS @f (max error E over N entries)` or `FAIL @f: why`, and exits
non-zero when any function fails.

Argument attributes steer the inputs (default: uniform in [-2, 2]):
  {gradcheck.range = [lo, hi]}      floats uniform in [lo, hi]
  {gradcheck.positive}              floats uniform in [0.5, 2]
  {gradcheck.int_range = [lo, hi]}  integers uniform in [lo, hi)
  {gradcheck.values = [v0, v1...]}  exactly these values (row-major)
Function attributes:
  {gradcheck.rtol = R, gradcheck.atol = A, gradcheck.step = H}
Defaults: f64 rtol 1e-6 atol 1e-8 step 1e-6; f32 rtol 2e-2 atol 2e-3
step 1e-2 (f32 differences are noisy: prefer f64 test functions). At most 48
entries of each argument are perturbed (a seeded random choice for larger
arguments).
"""

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

DTYPES = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64,
    "i32": np.int32, "i8": np.int8, "i1": np.bool_, "u8": np.uint8,
}
MAX_ENTRIES = 48


def aligned_empty(shape, dtype, align=64):
    dtype = np.dtype(dtype)
    count = int(np.prod(shape)) if shape else 1
    raw = np.empty(count * dtype.itemsize + align, dtype=np.uint8)
    start = (-raw.ctypes.data) % align
    return raw[start:start + count * dtype.itemsize].view(dtype).reshape(shape)


def split_top_level(text, sep=","):
    """Splits on `sep` outside (), [], {}, <> and strings."""
    parts, depth, cur, in_str = [], 0, [], False
    for ch in text:
        if in_str:
            cur.append(ch)
            if ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def matching_paren(text, start):
    depth = 0
    for i in range(start, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def parse_signatures(text):
    """{name: {"public": bool, "args": [attr text], "results": [attr text],
    "attrs": text}} for every func.func of an MLIR module in text form."""
    funcs = {}
    for m in re.finditer(r"func\.func\s+(private\s+)?@([\w$.]+)\s*\(", text):
        name = m.group(2)
        open_at = m.end() - 1
        close_at = matching_paren(text, open_at)
        args = [a.strip() for a in split_top_level(text[open_at + 1:close_at])]
        rest = text[close_at + 1:]
        results = []
        fn_attrs = ""
        r = re.match(r"\s*->\s*", rest)
        if r:
            rest2 = rest[r.end():]
            if rest2.startswith("("):
                end = matching_paren(rest2, 0)
                results = [x.strip() for x in split_top_level(rest2[1:end])]
                rest = rest2[end + 1:]
            else:
                t = re.match(r"[^\s{]+(\s*\{[^}]*\})?", rest2)
                results = [t.group(0)]
                rest = rest2[t.end():]
        a = re.match(r"\s*attributes\s*\{", rest)
        if a:
            depth, i = 0, a.end() - 1
            for j in range(i, len(rest)):
                if rest[j] == "{":
                    depth += 1
                elif rest[j] == "}":
                    depth -= 1
                    if depth == 0:
                        fn_attrs = rest[i:j + 1]
                        break
        funcs[name] = {"public": not m.group(1), "args": args,
                       "results": results, "attrs": fn_attrs}
    return funcs


def attr_int(text, name):
    m = re.search(re.escape(name) + r"\s*=\s*(-?\d+)", text)
    return int(m.group(1)) if m else None


def attr_list(text, name):
    m = re.search(re.escape(name) + r"\s*=\s*\[([^\]]*)\]", text)
    if not m:
        return None
    return [float(v.split(":")[0]) for v in m.group(1).split(",") if v.strip()]


def attr_float(text, name):
    m = re.search(re.escape(name) + r"\s*=\s*([-+0-9.eE]+)", text)
    return float(m.group(1)) if m else None


def attr_string(text, name):
    m = re.search(re.escape(name) + r'\s*=\s*"([^"]*)"', text)
    return m.group(1) if m else None


class Program:
    def __init__(self, bundle_dir):
        with open(os.path.join(bundle_dir, "bundle.json")) as f:
            self.manifest = json.load(f)
        self.lib = ctypes.CDLL(os.path.join(bundle_dir,
                                            self.manifest["library"]))
        self.functions = {fn["name"]: fn for fn in self.manifest["functions"]}

    def call(self, name, args):
        fn = self.functions[name]
        buffers = fn["buffers"]
        ins = [b for b in buffers if b["role"] != "output"]
        outs = [b for b in buffers if b["role"] == "output"]
        if len(args) != len(ins):
            raise RuntimeError(f"{name}: {len(args)} arguments for "
                               f"{len(ins)} buffers")
        arrays = []
        for buf, value in zip(ins, args):
            arr = aligned_empty(tuple(buf["shape"]), DTYPES[buf["dtype"]])
            arr[...] = value
            arrays.append(arr)
        results = [aligned_empty(tuple(b["shape"]), DTYPES[b["dtype"]])
                   for b in outs]
        arrays += results
        pointers = (ctypes.c_void_p * len(arrays))(
            *[a.ctypes.data for a in arrays])
        getattr(self.lib, fn["symbol"])(pointers)
        return [r.copy() for r in results]


def make_input(rng, buf, attrs):
    dtype = DTYPES[buf["dtype"]]
    shape = tuple(buf["shape"])
    values = attr_list(attrs, "gradcheck.values")
    if values is not None:
        return np.array(values, dtype=dtype).reshape(shape)
    if np.issubdtype(dtype, np.bool_):
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        lo, hi = attr_list(attrs, "gradcheck.int_range") or [0, 4]
        return rng.integers(int(lo), int(hi), size=shape).astype(dtype)
    if "gradcheck.positive" in attrs:
        lo, hi = 0.5, 2.0
    else:
        lo, hi = attr_list(attrs, "gradcheck.range") or [-2.0, 2.0]
    return rng.uniform(lo, hi, size=shape).astype(dtype)


def check_function(name, sigs, program, rng):
    sig = sigs[name]
    fn = program.functions[name]
    ins = [b for b in fn["buffers"] if b["role"] != "output"]
    outs = [b for b in fn["buffers"] if b["role"] == "output"]
    x = [make_input(rng, b, a) for b, a in zip(ins, sig["args"])]
    is_f64 = any(b["dtype"] == "f64" for b in ins + outs)
    rtol = attr_float(sig["attrs"], "gradcheck.rtol") or (1e-6 if is_f64 else 2e-2)
    atol = attr_float(sig["attrs"], "gradcheck.atol") or (1e-8 if is_f64 else 2e-3)
    step = attr_float(sig["attrs"], "gradcheck.step") or (1e-6 if is_f64 else 1e-2)

    y = program.call(name, x)
    fwd = program.call(name + "_forward", x)
    for j, (a, b) in enumerate(zip(y, fwd)):
        if not np.allclose(a, b, rtol=1e-12 if is_f64 else 1e-6, atol=0,
                           equal_nan=True):
            return f"FAIL @{name}: result {j} of {name}_forward differs from @{name}"
    residuals = fwd[len(y):]

    float_results = [j for j, b in enumerate(outs)
                     if np.issubdtype(DTYPES[b["dtype"]], np.floating)]
    cot = {j: rng.uniform(-1, 1, size=y[j].shape).astype(y[j].dtype)
           for j in float_results}

    bwd_sig = sigs[name + "_backward"]
    bwd_args = []
    for text in bwd_sig["args"]:
        r = attr_int(text, "nn.residual")
        g = attr_int(text, "nn.grad_of_result")
        if r is not None:
            bwd_args.append(residuals[r])
        elif g is not None:
            bwd_args.append(cot[g])
        else:
            pname = attr_string(text, "nn.name")
            matches = [i for i, t in enumerate(sig["args"])
                       if pname is not None and attr_string(t, "nn.name") == pname]
            if len(matches) != 1:
                return (f"FAIL @{name}: cannot match backward argument "
                        f"'{text}' to an argument of @{name}")
            bwd_args.append(x[matches[0]])
    grads = program.call(name + "_backward", bwd_args)
    grad_of = [attr_int(t, "nn.grad_of") for t in bwd_sig["results"]]
    if any(k is None for k in grad_of):
        return f"FAIL @{name}: a result of {name}_backward lacks nn.grad_of"

    def loss(args):
        out = program.call(name, args)
        return sum(float(np.sum(out[j].astype(np.float64) *
                                cot[j].astype(np.float64)))
                   for j in float_results)

    worst, count = 0.0, 0
    for k, grad in zip(grad_of, grads):
        if grad.shape != x[k].shape:
            return f"FAIL @{name}: gradient of argument {k} has shape {grad.shape}"
        flat_count = x[k].size
        entries = np.arange(flat_count)
        if flat_count > MAX_ENTRIES:
            entries = np.sort(rng.choice(flat_count, MAX_ENTRIES, replace=False))
        for e in entries:
            idx = np.unravel_index(e, x[k].shape)
            orig = x[k][idx]
            h = step * max(1.0, abs(float(orig)))
            plus = [a.copy() for a in x]
            minus = [a.copy() for a in x]
            plus[k][idx] = orig + h
            minus[k][idx] = orig - h
            hp = float(plus[k][idx]) - float(orig)
            hm = float(orig) - float(minus[k][idx])
            numeric = (loss(plus) - loss(minus)) / (hp + hm)
            analytic = float(grad[idx])
            err = abs(analytic - numeric)
            if not np.isfinite(analytic) or err > atol + rtol * abs(numeric):
                return (f"FAIL @{name}: d/d(arg {k})[{', '.join(map(str, idx))}]"
                        f" = {analytic:.10g} but finite differences give "
                        f"{numeric:.10g}")
            worst = max(worst, err / (atol + rtol * abs(numeric)))
            count += 1
    # Every differentiable argument must have been checked.
    checked = set(grad_of)
    for i, b in enumerate(ins):
        if (np.issubdtype(DTYPES[b["dtype"]], np.floating) and i not in checked
                and "nn.no_grad" not in sig["args"][i]):
            return f"FAIL @{name}: no gradient for argument {i}"
    return f"PASS @{name} ({count} entries, worst error {worst:.3f} of tolerance)"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--bin", required=True, help="directory of the tools")
    parser.add_argument("--function", action="append", default=[])
    parser.add_argument("--keep", help="keep the intermediate files here")
    parser.add_argument("--seed", type=int, default=1234)
    args = parser.parse_args()

    work = args.keep or tempfile.mkdtemp(prefix="gradcheck-")
    os.makedirs(work, exist_ok=True)
    ad = os.path.join(work, "autodiff.mlir")
    bundle = os.path.join(work, "bundle")
    try:
        subprocess.run([os.path.join(args.bin, "pipedream-opt"), args.file,
                        "--nn-autodiff", "-o", ad], check=True)
        subprocess.run([os.path.join(args.bin, "pipedream-compile"), ad,
                        "--inference", "-o", bundle], check=True)
    except subprocess.CalledProcessError as e:
        print(f"FAIL: {' '.join(e.cmd)} exited with {e.returncode}")
        return 1

    with open(args.file) as f:
        originals = [n for n, s in parse_signatures(f.read()).items()
                     if s["public"]]
    with open(ad) as f:
        sigs = parse_signatures(f.read())
    program = Program(bundle)
    names = args.function or originals
    failed = 0
    for name in names:
        rng = np.random.default_rng(args.seed)
        try:
            line = check_function(name, sigs, program, rng)
        except Exception as e:  # report and go on with the next function
            line = f"FAIL @{name}: {type(e).__name__}: {e}"
        print(line, flush=True)
        failed += line.startswith("FAIL")
    if not args.keep:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
