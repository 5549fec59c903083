# src/coll fragment (owned by its subsystem); included from the Makefile.am above it
# The hierarchical (rail-aligned) alltoall / alltoallv (coll/alltoall.h): the
# layout functions are pure (decision library), the body needs MPI.
src_libmxh_la_SOURCES += src/coll/alltoall_layout.c
libmpixhier_core_la_SOURCES += src/coll/alltoall.h src/coll/alltoall.c
