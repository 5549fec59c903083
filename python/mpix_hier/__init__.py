# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""mpix_hier: Python bindings (ctypes) of the mpix-hier topology-aware collectives.

    import numpy as np, mpix_hier as mh
    x = np.ones(1 << 20, dtype=np.float32)
    mh.allreduce(x)                          # in place, MPI_SUM over MPI_COMM_WORLD
    req = mh.iallreduce(x, op="max")         # nonblocking: req.wait() / req.test()
    print(mh.describe())                     # the hierarchy the library built

Communicators: an mpi4py communicator (mpi4py built on MPICH), an mpix_hier.Comm,
or a raw MPICH handle (int); default MPI_COMM_WORLD. MPI is initialized on first
use unless the program (or mpi4py) did it. Buffers: see _buffers.as_buffer.
"""

import ctypes
import sys

from . import _lib
from ._buffers import as_buffer, new_like
from ._lib import MPIXHierError, cuda_enabled, ensure_init, lib

__all__ = [
    "allreduce", "reduce_scatter", "reduce_scatter_block", "allgather", "allgatherv",
    "alltoall", "alltoallv", "bcast", "reduce",
    "iallreduce", "ireduce_scatter", "ireduce_scatter_block", "iallgather", "iallgatherv",
    "ialltoall", "ialltoallv", "ibcast", "ireduce",
    "allreduce_init", "reduce_scatter_init", "reduce_scatter_block_init", "allgather_init",
    "allgatherv_init", "alltoall_init", "alltoallv_init", "bcast_init", "reduce_init",
    "Request", "Persistent", "waitall", "describe", "split_parallel", "describe_parallel", "reorder",
    "version",
    "Comm", "COMM_WORLD", "IN_PLACE",
    "MPIXHierError", "cuda_enabled", "as_buffer", "library_path",
]

library_path = _lib.LIBRARY_PATH


class _InPlace:
    def __repr__(self):
        return "mpix_hier.IN_PLACE"


#: Pass as sendbuf where MPI allows MPI_IN_PLACE.
IN_PLACE = _InPlace()


def _c_handle(h):
    """MPICH handles are C ints: 0x84000000 and up are negative as int."""
    h = int(h)
    return h - (1 << 32) if h >= (1 << 31) else h


class Comm:
    """A thin MPICH communicator handle for programs without mpi4py."""

    def __init__(self, handle, owned=False):
        self.handle = _c_handle(handle)
        self._owned = owned

    @property
    def rank(self):
        return _rank(self.handle)

    @property
    def size(self):
        return _size(self.handle)

    def dup(self):
        ensure_init()
        new = ctypes.c_int(0)
        _lib.check(lib.MPI_Comm_dup(self.handle, ctypes.byref(new)), "MPI_Comm_dup")
        return Comm(new.value, owned=True)

    def split(self, color, key=0):
        ensure_init()
        new = ctypes.c_int(0)
        _lib.check(lib.MPI_Comm_split(self.handle, color, key, ctypes.byref(new)),
                   "MPI_Comm_split")
        return Comm(new.value, owned=True)

    def barrier(self):
        ensure_init()
        _lib.check(lib.MPI_Barrier(self.handle), "MPI_Barrier")

    def free(self):
        if self._owned and self.handle != _lib.COMM_NULL:
            _lib.require_mpi("MPI_Comm_free")
            h = ctypes.c_int(self.handle)
            _lib.check(lib.MPI_Comm_free(ctypes.byref(h)), "MPI_Comm_free")
            self.handle = _lib.COMM_NULL

    def __int__(self):
        return self.handle


COMM_WORLD = Comm(_lib.COMM_WORLD)
COMM_SELF = Comm(_lib.COMM_SELF)


def _comm_handle(comm):
    if comm is None:
        return _lib.COMM_WORLD
    if isinstance(comm, Comm):
        return comm.handle
    if isinstance(comm, int):
        return _c_handle(comm)
    if type(comm).__module__ == "mpi4py.MPI":
        _lib._check_mpi4py()
        return _c_handle(sys.modules["mpi4py.MPI"]._handleof(comm))
    raise TypeError("comm must be an mpi4py communicator, an mpix_hier.Comm or an int handle")


def _op_handle(op):
    if isinstance(op, str):
        try:
            return _lib.OPS[op.lower()]
        except KeyError:
            raise ValueError("unknown op %r (one of %s)" % (op, ", ".join(_lib.OPS))) from None
    if isinstance(op, int):
        return _c_handle(op)
    if type(op).__module__ == "mpi4py.MPI":
        return _c_handle(sys.modules["mpi4py.MPI"]._handleof(op))
    raise TypeError("op must be a name ('sum', 'max', ...), an mpi4py MPI.Op or an int handle")


def _datatype(buf):
    if buf.dtype == "bfloat16":
        return lib.MPIX_Hier_type_bfloat16()
    return _lib.DATATYPES[buf.dtype]


def _comm_int(c, fn, name):
    """The int that MPI_Comm_rank / MPI_Comm_size (fn, called name) gives for c."""
    ensure_init()
    v = ctypes.c_int(0)
    _lib.check(_lib.call_returning_errors(c, fn, c, ctypes.byref(v)), name)
    return v.value


def _rank(c):
    return _comm_int(c, lib.MPI_Comm_rank, "MPI_Comm_rank")


def _size(c):
    return _comm_int(c, lib.MPI_Comm_size, "MPI_Comm_size")


def _ptr(buf):
    return ctypes.c_void_p(buf.ptr)


def _ints(values, what):
    values = [int(v) for v in values]
    for v in values:
        if v < 0 or v >= (1 << 31):
            raise ValueError("%s: %d out of range for a C int" % (what, v))
    return (ctypes.c_int * max(len(values), 1))(*values)


def _count(n, what="count"):
    if n >= (1 << 31):
        raise ValueError("%s %d exceeds MPI's int count" % (what, n))
    return n


def _check_buffers(*bufs, writable=None):
    for b in bufs:
        if b is not None and b.device != "cpu" and not cuda_enabled():
            raise ValueError("device (CUDA) buffer, but libmpixhier was built without CUDA")
    if writable is not None and writable.readonly:
        raise ValueError("the receive buffer is read-only")


def _same_type(a, b):
    if a.dtype != b.dtype:
        raise TypeError("send and receive buffers have different dtypes (%s, %s)"
                        % (a.dtype, b.dtype))


def _even_split(n, size):
    base, extra = divmod(n, size)
    return [base + (1 if r < extra else 0) for r in range(size)]


def _prefix(counts):
    out, acc = [], 0
    for c in counts:
        out.append(acc)
        acc += c
    return out


def _per_rank(values, what, size):
    """values (recvcounts, sendcounts) as ints, one per rank of the communicator."""
    out = [int(x) for x in values]
    if len(out) != size:
        raise ValueError("%s has %d entries, the communicator %d ranks" % (what, len(out), size))
    return out


def _layout(counts, displs):
    """(displacements, default packed; the elements the blocks reach)."""
    disp = _prefix(counts) if displs is None else [int(x) for x in displs]
    return disp, max([d + n for d, n in zip(disp, counts)] + [0])


def _blocks(total, size):
    """Elements per block of total elements in size equal blocks."""
    if total % size:
        raise ValueError("%d elements do not split into %d equal blocks" % (total, size))
    return total // size


def _need(recv, n):
    if recv.count < n:
        raise ValueError("receive buffer has %d elements, needs %d" % (recv.count, n))


def _in_place_recv(recvbuf, dtype):
    """With IN_PLACE: the receive buffer (which also holds the input)."""
    if recvbuf is None:
        raise ValueError("IN_PLACE needs a receive buffer")
    return as_buffer(recvbuf, dtype)


def _recv_like(send, recvbuf, n, dtype):
    """recvbuf, else a new buffer of n elements like send; send's dtype, >= n elements."""
    recv = as_buffer(recvbuf, dtype) if recvbuf is not None else \
        as_buffer(new_like(send, n), dtype)
    _same_type(send, recv)
    _need(recv, n)
    return recv


def _recv_v(send, recvbuf, need, dtype):
    """The v-forms' receive buffer: recvbuf, else (not IN_PLACE) a new one like send;
    at least need elements (its dtype is checked by the caller)."""
    if recvbuf is None:
        if send is None:
            raise ValueError("IN_PLACE needs a receive buffer")
        recv = as_buffer(new_like(send, need), dtype)
    else:
        recv = as_buffer(recvbuf, dtype)
    _need(recv, need)
    return recv


# ---- requests ---------------------------------------------------------------

# Requests dropped before completion: their buffers stay referenced here until a
# later call finds them complete (MPI forbids freeing a buffer in use).
_orphans = []


def _reap_orphans():
    for entry in list(_orphans):
        req, comm = entry[0], entry[1]
        flag = ctypes.c_int(0)
        st = _lib.MPI_Status(0, 0, 0, 0, 0)
        # an error of a dropped request has no one to go to: it is dropped too
        rc = _lib.call_returning_errors(comm, lib.MPI_Test, ctypes.byref(req),
                                        ctypes.byref(flag), ctypes.byref(st))
        if rc != 0 or flag.value:
            _orphans.remove(entry)


class Request:
    """A posted nonblocking collective. wait() returns the result (the receive
    buffer) or raises MPIXHierError; test() returns True once complete. The
    request keeps its buffers alive until it completes."""

    def __init__(self, handle, comm, keep, result):
        self._req = handle
        self._comm = comm
        self._keep = keep
        self._result = result
        self._done = False

    @property
    def handle(self):
        """The MPI_Request handle (an int), e.g. for mixing with other MPI requests."""
        return self._req.value

    def _finish(self, rc, status):
        self._done = True
        self._keep = None
        if rc == 0 and status.MPI_ERROR != 0:
            rc = status.MPI_ERROR
        _lib.check(rc, "MPIX_Hier nonblocking collective")

    def test(self):
        if self._done:
            return True
        flag = ctypes.c_int(0)
        st = _lib.MPI_Status(0, 0, 0, 0, 0)
        rc = _lib.call_returning_errors(self._comm, lib.MPI_Test, ctypes.byref(self._req),
                                        ctypes.byref(flag), ctypes.byref(st))
        if rc != 0 or flag.value:
            self._finish(rc, st)
        return self._done

    def wait(self):
        if not self._done:
            st = _lib.MPI_Status(0, 0, 0, 0, 0)
            rc = _lib.call_returning_errors(self._comm, lib.MPI_Wait, ctypes.byref(self._req),
                                            ctypes.byref(st))
            self._finish(rc, st)
        return self._result

    @property
    def done(self):
        return self._done

    def __del__(self):
        try:
            if not self._done and self._keep is not None:
                _orphans.append((self._req, self._comm, self._keep))
        except Exception:  # interpreter shutdown
            pass


class Persistent:
    """A persistent collective (MPI-4's MPI_Allreduce_init & co.): checked and
    planned once on the buffers given at creation. start() runs it (change the
    buffers' contents between starts, not the buffers), wait() returns the
    result, test() returns True once complete, free() releases it (also at
    exit of a with block)."""

    def __init__(self, handle, comm, keep, result, name):
        self._req = handle
        self._comm = comm
        self._keep = keep
        self._result = result
        self._name = name
        self._active = False

    @property
    def handle(self):
        """The MPI_Request handle (an int)."""
        return self._req.value

    @property
    def active(self):
        return self._active

    def _call(self, fn, *args):
        if self._req.value == _lib.REQUEST_NULL:
            raise ValueError("%s: the request was freed" % self._name)
        rc = _lib.call_returning_errors(self._comm, fn, ctypes.byref(self._req), *args)
        _lib.check(rc, self._name)

    def start(self):
        self._call(lib.MPI_Start)
        self._active = True
        return self

    def test(self):
        if not self._active:
            return True
        flag = ctypes.c_int(0)
        st = _lib.MPI_Status(0, 0, 0, 0, 0)
        try:
            self._call(lib.MPI_Test, ctypes.byref(flag), ctypes.byref(st))
        except MPIXHierError:
            self._active = False
            raise
        self._active = not flag.value
        return not self._active

    def wait(self):
        if self._active:
            self._active = False
            self._call(lib.MPI_Wait, ctypes.byref(_lib.MPI_Status(0, 0, 0, 0, 0)))
        return self._result

    def free(self):
        if self._req.value != _lib.REQUEST_NULL:
            self.wait()
            self._call(lib.MPI_Request_free)
            self._keep = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __del__(self):
        try:
            fin = ctypes.c_int(1)
            lib.MPI_Finalized(ctypes.byref(fin))
            if self._req.value != _lib.REQUEST_NULL and not fin.value:
                self.free()
        except Exception:  # interpreter shutdown, MPI finalized
            pass


def waitall(requests):
    """Wait for every request (in order: they complete in posting order per
    communicator anyway); returns their results."""
    return [r.wait() for r in requests]


def _run(name, comm, args, keep, result, nonblocking):
    """Call MPIX_Hier_<name> (or the I-form) with MPI_ERRORS_RETURN on comm for the
    call; raise MPIXHierError on error; return the result or a Request."""
    ensure_init()
    if _orphans:
        _reap_orphans()
    if nonblocking == "init":
        req = ctypes.c_int(_lib.REQUEST_NULL)
        fname = "MPIX_Hier_%s_init" % name.capitalize()
        rc = _lib.call_returning_errors(comm, getattr(lib, fname), *args, comm,
                                        _lib.INFO_NULL, ctypes.byref(req))
        _lib.check(rc, fname)
        return Persistent(req, comm, keep, result, fname)
    if nonblocking:
        req = ctypes.c_int(_lib.REQUEST_NULL)
        fn = getattr(lib, "MPIX_Hier_I" + name)
        rc = _lib.call_returning_errors(comm, fn, *args, comm, ctypes.byref(req))
        _lib.check(rc, "MPIX_Hier_I" + name)
        return Request(req, comm, keep, result)
    fn = getattr(lib, "MPIX_Hier_" + name)
    _lib.check(_lib.call_returning_errors(comm, fn, *args, comm), "MPIX_Hier_" + name)
    return result


def _result(buf):
    return buf.obj


# ---- collectives --------------------------------------------------------------

def _allreduce(sendbuf, recvbuf, op, comm, dtype, nb):
    c = _comm_handle(comm)
    if recvbuf is None or sendbuf is IN_PLACE:
        if recvbuf is None and sendbuf is IN_PLACE:
            raise ValueError("IN_PLACE needs a receive buffer")
        recv = as_buffer(sendbuf if recvbuf is None else recvbuf, dtype)
        send, sptr = None, _lib.IN_PLACE_PTR
    else:
        send, recv = as_buffer(sendbuf, dtype), as_buffer(recvbuf, dtype)
        _same_type(send, recv)
        if send.count != recv.count:
            raise ValueError("send has %d elements, receive %d" % (send.count, recv.count))
        sptr = _ptr(send)
    _check_buffers(send, recv, writable=recv)
    ensure_init()
    args = (sptr, _ptr(recv), _count(recv.count), _datatype(recv), _op_handle(op))
    return _run("allreduce", c, args, (send, recv), _result(recv), nb)


def allreduce(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    """allreduce(buf) reduces in place; allreduce(send, recv) or
    allreduce(IN_PLACE, recv). Returns the receive buffer."""
    return _allreduce(sendbuf, recvbuf, op, comm, dtype, False)


def iallreduce(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    return _allreduce(sendbuf, recvbuf, op, comm, dtype, True)


def allreduce_init(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Allreduce_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _allreduce(sendbuf, recvbuf, op, comm, dtype, "init")


def _reduce_scatter(sendbuf, recvbuf, recvcounts, op, comm, dtype, nb):
    c = _comm_handle(comm)
    size, rank = _size(c), _rank(c)
    if sendbuf is IN_PLACE:
        recv = _in_place_recv(recvbuf, dtype)
        send, sptr, total = None, _lib.IN_PLACE_PTR, recv.count
    else:
        send = as_buffer(sendbuf, dtype)
        total, sptr = send.count, _ptr(send)
    counts = _even_split(total, size) if recvcounts is None else \
        _per_rank(recvcounts, "recvcounts", size)
    if sum(counts) > total:
        raise ValueError("recvcounts sum to %d, the input has %d elements" % (sum(counts), total))
    if send is not None:
        recv = _recv_like(send, recvbuf, counts[rank], dtype)
    else:
        _need(recv, counts[rank])
    _check_buffers(send, recv, writable=recv)
    carr = _ints(counts, "recvcounts")
    args = (sptr, _ptr(recv), carr, _datatype(recv), _op_handle(op))
    return _run("reduce_scatter", c, args, (send, recv, carr), _result(recv), nb)


def reduce_scatter(sendbuf, recvbuf=None, recvcounts=None, op="sum", comm=None, dtype=None):
    """Rank r gets elements [sum(recvcounts[:r]), +recvcounts[r]) of the reduction.
    recvcounts defaults to an even split (the first count % size ranks get one
    more). With IN_PLACE the input is recvbuf, the result its first elements."""
    return _reduce_scatter(sendbuf, recvbuf, recvcounts, op, comm, dtype, False)


def ireduce_scatter(sendbuf, recvbuf=None, recvcounts=None, op="sum", comm=None, dtype=None):
    return _reduce_scatter(sendbuf, recvbuf, recvcounts, op, comm, dtype, True)


def reduce_scatter_init(sendbuf, recvbuf=None, recvcounts=None, op="sum", comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Reduce_scatter_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _reduce_scatter(sendbuf, recvbuf, recvcounts, op, comm, dtype, "init")


def _reduce_scatter_block(sendbuf, recvbuf, op, comm, dtype, nb):
    c = _comm_handle(comm)
    size = _size(c)
    if sendbuf is IN_PLACE:
        recv = _in_place_recv(recvbuf, dtype)
        send, sptr, total = None, _lib.IN_PLACE_PTR, recv.count
    else:
        send = as_buffer(sendbuf, dtype)
        sptr, total = _ptr(send), send.count
    n = _blocks(total, size)
    if send is not None:
        recv = _recv_like(send, recvbuf, n, dtype)
    _check_buffers(send, recv, writable=recv)
    args = (sptr, _ptr(recv), _count(n), _datatype(recv), _op_handle(op))
    return _run("reduce_scatter_block", c, args, (send, recv), _result(recv), nb)


def reduce_scatter_block(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    """Each rank gets len(sendbuf) / size elements of the reduction."""
    return _reduce_scatter_block(sendbuf, recvbuf, op, comm, dtype, False)


def ireduce_scatter_block(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    return _reduce_scatter_block(sendbuf, recvbuf, op, comm, dtype, True)


def reduce_scatter_block_init(sendbuf, recvbuf=None, op="sum", comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Reduce_scatter_block_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _reduce_scatter_block(sendbuf, recvbuf, op, comm, dtype, "init")


def _allgather(sendbuf, recvbuf, comm, dtype, nb):
    c = _comm_handle(comm)
    size = _size(c)
    if sendbuf is IN_PLACE:
        recv = _in_place_recv(recvbuf, dtype)
        if recv.count % size:
            raise ValueError("receive buffer of %d elements is not %d blocks" % (recv.count, size))
        send, n = None, recv.count // size
        sargs = (_lib.IN_PLACE_PTR, 0, _datatype(recv))
    else:
        send = as_buffer(sendbuf, dtype)
        n = send.count
        recv = _recv_like(send, recvbuf, n * size, dtype)
        sargs = (_ptr(send), _count(n), _datatype(send))
    _check_buffers(send, recv, writable=recv)
    args = sargs + (_ptr(recv), _count(n), _datatype(recv))
    return _run("allgather", c, args, (send, recv), _result(recv), nb)


def allgather(sendbuf, recvbuf=None, comm=None, dtype=None):
    """Concatenation of every rank's sendbuf in rank order; allgather(IN_PLACE, recv)
    takes each rank's block from its place in recv."""
    return _allgather(sendbuf, recvbuf, comm, dtype, False)


def iallgather(sendbuf, recvbuf=None, comm=None, dtype=None):
    return _allgather(sendbuf, recvbuf, comm, dtype, True)


def allgather_init(sendbuf, recvbuf=None, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Allgather_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _allgather(sendbuf, recvbuf, comm, dtype, "init")


def _allgatherv(sendbuf, recvbuf, recvcounts, displs, comm, dtype, nb):
    c = _comm_handle(comm)
    size, rank = _size(c), _rank(c)
    send = None if sendbuf is IN_PLACE else as_buffer(sendbuf, dtype)
    if recvcounts is None:
        if send is None:
            raise ValueError("IN_PLACE needs recvcounts")
        # every rank's count, gathered first (a blocking allgather, also for the I-form)
        import numpy as np
        counts_arr = allgather(np.array([send.count], dtype=np.int32), comm=c)
        counts = _per_rank(counts_arr, "recvcounts", size)
    else:
        counts = _per_rank(recvcounts, "recvcounts", size)
    disp, need = _layout(counts, displs)
    recv = _recv_v(send, recvbuf, need, dtype)
    if send is not None:
        _same_type(send, recv)
        if send.count != counts[rank]:
            raise ValueError("sendbuf has %d elements, recvcounts[%d] is %d"
                             % (send.count, rank, counts[rank]))
        sargs = (_ptr(send), _count(send.count), _datatype(send))
    else:
        sargs = (_lib.IN_PLACE_PTR, 0, _datatype(recv))
    _check_buffers(send, recv, writable=recv)
    carr, darr = _ints(counts, "recvcounts"), _ints(disp, "displs")
    args = sargs + (_ptr(recv), carr, darr, _datatype(recv))
    return _run("allgatherv", c, args, (send, recv, carr, darr), _result(recv), nb)


def allgatherv(sendbuf, recvbuf=None, recvcounts=None, displs=None, comm=None, dtype=None):
    """Rank r's sendbuf lands at displs[r] (default: packed in rank order). Without
    recvcounts the counts are gathered first."""
    return _allgatherv(sendbuf, recvbuf, recvcounts, displs, comm, dtype, False)


def iallgatherv(sendbuf, recvbuf=None, recvcounts=None, displs=None, comm=None, dtype=None):
    return _allgatherv(sendbuf, recvbuf, recvcounts, displs, comm, dtype, True)


def allgatherv_init(sendbuf, recvbuf=None, recvcounts=None, displs=None, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Allgatherv_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _allgatherv(sendbuf, recvbuf, recvcounts, displs, comm, dtype, "init")


def _alltoall(sendbuf, recvbuf, comm, dtype, nb):
    c = _comm_handle(comm)
    size = _size(c)
    if sendbuf is IN_PLACE:
        recv = _in_place_recv(recvbuf, dtype)
        total, send = recv.count, None
    else:
        send = as_buffer(sendbuf, dtype)
        total = send.count
    n = _blocks(total, size)
    if send is not None:
        recv = _recv_like(send, recvbuf, total, dtype)
        sargs = (_ptr(send), _count(n), _datatype(send))
    else:
        sargs = (_lib.IN_PLACE_PTR, 0, _datatype(recv))
    _check_buffers(send, recv, writable=recv)
    args = sargs + (_ptr(recv), _count(n), _datatype(recv))
    return _run("alltoall", c, args, (send, recv), _result(recv), nb)


def alltoall(sendbuf, recvbuf=None, comm=None, dtype=None):
    """Block j of sendbuf goes to rank j; block i of the result came from rank i."""
    return _alltoall(sendbuf, recvbuf, comm, dtype, False)


def ialltoall(sendbuf, recvbuf=None, comm=None, dtype=None):
    return _alltoall(sendbuf, recvbuf, comm, dtype, True)


def alltoall_init(sendbuf, recvbuf=None, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Alltoall_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _alltoall(sendbuf, recvbuf, comm, dtype, "init")


def _alltoallv(sendbuf, sendcounts, recvbuf, recvcounts, sdispls, rdispls, comm, dtype, nb):
    c = _comm_handle(comm)
    size = _size(c)
    send = None if sendbuf is IN_PLACE else as_buffer(sendbuf, dtype)
    if send is not None:
        if sendcounts is None:
            raise ValueError("sendcounts is required")
        scounts = _per_rank(sendcounts, "sendcounts", size)
        sdisp, reach = _layout(scounts, sdispls)
        if reach > send.count:
            raise ValueError("sendcounts/sdispls reach past the send buffer")
    if recvcounts is None:
        if send is None:
            raise ValueError("IN_PLACE needs recvcounts")
        # what every rank sends here, exchanged first (blocking, also for the I-form)
        import numpy as np
        rc_arr = alltoall(np.array(scounts, dtype=np.int32), comm=c)
        rcounts = _per_rank(rc_arr, "recvcounts", size)
    else:
        rcounts = _per_rank(recvcounts, "recvcounts", size)
    rdisp, need = _layout(rcounts, rdispls)
    recv = _recv_v(send, recvbuf, need, dtype)
    rarr, rdarr = _ints(rcounts, "recvcounts"), _ints(rdisp, "rdispls")
    if send is not None:
        _same_type(send, recv)
        sarr, sdarr = _ints(scounts, "sendcounts"), _ints(sdisp, "sdispls")
        sargs = (_ptr(send), sarr, sdarr, _datatype(send))
    else:
        sarr = sdarr = None
        sargs = (_lib.IN_PLACE_PTR, None, None, _datatype(recv))
    _check_buffers(send, recv, writable=recv)
    args = sargs + (_ptr(recv), rarr, rdarr, _datatype(recv))
    return _run("alltoallv", c, args, (send, recv, sarr, sdarr, rarr, rdarr), _result(recv), nb)


def alltoallv(sendbuf, sendcounts=None, recvbuf=None, recvcounts=None, sdispls=None,
              rdispls=None, comm=None, dtype=None):
    """sendcounts[j] elements from sdispls[j] go to rank j; recvcounts[i] from rank i
    land at rdispls[i]. Displacements default to packed; without recvcounts the
    counts are exchanged first. IN_PLACE: data taken from and replaced in recvbuf."""
    return _alltoallv(sendbuf, sendcounts, recvbuf, recvcounts, sdispls, rdispls, comm,
                      dtype, False)


def ialltoallv(sendbuf, sendcounts=None, recvbuf=None, recvcounts=None, sdispls=None,
               rdispls=None, comm=None, dtype=None):
    return _alltoallv(sendbuf, sendcounts, recvbuf, recvcounts, sdispls, rdispls, comm,
                      dtype, True)


def alltoallv_init(sendbuf, sendcounts=None, recvbuf=None, recvcounts=None, sdispls=None,
                   rdispls=None, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Alltoallv_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _alltoallv(sendbuf, sendcounts, recvbuf, recvcounts, sdispls, rdispls, comm,
                      dtype, "init")


def _bcast(buf, root, comm, dtype, nb):
    c = _comm_handle(comm)
    b = as_buffer(buf, dtype)
    _check_buffers(b, writable=b if _rank(c) != root else None)
    args = (_ptr(b), _count(b.count), _datatype(b), int(root))
    return _run("bcast", c, args, (b,), _result(b), nb)


def bcast(buf, root=0, comm=None, dtype=None):
    """buf of root is copied into buf of every rank (in place); returns buf."""
    return _bcast(buf, root, comm, dtype, False)


def ibcast(buf, root=0, comm=None, dtype=None):
    return _bcast(buf, root, comm, dtype, True)


def bcast_init(buf, root=0, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Bcast_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _bcast(buf, root, comm, dtype, "init")


def _reduce(sendbuf, recvbuf, op, root, comm, dtype, nb):
    c = _comm_handle(comm)
    is_root = _rank(c) == root
    if sendbuf is IN_PLACE:
        if not is_root or recvbuf is None:
            raise ValueError("IN_PLACE is for the root, with a receive buffer")
        recv = as_buffer(recvbuf, dtype)
        send, sptr, n = None, _lib.IN_PLACE_PTR, recv.count
    else:
        send = as_buffer(sendbuf, dtype)
        sptr, n = _ptr(send), send.count
        recv = None
        if is_root:
            recv = _recv_like(send, recvbuf, n, dtype)
    _check_buffers(send, recv, writable=recv)
    dt = _datatype(recv if send is None else send)
    args = (sptr, _ptr(recv) if recv is not None else ctypes.c_void_p(0), _count(n), dt,
            _op_handle(op), int(root))
    return _run("reduce", c, args, (send, recv), _result(recv) if recv else None, nb)


def reduce(sendbuf, recvbuf=None, op="sum", root=0, comm=None, dtype=None):
    """The reduction lands on root (in recvbuf, or a new array); others get None.
    reduce(IN_PLACE, buf, root=r) on the root reduces into buf."""
    return _reduce(sendbuf, recvbuf, op, root, comm, dtype, False)


def ireduce(sendbuf, recvbuf=None, op="sum", root=0, comm=None, dtype=None):
    return _reduce(sendbuf, recvbuf, op, root, comm, dtype, True)


def reduce_init(sendbuf, recvbuf=None, op="sum", root=0, comm=None, dtype=None):
    """The persistent form (MPIX_Hier_Reduce_init): a Persistent request on these
    buffers; start() runs it, wait() returns the result."""
    return _reduce(sendbuf, recvbuf, op, root, comm, dtype, "init")


# ---- introspection ------------------------------------------------------------

def describe(comm=None):
    """MPIX_Hier_comm_describe: the hierarchy of comm (collective on first use)."""
    c = _comm_handle(comm)
    ensure_init()
    n = ctypes.c_int(0)
    size = 4096
    while True:
        buf = ctypes.create_string_buffer(size)
        _lib.check(_lib.call_returning_errors(c, lib.MPIX_Hier_comm_describe, c, buf, size,
                                              ctypes.byref(n)), "MPIX_Hier_comm_describe")
        if n.value < size:
            return buf.value.decode(errors="replace")
        size = n.value + 1


def _sizes(sizes):
    sizes = [int(s) for s in sizes]
    return len(sizes), (ctypes.c_int * max(len(sizes), 1))(*sizes)


def split_parallel(sizes, comm=None):
    """MPIX_Hier_comm_split_parallel: one Comm per dimension of sizes (innermost first,
    one of them 0 for the rest), e.g. split_parallel([8, 4, 0]) -> [tp, pp, dp]: tensor
    parallelism inside the node, pipeline across nodes of a leaf, data along the rails.
    Collective; the caller frees the communicators (Comm.free)."""
    c = _comm_handle(comm)
    ensure_init()
    n, arr = _sizes(sizes)
    out = (ctypes.c_int * max(n, 1))()
    _lib.check(_lib.call_returning_errors(c, lib.MPIX_Hier_comm_split_parallel, c, n, arr, out),
               "MPIX_Hier_comm_split_parallel")
    return [Comm(out[d], owned=True) for d in range(n)]


def reorder(comm=None):
    """MPIX_Hier_comm_reorder: a Comm of the same ranks in topology order (leaf, node,
    NVLink island, rail, GPU), so consecutive ranks are neighbours on one node, then one
    leaf: for rings and stencils of your own. Collective; the caller frees it (Comm.free)."""
    c = _comm_handle(comm)
    ensure_init()
    out = ctypes.c_int(0)
    _lib.check(_lib.call_returning_errors(c, lib.MPIX_Hier_comm_reorder, c, ctypes.byref(out)),
               "MPIX_Hier_comm_reorder")
    return Comm(out.value, owned=True)


def describe_parallel(sizes, comm=None):
    """MPIX_Hier_comm_describe_parallel: the level each dimension's groups span."""
    c = _comm_handle(comm)
    ensure_init()
    n, arr = _sizes(sizes)
    length = ctypes.c_int(0)
    buf = ctypes.create_string_buffer(4096)
    _lib.check(_lib.call_returning_errors(c, lib.MPIX_Hier_comm_describe_parallel, c, n, arr,
                                          buf, 4096, ctypes.byref(length)),
               "MPIX_Hier_comm_describe_parallel")
    return buf.value.decode(errors="replace")


def version():
    """(major, minor, patch) of the loaded library."""
    a, b, c = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    lib.MPIX_Hier_get_version(ctypes.byref(a), ctypes.byref(b), ctypes.byref(c))
    return (a.value, b.value, c.value)
