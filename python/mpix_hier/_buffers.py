# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Turning a Python buffer into (pointer, element count, dtype, memory kind).

Accepted, tried in this order:
  numpy arrays (also ml_dtypes' bfloat16 arrays) directly;
  __cuda_array_interface__ (CuPy, Numba, PyTorch CUDA tensors): device memory;
  __dlpack__ (PyTorch tensors, JAX, numpy): the DLManagedTensor capsule is read
      with ctypes; CPU, CUDA, CUDA host (pinned) and CUDA managed memory;
  the buffer protocol (bytearray, memoryview, array.array, ...).
Buffers must be C-contiguous. An explicit dtype (e.g. "bfloat16" for a uint16
array holding bfloat16 bit patterns) reinterprets elements of the same size.
"""

import ctypes
import sys

import numpy as np

from ._lib import DATATYPES, ITEMSIZE, lib


class Buffer:
    """A contiguous buffer: ptr (int), count (elements), dtype (name), itemsize,
    device ("cpu" or "cuda"), readonly, and the objects that keep it alive."""

    __slots__ = ("ptr", "count", "dtype", "itemsize", "device", "readonly", "keep", "obj")

    def __init__(self, ptr, count, dtype, device, readonly, keep, obj):
        self.ptr = ptr
        self.count = count
        self.dtype = dtype
        self.itemsize = ITEMSIZE[dtype]
        self.device = device
        self.readonly = readonly
        self.keep = keep
        self.obj = obj

    @property
    def nbytes(self):
        return self.count * self.itemsize


# ---- dtype names -------------------------------------------------------------

_NUMPY_KINDS = {"f": "float", "i": "int", "u": "uint", "c": "complex"}


def _numpy_dtype_name(dt):
    dt = np.dtype(dt)
    if dt.name == "bfloat16":  # ml_dtypes
        return "bfloat16"
    if dt.kind == "b":
        return "bool"
    if dt.kind in _NUMPY_KINDS and dt.byteorder in ("=", "|", "<"):
        name = dt.name
        if name in ITEMSIZE:
            return name
    raise TypeError("unsupported dtype %s" % dt)


# __cuda_array_interface__ typestr ("<f4", "|b1", ...)
def _typestr_name(typestr):
    if typestr[0] == ">":
        raise TypeError("big-endian typestr %s not supported" % typestr)
    kind, size = typestr[1], int(typestr[2:])
    if kind == "b" and size == 1:
        return "bool"
    if kind == "V" and size == 2:
        return "bfloat16"  # what some producers use for bf16; pass dtype= to be explicit
    if kind in _NUMPY_KINDS:
        name = "%s%d" % (_NUMPY_KINDS[kind], size * 8)
        if name in ITEMSIZE:
            return name
    raise TypeError("unsupported typestr %s" % typestr)


# DLPack DLDataType code -> name prefix
_DL_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat", 5: "complex", 6: "bool"}
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13


def _dl_dtype_name(code, bits, lanes):
    if lanes != 1:
        raise TypeError("DLPack vector dtypes (lanes=%d) not supported" % lanes)
    if code == 6 and bits == 8:
        return "bool"
    if code == 4 and bits == 16:
        return "bfloat16"
    prefix = _DL_CODES.get(code)
    name = "%s%d" % (prefix, bits) if prefix else None
    if name not in ITEMSIZE:
        raise TypeError("unsupported DLPack dtype (code %d, %d bits)" % (code, bits))
    return name


# ---- DLPack: the C structs of dlpack.h ----------------------------------------

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]


_capsule_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get_pointer.restype = ctypes.c_void_p
_capsule_get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _c_contiguous(shape, strides, itemsize_units=1):
    """strides (in elements) describe a C-contiguous layout of shape?"""
    expect = itemsize_units
    for n, s in zip(reversed(shape), reversed(strides)):
        if n != 1 and s != expect:
            return False
        expect *= n
    return True


def _from_dlpack(obj):
    dev_type = _DL_CPU
    if hasattr(obj, "__dlpack_device__"):
        dev_type = int(obj.__dlpack_device__()[0])
    # The capsule is kept (not renamed "used_dltensor"): while it lives the
    # producer's memory lives; when it is collected its destructor calls the
    # DLManagedTensor's deleter, as the DLPack protocol specifies.
    capsule = obj.__dlpack__() if dev_type != _DL_CUDA else obj.__dlpack__(stream=None)
    addr = _capsule_get_pointer(capsule, b"dltensor")
    t = _DLManagedTensor.from_address(addr).dl_tensor
    shape = [t.shape[i] for i in range(t.ndim)]
    name = _dl_dtype_name(t.dtype.code, t.dtype.bits, t.dtype.lanes)
    if t.strides and not _c_contiguous(shape, [t.strides[i] for i in range(t.ndim)]):
        raise ValueError("DLPack tensor is not C-contiguous")
    kind = t.device.device_type
    if kind in (_DL_CPU, _DL_CUDA_HOST):
        device = "cpu"
    elif kind in (_DL_CUDA, _DL_CUDA_MANAGED):
        device = "cuda"
    else:
        raise ValueError("DLPack device type %d not supported (CPU and CUDA only)" % kind)
    count = 1
    for n in shape:
        count *= n
    ptr = (t.data or 0) + t.byte_offset
    # DLPack has no read-only flag (before 1.0's versioned capsule): treated as writable
    return Buffer(ptr, count, name, device, False, (obj, capsule), obj)


def _from_cai(obj):
    cai = obj.__cuda_array_interface__
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    name = _typestr_name(cai["typestr"])
    strides = cai.get("strides")
    if strides is not None:
        itemsize = ITEMSIZE[name]
        if not _c_contiguous(shape, [s // itemsize if s % itemsize == 0 else -1
                                     for s in strides]):
            raise ValueError("__cuda_array_interface__ buffer is not C-contiguous")
    if cai.get("mask") is not None:
        raise ValueError("masked __cuda_array_interface__ buffers not supported")
    count = 1
    for n in shape:
        count *= n
    return Buffer(ptr or 0, count, name, "cuda", bool(readonly), (obj,), obj)


def _from_numpy(a):
    if not a.flags.c_contiguous:
        raise ValueError("array is not C-contiguous")
    name = _numpy_dtype_name(a.dtype)
    return Buffer(a.ctypes.data, a.size, name, "cpu", not a.flags.writeable, (a,), a)


def as_buffer(obj, dtype=None):
    """Describe obj as a Buffer; dtype (a name or numpy dtype) reinterprets its elements."""
    if isinstance(obj, np.ndarray):
        buf = _from_numpy(obj)
    elif hasattr(obj, "__cuda_array_interface__"):
        buf = _from_cai(obj)
    elif hasattr(obj, "__dlpack__") and not _has_buffer_protocol(obj):
        buf = _from_dlpack(obj)
    else:
        try:
            mv = memoryview(obj)
        except TypeError:
            raise TypeError("%s is not a buffer (buffer protocol, __dlpack__ or "
                            "__cuda_array_interface__)" % type(obj).__name__) from None
        if not mv.c_contiguous:
            raise ValueError("buffer is not C-contiguous")
        a = np.asarray(mv) if mv.format not in ("c",) else np.frombuffer(mv, np.uint8)
        buf = _from_numpy(a.reshape(-1))
        buf.readonly = mv.readonly
        buf.keep = (obj, mv, a)
        buf.obj = obj
    if dtype is not None:
        name = dtype_name(dtype)
        nbytes = buf.nbytes
        if nbytes % ITEMSIZE[name]:
            raise ValueError("buffer of %d bytes is not a whole number of %s" % (nbytes, name))
        buf.dtype, buf.itemsize, buf.count = name, ITEMSIZE[name], nbytes // ITEMSIZE[name]
    return buf


def dtype_name(dtype):
    """The element type a dtype= argument names: a name ("float32", "bfloat16", ...),
    a numpy dtype, or an MPI datatype (mpi4py's MPI.FLOAT16_T, MPI.C_BOOL, ..., or
    an MPICH handle as int) of one of the predefined types above."""
    if isinstance(dtype, str):
        if dtype not in ITEMSIZE:
            raise TypeError("unknown dtype %r" % (dtype,))
        return dtype
    handle = None
    if isinstance(dtype, int):
        handle = dtype
    elif type(dtype).__module__ == "mpi4py.MPI":
        handle = sys.modules["mpi4py.MPI"]._handleof(dtype)
    if handle is not None:
        handle &= 0xFFFFFFFF
        for name, h in DATATYPES.items():
            if h == handle:
                return name
        if handle == lib.MPIX_Hier_type_bfloat16() & 0xFFFFFFFF:
            return "bfloat16"
        if handle == lib.MPIX_Hier_type_float16() & 0xFFFFFFFF:
            return "float16"
        raise TypeError("MPI datatype 0x%x is not one the package maps (contiguous "
                        "predefined types only)" % handle)
    return _numpy_dtype_name(dtype)


def _has_buffer_protocol(obj):
    try:
        memoryview(obj)
        return True
    except TypeError:
        return False


def new_like(buf, count):
    """A fresh numpy array of count elements of buf's dtype, for results the caller
    did not provide. Host memory; bfloat16 without ml_dtypes comes as uint16."""
    if buf.device != "cpu":
        raise ValueError("pass the receive buffer explicitly for device memory")
    if buf.dtype == "bfloat16":
        if isinstance(buf.obj, np.ndarray):
            return np.empty(count, dtype=buf.obj.dtype)
        return np.empty(count, dtype=np.uint16)
    if buf.dtype == "byte":
        return np.empty(count, dtype=np.uint8)
    return np.empty(count, dtype=np.dtype(buf.dtype))
