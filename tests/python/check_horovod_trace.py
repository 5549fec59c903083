#!/usr/bin/env python3
# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Checks a trace written by examples/horovod_style.py --trace FILE:
valid JSON in Chrome's trace format, compute (tid 0) and communication (tid 1)
events from every rank, one allreduce event per bucket and step, the loss
decreased, the parameters identical on all ranks.
usage: check_horovod_trace.py TRACE RANKS STEPS"""

import json
import sys


def main(path, ranks, steps):
    with open(path) as f:
        trace = json.load(f)
    events = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    for e in events:
        assert isinstance(e["ts"], (int, float)) and e["dur"] >= 0, e
        assert e["tid"] in (0, 1) and 0 <= e["pid"] < ranks, e
    meta = trace["otherData"]
    nbuckets = len(meta["buckets"])
    for r in range(ranks):
        compute = [e for e in events if e["pid"] == r and e["tid"] == 0]
        comm = [e for e in events if e["pid"] == r and e["tid"] == 1]
        assert len(compute) == 6 * steps, (r, len(compute))  # fwd, 3 bwd, wait, step
        assert len(comm) == nbuckets * steps, (r, len(comm), nbuckets)
        assert all(e["name"].startswith("allreduce bucket") for e in comm)
    losses = meta["losses"]
    assert len(losses) == steps, losses
    assert losses[-1] < losses[0], "loss did not decrease: %s" % losses
    assert meta["params_identical"] is True
    print("trace OK: %d events, %d ranks, %d buckets, loss %.4f -> %.4f"
          % (len(events), ranks, nbuckets, losses[0], losses[-1]))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
