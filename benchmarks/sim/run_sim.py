#!/usr/bin/env python3
"""Run mpix_bench from the SimGrid build under smpirun on a generated platform
and compare MPIX_Hier_* (auto selection, forced 'hier' = levels back to back,
forced 'pipeline' = levels overlapped) with plain MPI (SMPI's MPICH selector),
next to the analytic two-level bound (ARCHITECTURE.md section 3).

  benchmarks/sim/run_sim.py --nodes 4 --gpus 4 -b 1M -e 256M
  benchmarks/sim/run_sim.py --check-model            # simulator vs analytic formulas
  benchmarks/sim/run_sim.py -b 16M -e 64M --sweep-frag 128k,256k,512k,1m,2m

Network model: SMPI's correction factors are set to 1, cross-traffic and RTT
weighting off, so that links behave as the platform file says; reductions
cost nothing (smpi/simulate-computation:no) in both columns.
Python 3 standard library only.
"""
import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_platform  # noqa: E402

SMPI_OPTS = ["--cfg=smpi/simulate-computation:no", "--cfg=network/crosstraffic:0",
             "--cfg=smpi/bw-factor:0:1", "--cfg=smpi/lat-factor:0:1",
             "--cfg=network/weight-S:0", "--cfg=smpi/coll-selector:mpich",
             "--log=root.thres:warning", "--log=smpi_config.thres:error"]


def parse_size(s):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", s)
    if not m:
        raise argparse.ArgumentTypeError("bad size %r" % s)
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def fmt_size(b):
    for u, s in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << s and b % (1 << s) == 0:
            return "%d %s" % (b >> s, u)
    return "%d B" % b


def smpirun(a, prefix, nranks, prog, env_extra, log):
    env = dict(os.environ)
    env.update(env_extra)
    test_opts = ["--cfg=smpi/test:%g" % a.test_time, "--cfg=smpi/grow-injected-times:no"]
    cmd = ["smpirun", "-np", str(nranks), "-platform", prefix + ".xml",
           "-hostfile", prefix + ".hosts"] + SMPI_OPTS + test_opts + prog
    t0 = time.time()
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=a.timeout)
    wall = time.time() - t0
    with open(log, "w") as f:
        f.write("# %s %s\n" % (" ".join("%s=%s" % kv for kv in env_extra.items()),
                               " ".join(cmd)))
        f.write(p.stdout)
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-3000:])
        raise SystemExit("smpirun failed (%d), log in %s" % (p.returncode, log))
    return p.stdout, wall


def bench_rows(out, coll):
    """{bytes: (hier_time_us, hier_busbw, mpi_time_us, mpi_busbw)} of one collective."""
    rows, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"# Collective: (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        if cur != coll or line.startswith("#") or not line.strip():
            continue
        f = line.split()
        if len(f) < 9 or not f[0].isdigit():
            continue
        vals = f[5:]
        rows[int(f[0])] = vals
    return rows


def model(a, n):
    """Times (s) of the analytic models for an allreduce of n bytes per rank;
    reduce_scatter and allgather of an n-byte vector move half as much."""
    N, g = a.nodes, a.gpus
    if a.coll in ("reduce_scatter", "allgather"):
        n = n / 2.0
    npl = a.nodes_per_leaf or N
    bnvl, bnic = a.b_nvl * 1e9, a.b_nic * 1e9
    t_intra = 2.0 * (g - 1) / g * n / bnvl if g > 1 else 0.0
    t_inter = 2.0 * (N - 1) / N * n / (g * bnic) if N > 1 else 0.0
    if N > npl and a.oversub > 1:
        # across the spine: the rail's shard n/g crosses a leaf uplink shared by the
        # npl nodes of the leaf group (capacity npl * B_nic / oversub)
        t_inter = max(t_inter, 2.0 * (N - npl) / N * n / (g * bnic / a.oversub))
    return t_intra, t_inter


def bus_factor(a, p):
    return (p - 1.0) / p if a.coll in ("reduce_scatter", "allgather") else 2.0 * (p - 1) / p


def setup(a):
    os.makedirs(a.out, exist_ok=True)
    prefix = os.path.join(a.out, "plat_%s_%dx%d" % (a.topology, a.nodes, a.gpus))
    gargs = ["--topology", a.topology, "--nodes", str(a.nodes), "--gpus", str(a.gpus),
             "--nodes-per-leaf", str(a.nodes_per_leaf), "--oversub", str(a.oversub),
             "--b-nvl", str(a.b_nvl), "--b-nic", str(a.b_nic), "--lat-nvl", str(a.lat_nvl),
             "--lat-nic", str(a.lat_nic), "--lat-spine", str(a.lat_spine), "-o", prefix]
    gen_platform.main(gargs)
    return prefix


def run_compare(a):
    prefix = setup(a)
    p = a.nodes * a.gpus
    bench = os.path.join(a.build, "benchmarks", "mpix_bench")
    common = ["-c", a.coll, "-b", str(a.minb), "-e", str(a.maxb), "-f", str(a.factor),
              "-n", str(a.iters), "-w", str(a.warmup)]
    env = {"MPIX_HIER_CLUSTER_FILE": prefix + ".cluster"}
    if a.frag:
        env["MPIX_HIER_FRAG_SIZE"] = a.frag
    if a.depth is not None:
        env["MPIX_HIER_PIPELINE_DEPTH"] = str(a.depth)
    runs = [("auto", dict(env), ["--impl", "hier,mpi"]),
            ("hier", dict(env, MPIX_HIER_ALGO="hier"), ["--impl", "hier"]),
            ("pipeline", dict(env, MPIX_HIER_ALGO="pipeline"), ["--impl", "hier"])]
    res = {}
    for name, e, extra in runs:
        log = "%s.%s.%s.log" % (prefix, a.coll, name)
        out, wall = smpirun(a, prefix, p, [bench] + common + extra, e, log)
        res[name] = bench_rows(out, a.coll)
        sys.stderr.write("%s: %.0f s wall, log %s\n" % (name, wall, log))
    fac = bus_factor(a, p)
    print("# %s, %s %d nodes x %d GPUs = %d ranks, nodes/leaf %s, oversub %g, B_nvl %g GB/s, "
          "B_nic %g GB/s" % (a.coll, a.topology, a.nodes, a.gpus, p,
                             a.nodes_per_leaf or a.nodes, a.oversub, a.b_nvl, a.b_nic))
    print("# busbw in GB/s (nccl-tests: algbw * 2(p-1)/p); bound = two-level bound with "
          "full overlap, seq = levels back to back (model)")
    hdr = ("size", "mpi", "auto", "hier", "pipeline", "seq", "bound", "pipe/bound",
           "pipe/mpi")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for n in sorted(res["auto"]):
        ti, tx = model(a, n)
        b_bound = n / max(ti, tx) / 1e9 * fac if max(ti, tx) > 0 else float("nan")
        b_seq = n / (ti + tx) / 1e9 * fac if ti + tx > 0 else float("nan")
        mpi = float(res["auto"][n][6])
        auto = float(res["auto"][n][2])
        hier = float(res["hier"].get(n, ["nan"] * 3)[2])
        pipe = float(res["pipeline"].get(n, ["nan"] * 3)[2])
        print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
            fmt_size(n), mpi, auto, hier, pipe, b_seq, b_bound, pipe / b_bound, pipe / mpi))


def run_sweep(a):
    """Pipeline busbw per fragment size (MPIX_HIER_FRAG_SIZE), hier for reference."""
    prefix = setup(a)
    p = a.nodes * a.gpus
    bench = os.path.join(a.build, "benchmarks", "mpix_bench")
    common = ["-c", a.coll, "-b", str(a.minb), "-e", str(a.maxb), "-f", str(a.factor),
              "-n", str(a.iters), "-w", str(a.warmup), "--impl", "hier"]
    env = {"MPIX_HIER_CLUSTER_FILE": prefix + ".cluster"}
    runs = [("hier", dict(env, MPIX_HIER_ALGO="hier"))]
    for fr in a.sweep_frag.split(","):
        for d in (a.sweep_depth.split(",") if a.sweep_depth else [None]):
            e = dict(env, MPIX_HIER_ALGO="pipeline", MPIX_HIER_FRAG_SIZE=fr)
            name = "pipeline %s" % fr
            if d is not None:
                e["MPIX_HIER_PIPELINE_DEPTH"] = d
                name += " depth %s" % d
            runs.append((name, e))
    res = {}
    for name, e in runs:
        log = "%s.%s.%s.log" % (prefix, a.coll, name.replace(" ", "_"))
        out, wall = smpirun(a, prefix, p, [bench] + common, e, log)
        res[name] = bench_rows(out, a.coll)
        sys.stderr.write("%s: %.0f s wall, log %s\n" % (name, wall, log))
    fac = bus_factor(a, p)
    sizes = sorted(res["hier"])
    print("# %s, %s %d nodes x %d GPUs: busbw in GB/s (time in us)" % (
        a.coll, a.topology, a.nodes, a.gpus))
    print("| algorithm | " + " | ".join(fmt_size(n) for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, _ in runs:
        print("| %s | " % name + " | ".join(
            "%.1f (%.0f)" % (float(res[name][n][2]), float(res[name][n][0]))
            if n in res[name] else "-" for n in sizes) + " |")
    print("| bound (model) | " + " | ".join(
        "%.1f" % (n / max(model(a, n)) / 1e9 * fac) for n in sizes) + " |")


def run_check_model(a):
    """2-rank point-to-point and a flat ring allreduce vs the formulas."""
    os.makedirs(a.out, exist_ok=True)
    exe = os.path.join(a.out, "sim_check")
    subprocess.check_call(["smpicc", "-O2", "-o", exe, os.path.join(HERE, "sim_check.c")])
    p = a.ring_ranks
    prefix = os.path.join(a.out, "plat_flat%d" % p)
    # one GPU per node, all nodes under one leaf: every path is NIC up + NIC down
    gen_platform.main(["--nodes", str(p), "--gpus", "1", "--b-nic", str(a.b_nic),
                       "--lat-nic", str(a.lat_nic), "-o", prefix])
    out, _ = smpirun(a, prefix, p, [exe, str(a.maxb)], {}, prefix + ".check.log")
    L, B = 2 * a.lat_nic * 1e-6, a.b_nic * 1e9
    print("# simulator vs analytic: %d ranks, one per node, one leaf; L = %g us, B = %g GB/s"
          % (p, L * 1e6, a.b_nic))
    print("| test | bytes | simulated (us) | analytic (us) | sim/analytic |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for line in out.splitlines():
        f = line.split()
        if len(f) != 3 or f[0] not in ("p2p", "ring"):
            continue
        n, t = int(f[1]), float(f[2])
        if f[0] == "p2p":
            ta = (L + n / B) * 1e6
        else:
            ta = 2 * (p - 1) * (L + n / p / B) * 1e6
        r = t / ta
        if n >= a.check_min:
            worst = max(worst, abs(r - 1))
        print("| %s | %d | %.2f | %.2f | %.3f |" % (f[0], n, t, ta, r))
    print("# largest deviation for sizes >= %d B: %.1f %% (%s 5 %%)" % (
        a.check_min, worst * 100, "within" if worst <= 0.05 else "OUTSIDE"))
    return 0 if worst <= 0.05 else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(HERE, "..", "..", "build-sim"),
                    help="SimGrid build directory (default: build-sim)")
    ap.add_argument("--out", default="sim-out", help="output directory (default sim-out)")
    ap.add_argument("--topology", choices=["rail", "fattree"], default="rail")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--gpus", type=int, default=4)
    ap.add_argument("--nodes-per-leaf", type=int, default=0)
    ap.add_argument("--oversub", type=float, default=1.0)
    ap.add_argument("--b-nvl", type=float, default=370.0)
    ap.add_argument("--b-nic", type=float, default=48.0)
    ap.add_argument("--lat-nvl", type=float, default=0.5)
    ap.add_argument("--lat-nic", type=float, default=1.0)
    ap.add_argument("--lat-spine", type=float, default=1.0)
    ap.add_argument("-c", "--coll", default="allreduce")
    ap.add_argument("-b", "--minb", type=parse_size, default=1 << 20)
    ap.add_argument("-e", "--maxb", type=parse_size, default=256 << 20)
    ap.add_argument("-f", "--factor", type=int, default=4)
    ap.add_argument("-n", "--iters", type=int, default=3)
    ap.add_argument("-w", "--warmup", type=int, default=1)
    ap.add_argument("--frag", default="", help="MPIX_HIER_FRAG_SIZE for the runs")
    ap.add_argument("--depth", type=int, default=None,
                    help="MPIX_HIER_PIPELINE_DEPTH for the runs (default: the library's)")
    ap.add_argument("--sweep-frag", default="",
                    help="comma-separated MPIX_HIER_FRAG_SIZE values: pipeline-only sweep")
    ap.add_argument("--sweep-depth", default="",
                    help="with --sweep-frag: comma-separated MPIX_HIER_PIPELINE_DEPTH values")
    ap.add_argument("--test-time", type=float, default=1e-8,
                    help="simulated seconds charged per MPI_Test (smpi/test, no growth; "
                         "default 1e-8)")
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per smpirun")
    ap.add_argument("--check-model", action="store_true",
                    help="run the simulator cross-check instead of the comparison")
    ap.add_argument("--ring-ranks", type=int, default=8)
    ap.add_argument("--check-min", type=parse_size, default=256 << 10,
                    help="smallest size counted in the 5%% verdict (default 256K)")
    a = ap.parse_args()
    if a.check_model:
        return run_check_model(a)
    if a.sweep_frag:
        run_sweep(a)
        return 0
    run_compare(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
