# src/exec fragment (owned by its subsystem); included from the Makefile.am above it
# Shared-memory collectives among the ranks of one node (exec/shm.h).
libmpixhier_core_la_SOURCES += src/exec/shm.h src/exec/shm.c
# The device node level over the same control segment (exec/ipc.h).
libmpixhier_core_la_SOURCES += src/exec/ipc.h src/exec/ipc.c
