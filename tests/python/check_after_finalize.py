# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""After MPI_Finalize every mpix_hier call raises MPIXHierError (MPICH would abort
the process on the MPI call): a collective, a nonblocking one, describe, a
communicator's dup and free, its rank."""
import ctypes
import sys

import numpy as np

import mpix_hier as mh
from mpix_hier import _lib

x = np.arange(4, dtype=np.float64)
r = mh.allreduce(x)
assert r[3] == 3 * mh.COMM_WORLD.size, r
c = mh.COMM_WORLD.dup()
req = mh.iallreduce(x)
req.wait()
_lib.lib.MPI_Finalize()
calls = {
    "allreduce": lambda: mh.allreduce(x),
    "iallreduce": lambda: mh.iallreduce(x),
    "describe": lambda: mh.describe(),
    "dup": lambda: mh.COMM_WORLD.dup(),
    "free": lambda: c.free(),
    "rank": lambda: mh.COMM_WORLD.rank,
}
bad = []
for name, call in calls.items():
    try:
        call()
        bad.append(name + ": no exception")
    except mh.MPIXHierError as e:
        if "finalized" not in str(e) or e.error_class != _lib.ERR_OTHER:
            bad.append("%s: %s (class %s)" % (name, e, e.error_class))
if bad:
    sys.stdout.write("after-finalize: FAILED: " + "; ".join(bad) + "\n")
    sys.exit(1)
# one write per line: print's text and newline are two, which the ranks' output interleaved
sys.stdout.write("after-finalize OK: %d calls raised MPIXHierError\n" % len(calls))
sys.stdout.flush()
