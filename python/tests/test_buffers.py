# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Buffer kinds: buffer protocol, DLPack, __cuda_array_interface__, dtype overrides,
and the error paths (wrong arguments raise Python exceptions with MPI's message)."""

import array
import ctypes
import importlib.util
import os

import numpy as np
import pytest

import mpix_hier as mh
import mpiref
from mpix_hier import _lib
from test_collectives import bits_equal, make


class DLPackOnly:
    """Exposes an array through DLPack only (no buffer protocol), as torch or JAX do."""

    def __init__(self, a):
        self._a = a

    def __dlpack__(self, stream=None):
        return self._a.__dlpack__()

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


class FakeCudaArray:
    """A __cuda_array_interface__ (version 3) over HOST memory. It tests the parsing
    of the interface only: no GPU is involved. A CUDA build of the library finds
    out itself where a pointer lives (host here); a build without CUDA makes the
    package refuse device buffers."""

    def __init__(self, a, strides=None):
        self._a = a
        self.__cuda_array_interface__ = {
            "shape": a.shape, "typestr": a.dtype.str, "data": (a.ctypes.data, False),
            "version": 3, "strides": strides, "stream": None}


def test_buffer_protocol(comm, rank):
    x = make("int32", 50, rank)
    ref = mpiref.allreduce(x, "sum", comm)
    ba = bytearray(x.tobytes())  # format 'B': 200 uint8 elements, reinterpreted as int32
    mh.allreduce(ba, dtype="int32")
    assert bytes(ba) == ref.tobytes()
    arr = array.array("i", x.tolist())  # format 'i' -> int32
    mh.allreduce(memoryview(arr))
    assert bits_equal(np.frombuffer(arr, np.int32), ref)
    d = make("float64", 30, rank)
    mv = memoryview(d.tobytes())  # read-only: fine as send buffer, refused as receive buffer
    out = np.empty(30)
    # bytes are uint8 elements: dtype= reinterprets both buffers as float64
    mh.allreduce(mv, memoryview(out).cast("B"), dtype="float64")
    assert bits_equal(out, mpiref.allreduce(d, "sum", comm))
    with pytest.raises(ValueError, match="read-only"):
        mh.allreduce(mv, dtype="float64")


def test_dlpack_numpy(comm, rank):
    if not hasattr(np.ndarray, "__dlpack__"):
        pytest.skip("numpy %s has no __dlpack__ (needs >= 1.22)" % np.__version__)
    # (numpy < 2 exports no bool through DLPack)
    for dtype in ["float32", "int16", "uint64", "complex64", "float16"]:
        x = make(dtype, 77, rank)
        op = "sum"
        buf = mh.as_buffer(DLPackOnly(x))
        assert (buf.ptr, buf.count, buf.dtype, buf.device) == (x.ctypes.data, 77, dtype, "cpu")
        ref = mpiref.allreduce(x, op, comm)
        y = x.copy()
        mh.allreduce(DLPackOnly(y), op=op)
        assert bits_equal(y, ref)
    # 2-D C-contiguous passes; a transposed view is not contiguous
    m = make("float32", 12, rank).reshape(3, 4)
    assert mh.as_buffer(DLPackOnly(m)).count == 12
    with pytest.raises(ValueError, match="contiguous"):
        mh.as_buffer(DLPackOnly(m.T))


def test_cuda_array_interface_parsing(comm, rank):
    x = make("float32", 64, rank).reshape(8, 8)
    buf = mh.as_buffer(FakeCudaArray(x))
    assert (buf.ptr, buf.count, buf.dtype, buf.device, buf.readonly) == \
        (x.ctypes.data, 64, "float32", "cuda", False)
    assert mh.as_buffer(FakeCudaArray(x, strides=(32, 4))).count == 64
    with pytest.raises(ValueError, match="contiguous"):
        mh.as_buffer(FakeCudaArray(x, strides=(4, 32)))
    h = np.zeros(10, np.uint16)
    assert mh.as_buffer(FakeCudaArray(h), dtype="bfloat16").dtype == "bfloat16"
    ref = mpiref.allreduce(x.reshape(-1), "sum", comm)
    y = x.copy()
    if mh.cuda_enabled():
        # the library classifies the pointer itself: host memory works as such
        mh.allreduce(FakeCudaArray(y))
        assert bits_equal(y.reshape(-1), ref)
    else:
        with pytest.raises(ValueError, match="without CUDA"):
            mh.allreduce(FakeCudaArray(y))


def test_bfloat16_uint16(comm, rank):
    """bf16 as uint16 bit patterns with dtype="bfloat16" -> MPIX_Hier_type_bfloat16()."""
    x = make("bfloat16", 300, rank)
    assert x.dtype == np.uint16
    ref = mpiref.allreduce(x, "sum", comm, "bfloat16")
    # the values really are bf16: 1.0 is 0x3f80
    one = mpiref.f32_to_bf16(np.ones(1, np.float32))
    assert one[0] == 0x3F80
    y = x.copy()
    mh.allreduce(y, dtype="bfloat16")
    assert bits_equal(y, ref)
    # without dtype= the same bits are reduced as uint16: a different result
    z = x.copy()
    mh.allreduce(z)
    assert bits_equal(z, mpiref.allreduce(x, "sum", comm))


@pytest.mark.skipif(importlib.util.find_spec("ml_dtypes") is None,
                    reason="ml_dtypes is not installed (bfloat16 numpy dtype)")
def test_bfloat16_ml_dtypes(comm, rank):
    import ml_dtypes
    x = make("bfloat16", 100, rank)
    a = x.view(ml_dtypes.bfloat16)
    assert mh.as_buffer(a).dtype == "bfloat16"
    mh.allreduce(a)
    assert bits_equal(a.view(np.uint16), mpiref.allreduce(x, "sum", comm, "bfloat16"))


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch is not installed")
def test_torch_cpu(comm, rank):
    import torch
    x = make("float32", 100, rank)
    t = torch.from_numpy(x.copy())
    mh.allreduce(t)
    assert bits_equal(t.numpy(), mpiref.allreduce(x, "sum", comm))
    b = torch.from_numpy(make("bfloat16", 50, rank).astype(np.int16)).view(torch.bfloat16)
    assert mh.as_buffer(b).dtype == "bfloat16"


def test_dtype_as_mpi_datatype(comm, rank):
    """dtype= may name the type by MPI handle (what MPI._handleof gives for mpi4py's)."""
    x = make("int32", 20, rank)
    ba = bytearray(x.tobytes())
    mh.allreduce(ba, dtype=0x4C000439)  # MPI_INT32_T
    assert bytes(ba) == mpiref.allreduce(x, "sum", comm).tobytes()
    h = make("bfloat16", 20, rank)
    mh.allreduce(h, dtype=_lib.lib.MPIX_Hier_type_bfloat16())
    assert bits_equal(h, mpiref.allreduce(make("bfloat16", 20, rank), "sum", comm, "bfloat16"))
    with pytest.raises(TypeError, match="not one the package maps"):
        mh.as_buffer(np.zeros(2, np.int32), dtype=0x4C000000)


def test_float16_handle_is_mpich():
    """float16 maps to MPICH's MPIX_C_FLOAT16 (what mpi4py's MPI.FLOAT16_T is)."""
    assert mh._datatype(mh.as_buffer(np.zeros(1, np.float16))) == 0x4C000246
    assert mh._datatype(mh.as_buffer(np.zeros(1, np.uint16), dtype="bfloat16")) == \
        _lib.lib.MPIX_Hier_type_bfloat16()


# ---- errors ------------------------------------------------------------------

def _errhandler(comm):
    h = ctypes.c_int(0)
    assert _lib.lib.MPI_Comm_get_errhandler(comm.handle, ctypes.byref(h)) == 0
    return h.value


def test_errors_become_exceptions(comm, rank, size):
    before = _errhandler(comm)
    # MPI_COMM_WORLD's default handler is MPI_ERRORS_ARE_FATAL: the package swaps in
    # MPI_ERRORS_RETURN for its calls only
    assert before == _lib.ERRORS_ARE_FATAL
    with pytest.raises(mh.MPIXHierError, match="root") as e:
        mh.bcast(np.zeros(4), root=size + 3)
    assert e.value.code != 0 and e.value.error_class == 7  # MPI_ERR_ROOT in MPICH
    assert "out of range" in str(e.value)
    assert _errhandler(comm) == before
    with pytest.raises(mh.MPIXHierError, match="MPIX_Hier_allreduce"):
        mh.allreduce(np.zeros(4, np.float16), op="band")  # no bitwise ops on fp16
    with pytest.raises(mh.MPIXHierError):
        mh.iallreduce(np.zeros(4, np.float16), op="bxor")  # errors of the posting call
    assert _errhandler(comm) == before
    # an invalid communicator: MPI reports it on MPI_COMM_WORLD, swapped as well
    with pytest.raises(mh.MPIXHierError) as e:
        mh.allreduce(np.zeros(4), comm=_lib.COMM_NULL)
    assert e.value.error_class == 5  # MPI_ERR_COMM
    assert _errhandler(comm) == before
    # the communicator still works after errors
    x = make("int32", 5, rank)
    assert bits_equal(mh.allreduce(x, np.empty_like(x)), mpiref.allreduce(x, "sum", comm))


def test_argument_errors(comm, rank):
    with pytest.raises(ValueError, match="unknown op"):
        mh.allreduce(np.zeros(3), op="average")
    with pytest.raises(TypeError, match="different dtypes"):
        mh.allreduce(np.zeros(3), np.zeros(3, np.float32))
    with pytest.raises(ValueError, match="elements"):
        mh.allreduce(np.zeros(3), np.zeros(4))
    if comm.size > 1:
        with pytest.raises(ValueError, match="equal blocks"):
            mh.alltoall(np.zeros(comm.size + 1))
    with pytest.raises(TypeError, match="not a buffer"):
        mh.allreduce([1, 2, 3])
    with pytest.raises(TypeError, match="unsupported dtype"):
        mh.allreduce(np.zeros(2, dtype=np.longdouble))
    with pytest.raises(ValueError, match="contiguous"):
        mh.allreduce(np.zeros((4, 4))[:, 1])
    with pytest.raises(ValueError, match="recvcounts"):
        mh.reduce_scatter(np.zeros(8), recvcounts=[1] * (comm.size + 1))
    with pytest.raises(TypeError, match="comm"):
        mh.allreduce(np.zeros(2), comm="world")


@pytest.mark.skipif(os.environ.get("MXH_TEST_MPI4PY") != "1",
                    reason="no mpi4py built on MPICH (Debian 12's python3-mpi4py is built on "
                           "Open MPI and cannot share a process with MPICH)")
def test_mpi4py_objects(rank):
    from mpi4py import MPI
    x = make("float32", 40, rank)
    ref = mpiref.allreduce(x, "max", mh.COMM_WORLD)
    sub = MPI.COMM_WORLD.Dup()
    try:
        assert bits_equal(mh.allreduce(x, np.empty_like(x), op=MPI.MAX, comm=sub), ref)
        h = np.zeros(8, np.float16) + rank
        mh.allreduce(h, comm=sub)  # numpy 'e' == MPI.FLOAT16_T, reduced by the library
        assert h[0] == sum(range(sub.Get_size()))
    finally:
        sub.Free()


def test_refuses_mpi4py_on_another_mpi():
    """With an mpi4py built on another MPI (Debian 12's, on Open MPI) already imported,
    importing mpix_hier fails with a clear message instead of mixing two MPIs.
    Runs in a child process, without MPI_Init (mpi4py.rc.initialize = False)."""
    import subprocess
    import sys
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py is not installed")
    code = ("import mpi4py; mpi4py.rc.initialize = False\n"
            "from mpi4py import MPI\n"
            "print(MPI.Get_library_version().splitlines()[0])\n"
            "try:\n"
            "    import mpix_hier\n"
            "except ImportError as e:\n"
            "    print('IMPORTERROR', e)\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "MPIR_", "HYDRA"))}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=60).stdout
    if "MPICH" in out.splitlines()[0]:
        pytest.skip("mpi4py is built on MPICH: nothing to refuse")
    assert "IMPORTERROR mpix_hier needs MPICH" in out


def _cudart():
    """The CUDA runtime libmpixhier links (None without CUDA or without a device)."""
    if not mh.cuda_enabled():
        return None
    with open("/proc/self/maps") as f:
        paths = [ln.split()[-1] for ln in f if "libcudart" in ln]
    rt = ctypes.CDLL(paths[0])
    n = ctypes.c_int(0)
    if rt.cudaGetDeviceCount(ctypes.byref(n)) != 0 or n.value == 0:
        return None
    return rt


class DeviceArray:
    """Device memory (cudaMalloc) exposed through __cuda_array_interface__."""

    def __init__(self, rt, host):
        self.rt, self.host = rt, np.ascontiguousarray(host)
        self.ptr = ctypes.c_void_p()
        assert rt.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(max(host.nbytes, 1))) == 0
        self._copy(self.ptr, ctypes.c_void_p(self.host.ctypes.data), 1)  # host to device
        self.__cuda_array_interface__ = {"shape": host.shape, "typestr": host.dtype.str,
                                         "data": (self.ptr.value, False), "version": 3,
                                         "strides": None, "stream": None}

    def _copy(self, dst, src, kind):
        assert self.rt.cudaMemcpy(dst, src, ctypes.c_size_t(self.host.nbytes), kind) == 0

    def get(self):
        out = np.empty_like(self.host)
        self._copy(ctypes.c_void_p(out.ctypes.data), self.ptr, 2)  # device to host
        return out

    def free(self):
        self.rt.cudaFree(self.ptr)


def test_cuda_device_memory(comm, rank):
    """Real device buffers through __cuda_array_interface__ (needs a GPU and a CUDA build)."""
    rt = _cudart()
    # the decision must be the same on every rank: skip everywhere if any rank lacks a GPU
    have = int(mh.allreduce(np.array([rt is not None], np.int32), op="min")[0])
    if not have:
        pytest.skip("no CUDA device (or libmpixhier built without CUDA)")
    x = make("float32", 5000, rank)
    d = DeviceArray(rt, x)
    try:
        mh.allreduce(d)
        assert bits_equal(d.get(), mpiref.allreduce(x, "sum", comm))
        h = make("float16", 333, rank)
        dh, out = DeviceArray(rt, h), DeviceArray(rt, np.zeros(333 * comm.size, np.float16))
        mh.iallgather(dh, out).wait()
        assert bits_equal(out.get(), mpiref.allgather(h, comm))
        dh.free()
        out.free()
    finally:
        d.free()
