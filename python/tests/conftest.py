# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Every rank runs the same pytest session under mpiexec.

A test that fails on one rank would leave the other ranks waiting in its next
collective, so a failure prints its report and aborts the whole job
(MPI_Abort: mpiexec then exits non-zero). A watchdog does the same for a test
that runs past MXH_TEST_TIMEOUT seconds (default 120), so nothing hangs.
"""

import os
import sys
import threading
import time

import pytest

import mpix_hier as mh
from mpix_hier import _lib

_TIMEOUT = float(os.environ.get("MXH_TEST_TIMEOUT", "120"))
_state = {"test": None, "deadline": None, "config": None}
_lock = threading.Lock()


def _rank():
    return mh.COMM_WORLD.rank


def _watchdog():
    while True:
        time.sleep(1.0)
        with _lock:
            deadline, test = _state["deadline"], _state["test"]
        if deadline is not None and time.monotonic() > deadline:
            # pytest captures fd 2 during a test: give it back to say why we stop
            try:
                _state["config"].pluginmanager.getplugin("capturemanager") \
                    .suspend_global_capture(in_=True)
            except Exception:
                pass
            sys.__stderr__.write("\n[rank %d] TIMEOUT: %s ran past %.0f s; aborting the job\n"
                                 % (_state["rank"], test, _TIMEOUT))
            sys.__stderr__.flush()
            # not MPI_Abort: MPI belongs to the main thread (MPI_THREAD_FUNNELED);
            # a rank exiting without MPI_Finalize makes mpiexec end the job
            os._exit(70)


def pytest_configure(config):
    mh.COMM_WORLD.barrier()  # MPI is up on every rank before any test
    _state["config"] = config
    _state["rank"] = mh.COMM_WORLD.rank  # the watchdog thread makes no MPI call
    threading.Thread(target=_watchdog, daemon=True).start()


def pytest_runtest_setup(item):
    with _lock:
        _state["test"], _state["deadline"] = item.nodeid, time.monotonic() + _TIMEOUT


def pytest_runtest_teardown(item):
    with _lock:
        _state["test"], _state["deadline"] = None, None


def pytest_runtest_logreport(report):
    if report.failed:
        sys.__stderr__.write("\n[rank %d] FAILED %s (%s)\n%s\n"
                             % (_rank(), report.nodeid, report.when, report.longreprtext))
        sys.__stderr__.write("[rank %d] aborting the job so that no rank waits forever\n"
                             % _rank())
        sys.__stderr__.flush()
        _lib.lib.MPI_Abort(_lib.COMM_WORLD, 1)


@pytest.fixture(scope="session")
def comm():
    return mh.COMM_WORLD


@pytest.fixture(scope="session")
def rank():
    return mh.COMM_WORLD.rank


@pytest.fixture(scope="session")
def size():
    return mh.COMM_WORLD.size
