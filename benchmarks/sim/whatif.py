#!/usr/bin/env python3
"""What if: predict the bus bandwidth of every collective on a GPU cluster you
describe, for mpix-hier and for plain MPI, next to the analytic bound, by
simulating it (SimGrid SMPI, the real library and mpix_bench, every GPU a
simulated host). Several alternatives at once: give any platform option a
comma-separated list (every combination is simulated), or --compare KEY=V1,V2,
or --alt "KEY=V KEY=V" for options that change together.

  # rails (one 16-node scalable unit) or a fat-tree of 2-node leaves (ToR)?
  # and what does a 4:1 spine cost?
  benchmarks/sim/whatif.py --nodes 16 --gpus 8 --oversub 1,4 \\
      --alt 'topology=rail nodes-per-leaf=16' --alt 'topology=fattree nodes-per-leaf=2'
  # dragonfly vs 3D torus, 400G NICs
  benchmarks/sim/whatif.py --nodes 32 --gpus 8 --topology dragonfly,torus3d --b-nic 50

Prints, per collective and size, busbw in GB/s (nccl-tests conventions) of
mpix-hier (the library's automatic selection), of plain MPI (SMPI's MPICH
selector; --selectors mpich,ompi adds Open MPI's) and of the bound (see
benchmarks/sim/README.md). Needs the SimGrid build (benchmarks/sim/build.sh).
Python 3 standard library only.
"""
import argparse
import csv
import itertools
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gen_platform  # noqa: E402
import run_sim  # noqa: E402

DEFAULT_COLLS = "allreduce,reduce_scatter_block,allgather,bcast"


def platform_options():
    """{dest: option string} of every platform option (gen_platform)."""
    ap = argparse.ArgumentParser(add_help=False)
    gen_platform.add_topology_args(ap)
    return {x.dest: x.option_strings[0] for x in ap._actions if x.option_strings}, ap


def main(argv=None):
    opts, typed = platform_options()
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__[__doc__.index("Several"):],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    # the platform options, as strings: each may be a comma-separated list
    grp = ap.add_argument_group("platform (each may be a comma-separated list of "
                                "alternatives; defaults as gen_platform.py, except "
                                "--nodes 16 --gpus 8)")
    for act in typed._actions:
        if not act.option_strings:
            continue
        dflt = {"nodes": "16", "gpus": "8"}.get(act.dest, act.default)
        grp.add_argument(*act.option_strings, dest=act.dest, default=str(dflt),
                         help=(act.help or "").replace("%", "%%"))
    ap.add_argument("--compare", action="append", default=[], metavar="KEY=V1,V2",
                    help="alternatives of one platform option (KEY as the option without "
                         "'--', e.g. topology=rail,fattree or oversub=1,4); repeatable")
    ap.add_argument("--alt", action="append", default=[], metavar="'KEY=V KEY=V'",
                    help="one explicit alternative: space-separated platform options that "
                         "belong together (e.g. --alt 'topology=rail nodes-per-leaf=16' "
                         "--alt 'topology=fattree nodes-per-leaf=2'); repeatable; combined "
                         "with the list-valued options")
    ap.add_argument("-c", "--colls", default=DEFAULT_COLLS,
                    help="collectives to report (default %s; also reduce)" % DEFAULT_COLLS)
    ap.add_argument("--selectors", default="mpich",
                    help="SMPI selectors for plain MPI, comma-separated (mpich, ompi; "
                         "default mpich)")
    ap.add_argument("--csv", default="", help="also write the results as CSV")
    ap.add_argument("--plot", default="",
                    help="also draw busbw vs size, one PNG (needs gnuplot): FILE.png")
    run_sim.add_sim_args(ap)
    ap.set_defaults(minb=64 << 10, maxb=256 << 20, factor=16, iters=1, warmup=1,
                    out="sim-out/whatif")
    a = ap.parse_args(argv)
    a.build = os.path.abspath(a.build)

    # alternatives: every combination of the list-valued options
    values = {d: str(getattr(a, d)).split(",") for d in opts}
    for c in a.compare:
        if "=" not in c:
            ap.error("--compare %r: expected KEY=V1,V2" % c)
        k, v = c.split("=", 1)
        d = k.strip().lstrip("-").replace("-", "_")
        if d not in opts:
            ap.error("--compare %r: unknown platform option %r (one of %s)"
                     % (c, k, ", ".join(sorted(x.replace("_", "-") for x in opts))))
        values[d] = v.split(",")
    explicit = []
    for x in a.alt:
        ov = {}
        for kv in x.split():
            if "=" not in kv:
                ap.error("--alt %r: expected KEY=VALUE pairs" % x)
            k, v = kv.split("=", 1)
            d = k.strip().lstrip("-").replace("-", "_")
            if d not in opts:
                ap.error("--alt %r: unknown platform option %r" % (x, k))
            ov[d] = v
        explicit.append(ov)
    explicit = explicit or [{}]
    varying = [d for d in opts if len(values[d]) > 1 or
               len({ov.get(d) for ov in explicit}) > 1]
    alts = []
    for ov, combo in itertools.product(explicit,
                                       itertools.product(*[values[d] for d in opts])):
        combo = [ov.get(d, v) for d, v in zip(opts, combo)]
        argv_p = []
        for d, v in zip(opts, combo):
            argv_p += [opts[d], v]
        try:
            b = typed.parse_args(argv_p)
            gen_platform.Platform(b)
        except SystemExit:
            ap.error("bad platform option values: %s" % " ".join(argv_p))
        except ValueError as e:
            ap.error(str(e))
        label = ",".join("%s=%s" % (d.replace("_", "-"), v) for d, v in zip(opts, combo)
                         if d in varying) or b.topology
        alts.append((label, b))
    colls = a.colls.split(",")
    for c in colls:
        if c not in run_sim.COLLS:
            ap.error("-c: unknown collective %r" % c)
    sels = a.selectors.split(",")
    print("# whatif: %d alternative(s); sizes %s..%s x%d; busbw in GB/s "
          "(nccl-tests conventions): hier = mpix-hier, mpi = plain MPI (SMPI %s selector), "
          "bound = analytic bound" % (len(alts), run_sim.fmt_size(a.minb),
                                      run_sim.fmt_size(a.maxb), a.factor, sels[0]))
    results = []
    t_all = time.time()
    for i, (label, b) in enumerate(alts):
        tag = "alt%d_%s_%dx%d" % (i, b.topology, b.nodes, b.gpus)
        rows, info = run_sim.run_point(a, b, tag, colls=colls[0] if len(colls) == 1 else "all",
                                       selectors=sels)
        print("# [%d] %s: %s (simulation wall time %s)" % (
            i, label, info["platform"],
            ", ".join("%.0f s" % x["wall_s"] for x in info["runs"])))
        sys.stdout.flush()
        results.append((label, rows))
    # table per collective: rows = sizes, columns = alternatives
    for coll in colls:
        print("\n## %s: busbw GB/s, hier / mpi / bound (hier time in us)\n" % coll)
        print("| size | " + " | ".join(lab for lab, _ in results) + " |")
        print("|---|" + "---|" * len(results))
        sizes = sorted({r["size_bytes"] for _, rows in results for r in rows
                        if r["collective"] == coll})
        for n in sizes:
            cells = []
            for _, rows in results:
                r = [x for x in rows if x["collective"] == coll and x["size_bytes"] == n
                     and x["selector"] == sels[0]]
                if not r:
                    cells.append("-")
                    continue
                r = r[0]
                extra = [x for x in rows if x["collective"] == coll and x["size_bytes"] == n
                         and x["selector"] != sels[0]]
                cells.append("%.1f / %.1f%s / %.1f (%.0f)" % (
                    r["hier_busbw"], r["mpi_busbw"],
                    "".join(" [%s %.1f]" % (x["selector"], x["mpi_busbw"]) for x in extra),
                    r["bound_busbw"], r["hier_time_us"]))
            print("| %s | %s |" % (run_sim.fmt_size(n), " | ".join(cells)))
    # one-line verdicts at the largest size
    print()
    for coll in colls:
        big = []
        for lab, rows in results:
            r = [x for x in rows if x["collective"] == coll and x["selector"] == sels[0]]
            if r:
                big.append((lab, max(r, key=lambda x: x["size_bytes"])))
        if not big:
            continue
        n = big[0][1]["size_bytes"]
        best = max(big, key=lambda x: x[1]["hier_busbw"])
        print("# %s %s: " % (coll, run_sim.fmt_size(n)) + "; ".join(
            "%s hier %.1f (%.2fx mpi, %.0f%% of bound%s)" % (
                lab, r["hier_busbw"], r["mpi_time_us"] / r["hier_time_us"],
                100 * r["hier_over_bound"],
                "" if lab == best[0] else ", %.2fx slower than %s" % (
                    best[1]["hier_busbw"] / r["hier_busbw"], best[0]))
            for lab, r in big))
    sys.stderr.write("whatif: %.0f s wall\n" % (time.time() - t_all))
    if a.csv or a.plot:
        path = a.csv or os.path.join(a.out, "whatif.csv")
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["group", "alternative"] + run_sim.CSV_FIELDS)
            w.writeheader()
            for lab, rows in results:
                for r in rows:
                    if r["collective"] in colls:
                        w.writerow(dict({k: ("%.6g" % v if isinstance(v, float) else v)
                                         for k, v in r.items()}, group="whatif",
                                        alternative=lab))
        if a.plot:
            import plot
            out = os.path.dirname(os.path.abspath(a.plot))
            name = os.path.basename(a.plot)
            name = name[:-4] if name.endswith(".png") else name
            rc = plot.main([path, "-o", out, "--key", "group", "--series", "alternative",
                            "--colls", ",".join(c for c in colls if c in plot.PANELS) or
                            colls[0], "--prefix", name + "_"])
            if rc == 0:
                os.replace(os.path.join(out, name + "_whatif.png"),
                           os.path.join(out, name + ".png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
