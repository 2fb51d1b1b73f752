#!/usr/bin/python3
"""A pipeline bundle on two hosts: network namespaces joined by a veth pair.

    two_hosts.py --bin BUILD/bin --bundle DIR --data DATA.npz --ranks N
        [--map-by node|slot] [--steps S] [--work DIR]

Makes two "hosts" -- network namespaces pd2h-<pid>-a and -b, a veth pair
between them with private addresses 10.213.X.1 and .2 (no route anywhere
else) and loopback up -- and removes them afterwards, whatever happens.
mpirun runs in host a with a hostfile of the two addresses (N/2 slots
each), Open MPI's TCP transport on the veth only (`btl tcp,self`,
`btl_tcp_if_include`, `oob_tcp_if_include`) and `netns_agent.sh` as its
launch agent (`plm_rsh_agent`, in place of ssh): it starts the Open MPI
daemon of host b inside b's namespace. Checks
- that the ranks run in the two namespaces (each rank prints its network
  namespace; `--map-by node`: ranks alternate, `slot`: the first N/2 on a);
- that `pipedream-run` over the two hosts trains exactly as the same bundle
  on one process (`--transport threads`): the same loss log and the same
  trained model, byte for byte;
- that both namespaces are gone afterwards.
Prints `OK ...` or `MISMATCH ...`; exits non-zero on a mismatch or when a
namespace cannot be made (lit runs it only where it can: feature netns).
"""

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def sh(*cmd, **kw):
    return subprocess.run(list(cmd), check=True, **kw)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bin", required=True)
    p.add_argument("--bundle", required=True)
    p.add_argument("--data", required=True)
    p.add_argument("--ranks", type=int, required=True)
    p.add_argument("--map-by", choices=["node", "slot"], default="node")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--work")
    args = p.parse_args()
    if args.ranks % 2:
        print("error: --ranks must be even (half on each host)")
        return 1
    work = args.work or tempfile.mkdtemp(prefix="two-hosts-")
    os.makedirs(work, exist_ok=True)
    run = os.path.join(args.bin, "pipedream-run")
    mpirun = os.environ.get("PIPEDREAM_MPIRUN") or shutil.which("mpirun")

    pid = os.getpid()
    ns = [f"pd2h-{pid}-a", f"pd2h-{pid}-b"]
    veth = [f"pd2h{pid % 100000}a", f"pd2h{pid % 100000}b"]
    subnet = f"10.213.{pid % 250}"
    addr = [f"{subnet}.1", f"{subnet}.2"]
    made = []
    try:
        for n in ns:
            sh("ip", "netns", "add", n)
            made.append(n)
        sh("ip", "link", "add", veth[0], "type", "veth", "peer", "name",
           veth[1])
        for n, v, a in zip(ns, veth, addr):
            sh("ip", "link", "set", v, "netns", n)
            sh("ip", "-n", n, "addr", "add", a + "/24", "dev", v)
            sh("ip", "-n", n, "link", "set", v, "up")
            sh("ip", "-n", n, "link", "set", "lo", "up")
        hostfile = os.path.join(work, "hostfile")
        half = args.ranks // 2
        with open(hostfile, "w") as f:
            for a in addr:
                f.write(f"{a} slots={half}\n")
        env = dict(os.environ)
        env["PIPEDREAM_NETNS_HOSTS"] = " ".join(
            f"{a}={n}" for a, n in zip(addr, ns))
        launch = ["ip", "netns", "exec", ns[0], mpirun, "--hostfile",
                  hostfile, "--mca", "plm_rsh_agent",
                  os.path.join(HERE, "netns_agent.sh"),
                  "--mca", "plm_rsh_no_tree_spawn", "1",
                  "--mca", "btl", "tcp,self",
                  "--mca", "btl_tcp_if_include", subnet + ".0/24",
                  "--mca", "oob_tcp_if_include", subnet + ".0/24",
                  # The namespaces share this machine's memory (and host
                  # name): without this the runtime would pass the
                  # program's messages through shared memory
                  # (TransportMpi.cpp), not over TCP as between hosts.
                  "-x", "PIPEDREAM_MPI_SHM=0",
                  "-np", str(args.ranks), "--map-by", args.map_by]
        if os.geteuid() == 0:
            launch.insert(5, "--allow-run-as-root")

        # Which namespace each rank runs in.
        inode = [subprocess.run(["ip", "netns", "exec", n, "readlink",
                                 "/proc/self/ns/net"], check=True,
                                capture_output=True, text=True).stdout.strip()
                 for n in ns]
        where = subprocess.run(
            launch + ["sh", "-c",
                      "echo $OMPI_COMM_WORLD_RANK $(readlink /proc/self/ns/net)"],
            env=env, check=True, capture_output=True, text=True, timeout=120)
        placed = {}
        for line in where.stdout.split("\n"):
            if line.strip():
                rank, net = line.split()
                placed[int(rank)] = inode.index(net) if net in inode else -1
        expect = {r: (r % 2 if args.map_by == "node" else r // half)
                  for r in range(args.ranks)}
        bad = 0
        if placed != expect:
            print(f"MISMATCH: ranks on hosts {placed} (0 = a, 1 = b, -1 = "
                  f"neither), expected {expect}")
            bad += 1

        two = os.path.join(work, "two")
        one = os.path.join(work, "one")
        common = [args.bundle, "--data", args.data, "--steps",
                  str(args.steps)]
        subprocess.run(launch + [run, *common, "--timeout", "120",
                                 "--loss-log", two + ".csv", "--save-onnx",
                                 two + ".onnx"],
                       env=env, check=True, stdout=subprocess.DEVNULL,
                       timeout=600)
        sh(run, *common, "--transport", "threads", "--loss-log", one + ".csv",
           "--save-onnx", one + ".onnx", stdout=subprocess.DEVNULL)
        for ext in (".csv", ".onnx"):
            if not filecmp.cmp(one + ext, two + ext, shallow=False):
                print(f"MISMATCH: {two + ext} differs from the one-process "
                      f"run's {one + ext}")
                bad += 1
        if not bad:
            with open(two + ".csv") as f:
                losses = [line.strip().split(",")[-1]
                          for line in f.readlines()[1:]]
            print(f"OK two hosts: {args.ranks} ranks (--map-by "
                  f"{args.map_by}) over TCP between namespaces {ns[0]} and "
                  f"{ns[1]}; losses {' '.join(losses)} equal the one-process "
                  f"run's, trained model byte for byte")
        return 1 if bad else 0
    finally:
        for n in made:
            subprocess.run(["ip", "netns", "del", n])
        left = subprocess.run(["ip", "netns", "list"], capture_output=True,
                              text=True).stdout
        for n in made:
            if n in left.split():
                print(f"MISMATCH: namespace {n} was not removed")


if __name__ == "__main__":
    sys.exit(main())
