#!/usr/bin/env python3
"""Compare the cost model (mpix_info --explain) with simulated times.

  benchmarks/sim/cost_check.py --info build/src/tools/mpix_info --nodes 16 --gpus 8 \
      DIR/scale.csv[=FRAG] ...  [--env MPIX_HIER_COST_NET_LATENCY=23us ...]
      [--torus 4x2x2]   (a torus3d/torus2d platform: the torus levels, mpix_info --torus)

Each CSV is a run_sim.py --scale output of one MPIX_HIER_FRAG_SIZE (FRAG, default the
library's 8m; --hier-only runs too), any modelled collective (allreduce,
reduce_scatter_block, allgather, bcast, reduce); every row's hier time is compared with
the model's prediction for the
schedule today's selection runs with that fragment size ("today:" of --explain). FRAG
"model": a run with MPIX_HIER_COST_MODEL=yes, compared with the model's choice
("model:" of --explain).
Prints a markdown table (prediction, simulation, error %). Standard library only."""
import argparse
import csv
import os
import re
import subprocess
import sys


def predict(info, coll, size, frag, nodes, gpus, leaves, env, torus=""):
    e = dict(os.environ, **env)
    if frag != "model":
        e["MPIX_HIER_FRAG_SIZE"] = frag
    cmd = [info, "--explain", coll, str(size), "--nodes", str(nodes), "--gpus", str(gpus)]
    if leaves > 1:
        cmd += ["--leaves", str(leaves)]
    if torus:
        cmd += ["--torus", torus]
    out = subprocess.run(cmd, env=e, capture_output=True, text=True).stdout
    key = "model:" if frag == "model" else "today:"
    today = [l for l in out.splitlines() if l.startswith(key)]
    m = re.search(r"(\d+) fragment\(s\)[,:] ([\d.]+) us", today[0]) if today else None
    bound = re.search(r"bound \(busiest[^:]*: ([\d.]+) us", out)
    return (float(m.group(2)), int(m.group(1)), float(bound.group(1))) if m else (None, 0, 0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--info", default="build/src/tools/mpix_info")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--leaves", type=int, default=1, help="leaf groups (a spine level)")
    ap.add_argument("--torus", default="",
                    help="XxY[xZ]: the nodes form a torus (gen_platform.py torus2d/torus3d)")
    ap.add_argument("--env", action="append", default=[], help="VAR=VALUE for the model")
    ap.add_argument("--label", default="")
    ap.add_argument("csvs", nargs="+")
    a = ap.parse_args()
    env = dict(kv.split("=", 1) for kv in a.env)
    rows, errs = [], []
    for spec in a.csvs:
        path, _, frag = spec.partition("=")
        frag = frag or "8m"
        for r in csv.DictReader(open(path)):
            size = int(r["size_bytes"])
            sim = float(r["hier_time_us"])
            p, nf, bound = predict(a.info, r["collective"], size, frag, a.nodes, a.gpus, a.leaves, env,
                                 a.torus)
            if p is None:
                continue
            err = (p - sim) / sim * 100
            errs.append(abs(err))
            rows.append((r["collective"], size, frag, nf, p, sim, err, bound))
    print("| %scollective | size | MPIX_HIER_FRAG_SIZE | fragments | model µs | simulated µs | error |"
          % ("" if not a.label else "network model | "))
    print("|%s---|---:|---:|---:|---:|---:|---:|" % ("" if not a.label else "---|"))
    seen = set()
    for c, s, f, nf, p, sim, err, _ in sorted(rows, key=lambda x: (x[0], x[1], x[3], x[2])):
        if (c, s, nf, round(sim, 2)) in seen and f != "model":
            continue  # the same schedule under another MPIX_HIER_FRAG_SIZE
        seen.add((c, s, nf, round(sim, 2)))
        sz = "%d MiB" % (s >> 20) if s >= 1 << 20 else "%d KiB" % (s >> 10)
        print("| %s%s | %s | %s | %d | %.2f | %.2f | %+.1f %% |" % (
            (a.label + " | ") if a.label else "", c, sz, "cost model" if f == "model" else f,
            nf, p, sim, err))
    if errs:
        print("\n%d cases: mean |error| %.1f %%, max %.1f %%, within 15 %%: %d" % (
            len(errs), sum(errs) / len(errs), max(errs), sum(e <= 15 for e in errs)))


if __name__ == "__main__":
    sys.exit(main())
