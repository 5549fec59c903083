#!/usr/bin/env python3
# ann.py OUTDIR [N]: per rank, our instructions per call of each collective:
# incl(timed_X) - incl(PMPI_X) (what MPI does inside is not ours)
import subprocess, sys, glob
N = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
mpi = {'allreduce': 'PMPI_Allreduce', 'rsb': 'PMPI_Reduce_scatter_block', 'allgather': 'PMPI_Allgather', 'bcast': 'PMPI_Bcast', 'reduce': 'PMPI_Reduce'}
for f in sorted(glob.glob(sys.argv[1] + '/cg.*')):
    out = subprocess.run(['callgrind_annotate', '--inclusive=yes', '--threshold=100', f], capture_output=True, text=True).stdout
    inc = {}
    for line in out.splitlines():
        if '%)  ' not in line or ' [' not in line: continue
        v, rest = line.split('(', 1)
        rest = rest.split('%)  ', 1)[1]
        name = rest.split(' [')[0].rsplit(':', 1)[-1]
        inc[name] = max(inc.get(name, 0), int(v.strip().replace(',', '')))
    row = []
    for c, fn in mpi.items():
        t = inc.get('timed_' + c, 0)
        row.append('%s %.0f' % (c, (t - inc.get(fn, 0)) / N))
    print(f.split('/')[-1], ' | '.join(row))
