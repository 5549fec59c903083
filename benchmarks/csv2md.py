#!/usr/bin/env python3
"""Markdown tables from mpix_bench --csv files (one or more runs of the same sweep).

usage: csv2md.py RUN1.csv [RUN2.csv ...]

One table per collective: size, then for each run the hier and mpi times (us) and the
hier/mpi ratio, and the worst ratio over the runs. Nothing is averaged away: every run's
measurement is shown.
"""
import csv
import sys
from collections import OrderedDict


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


def main(paths):
    runs = []
    for p in paths:
        with open(p, newline="") as f:
            runs.append(list(csv.DictReader(f)))
    colls = OrderedDict()
    for r, rows in enumerate(runs):
        for row in rows:
            key = (row["collective"], int(row["size_bytes"]))
            colls.setdefault(row["collective"], OrderedDict()).setdefault(key[1], {})[r] = row
    for coll, sizes in colls.items():
        print(f"\n**{coll}** ({next(iter(next(iter(sizes.values())).values()))['type']}, "
              f"{next(iter(next(iter(sizes.values())).values()))['redop']})\n")
        head = "| size |"
        rule = "|---:|"
        for r in range(len(runs)):
            head += f" run {r + 1}: hier µs | mpi µs | hier/mpi |"
            rule += "---:|---:|---:|"
        head += " worst hier/mpi | #wrong |"
        rule += "---:|---:|"
        print(head)
        print(rule)
        for size, per in sizes.items():
            line = f"| {human(size)} |"
            worst, wrong = 0.0, 0
            for r in range(len(runs)):
                row = per.get(r)
                if row is None:
                    line += " | | |"
                    continue
                ratio = float(row["hier_over_mpi"])
                worst = max(worst, ratio)
                for k in ("hier_wrong", "mpi_wrong"):
                    wrong += int(row[k] or 0)
                line += f" {float(row['hier_time_us']):.2f} | {float(row['mpi_time_us']):.2f} | {ratio:.3f} |"
            line += f" {worst:.3f} | {wrong} |"
            print(line)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
