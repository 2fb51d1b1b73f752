#!/usr/bin/env python3
"""Lists the images of every CUDA fatbin embedded in a file (program.so).

Usage: fatbin_entries.py FILE

Prints one line per image, `<kind> sm_<arch>` with kind `ptx` or `elf`
(SASS), after a `fatbin <bytes>` line per fatbin found. The layout is the
one CUDA's fatbinary writes (a 16-byte header with magic 0xBA55ED50, then
entries with a 64-byte-or-more header each); no CUDA tool is needed.
"""
import struct
import sys

MAGIC = 0xBA55ED50


def main():
    data = open(sys.argv[1], "rb").read()
    start = 0
    found = 0
    while True:
        at = data.find(struct.pack("<I", MAGIC), start)
        if at < 0:
            break
        start = at + 4
        _, version, header_size, fat_size = struct.unpack_from("<IHHQ", data, at)
        if header_size != 16 or fat_size == 0 or at + 16 + fat_size > len(data):
            continue
        found += 1
        print(f"fatbin {fat_size}")
        entry = at + 16
        end = at + 16 + fat_size
        while entry < end:
            kind, _, entry_header, size = struct.unpack_from("<HHIQ", data, entry)
            arch = struct.unpack_from("<I", data, entry + 28)[0]
            name = {1: "ptx", 2: "elf"}.get(kind, f"kind{kind}")
            print(f"{name} sm_{arch}")
            if entry_header == 0:
                break
            entry += entry_header + size
    if not found:
        print("no fatbin")
        sys.exit(1)


if __name__ == "__main__":
    main()
