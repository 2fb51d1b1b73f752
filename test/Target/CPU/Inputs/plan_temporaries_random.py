#!/usr/bin/python3
"""Random straight-line functions for cpu-plan-temporaries, and an
independent check of its output.

    plan_temporaries_random.py generate --functions N --seed S > IN.mlir
    plan_temporaries_random.py check OUT.mlir

`generate` writes functions of allocations (1-D and 2-D f32, random sizes),
uses of them by an unregistered op (`"test.use"`), reshapes of them used
later, uses inside an `scf.if`, and a `memref.dealloc` of every allocation
before the return, as the deallocation pipeline leaves them.

`check` reads the pass's output (the function's buffer, each temporary a
`memref.view` at a constant offset; a function of one temporary
unchanged) and, from the text alone, gives each
view a live range: from the view to the last top-level operation that
names it or a value computed from it (an operation inside the `scf.if`
counts at the `scf.if`). Two views live at the same time must not share a
byte. Prints "OK ..." or the first violation, and exits 1 on one.
"""

import argparse
import random
import re
import sys


def generate(functions, seed):
    rng = random.Random(seed)
    out = []
    for f in range(functions):
        lines = [f"func.func @f{f}(%cond: i1) {{"]
        allocs = []  # (name, type)
        live = []    # names usable now
        counter = 0

        def fresh(prefix):
            nonlocal counter
            counter += 1
            return f"%{prefix}{counter}"

        for _ in range(rng.randint(5, 40)):
            kind = rng.random()
            if kind < 0.35 or not live:
                if rng.random() < 0.3:
                    rows, cols = rng.randint(1, 16), rng.randint(1, 40)
                    type_ = f"memref<{rows}x{cols}xf32>"
                else:
                    type_ = f"memref<{2 * rng.randint(1, 300)}xf32>"
                name = fresh("a")
                lines.append(f"  {name} = memref.alloc() : {type_}")
                allocs.append((name, type_))
                live.append((name, type_))
            elif kind < 0.75:
                picked = rng.sample(live, min(len(live), rng.randint(1, 3)))
                names = ", ".join(n for n, _ in picked)
                types = ", ".join(t for _, t in picked)
                lines.append(f'  "test.use"({names}) : ({types}) -> ()')
                # Some values stop being used.
                for p in picked:
                    if rng.random() < 0.4 and p in live:
                        live.remove(p)
            elif kind < 0.87:
                name, type_ = rng.choice(live)
                m = re.fullmatch(r"memref<(\d+)xf32>", type_)
                if not m:
                    continue
                n = int(m.group(1))
                view = fresh("v")
                vtype = f"memref<2x{n // 2}xf32>"
                lines.append(f"  {view} = memref.expand_shape {name} [[0, 1]] "
                             f"output_shape [2, {n // 2}] : {type_} into "
                             f"{vtype}")
                live.append((view, vtype))
            else:
                name, type_ = rng.choice(live)
                lines.append("  scf.if %cond {")
                lines.append(f'    "test.use"({name}) : ({type_}) -> ()')
                lines.append("  }")
        for name, type_ in allocs:
            lines.append(f"  memref.dealloc {name} : {type_}")
        lines.append("  return")
        lines.append("}")
        out.append("\n".join(lines))
    return "\n\n".join(out) + "\n"


def element_count(type_):
    dims = re.match(r"memref<([0-9x]+)xf32", type_).group(1).split("x")
    n = 1
    for d in dims:
        n *= int(d)
    return n


def check(text):
    functions = re.findall(r"func\.func @\w+\(.*?\n  \}\n", text, re.S)
    if not functions:
        print("no functions")
        return 1
    temporaries = pairs = 0
    for body in functions:
        # Top-level operations: a nested region's lines join their parent.
        ops, depth = [], 0
        for line in body.splitlines()[1:]:
            stripped = line.strip()
            if depth == 0:
                ops.append(stripped)
            else:
                ops[-1] += " " + stripped
            depth += line.count("{") - line.count("}")
        constants = dict(re.findall(
            r"(%[\w.]+) = arith\.constant (\d+) : index", body))
        views = []  # (position, name, offset, bytes)
        for i, op in enumerate(ops):
            m = re.match(r"(%[\w.]+) = memref\.view %[\w.]+\[(%[\w.]+)\]"
                         r"\[\] : memref<\d+xi8> to (memref<[^>]*>)", op)
            if m:
                views.append((i, m.group(1), int(constants[m.group(2)]),
                              4 * element_count(m.group(3))))
        left = re.findall(r"memref\.alloc\(\) : memref<[0-9x]+xf32>", body)
        # A lone temporary has nothing to share bytes with: left as it is.
        if left and (views or len(left) > 1):
            print("a temporary was left unplaced")
            return 1
        ranges = []
        for start, name, offset, size in views:
            derived, end = {name}, start
            for j in range(start + 1, len(ops)):
                names = set(re.findall(r"%[\w.]+", ops[j]))
                if names & derived and not ops[j].startswith("memref.dealloc"):
                    end = j
                    result = re.match(r"(%[\w.]+) = ", ops[j])
                    if result:
                        derived.add(result.group(1))
            ranges.append((start, end, offset, size, name))
        temporaries += len(ranges)
        for a in range(len(ranges)):
            for b in range(a + 1, len(ranges)):
                s1, e1, o1, n1, x = ranges[a]
                s2, e2, o2, n2, y = ranges[b]
                if s1 <= e2 and s2 <= e1:
                    pairs += 1
                    if o1 < o2 + n2 and o2 < o1 + n1:
                        print(f"{x} (ops {s1}-{e1}, bytes {o1}+{n1}) and {y} "
                              f"(ops {s2}-{e2}, bytes {o2}+{n2}) are live "
                              "together and share bytes")
                        return 1
    print(f"OK {len(functions)} functions, {temporaries} temporaries, "
          f"{pairs} pairs live together, none sharing a byte")
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("--functions", type=int, default=50)
    g.add_argument("--seed", type=int, default=0)
    c = sub.add_parser("check")
    c.add_argument("file")
    args = p.parse_args()
    if args.command == "generate":
        sys.stdout.write(generate(args.functions, args.seed))
        return 0
    with open(args.file) as f:
        return check(f.read())


if __name__ == "__main__":
    sys.exit(main())
