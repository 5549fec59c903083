# Copyright (c) 2026 The mpix-hier authors. BSD-3-Clause, see COPYING.
"""Loading libmpixhier.so, MPICH's handle values, MPI initialization and errors.

Everything goes through ctypes: the library is C with MPI-identical signatures,
so no compiled extension is needed. MPICH's handles (MPI_Comm, MPI_Datatype,
MPI_Op, MPI_Request, MPI_Errhandler) are C ints whose values are fixed by
MPICH's ABI (mpi.h of MPICH 3.x/4.x); the constants below are those values.
"""

import atexit
import ctypes
import ctypes.util
import os
import sys

# ---- MPICH ABI constants (include/mpi.h of MPICH 4.0.2) ---------------------
COMM_WORLD = 0x44000000
COMM_SELF = 0x44000001
COMM_NULL = 0x04000000
REQUEST_NULL = 0x2C000000
INFO_NULL = 0x1C000000  # MPICH's MPI_INFO_NULL
ERRHANDLER_NULL = 0x14000000
ERRORS_ARE_FATAL = 0x54000000
ERRORS_RETURN = 0x54000001
MAX_ERROR_STRING = 512
THREAD_FUNNELED = 1
IN_PLACE_PTR = ctypes.c_void_p(-1)  # MPI_IN_PLACE is (void *) -1
STATUS_IGNORE = ctypes.c_void_p(1)  # MPI_STATUS_IGNORE is (MPI_Status *) 1

# numpy-style dtype name -> MPICH datatype handle. bfloat16 has no MPICH handle
# in 4.0.2: it maps to the library's MPIX_Hier_type_bfloat16() (see datatype()).
DATATYPES = {
    "float32": 0x4C00040A,     # MPI_FLOAT
    "float64": 0x4C00080B,     # MPI_DOUBLE
    "int8": 0x4C000137,        # MPI_INT8_T
    "int16": 0x4C000238,
    "int32": 0x4C000439,
    "int64": 0x4C00083A,
    "uint8": 0x4C00013B,       # MPI_UINT8_T
    "uint16": 0x4C00023C,
    "uint32": 0x4C00043D,
    "uint64": 0x4C00083E,
    "complex64": 0x4C000840,   # MPI_C_FLOAT_COMPLEX
    "complex128": 0x4C001041,  # MPI_C_DOUBLE_COMPLEX
    "bool": 0x4C00013F,        # MPI_C_BOOL
    "float16": 0x4C000246,     # MPIX_C_FLOAT16 (mpi4py's MPI.FLOAT16_T); reduced by the library
    "byte": 0x4C00010D,        # MPI_BYTE
}
ITEMSIZE = {
    "float32": 4, "float64": 8, "int8": 1, "int16": 2, "int32": 4, "int64": 8,
    "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "complex64": 8,
    "complex128": 16, "bool": 1, "float16": 2, "bfloat16": 2, "byte": 1,
}

OPS = {
    "max": 0x58000001, "min": 0x58000002, "sum": 0x58000003, "prod": 0x58000004,
    "land": 0x58000005, "band": 0x58000006, "lor": 0x58000007, "bor": 0x58000008,
    "lxor": 0x58000009, "bxor": 0x5800000A, "replace": 0x5800000D,
}


class MPIXHierError(RuntimeError):
    """An MPI error returned by the library or MPI: code, error class and MPI's message."""

    def __init__(self, code, message, error_class=None):
        super().__init__(message)
        self.code = code
        self.error_class = error_class


class MPI_Status(ctypes.Structure):
    # MPICH's MPI_Status layout
    _fields_ = [("count_lo", ctypes.c_int), ("count_hi_and_cancelled", ctypes.c_int),
                ("MPI_SOURCE", ctypes.c_int), ("MPI_TAG", ctypes.c_int),
                ("MPI_ERROR", ctypes.c_int)]


def _repo_build_candidates():
    """libmpixhier.so in the build tree when this package runs from the repository
    (python/mpix_hier inside a checkout): <repo>/build/.libs, then an in-place build."""
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    if not os.path.isfile(os.path.join(repo, "include", "mpix_hier.h")):
        return []
    return [os.path.join(repo, "build", ".libs", "libmpixhier.so"),
            os.path.join(repo, ".libs", "libmpixhier.so")]


def find_library():
    """Path or soname of libmpixhier: $MPIX_HIER_LIBRARY, else the repository's build
    tree, else the installed library (ldconfig's cache, then the plain sonames)."""
    env = os.environ.get("MPIX_HIER_LIBRARY")
    if env:
        if not os.path.exists(env):
            raise ImportError("MPIX_HIER_LIBRARY=%s: no such file" % env)
        return env
    for cand in _repo_build_candidates():
        if os.path.exists(cand):
            return cand
    found = ctypes.util.find_library("mpixhier")
    return found or "libmpixhier.so.0"


def _check_mpi4py():
    """Refuse to share the process with an mpi4py built on another MPI: its MPI_*
    symbols would be mixed with MPICH's (Debian 12's python3-mpi4py uses Open MPI)."""
    mod = sys.modules.get("mpi4py.MPI")
    if mod is None:
        return
    version = mod.Get_library_version()
    if "MPICH" not in version:
        raise ImportError("mpix_hier needs MPICH, but mpi4py is built on another MPI (%s); "
                          "use an mpi4py built on MPICH (e.g. MPICC=mpicc.mpich pip install "
                          "--no-binary mpi4py mpi4py) or none" % version.splitlines()[0])


_check_mpi4py()
LIBRARY_PATH = find_library()
try:
    # RTLD_GLOBAL: libmpich's symbols become visible to what is loaded later
    # (e.g. an mpi4py built on MPICH finds the same library).
    lib = ctypes.CDLL(LIBRARY_PATH, mode=ctypes.RTLD_GLOBAL)
except OSError as e:
    raise ImportError("cannot load libmpixhier (%s): %s; set MPIX_HIER_LIBRARY to the path of "
                      "libmpixhier.so" % (LIBRARY_PATH, e)) from e

_c_int_p = ctypes.POINTER(ctypes.c_int)
_vp = ctypes.c_void_p
_i = ctypes.c_int

# MPI functions the package calls (looked up through libmpixhier's dependencies)
for _name, _args in {
    "MPI_Initialized": [_c_int_p], "MPI_Finalized": [_c_int_p],
    "MPI_Init_thread": [_vp, _vp, _i, _c_int_p], "MPI_Finalize": [],
    "MPI_Comm_rank": [_i, _c_int_p], "MPI_Comm_size": [_i, _c_int_p],
    "MPI_Comm_get_errhandler": [_i, _c_int_p], "MPI_Comm_set_errhandler": [_i, _i],
    "MPI_Errhandler_free": [_c_int_p],
    "MPI_Error_string": [_i, ctypes.c_char_p, _c_int_p], "MPI_Error_class": [_i, _c_int_p],
    "MPI_Wait": [_c_int_p, ctypes.POINTER(MPI_Status)],
    "MPI_Test": [_c_int_p, _c_int_p, ctypes.POINTER(MPI_Status)],
    "MPI_Request_free": [_c_int_p], "MPI_Abort": [_i, _i], "MPI_Start": [_c_int_p],
    "MPI_Comm_dup": [_i, _c_int_p], "MPI_Comm_split": [_i, _i, _i, _c_int_p],
    "MPI_Comm_free": [_c_int_p], "MPI_Barrier": [_i],
}.items():
    _f = getattr(lib, _name)
    _f.argtypes = _args
    _f.restype = ctypes.c_int

lib.MPIX_Hier_type_bfloat16.restype = ctypes.c_int
lib.MPIX_Hier_type_bfloat16.argtypes = []
lib.MPIX_Hier_type_float16.restype = ctypes.c_int
lib.MPIX_Hier_type_float16.argtypes = []
lib.MPIX_Hier_comm_describe.argtypes = [_i, ctypes.c_char_p, _i, _c_int_p]
lib.MPIX_Hier_comm_split_parallel.argtypes = [_i, _i, _c_int_p, _c_int_p]
lib.MPIX_Hier_comm_describe_parallel.argtypes = [_i, _i, _c_int_p, ctypes.c_char_p, _i,
                                                 _c_int_p]
lib.MPIX_Hier_comm_reorder.argtypes = [_i, _c_int_p]
lib.MPIX_Hier_get_version.argtypes = [_c_int_p, _c_int_p, _c_int_p]
lib.MPIX_Hier_get_error_class.argtypes = [_c_int_p]

_we_initialized = False


def _finalize():
    flag = ctypes.c_int(0)
    lib.MPI_Finalized(ctypes.byref(flag))
    if not flag.value:
        lib.MPI_Finalize()


ERR_OTHER = 15  # MPICH's MPI_ERR_OTHER


def require_mpi(what):
    """Raise MPIXHierError when MPI is finalized: MPICH aborts the process on any
    MPI call after MPI_Finalize (MPI_Finalized itself is allowed)."""
    flag = ctypes.c_int(0)
    lib.MPI_Finalized(ctypes.byref(flag))
    if flag.value:
        raise MPIXHierError(ERR_OTHER, "%s: MPI is finalized (MPI_Finalize was called); no "
                            "collective can run after it" % what, ERR_OTHER)


def ensure_init():
    """Initialize MPI (MPI_THREAD_FUNNELED) unless someone (mpi4py, the program) did;
    then finalize it at exit. Idempotent and cheap after the first call; an
    MPIXHierError once MPI is finalized."""
    global _we_initialized
    if _we_initialized:
        require_mpi("mpix_hier")
        return
    flag = ctypes.c_int(0)
    lib.MPI_Initialized(ctypes.byref(flag))
    if flag.value:
        require_mpi("mpix_hier")
        _we_initialized = True  # someone else owns MPI_Finalize
        return
    provided = ctypes.c_int(0)
    rc = lib.MPI_Init_thread(None, None, THREAD_FUNNELED, ctypes.byref(provided))
    if rc != 0:
        raise MPIXHierError(rc, "MPI_Init_thread failed (%d)" % rc)
    _we_initialized = True
    atexit.register(_finalize)


def error_string(code):
    buf = ctypes.create_string_buffer(MAX_ERROR_STRING + 1)
    n = ctypes.c_int(0)
    if lib.MPI_Error_string(code, buf, ctypes.byref(n)) != 0:
        return "MPI error %d" % code
    return buf.value.decode(errors="replace")


def check(rc, what):
    """Raise MPIXHierError with MPI's message when rc is not MPI_SUCCESS."""
    if rc != 0:
        cls = ctypes.c_int(-1)
        lib.MPI_Error_class(rc, ctypes.byref(cls))
        raise MPIXHierError(rc, "%s: %s" % (what, error_string(rc)), cls.value)


def _swap_to_return(comm):
    """Set MPI_ERRORS_RETURN on comm; returns the handler to restore (or None)."""
    old = ctypes.c_int(ERRHANDLER_NULL)
    if lib.MPI_Comm_get_errhandler(comm, ctypes.byref(old)) != 0:
        return None
    if old.value == ERRORS_RETURN or lib.MPI_Comm_set_errhandler(comm, ERRORS_RETURN) != 0:
        _release(old)
        return None
    return old


def _release(handler):
    # MPICH marks predefined handles with kind bits 01 at the top: only a
    # user-created handler's reference needs releasing
    if handler.value != ERRHANDLER_NULL and (handler.value >> 30) & 3 != 1:
        lib.MPI_Errhandler_free(ctypes.byref(handler))


def call_returning_errors(comm, fn, *args):
    """fn(*args) with MPI_ERRORS_RETURN on comm for the duration of the call only,
    so that an error becomes a return code (then an exception) instead of the
    communicator's handler (MPI_ERRORS_ARE_FATAL would abort). MPI_COMM_WORLD's
    handler is swapped too: MPI reports errors about an invalid communicator
    (MPI_COMM_NULL, a freed one) there. The user's handlers are restored before
    returning."""
    require_mpi(getattr(fn, "__name__", "MPI"))
    swapped = []
    for c in ((COMM_WORLD,) if comm in (COMM_WORLD, COMM_NULL) else (COMM_WORLD, comm)):
        old = _swap_to_return(c)
        if old is not None:
            swapped.append((c, old))
    try:
        return fn(*args)
    finally:
        for c, old in reversed(swapped):
            lib.MPI_Comm_set_errhandler(c, old.value)
            _release(old)


def cuda_enabled():
    """True when the loaded libmpixhier was built with CUDA (it links libcudart):
    only then may buffers live in device memory."""
    try:
        with open("/proc/self/maps") as f:
            return "libcudart" in f.read()
    except OSError:
        return False
