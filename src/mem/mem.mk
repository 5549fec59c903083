# src/mem fragment (owned by its subsystem); included from the Makefile.am above it.
# Memory kinds (mem.h): the registry, the host and test kinds and the peer IPC
# mapping cache need no MPI calls, so they go into the internals library and
# unit tests link them without MPI_Init. Only the kinds' reductions need MPI
# and src/reduce (core library): the test kind calls MPI datatype functions,
# and the kernels and half types are referenced weakly (present wherever
# collectives are linked; unit tests of the internals alone see no kernels,
# reduce_ok = 0). The CUDA kind is compiled only with
# CUDA (gcc with the CUDA headers; AM_CPPFLAGS gets them in src/mem/gpu.mk).
src_libmxh_la_SOURCES += \
	src/mem/mem.h src/mem/mem_impl.h src/mem/mem.c src/mem/mem_test.c \
	src/mem/ipc_cache.h src/mem/ipc_cache.c
if HAVE_CUDA
src_libmxh_la_SOURCES += src/mem/mem_cuda.c
endif
