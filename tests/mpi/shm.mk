# mpi fragment (owned by its subsystem); included from the Makefile.am above it
# Shared-memory collectives (src/exec/shm.h) against MPICH's own, on 1, 2, 3, 4
# and 8 ranks: mpi/run_shm_tests.sh. Internals: linked with the core library.
check_PROGRAMS += mpi/test_shm
mpi_test_shm_SOURCES = mpi/test_shm.cc mpi/main_mpi.cc mpi/mpi_util.hh mpi/checker.hh shim/mxh_test_shim.c shim/mxh_test_shim.h
mpi_test_shm_LDADD = $(top_builddir)/libmpixhier_core.la $(HWLOC_LIBS) $(UCX_LIBS) $(GTEST_LIBS) -lpthread -ldl
mpi_test_shm_LDFLAGS = -no-install
TESTS += mpi/run_shm_tests.sh
EXTRA_DIST += mpi/run_shm_tests.sh
CLEANFILES += mpi/mxh-shm-*.log
