# src/coll fragment (owned by its subsystem); included from the Makefile.am above it
# Shared-memory collectives among the ranks of one node (coll/shm.h).
libmpixhier_core_la_SOURCES += src/coll/shm.h src/coll/shm.c
# The device node level over the same control segment (coll/ipc.h).
libmpixhier_core_la_SOURCES += src/coll/ipc.h src/coll/ipc.c
