#!/usr/bin/env python3
"""Run mpix_bench from the SimGrid build under smpirun on generated platforms
and compare MPIX_Hier_* with plain MPI (SMPI's MPICH selector), next to the
analytic bound (ARCHITECTURE.md section 3, per topology: see README.md).

  benchmarks/sim/run_sim.py --scale 128,512,1024 --topologies rail,fattree   # scale sweep
  benchmarks/sim/run_sim.py --nodes 4 --gpus 4 -b 1M -e 256M      # auto/hier/pipeline table
  benchmarks/sim/run_sim.py --check-model                         # simulator vs formulas
  benchmarks/sim/run_sim.py -b 16M -e 64M --sweep-frag 2m,8m       # pipeline per fragment

Network model: SMPI's correction factors are set to 1, cross-traffic and RTT
weighting off, so that links behave as the platform file says. Reductions and
local copies are charged by the library's cost model (MPIX_HIER_SIM_REDUCE,
_SIM_REDUCE_BW, _SIM_COPY_BW, passed through from the environment or set with
--reduce-bw/--copy-bw); mpix_bench's mpi column reduces with the library's
costed op, so both columns pay the same for a reduced byte.
Python 3 standard library only.
"""
import argparse
import concurrent.futures
import csv
import os
import re
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_platform  # noqa: E402

# The link-exact network model: a message of n bytes on a path takes latency + n /
# bandwidth of its links, shared max-min. --net-model default drops these four and
# runs SMPI's calibrated model instead (per-size bandwidth and latency factors,
# TCP-like weight-S, cross-traffic of acknowledgements), as a TCP/Ethernet fabric.
EXACT_OPTS = ["--cfg=network/crosstraffic:0", "--cfg=smpi/bw-factor:0:1",
              "--cfg=smpi/lat-factor:0:1", "--cfg=network/weight-S:0"]
SMPI_OPTS = ["--cfg=smpi/simulate-computation:no"] + EXACT_OPTS + [
             # one mapping per shared buffer up to 256 MiB (the default 1 MiB blocks
             # exceed vm.max_map_count at 128 ranks x 256 MiB)
             "--cfg=smpi/shared-malloc-blocksize:268435456",
             # no detached (eager) sends: SimGrid 3.32 never drops a detached send
             # from its sender's activity list, and every later completion of that
             # rank walks the list; at 1024 ranks the lists held ~35000 entries
             # after the setup and 97 % of the run went there (README: Simulation
             # cost). Data moves at the same simulated times either way; only a
             # sender's request completes at delivery instead of at posting.
             "--cfg=smpi/send-is-detached-thresh:0",
             "--log=root.thres:warning", "--log=smpi_config.thres:error",
             "--log=smpi_mpi.thres:error"]

# Also the order of --jobs runs: slowest to simulate first (1024 ranks, 8 B..256
# MiB, hier and mpi, dde6409: allreduce 993 s, reduce_scatter 748, allgather 603,
# bcast 252)
# reduce_scatter_block: mpix_bench's name of MPI_Reduce_scatter_block (its
# "reduce_scatter" is MPI_Reduce_scatter, with per-rank counts)
COLLS = ["allreduce", "reduce_scatter_block", "allgather", "bcast", "reduce"]
# also measurable with -c (not in "all": the v-collectives and all-to-all)
VCOLLS = ["allgatherv", "reduce_scatter", "alltoall", "alltoallv"]


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


# ---- running smpirun ---------------------------------------------------------

class MemSampler(threading.Thread):
    """Largest proportional set size (Pss: a page mapped by every simulated rank
    counts once) of a process tree, sampled every @period seconds, or every 20 times
    what a sample takes: the kernel walks every mapping of the simulation for it
    (6.4 s wall, 1.25 s of system time at 1024 ranks and 256 MiB, 11460 mappings),
    holding the simulation's memory map meanwhile."""

    def __init__(self, pid, period=5.0):
        threading.Thread.__init__(self, daemon=True)
        self.pid, self.period, self.peak = pid, period, 0
        self.stop = threading.Event()

    def tree(self):
        kids = {}
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    with open("/proc/%s/stat" % d) as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                    kids.setdefault(ppid, []).append(int(d))
                except (OSError, ValueError, IndexError):
                    pass
        out, todo = [], [self.pid]
        while todo:
            p = todo.pop()
            out.append(p)
            todo += kids.get(p, [])
        return out

    def sample(self):
        tot = 0
        for p in self.tree():
            try:
                with open("/proc/%d/smaps_rollup" % p) as f:
                    for line in f:
                        if line.startswith("Pss:"):
                            tot += int(line.split()[1]) * 1024
                            break
            except OSError:
                pass
        self.peak = max(self.peak, tot)

    def run(self):
        t0 = time.time()
        self.sample()
        while not self.stop.wait(max(self.period, 20 * (time.time() - t0))):
            t0 = time.time()
            self.sample()


def fold_lib(a):
    """Build smpi_fold.so (see smpi_fold.c) into the output directory, once."""
    so = os.path.join(os.path.abspath(a.out), "smpi_fold.so")
    src = os.path.join(HERE, "smpi_fold.c")
    if not os.path.exists(so) or os.path.getmtime(so) < os.path.getmtime(src):
        os.makedirs(a.out, exist_ok=True)
        subprocess.check_call(["gcc", "-O2", "-shared", "-fPIC", "-o", so, src,
                               "-lsimgrid", "-ldl"])
    return so


def sim_env(a):
    """Environment of every smpirun: cost-model variables from the options."""
    env = {}
    if getattr(a, "reduce_bw", None):
        env["MPIX_HIER_SIM_REDUCE_BW"] = str(a.reduce_bw)
    if getattr(a, "copy_bw", None):
        env["MPIX_HIER_SIM_COPY_BW"] = str(a.copy_bw)
    return env


def smpirun(a, prefix, nranks, prog, env_extra, log, selector="mpich", fold=False):
    """Run @prog under smpirun; returns (stdout, wall seconds, peak Pss bytes).
    fold: preload smpi_fold.so."""
    env = dict(os.environ)
    env.update(env_extra)
    if fold:
        env["LD_PRELOAD"] = fold_lib(a)
    test_opts = ["--cfg=smpi/test:%g" % a.test_time, "--cfg=smpi/grow-injected-times:no"]
    opts = SMPI_OPTS if getattr(a, "net_model", "exact") == "exact" else \
        [o for o in SMPI_OPTS if o not in EXACT_OPTS]
    thresh = getattr(a, "detached_thresh", 0)
    if thresh:
        opts = [o if not o.startswith("--cfg=smpi/send-is-detached-thresh:") else
                "--cfg=smpi/send-is-detached-thresh:%d" % thresh for o in opts]
    cmd = ["smpirun", "-np", str(nranks), "-platform", prefix + ".xml",
           "-hostfile", prefix + ".hosts"] + opts + \
          ["--cfg=smpi/coll-selector:%s" % selector] + test_opts + prog
    shown = dict(env_extra)
    if fold:
        shown["LD_PRELOAD"] = env["LD_PRELOAD"]
    for k in ("MPIX_HIER_SIM_REDUCE", "MPIX_HIER_SIM_REDUCE_BW", "MPIX_HIER_SIM_COPY_BW"):
        if k in env and k not in shown:
            shown[k] = env[k]
    t0 = time.time()
    with open(log + ".tmp", "w") as out:
        # own process group: smpirun is a script, the simulation its child smpimain,
        # which a timeout must kill too (p.kill() alone left it running)
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        mem = MemSampler(p.pid)
        mem.start()
        try:
            rc = p.wait(timeout=a.timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            rc = p.wait()
        mem.stop.set()
    wall = time.time() - t0
    with open(log + ".tmp") as f:
        text = f.read()
    with open(log, "w") as f:
        f.write("# %s %s\n" % (" ".join("%s=%s" % kv for kv in shown.items()), " ".join(cmd)))
        f.write("# wall %.1f s, peak Pss %.2f GB, exit %d\n" % (wall, mem.peak / 1e9, rc))
        f.write(text)
    os.unlink(log + ".tmp")
    if rc != 0:
        sys.stderr.write(text[-3000:])
        raise SystemExit("smpirun failed (%d), log in %s" % (rc, log))
    return text, wall, mem.peak


def coll_lines(out, coll):
    """The table rows (split fields) of one collective in mpix_bench output."""
    cur = None
    for line in out.splitlines():
        m = re.match(r"# Collective: (\S+)", line)
        if m:
            cur = m.group(1)
            continue
        f = line.split()
        if cur == coll and not line.startswith("#") and f and f[0].isdigit():
            yield f


def bench_rows(out, coll):
    """{bytes: [hier_time_us, hier_algbw, hier_busbw, hier_wrong, mpi_time_us,
    mpi_algbw, mpi_busbw, mpi_wrong, hier/mpi]} of one collective (with --impl
    hier,mpi; with one implementation only its four columns and 'N/A')."""
    return {int(f[0]): f[5:] for f in coll_lines(out, coll) if len(f) >= 9}


# ---- analytic bounds -----------------------------------------------------------

# the collectives whose bus factor is (p-1)/p (nccl-tests' allgather convention)
SPREAD = ("reduce_scatter_block", "allgather", "allgatherv", "reduce_scatter", "alltoall",
          "alltoallv")


def algbw_bytes(coll, n, p):
    """The bytes mpix_bench's algbw divides by for size n: allgatherv's size is
    what each rank sends, its algbw counts all ranks' bytes (the whole vector)."""
    return n * p if coll == "allgatherv" else n


def bus_factor(coll, p):
    if coll in SPREAD:
        return (p - 1.0) / p
    if coll == "allreduce":
        return 2.0 * (p - 1) / p
    return 1.0


def bound_terms(plat, coll, n):
    """{term: seconds} of the bound for @coll of n bytes (allreduce, bcast, reduce:
    bytes per rank; reduce_scatter_block, allgather: the whole vector, as mpix_bench and
    nccl-tests count). One term per cut of the platform (Platform.cuts(): NVLink
    inside a node, node injection, spine / dragonfly global links / a torus node's
    usable links and the slabs along each torus dimension) and the latency of the
    longest path. Each cut of P parties of capacity C: allreduce 2(P-1)/P n/C,
    reduce_scatter and allgather (P-1)/P n/C, bcast and reduce n/C."""
    t = {}
    p = plat.N * plat.g
    if coll in ("alltoall", "alltoallv"):
        # n: bytes each rank sends, 1/p of it to every rank. A cut of P parties
        # (p/P ranks each) carries (P-1)/P of each party's p/P * n; inside the
        # node each GPU moves at least (g-1)/p of its n over NVLink
        for name, parties, cap in plat.cuts():
            c = cap * 1e9
            if name == "nvlink":
                t[name] = (plat.g - 1.0) / p * n / c
            else:
                t[name] = (parties - 1.0) / parties * (float(p) / parties) * n / c
        t["latency"] = plat.diameter_us() * 1e-6
        return t
    n = algbw_bytes(coll, n, p)
    for name, parties, cap in plat.cuts():
        c = cap * 1e9
        if coll == "allreduce":
            t[name] = 2.0 * (parties - 1) / parties * n / c
        elif coll in SPREAD:
            t[name] = (parties - 1.0) / parties * n / c
        else:
            t[name] = n / c
    t["latency"] = plat.diameter_us() * 1e-6
    return t


def bound(plat, coll, n):
    """(seconds, binding term) of the bound."""
    t = bound_terms(plat, coll, n)
    k = max(t, key=lambda x: t[x])
    return t[k], k


def model(a, n, plat=None):
    """Times (s) of the two-level model of an allreduce (or, with a.coll,
    another collective) of n bytes: (intra-node term, largest network term)."""
    plat = plat or gen_platform.Platform(a)
    t = bound_terms(plat, a.coll, n)
    t.pop("latency")
    ti = t.pop("nvlink", 0.0)
    return ti, max(t.values()) if t else 0.0


# ---- the comparison modes (auto/hier/pipeline, fragment sweep) ----------------

def bench_path(a):
    return os.path.join(a.build, "benchmarks", "mpix_bench")


def size_args(a):
    """mpix_bench's sizes and iterations of the run (-b -e -f -n -w)."""
    return ["-b", str(a.minb), "-e", str(a.maxb), "-f", str(a.factor),
            "-n", str(a.iters), "-w", str(a.warmup)]


def bench_env(a, prefix):
    """The environment of the mpix_bench runs on platform @prefix."""
    return dict(sim_env(a), MPIX_HIER_CLUSTER_FILE=prefix + ".cluster")


def write_platform(b, prefix):
    """Platform @b written to @prefix.xml/.cluster/.hosts; returns it."""
    plat = gen_platform.Platform(b)
    plat.write(prefix, gen_platform.topology_argv(b))
    return plat


def setup(a):
    """The platform of the comparison modes, written to OUT: (prefix, Platform, ranks,
    environment of the runs)."""
    os.makedirs(a.out, exist_ok=True)
    prefix = os.path.join(a.out, "plat_%s_%dx%d" % (a.topology, a.nodes, a.gpus))
    gen_platform.main(gen_platform.topology_argv(a) + ["-o", prefix])
    return prefix, gen_platform.Platform(a), a.nodes * a.gpus, bench_env(a, prefix)


def run_compare(a):
    prefix, plat, p, env = setup(a)
    bench = bench_path(a)
    common = ["-c", a.coll] + size_args(a)
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
        out, wall, _ = smpirun(a, prefix, p, [bench] + common + extra, e, log,
                               fold=not a.no_fold)
        res[name] = bench_rows(out, a.coll)
        sys.stderr.write("%s: %.0f s wall, log %s\n" % (name, wall, log))
    fac = bus_factor(a.coll, p)
    print("# %s, %s" % (a.coll, plat.summary()))
    print("# busbw in GB/s (nccl-tests: algbw * 2(p-1)/p); bound = two-level bound with "
          "full overlap, seq = levels back to back (model)")
    hdr = ("size", "mpi", "auto", "hier", "pipeline", "seq", "bound", "pipe/bound",
           "pipe/mpi")
    print("| " + " | ".join(hdr) + " |")
    print("|" + "---|" * len(hdr))
    for n in sorted(res["auto"]):
        ti, tx = model(a, n, plat)
        nb = algbw_bytes(a.coll, n, p)
        b_bound = nb / max(ti, tx) / 1e9 * fac if max(ti, tx) > 0 else float("nan")
        b_seq = nb / (ti + tx) / 1e9 * fac if ti + tx > 0 else float("nan")
        mpi = float(res["auto"][n][6])
        auto = float(res["auto"][n][2])
        hier = float(res["hier"].get(n, ["nan"] * 3)[2])
        pipe = float(res["pipeline"].get(n, ["nan"] * 3)[2])
        print("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
            fmt_size(n), mpi, auto, hier, pipe, b_seq, b_bound, pipe / b_bound, pipe / mpi))


def run_sweep(a):
    """Pipeline busbw per fragment size (MPIX_HIER_FRAG_SIZE), hier for reference."""
    prefix, plat, p, env = setup(a)
    bench = bench_path(a)
    common = ["-c", a.coll] + size_args(a) + ["--impl", "hier"]
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
        out, wall, _ = smpirun(a, prefix, p, [bench] + common, e, log, fold=not a.no_fold)
        res[name] = bench_rows(out, a.coll)
        sys.stderr.write("%s: %.0f s wall, log %s\n" % (name, wall, log))
    fac = bus_factor(a.coll, p)
    sizes = sorted(res["hier"])
    print("# %s, %s: busbw in GB/s (time in us)" % (a.coll, plat.summary()))
    print("| algorithm | " + " | ".join(fmt_size(n) for n in sizes) + " |")
    print("|---|" + "---|" * len(sizes))
    for name, _ in runs:
        print("| %s | " % name + " | ".join(
            "%.1f (%.0f)" % (float(res[name][n][2]), float(res[name][n][0]))
            if n in res[name] else "-" for n in sizes) + " |")
    print("| bound (model) | " + " | ".join(
        "%.1f" % (n / max(model(a, n, plat)) / 1e9 * fac) for n in sizes) + " |")


# ---- simulator cross-check ----------------------------------------------------

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
    out, _, _ = smpirun(a, prefix, p, [exe, str(a.maxb)], {}, prefix + ".check.log")
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


# ---- smpi_fold.so against plain SMPI --------------------------------------------

def run_check_fold(a):
    """The same mpix_bench run (every collective, hier and mpi) without and with
    smpi_fold.so: simulated times must agree (within 0.1 %)."""
    os.makedirs(a.out, exist_ok=True)
    prefix = os.path.join(a.out, "fold_%s_%dx%d" % (a.topology, a.nodes, a.gpus))
    plat = write_platform(a, prefix)
    p = a.nodes * a.gpus
    args = [bench_path(a), "-c", ",".join(COLLS)] + size_args(a)
    env = bench_env(a, prefix)
    res = {}
    for name, fold in (("plain", False), ("fold", True)):
        out, wall, pss = smpirun(a, prefix, p, args, env, "%s.%s.log" % (prefix, name),
                                 fold=fold)
        res[name] = {c: bench_rows(out, c) for c in COLLS}
        sys.stderr.write("%s: %.0f s wall, peak Pss %.2f GB\n" % (name, wall, pss / 1e9))
    print("# smpi_fold.so vs plain SMPI: %s; simulated times in us (hier / mpi)"
          % plat.summary())
    print("| collective | size | plain | fold | fold/plain |")
    print("|---|---|---|---|---|")
    worst = 0.0
    for c in COLLS:
        for n in sorted(res["plain"][c]):
            t = {k: (float(res[k][c][n][0]), float(res[k][c][n][4])) for k in res}
            rf = [t["fold"][i] / t["plain"][i] for i in (0, 1)]
            worst = max([worst] + [abs(x - 1) for x in rf])
            print("| %s | %s | %.2f / %.2f | %.2f / %.2f | %.4f / %.4f |"
                  % (c, fmt_size(n), t["plain"][0], t["plain"][1], t["fold"][0], t["fold"][1],
                     rf[0], rf[1]))
    ok = worst <= 1e-3
    print("# largest deviation: fold %.2f %% (limit 0.1 %%): %s"
          % (worst * 100, "PASS" if ok else "FAIL"))
    return 0 if ok else 1


# ---- scale sweep: topologies x ranks, every collective in one smpirun ---------

CSV_FIELDS = ["topology", "ranks", "nodes", "gpus", "selector", "collective", "size_bytes",
              "hier_time_us", "hier_busbw", "mpi_time_us", "mpi_busbw", "bound_time_us",
              "bound_busbw", "bound_term", "hier_over_bound", "mpi_over_bound",
              "hier_over_mpi_time", "wrong"]


def scale_platform_args(a, topo, nodes):
    """Copy of @a describing @topo with @nodes nodes (scale-sweep defaults: leaf
    groups of --su-nodes nodes for rail/fattree)."""
    b = argparse.Namespace(**vars(a))
    b.topology, b.nodes = topo, nodes
    if topo in ("rail", "fattree") and not a.nodes_per_leaf:
        b.nodes_per_leaf = min(nodes, a.su_nodes) if a.su_nodes else 0
    return b


def run_point(a, b, tag, colls="all", selectors=("mpich",), check=False):
    """One platform (@b), every collective in one smpirun per selector: the first
    selector runs --impl hier,mpi, the others --impl mpi. Returns (rows, info)."""
    os.makedirs(a.out, exist_ok=True)
    prefix = os.path.join(a.out, tag)
    t0 = time.time()
    plat = write_platform(b, prefix)
    gen_s = time.time() - t0
    p = b.nodes * b.gpus
    bench = bench_path(a)
    args = size_args(a) + (["--batch"] if getattr(a, "batch", False) else [])
    env = bench_env(a, prefix)
    if check:
        args.append("--check")
        env["MPIX_HIER_SIM_REDUCE"] = "real"
    info = {"platform": plat.summary(), "gen_s": gen_s, "runs": []}
    rows = []
    fold = not (check or a.no_fold)
    if fold:
        fold_lib(a)  # built once, before any parallel run
    # --jobs > 1: one smpirun per collective (and selector), that many at a time,
    # the slowest to simulate first; else one smpirun per selector
    jobs = getattr(a, "jobs", 1)
    names = COLLS if colls == "all" else colls.split(",")
    groups = [names] if jobs <= 1 else \
        [[c] for c in sorted(names, key=lambda c: COLLS.index(c) if c in COLLS else 99)]
    tasks = [(si, sel, g) for si, sel in enumerate(selectors) for g in groups]

    def one(task):
        si, sel, g = task
        impl = ("hier" if getattr(a, "hier_only", False) else "hier,mpi") if si == 0 else "mpi"
        log = "%s.%s%s.log" % (prefix, sel, "" if jobs <= 1 else "." + "_".join(g))
        out, wall, pss = smpirun(a, prefix, p, [bench, "-c", ",".join(g)] + args +
                                 ["--impl", impl], env, log,
                                 selector=sel, fold=fold)
        sys.stderr.write("%s %s (%s, %s): %.0f s wall, peak Pss %.2f GB, log %s\n"
                         % (tag, sel, impl, ",".join(g), wall, pss / 1e9, log))
        return out, {"selector": sel, "impl": impl, "colls": ",".join(g), "wall_s": wall,
                     "pss": pss, "log": log}

    if jobs <= 1:
        results = [one(t) for t in tasks]
    else:
        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
            results = list(ex.map(one, tasks))
    outs = {}
    for (si, sel, g), (out, run) in zip(tasks, results):
        info["runs"].append(run)
        if check and not re.search(r"^# check: all results correct$", out, re.M):
            raise SystemExit("%s: --check found wrong results, log %s" % (tag, run["log"]))
        outs[si] = outs.get(si, "") + out
    for si, sel in enumerate(selectors):
        out = outs[si]
        for coll in COLLS:
            for n, f in sorted(bench_rows(out, coll).items()):
                if si == 0 and getattr(a, "hier_only", False):  # no MPI columns
                    ht, hb = float(f[0]), float(f[2])
                    mt = mb = float("nan")
                    wrong = f[3]
                elif si == 0:
                    ht, hb, mt, mb = float(f[0]), float(f[2]), float(f[4]), float(f[6])
                    wrong = "%s/%s" % (f[3], f[7])
                else:
                    ht = hb = float("nan")
                    mt, mb = float(f[0]), float(f[2])
                    wrong = f[3]
                tb, term = bound(plat, coll, n)
                bb = algbw_bytes(coll, n, p) / tb / 1e9 * bus_factor(coll, p)
                rows.append({"topology": b.topology, "ranks": p, "nodes": b.nodes,
                             "gpus": b.gpus, "selector": sel, "collective": coll,
                             "size_bytes": n, "hier_time_us": ht, "hier_busbw": hb,
                             "mpi_time_us": mt, "mpi_busbw": mb, "bound_time_us": tb * 1e6,
                             "bound_busbw": bb, "bound_term": term,
                             "hier_over_bound": hb / bb, "mpi_over_bound": mb / bb,
                             "hier_over_mpi_time": ht / mt if mt > 0 else float("nan"),
                             "wrong": wrong})
    return rows, info


def fmt_row_md(r):
    def g(x, f="%.1f"):
        return "-" if x != x else f % x
    return "| %s | %s | %s | %s | %s | %s | %s (%s) | %s | %s |" % (
        fmt_size(r["size_bytes"]), g(r["hier_time_us"], "%.2f"), g(r["mpi_time_us"], "%.2f"),
        g(r["hier_busbw"], "%.2f"), g(r["mpi_busbw"], "%.2f"), g(r["bound_busbw"], "%.2f"),
        g(r["bound_time_us"], "%.2f"), r["bound_term"], g(r["hier_over_bound"], "%.2f"),
        g(r["hier_over_mpi_time"], "%.3f"))


def print_tables(rows, info, f):
    sel = [x for x in rows if x["selector"] == rows[0]["selector"]]
    if not sel:
        return
    r0 = sel[0]
    f.write("\n## %s, %d ranks (%d nodes x %d GPUs)\n\n" % (
        r0["topology"], r0["ranks"], r0["nodes"], r0["gpus"]))
    f.write("Platform: %s. Wall: %s.\n" % (info["platform"], ", ".join(
        "%s %s %s%.0f s (peak Pss %.2f GB)" % (
            x["selector"], x["impl"], x["colls"] + " " if len(info["runs"]) > 1 else "",
            x["wall_s"], x["pss"] / 1e9) for x in info["runs"])))
    for coll in COLLS:
        cr = [x for x in sel if x["collective"] == coll]
        if not cr:
            continue
        f.write("\n### %s\n\n" % coll)
        f.write("| size | hier (us) | mpi (us) | hier busbw | mpi busbw | bound busbw | "
                "bound (us, term) | hier/bound | hier/mpi time |\n")
        f.write("|---|---|---|---|---|---|---|---|---|\n")
        for r in cr:
            f.write(fmt_row_md(r) + "\n")
        other = [x for x in rows if x["collective"] == coll and x["selector"] != r0["selector"]]
        if other:
            f.write("\nother MPI selectors (busbw GB/s): " + "; ".join(
                "%s %s %.2f" % (x["selector"], fmt_size(x["size_bytes"]), x["mpi_busbw"])
                for x in other) + "\n")
    f.flush()


def run_scale(a):
    topos = a.topologies.split(",") if a.topologies else [a.topology]
    scales = [int(x) for x in a.scale.split(",")]
    sels = a.selectors.split(",")
    os.makedirs(a.out, exist_ok=True)
    csv_path = a.csv or os.path.join(a.out, "scale.csv")
    md_path = os.path.join(a.out, "scale.md")
    new = not os.path.exists(csv_path) or not a.append
    cf = open(csv_path, "w" if new else "a", newline="")
    cw = csv.DictWriter(cf, fieldnames=CSV_FIELDS)
    if new:
        cw.writeheader()
    md = open(md_path, "w" if new else "a")
    if new:
        md.write("# Scale sweep (SimGrid SMPI): busbw in GB/s (nccl-tests conventions), "
                 "times in us\n\n`%s`\n" % " ".join(sys.argv))
    t_all = time.time()
    for topo in topos:
        for ranks in scales:
            if ranks % a.gpus:
                raise SystemExit("--scale %d is not a multiple of --gpus %d" % (ranks, a.gpus))
            b = scale_platform_args(a, topo, ranks // a.gpus)
            tag = "%s_%d" % (topo, ranks)
            rows, info = run_point(a, b, tag, colls=a.coll or "all", selectors=sels,
                                   check=a.check)
            for r in rows:
                cw.writerow({k: ("%.6g" % v if isinstance(v, float) else v)
                             for k, v in r.items()})
            cf.flush()
            print_tables(rows, info, sys.stdout)
            print_tables(rows, info, md)
            sys.stdout.flush()
    cf.close()
    md.close()
    sys.stderr.write("scale sweep: %.0f s wall; %s, %s\n" % (time.time() - t_all, csv_path,
                                                             md_path))
    if a.plot and not a.check:
        plot = os.path.join(HERE, "plot.py")
        subprocess.call([sys.executable, plot, csv_path, "-o", a.out])
    return 0


def nb_rows(out, coll):
    """{bytes: (hier_total, hier_compute, hier_pure, hier_overlap, mpi_total, mpi_compute,
    mpi_pure, mpi_overlap)} of one collective in mpix_bench -N output."""
    return {int(f[0]): tuple(float(f[i]) for i in (5, 6, 7, 8, 10, 11, 12, 13))
            for f in coll_lines(out, coll) if len(f) >= 15}


def run_overlap(a):
    """mpix_bench -N on one platform: how much of a nonblocking collective's time a
    computation hides, MPIX_Hier_I* and MPI_I* (SMPI's). SimGrid moves the bytes while
    the simulated computation runs (a NIC that needs no CPU); the library advances its
    schedules in MPI_Test."""
    os.makedirs(a.out, exist_ok=True)
    b = a  # the platform options of the command line
    tag = "%s_%d" % (a.topology, a.nodes * a.gpus)
    prefix = os.path.join(a.out, tag)
    write_platform(b, prefix)
    colls = (a.coll or "all")
    names = COLLS if colls == "all" else colls.split(",")
    env = bench_env(a, prefix)
    bench = bench_path(a)
    args = (["-N", "--test-interval", "%g" % a.overlap, "-c", ",".join(names)] + size_args(a) +
            ["--impl", "hier,mpi"])
    log = prefix + ".overlap.log"
    out, wall, _ = smpirun(a, prefix, a.nodes * a.gpus, [bench] + args, env, log,
                           fold=not a.no_fold)
    with open(os.path.join(a.out, "overlap.md"), "w") as md:
        head = ("# Overlap (SimGrid SMPI, mpix_bench -N, MPI_Test every %g us of computation), "
                "%d nodes x %d GPUs\n\n`%s`\n\n| collective | size | hier t_pure (us) | "
                "hier t_total | hier overlap (%%) | mpi t_pure (us) | mpi t_total | "
                "mpi overlap (%%) |\n|---|---:|---:|---:|---:|---:|---:|---:|\n"
                % (a.overlap, a.nodes, a.gpus, " ".join(sys.argv)))
        sys.stdout.write(head)
        md.write(head)
        for coll in names:
            for n, r in sorted(nb_rows(out, coll).items()):
                line = "| %s | %s | %.2f | %.2f | %.1f | %.2f | %.2f | %.1f |\n" % (
                    coll, fmt_size(n), r[2], r[0], r[3], r[6], r[4], r[7])
                sys.stdout.write(line)
                md.write(line)
    sys.stderr.write("overlap: %.0f s wall, log %s\n" % (wall, log))
    return 0


def add_sim_args(ap):
    """Options of every simulation run (run_sim.py and whatif.py)."""
    s = ap.add_argument_group("simulation")
    s.add_argument("--build", default=os.path.join(HERE, "..", "..", "build-sim"),
                   help="SimGrid build directory (default: build-sim)")
    s.add_argument("--out", default="sim-out", help="output directory (default sim-out)")
    s.add_argument("-b", "--minb", type=parse_size, default=1 << 20)
    s.add_argument("-e", "--maxb", type=parse_size, default=256 << 20)
    s.add_argument("-f", "--factor", type=int, default=4)
    s.add_argument("-n", "--iters", type=int, default=3)
    s.add_argument("-w", "--warmup", type=int, default=1)
    s.add_argument("--reduce-bw", type=float, default=None,
                   help="MPIX_HIER_SIM_REDUCE_BW, GB/s of reduction output (default: the "
                        "environment's, else the library's 1000)")
    s.add_argument("--copy-bw", type=float, default=None,
                   help="MPIX_HIER_SIM_COPY_BW, GB/s of local copies (default: the "
                        "environment's, else the library's 1500)")
    s.add_argument("--test-time", type=float, default=1e-8,
                   help="simulated seconds charged per MPI_Test (smpi/test, no growth; "
                        "default 1e-8)")
    s.add_argument("--no-fold", action="store_true",
                   help="do not preload smpi_fold.so (SMPI's temporary buffers private "
                        "per rank: real memory, real copies)")
    s.add_argument("--timeout", type=int, default=3600, help="seconds per smpirun")
    s.add_argument("--detached-thresh", type=int, default=0, metavar="BYTES",
                   help="smpi/send-is-detached-thresh (default 0: no detached sends; "
                        "SimGrid's own default is 65536)")
    s.add_argument("--net-model", choices=("exact", "default"), default="exact",
                   help="exact: link-exact (latency + size/bandwidth, no factors; default); "
                        "default: SMPI's calibrated TCP-like model")
    s.add_argument("--jobs", type=int, default=1,
                   help="--scale: smpiruns at a time, one per collective when > 1 (default "
                        "1: every collective in one smpirun; 2 on a 2-core machine)")
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    gen_platform.add_topology_args(ap)
    add_sim_args(ap)
    ap.add_argument("-c", "--coll", default=None,
                    help="collective(s), comma-separated, or all (default: allreduce; "
                         "--scale: all)")
    ap.add_argument("--frag", default="", help="MPIX_HIER_FRAG_SIZE for the runs")
    ap.add_argument("--depth", type=int, default=None,
                    help="MPIX_HIER_PIPELINE_DEPTH for the runs (default: the library's)")
    ap.add_argument("--sweep-frag", default="",
                    help="comma-separated MPIX_HIER_FRAG_SIZE values: pipeline-only sweep")
    ap.add_argument("--sweep-depth", default="",
                    help="with --sweep-frag: comma-separated MPIX_HIER_PIPELINE_DEPTH values")
    ap.add_argument("--check-model", action="store_true",
                    help="run the simulator cross-check instead of the comparison")
    ap.add_argument("--ring-ranks", type=int, default=8)
    ap.add_argument("--check-min", type=parse_size, default=256 << 10,
                    help="smallest size counted in the 5%% verdict (default 256K)")
    ap.add_argument("--check-fold", action="store_true",
                    help="compare simulated times without and with smpi_fold.so on the "
                         "platform, every collective")
    sc = ap.add_argument_group("scale sweep")
    sc.add_argument("--scale", default="",
                    help="comma-separated rank counts (e.g. 128,512,1024): scale sweep, "
                         "nodes = ranks / --gpus, every collective in one smpirun")
    sc.add_argument("--topologies", default="",
                    help="comma-separated topologies for --scale (default: --topology)")
    sc.add_argument("--su-nodes", type=int, default=32,
                    help="rail/fattree in --scale without --nodes-per-leaf: nodes per leaf "
                         "group = min(nodes, this) (default 32; 0 = one group)")
    sc.add_argument("--selectors", default="mpich",
                    help="SMPI collective selectors, comma-separated (mpich, ompi, ...): the "
                         "first runs hier and mpi, each other one more run of mpi only "
                         "(default mpich)")
    sc.add_argument("--check", action="store_true",
                    help="--scale: mpix_bench --check with MPIX_HIER_SIM_REDUCE=real and no "
                         "smpi_fold.so (use small sizes)")
    sc.add_argument("--batch", action="store_true",
                    help="--scale: mpix_bench --batch (time -n calls back to back after one "
                         "barrier: small messages without the barrier's skew)")
    sc.add_argument("--hier-only", action="store_true",
                    help="--scale: mpix_bench --impl hier (no MPI column: MPI's large "
                         "collectives cost most of the simulation's wall time)")
    sc.add_argument("--csv", default="", help="--scale: CSV file (default OUT/scale.csv)")
    sc.add_argument("--append", action="store_true",
                    help="--scale: append to the CSV and markdown files")
    sc.add_argument("--no-plot", dest="plot", action="store_false",
                    help="--scale: do not draw PNGs (plot.py)")
    ap.add_argument("--overlap", type=float, default=None, metavar="US",
                    help="overlap of the nonblocking forms (mpix_bench -N, MPI_Test every "
                         "US microseconds of simulated computation) on the --nodes x --gpus "
                         "platform, every collective of -c (default all); table in "
                         "OUT/overlap.md")
    a = ap.parse_args()
    a.build = os.path.abspath(a.build)
    if a.check_model:
        return run_check_model(a)
    if a.check_fold:
        return run_check_fold(a)
    if a.overlap is not None:
        return run_overlap(a)
    if a.scale:
        return run_scale(a)
    a.coll = a.coll or "allreduce"
    if a.sweep_frag:
        run_sweep(a)
        return 0
    run_compare(a)
    return 0


if __name__ == "__main__":
    sys.exit(main())
