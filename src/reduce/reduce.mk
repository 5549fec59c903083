# src/reduce fragment (owned by its subsystem); included from the Makefile.am above it.
# CPU reduction kernels and the half precision datatypes; they call MPI
# (MPI_Reduce_local fallback, datatype/op creation), so they live in the core library.
libmpixhier_core_la_SOURCES += \
	src/reduce/reduce.h src/reduce/half.h src/reduce/reduce_cpu.c src/reduce/half_types.c
# The table of MPI's predefined datatypes and ops (pure data): in the internals
# library, where the CUDA memory kind (src/mem) reads it too.
src_libmxh_la_SOURCES += src/reduce/dtypes.h src/reduce/dtypes.c
