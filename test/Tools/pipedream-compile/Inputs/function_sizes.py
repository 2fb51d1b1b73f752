#!/usr/bin/python3
"""Code size of a program.so's stage functions, from `llvm-nm -S`.

    llvm-nm -S --defined-only program.so | function_sizes.py NAME...

Prints, per NAME (e.g. pipedream_stage2_B), `NAME: N bytes` where N adds
the symbol's own size and those of its parts (NAME.partK, the pieces
cpu-split-large-functions cuts a long function into), and `NAME: forwards`
when the whole is under 16 bytes (a jump to another function's code:
cpu-merge-equal-functions' wrapper), `NAME: code` otherwise.
"""

import re
import sys


def main():
    names = sys.argv[1:]
    sizes = {}
    for line in sys.stdin:
        fields = line.split()
        if len(fields) != 4:
            continue
        _, size, _, symbol = fields
        for name in names:
            if symbol == name or re.fullmatch(re.escape(name) + r"\.part\d+",
                                              symbol):
                sizes[name] = sizes.get(name, 0) + int(size, 16)
    for name in names:
        if name not in sizes:
            print(f"{name}: missing")
            continue
        kind = "forwards" if sizes[name] < 16 else "code"
        print(f"{name}: {kind}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
