#!/usr/bin/env python3
# ratios.py PREFIX...: per collective and size, median/min/max of hier/mpi (time) over
# the mpix_bench --csv files PREFIX*.csv (runs alternated with another build)
import csv, glob, sys, statistics
for pre in sys.argv[1:]:
    r = {}
    for f in sorted(glob.glob(pre + '*.csv')):
        for row in csv.DictReader(open(f)):
            k = (row['collective'], int(row['size_bytes']))
            r.setdefault(k, []).append(float(row['hier_time_us']) / float(row['mpi_time_us']))
    print(pre, len(glob.glob(pre + '*.csv')), 'runs')
    for k in sorted(r, key=lambda k: (k[0], k[1])):
        v = r[k]
        print('  %-22s %4d  median %.3f  min %.3f  max %.3f' % (k[0], k[1], statistics.median(v), min(v), max(v)))
