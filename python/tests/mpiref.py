# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Reference results from MPICH's own collectives.

With MXH_TEST_MPI4PY=1 (set by run_python_tests.sh when an mpi4py built on
MPICH is importable) the references come from mpi4py's comm.Allreduce & co.;
otherwise MPICH's MPI_Allreduce & co. are called through ctypes with the same
arguments: the same functions mpi4py would call. fp16/bf16 reductions, which
MPICH 4.0.2 cannot do itself (it aborts on MPIX_C_FLOAT16), are computed with
numpy from every rank's input gathered by MPI_Allgather; the tests use values
whose sums are exact, so the order of the reduction does not matter.
"""

import ctypes
import os

import numpy as np

import mpix_hier as mh
from mpix_hier import _lib

lib = _lib.lib
USE_MPI4PY = os.environ.get("MXH_TEST_MPI4PY") == "1"
if USE_MPI4PY:
    from mpi4py import MPI  # noqa: E402  (built on MPICH: checked by the runner)

HALF = ("float16", "bfloat16")
_INT = ctypes.c_int


def _p(a):
    return ctypes.c_void_p(a.ctypes.data)


def _dt(a, dtype=None):
    return mh._datatype(mh.as_buffer(a, dtype))


def _arr(v):
    return (_INT * max(len(v), 1))(*[int(x) for x in v])


def _call(name, *args):
    rc = getattr(lib, "MPI_" + name)(*args)
    assert rc == 0, "MPI_%s failed: %s" % (name, _lib.error_string(rc))


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f32):
    # exact inputs only (the tests' values are small integers): truncation is exact
    return (f32.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _half_reduce(x, op, comm, dtype):
    """Reduction of fp16 / bf16 (uint16 bit patterns) over comm, computed in numpy."""
    size = comm.size
    allx = np.empty(size * x.size, dtype=x.dtype)
    _call("Allgather", _p(x), x.nbytes, _lib.DATATYPES["byte"], _p(allx), x.nbytes,
          _lib.DATATYPES["byte"], comm.handle)
    allx = allx.reshape(size, -1)
    f = bf16_to_f32(allx) if dtype == "bfloat16" else allx.astype(np.float32)
    red = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min}[op](f, axis=0)
    return f32_to_bf16(red) if dtype == "bfloat16" else red.astype(np.float16)


def allreduce(x, op, comm, dtype=None):
    if dtype in HALF or x.dtype == np.float16:
        return _half_reduce(x, op, comm, dtype or "float16")
    out = np.empty_like(x)
    if USE_MPI4PY:
        _m4p(comm).Allreduce(x, out, op=_m4p_op(op))
        return out
    _call("Allreduce", _p(x), _p(out), x.size, _dt(x, dtype), _lib.OPS[op], comm.handle)
    return out


def reduce_scatter(x, counts, op, comm, dtype=None):
    rank = comm.rank
    if dtype in HALF or x.dtype == np.float16:
        full = _half_reduce(x, op, comm, dtype or "float16")
        off = sum(counts[:rank])
        return full[off:off + counts[rank]]
    out = np.empty(counts[rank], dtype=x.dtype)
    if USE_MPI4PY:
        _m4p(comm).Reduce_scatter(x, out, recvcounts=counts, op=_m4p_op(op))
        return out
    _call("Reduce_scatter", _p(x), _p(out), _arr(counts), _dt(x, dtype), _lib.OPS[op],
          comm.handle)
    return out


def allgather(x, comm):
    out = np.empty(x.size * comm.size, dtype=x.dtype)
    if USE_MPI4PY:
        _m4p(comm).Allgather(x, out)
        return out
    _call("Allgather", _p(x), x.size, _dt(x), _p(out), x.size, _dt(x), comm.handle)
    return out


def allgatherv(x, counts, displs, total, comm):
    out = np.zeros(total, dtype=x.dtype)
    if USE_MPI4PY:
        _m4p(comm).Allgatherv(x, [out, counts, displs, _m4p_type(x)])
        return out
    _call("Allgatherv", _p(x), x.size, _dt(x), _p(out), _arr(counts), _arr(displs), _dt(x),
          comm.handle)
    return out


def alltoall(x, comm):
    out = np.empty_like(x)
    n = x.size // comm.size
    if USE_MPI4PY:
        _m4p(comm).Alltoall(x, out)
        return out
    _call("Alltoall", _p(x), n, _dt(x), _p(out), n, _dt(x), comm.handle)
    return out


def alltoallv(x, sc, sd, rc, rd, total, comm):
    out = np.zeros(total, dtype=x.dtype)
    if USE_MPI4PY:
        t = _m4p_type(x)
        _m4p(comm).Alltoallv([x, sc, sd, t], [out, rc, rd, t])
        return out
    _call("Alltoallv", _p(x), _arr(sc), _arr(sd), _dt(x), _p(out), _arr(rc), _arr(rd), _dt(x),
          comm.handle)
    return out


def bcast(x, root, comm):
    out = x.copy()
    if USE_MPI4PY:
        _m4p(comm).Bcast(out, root=root)
        return out
    _call("Bcast", _p(out), out.size, _dt(out), root, comm.handle)
    return out


def reduce(x, op, root, comm, dtype=None):
    """The root's result (computed as an allreduce for fp16/bf16, which MPICH cannot reduce)."""
    if dtype in HALF or x.dtype == np.float16:
        return _half_reduce(x, op, comm, dtype or "float16")
    out = np.empty_like(x)
    if USE_MPI4PY:
        _m4p(comm).Reduce(x, out, op=_m4p_op(op), root=root)
        return out
    _call("Reduce", _p(x), _p(out), x.size, _dt(x, dtype), _lib.OPS[op], root, comm.handle)
    return out


# ---- mpi4py objects for the same handles (only with USE_MPI4PY) ----------------

def _m4p(comm):
    return MPI.COMM_WORLD if comm.handle == _lib.COMM_WORLD else MPI.Comm.f2py(comm.handle)


def _m4p_op(op):
    return {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN,
            "band": MPI.BAND, "bor": MPI.BOR, "bxor": MPI.BXOR, "land": MPI.LAND,
            "lor": MPI.LOR, "lxor": MPI.LXOR}[op]


def _m4p_type(x):
    return MPI.Datatype.f2py(_dt(x))
