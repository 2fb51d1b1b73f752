#!/usr/bin/python3
"""Random nn functions in f64 for gradcheck.py's finite differences.

    random_graphs.py SEED COUNT > FILE.mlir

Each function takes an input of shape [2, C, H, W] (H and W often 1), a
second input broadcastable to it, and the weights its ops need; it applies
3 to 7 ops, each to one of the three newest values: tanh, sigmoid, neg,
gelu, softplus, erf, exp (of a tanh); add, mul, sub, div (by 1 + a
sigmoid plus a positive input) with broadcasting; reduce_sum / reduce_mean
over 1-3 axes and reduce_max / reduce_min over 1-2, kept as unit
dimensions; softmax and log_softmax on any axis; layer_normalization from
any axis; 1x1 and padded 3x3 convolutions; global_average_pool; 2x2
average and max pools; batch_norm_train (with a residual); concat; slice;
transposes; a matmul over the last axis; expand to a shape already seen.
It returns every value no later op reads. Unit
dimensions, reductions read back through broadcasts and convolutions on
1x1 images are where fusion and lowering bugs hid (an elementwise fusion
once made a 1x1 convolution's input gradient after a global pool (k + 1)
times too large at pixel k: FuseElementwiseOps.cpp); this finds that
class of bug without knowing which composition triggers it. Deterministic
for a seed.
"""

import random
import sys

def ty(s):
    """The f64 tensor type of shape `s`."""
    return "tensor<" + "".join(f"{d}x" for d in s) + "f64>"

def bshape(a, b):
    """The broadcast of shapes `a` and `b` of one rank, or None."""
    if len(a) != len(b): return None
    out = []
    for x, y in zip(a, b):
        if x == y or y == 1: out.append(x)
        elif x == 1: out.append(y)
        else: return None
    return out

def gen_function(rng, idx):
    """Lines of the function @f<idx>."""
    args = []   # (name, shape)
    nograd = []
    positive = []
    vals = []   # (name, shape)
    lines = []
    n = 0
    def new():
        nonlocal n
        n += 1
        return f"%v{n}"
    def arg(shape):
        name = f"%a{len(args)}"
        args.append((name, shape))
        return name
    def broadcasting(r, op, a, sa, b, sb):
        """r = a `op` b, broadcast."""
        out = bshape(sa, sb)
        lines.append(f"  {r} = nn.{op} {a}, {b} : ({ty(sa)}, {ty(sb)}) -> "
                     f"{ty(out)}")
        vals.append((r, out))

    def reduction(r, src, s, ops, most):
        """r = one of `ops` over 1 to `most` random axes of src, kept."""
        axes = sorted(rng.sample(range(4), rng.randint(1, most)))
        out = [1 if i in axes else d for i, d in enumerate(s)]
        op = rng.choice(ops)
        lines.append(f"  {r} = nn.{op} {src} {{axes = array<i64: "
                     f"{', '.join(map(str, axes))}>, keepdims = true}} : "
                     f"({ty(s)}) -> {ty(out)}")
        vals.append((r, out))
    x0 = [2, rng.choice([2, 3, 4]), rng.choice([1, 2, 3]), rng.choice([1, 2, 3])]
    vals.append((arg(x0), x0))
    # a second input, broadcast-compatible with the first
    x1 = [d if rng.random() < 0.6 else 1 for d in x0]
    vals.append((arg(x1), x1))
    nops = rng.randint(3, 7)
    for _ in range(nops):
        kind = rng.choice(["unary", "binary", "binary", "reduce", "reduce",
                           "conv1", "conv3", "gap", "transpose", "matmul",
                           "expand", "softmax", "layernorm", "concat",
                           "slice", "avgpool", "maxpool", "div", "bn",
                           "unary2", "redmax"])
        src, s = rng.choice(vals[-3:])
        r = new()
        if kind == "unary":
            op = rng.choice(["tanh", "sigmoid", "neg"])
            lines.append(f"  {r} = nn.{op} {src} : {ty(s)}")
            vals.append((r, s)); continue
        if kind == "unary2":
            op = rng.choice(["gelu", "softplus", "exp", "erf"])
            if op == "exp":
                t = new()
                lines.append(f"  {t} = nn.tanh {src} : {ty(s)}")
                src = t
            lines.append(f"  {r} = nn.{op} {src} : {ty(s)}")
            vals.append((r, s)); continue
        if kind == "softmax":
            ax = rng.randrange(4)
            op = rng.choice(["softmax", "log_softmax"])
            lines.append(f"  {r} = nn.{op} {src} {{axis = {ax} : i64}} : {ty(s)}")
            vals.append((r, s)); continue
        if kind == "layernorm":
            ax = rng.randrange(1, 4)
            g = arg(s[ax:]); b = arg(s[ax:])
            lines.append(f"  {r} = nn.layer_normalization {src}, {g}, {b} {{axis = {ax} : i64, epsilon = 1.0e-02 : f64}} : ({ty(s)}, {ty(s[ax:])}, {ty(s[ax:])}) -> {ty(s)}")
            vals.append((r, s)); continue
        if kind == "concat":
            ax = rng.randrange(4)
            cands = [(v, t) for v, t in vals if all(t[i] == s[i] for i in range(4) if i != ax)]
            o, t = rng.choice(cands)
            out = list(s); out[ax] = s[ax] + t[ax]
            lines.append(f"  {r} = nn.concat {src}, {o} {{axis = {ax} : i64}} : ({ty(s)}, {ty(t)}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "slice":
            starts, sizes = [], []
            for d in s:
                st = rng.randrange(d); sz = rng.randint(1, d - st)
                starts.append(st); sizes.append(sz)
            lines.append(f"  {r} = nn.slice {src} {{sizes = array<i64: {', '.join(map(str, sizes))}>, starts = array<i64: {', '.join(map(str, starts))}>, steps = array<i64: 1, 1, 1, 1>}} : ({ty(s)}) -> {ty(sizes)}")
            vals.append((r, sizes)); continue
        if kind in ("avgpool", "maxpool"):
            if s[2] < 2 or s[3] < 2:
                n -= 1; continue
            out = [s[0], s[1], s[2] - 1, s[3] - 1]
            if kind == "avgpool":
                lines.append(f"  {r} = nn.average_pool {src} {{ceil_mode = false, count_include_pad = false, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : ({ty(s)}) -> {ty(out)}")
            else:
                lines.append(f"  {r} = nn.max_pool {src} {{ceil_mode = false, dilations = array<i64: 1, 1>, kernel_shape = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>}} : ({ty(s)}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "div":
            cands = [(v, t) for v, t in vals if bshape(s, t) is not None]
            o, t = rng.choice(cands)
            d1 = new(); d2 = new()
            one = f"%p{idx}_{n}"
            positive.append((one, t))
            lines.append(f"  {d1} = nn.sigmoid {o} : {ty(t)}")
            lines.append(f"  {d2} = nn.add {d1}, {one} : ({ty(t)}, {ty(t)}) -> {ty(t)}")
            broadcasting(r, "div", src, s, d2, t)
            continue
        if kind == "redmax":
            reduction(r, src, s, ["reduce_max", "reduce_min"], 2)
            continue
        if kind == "bn":
            if s[0] * s[2] * s[3] < 2:
                n -= 1; continue
            c = s[1]
            g = arg([c]); b = arg([c]); mm = f"%m{idx}_{n}"; vv = f"%q{idx}_{n}"
            nograd.append((mm, [c])); nograd.append((vv, [c]))
            lines.append(f"  {r}:3 = nn.batch_norm_train {src}, {g}, {b}, {mm}, {vv} {{epsilon = 1.0e-02 : f64, momentum = 0.9 : f64}} : ({ty(s)}, {ty([c])}, {ty([c])}, {ty([c])}, {ty([c])}) -> ({ty(s)}, {ty([c])}, {ty([c])})")
            r2 = new()
            lines.append(f"  {r2} = nn.add {r}#0, {src} : ({ty(s)}, {ty(s)}) -> {ty(s)}")
            vals.append((r2, s)); continue
        if kind == "binary":
            cands = [(v, t) for v, t in vals if bshape(s, t) is not None]
            o, t = rng.choice(cands)
            broadcasting(r, rng.choice(["add", "mul", "sub"]), src, s, o, t)
            continue
        if kind == "reduce":
            reduction(r, src, s, ["reduce_sum", "reduce_mean"], 3)
            continue
        if kind in ("conv1", "conv3"):
            k = 1 if kind == "conv1" else 3
            c2 = rng.choice([2, 3])
            w = arg([c2, s[1], k, k])
            p = 0 if k == 1 else 1
            out = [s[0], c2, s[2], s[3]]
            lines.append(f"  {r} = nn.conv {src}, {w} {{dilations = array<i64: 1, 1>, group = 1 : i64, pads = array<i64: {p}, {p}, {p}, {p}>, strides = array<i64: 1, 1>}} : ({ty(s)}, {ty([c2, s[1], k, k])}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "gap":
            out = [s[0], s[1], 1, 1]
            lines.append(f"  {r} = nn.global_average_pool {src} : ({ty(s)}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "transpose":
            perm = list(range(4)); rng.shuffle(perm)
            out = [s[p] for p in perm]
            lines.append(f"  {r} = nn.transpose {src} {{perm = array<i64: {', '.join(map(str, perm))}>}} : ({ty(s)}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "matmul":
            w2 = rng.choice([1, 2, 3])
            w = arg([s[3], w2])
            out = s[:3] + [w2]
            lines.append(f"  {r} = nn.matmul {src}, {w} : ({ty(s)}, {ty([s[3], w2])}) -> {ty(out)}")
            vals.append((r, out)); continue
        if kind == "expand":
            cands = [t for v, t in vals if bshape(s, t) == t and t != s]
            if not cands:
                n -= 1; continue
            t = rng.choice(cands)
            lines.append(f"  {r} = nn.expand {src} {{shape = array<i64: {', '.join(map(str, t))}>}} : ({ty(s)}) -> {ty(t)}")
            vals.append((r, t)); continue
    used = set()
    for l in lines:
        rhs = l.split("=", 1)[1]
        used.update(tok.strip(",:()") for tok in rhs.split() if tok.startswith("%v"))
    leaves = [(v, t) for v, t in vals if v.startswith("%v") and v not in used]
    if not leaves:
        leaves = [vals[-1]]
    sig = ", ".join([f"{a}: {ty(s)}" for a, s in args] + [f"{a}: {ty(s)} {{nn.no_grad, gradcheck.positive}}" for a, s in nograd] + [f"{a}: {ty(s)} {{gradcheck.positive}}" for a, s in positive])
    rtypes = ", ".join(ty(t) for _, t in leaves)
    return ([f"func.func @f{idx}({sig}) -> ({rtypes}) {{"] + lines +
            [f"  return {', '.join(v for v, _ in leaves)} : {rtypes}", "}"])

def main():
    seed, count = int(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    out = []
    for i in range(count):
        out += gen_function(rng, i) + [""]
    print("\n".join(out))

if __name__ == "__main__":
    main()
