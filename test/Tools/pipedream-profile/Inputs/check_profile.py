"""Checks a pipedream-profile JSON against the model's nn IR.

usage: check_profile.py PROFILE.json MODEL.mlir

Deterministic properties only, never timing values: the profile has one
entry per op of @main (constants aside) with the op's name, op and
signature; every forward time is positive; backward times are present,
non-negative, positive for a weight gradient of an op reading a trainable
weight, and zero where no gradient flows (integer data, graph inputs).
Prints `OK <op>: ...` summaries for FileCheck.
"""

import json
import re
import sys


def main():
    profile = json.load(open(sys.argv[1]))
    ir = open(sys.argv[2]).read()
    assert profile["format"] == "pipedream-profile", profile.get("format")
    assert profile["version"] == 1
    ops = profile["ops"]
    # Placed ops of the model function: every nn op but constants.
    main_body = ir[ir.index("func.func @main"):]
    model_ops = re.findall(r"= (nn\.[a-z_]+)", main_body)
    model_ops = [op for op in model_ops if op != "nn.constant"]
    assert [e["op"] for e in ops] == model_ops, ([e["op"] for e in ops], model_ops)
    kinds = {}
    for e in ops:
        assert e["name"], e
        assert "->" in e["signature"], e
        assert e["forward"] > 0, e
        assert e["backward_input"] >= 0 and e["backward_weight"] >= 0, e
        k = kinds.setdefault(e["op"], {"n": 0, "bi": 0, "bw": 0})
        k["n"] += 1
        k["bi"] += e["backward_input"] > 0
        k["bw"] += e["backward_weight"] > 0
    print(f"OK {len(ops)} ops, all forward > 0")
    for op in sorted(kinds):
        k = kinds[op]
        print(f"OK {op}: {k['n']} ops, {k['bi']} with input grad, "
              f"{k['bw']} with weight grad")


if __name__ == "__main__":
    main()
