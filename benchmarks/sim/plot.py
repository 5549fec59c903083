#!/usr/bin/env python3
"""Plot the CSV of run_sim.py --scale (or whatif.py --csv) with gnuplot: one PNG
per topology (or per alternative), one panel per collective, busbw (GB/s) vs
message size (log x), a colour per scale, solid = mpix-hier, dashed = plain MPI,
dotted = the analytic bound.

  benchmarks/sim/plot.py sim-out/scale.csv -o sim-out        # -> busbw_<topology>.png
Python 3 standard library + gnuplot (Debian: gnuplot-nox).
"""
import argparse
import csv
import os
import shutil
import subprocess
import sys

PANELS = ["allreduce", "reduce_scatter_block", "allgather", "bcast"]
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def fnum(x):
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="CSV written by run_sim.py --scale / whatif.py --csv")
    ap.add_argument("-o", "--out", default=".", help="output directory (default .)")
    ap.add_argument("--key", default="topology",
                    help="CSV column giving one PNG per value (default topology; whatif: "
                         "alternative)")
    ap.add_argument("--series", default="ranks",
                    help="CSV column giving one colour per value (default ranks)")
    ap.add_argument("--colls", default=",".join(PANELS),
                    help="collectives, one panel each (default %s)" % ",".join(PANELS))
    ap.add_argument("--size", default="1100,760", help="PNG size in pixels (default 1100,760)")
    ap.add_argument("--prefix", default="busbw_", help="PNG name prefix (default busbw_)")
    a = ap.parse_args(argv)
    gp = shutil.which("gnuplot")
    if not gp:
        sys.stderr.write("plot.py: gnuplot not found (apt-get install gnuplot-nox)\n")
        return 1
    with open(a.csv) as f:
        rows = list(csv.DictReader(f))
    # CSVs written before mpix_bench named it reduce_scatter_block call it reduce_scatter
    if not any(r["collective"] == "reduce_scatter_block" for r in rows):
        for r in rows:
            if r["collective"] == "reduce_scatter":
                r["collective"] = "reduce_scatter_block"
    colls = a.colls.split(",")
    os.makedirs(a.out, exist_ok=True)
    keys = []
    for r in rows:
        if r[a.key] not in keys:
            keys.append(r[a.key])
    written = []
    for key in keys:
        kr = [r for r in rows if r[a.key] == key and r.get("selector", "mpich") ==
              rows[0].get("selector", "mpich")]
        series = []
        for r in kr:
            if r[a.series] not in series:
                series.append(r[a.series])
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
        dat = os.path.join(a.out, "%s%s.dat" % (a.prefix, safe))
        blocks = []  # (coll, series, index)
        with open(dat, "w") as f:
            idx = 0
            for coll in colls:
                for s in series:
                    pts = sorted((int(r["size_bytes"]), r) for r in kr
                                 if r["collective"] == coll and r[a.series] == s)
                    if not pts:
                        continue
                    f.write("# %s %s=%s\n" % (coll, a.series, s))
                    for n, r in pts:
                        vals = [fnum(r.get(c)) for c in ("hier_busbw", "mpi_busbw",
                                                         "bound_busbw")]
                        f.write("%d %s\n" % (n, " ".join("NaN" if v is None or v <= 0
                                                         else "%.6g" % v for v in vals)))
                    f.write("\n\n")
                    blocks.append((coll, s, idx))
                    idx += 1
        png = os.path.join(a.out, "%s%s.png" % (a.prefix, safe))
        ncol = 2 if len(colls) > 1 else 1
        nrow = (len(colls) + ncol - 1) // ncol
        g = ["set terminal pngcairo size %s font 'Sans,9' noenhanced" % a.size,
             "set output '%s'" % png,
             "set datafile missing 'NaN'",
             "set logscale x 2", "set logscale y 10",
             "set format x '%.0b%BB'", "set format y '%g'",
             "set xlabel 'message size'", "set ylabel 'busbw (GB/s)'",
             "set grid", "set key left top font ',%d' spacing 0.9" % (8 if len(series) <= 3 else 7),
             "set multiplot layout %d,%d title '%s: busbw vs size (solid mpix-hier, "
             "dashed plain MPI, dotted bound)'" % (nrow, ncol, key)]
        first = True
        for coll in colls:
            cb = [(s, i) for c, s, i in blocks if c == coll]
            if not cb:
                continue
            g.append("set title '%s'" % coll)
            if not first:
                g.append("unset key")  # the first panel's key serves all
            first = False
            parts = []
            for j, (s, i) in enumerate(cb):
                col = COLOURS[j % len(COLOURS)]
                lab = "%s ranks" % s if a.series == "ranks" else s
                parts.append("'%s' index %d using 1:2 with linespoints lw 2 pt 7 ps 0.5 "
                             "lc rgb '%s' dt 1 title '%s hier'" % (dat, i, col, lab))
                parts.append("'%s' index %d using 1:3 with linespoints lw 1.5 pt 6 ps 0.5 "
                             "lc rgb '%s' dt 2 title '%s mpi'" % (dat, i, col, lab))
                parts.append("'%s' index %d using 1:4 with lines lw 1 lc rgb '%s' dt 3 "
                             "title '%s bound'" % (dat, i, col, lab))
            g.append("plot " + ", \\\n     ".join(parts))
        g.append("unset multiplot")
        script = os.path.join(a.out, "%s%s.gp" % (a.prefix, safe))
        with open(script, "w") as f:
            f.write("\n".join(g) + "\n")
        rc = subprocess.call([gp, script])
        if rc != 0:
            sys.stderr.write("plot.py: gnuplot failed on %s\n" % script)
            return 1
        written.append(png)
    for p in written:
        print("plot.py: %s (%d KB)" % (p, os.path.getsize(p) // 1024))
    return 0


if __name__ == "__main__":
    sys.exit(main())
