# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Tests that fail or hang on purpose (MXH_SELFTEST=fail|hang), run by
run_python_tests.sh to check its own machinery (python/tests/conftest.py, loaded
with -p conftest): a failure on one rank must fail the whole job, and a rank
stuck in a collective must be ended by the watchdog, not wait forever.
Not collected with python/tests."""

import os

import numpy as np

import mpix_hier as mh


def test_selftest():
    rank = mh.COMM_WORLD.rank
    mode = os.environ.get("MXH_SELFTEST")
    if mode == "fail":
        assert rank != 1, "rank 1 fails on purpose"
        mh.allreduce(np.ones(1))  # rank 1 never joins: only the abort ends this
    elif mode == "hang":
        if rank != 1:
            mh.allreduce(np.ones(1))  # rank 1 never joins, and passes
