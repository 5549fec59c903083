# MPI tests: GoogleTest binaries run under mpiexec by mpi/run_mpi_tests.sh on
# fake multi-node layouts (see mpi/README.md). Included from tests/Makefile.am;
# paths are relative to tests/. CXX is mpicxx (the configure default).
MXH_MPI_COMMON = mpi/main_mpi.cc mpi/mpi_util.hh mpi/checker.hh shim/mxh_test_shim.c shim/mxh_test_shim.h
MXH_MPI_LIBS = $(top_builddir)/libmpixhier.la $(GTEST_LIBS) -lpthread -ldl
# -no-install: real binaries, no libtool wrapper scripts racing under mpiexec
MXH_MPI_NOINST = -no-install

check_PROGRAMS += mpi/test_colls mpi/test_errors mpi/test_hier
mpi_test_colls_SOURCES = mpi/test_colls.cc $(MXH_MPI_COMMON)
mpi_test_colls_LDADD = $(MXH_MPI_LIBS)
mpi_test_colls_LDFLAGS = $(MXH_MPI_NOINST)
mpi_test_errors_SOURCES = mpi/test_errors.cc $(MXH_MPI_COMMON)
mpi_test_errors_LDADD = $(MXH_MPI_LIBS)
mpi_test_errors_LDFLAGS = $(MXH_MPI_NOINST)
mpi_test_hier_SOURCES = mpi/test_hier.cc $(MXH_MPI_COMMON)
mpi_test_hier_LDADD = $(MXH_MPI_LIBS)
mpi_test_hier_LDFLAGS = $(MXH_MPI_NOINST)

# the nonblocking collectives (MPIX_Hier_I*) against MPICH
check_PROGRAMS += mpi/test_nbc
mpi_test_nbc_SOURCES = mpi/test_nbc.cc $(MXH_MPI_COMMON)
mpi_test_nbc_LDADD = $(MXH_MPI_LIBS)
mpi_test_nbc_LDFLAGS = $(MXH_MPI_NOINST)

# the v-collectives and all-to-all (MPIX_Hier_allgatherv, _reduce_scatter,
# _alltoall, _alltoallv, their I-forms) against MPICH, mixed type signatures,
# intercommunicators and the (type, op) pairs MPI decides
check_PROGRAMS += mpi/test_vcolls
mpi_test_vcolls_SOURCES = mpi/test_vcolls.cc $(MXH_MPI_COMMON)
mpi_test_vcolls_LDADD = $(MXH_MPI_LIBS)
mpi_test_vcolls_LDFLAGS = $(MXH_MPI_NOINST)

# test_colls' and test_nbc's matrices on buffers of the test memory kind
# (-DMXH_TEST_MEMKIND=1, see checker.hh): mxh_mem_test_alloc is internal, so
# these link the core library
MXH_MPI_MEM_LIBS = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread -ldl
check_PROGRAMS += mpi/test_colls_mem mpi/test_nbc_mem mpi/test_vcolls_mem
mpi_test_colls_mem_SOURCES = mpi/test_colls.cc $(MXH_MPI_COMMON)
mpi_test_colls_mem_CPPFLAGS = $(AM_CPPFLAGS) -DMXH_TEST_MEMKIND=1
mpi_test_colls_mem_LDADD = $(MXH_MPI_MEM_LIBS)
mpi_test_colls_mem_LDFLAGS = $(MXH_MPI_NOINST)
mpi_test_nbc_mem_SOURCES = mpi/test_nbc.cc $(MXH_MPI_COMMON)
mpi_test_nbc_mem_CPPFLAGS = $(AM_CPPFLAGS) -DMXH_TEST_MEMKIND=1
mpi_test_nbc_mem_LDADD = $(MXH_MPI_MEM_LIBS)
mpi_test_nbc_mem_LDFLAGS = $(MXH_MPI_NOINST)
mpi_test_vcolls_mem_SOURCES = mpi/test_vcolls.cc $(MXH_MPI_COMMON)
mpi_test_vcolls_mem_CPPFLAGS = $(AM_CPPFLAGS) -DMXH_TEST_MEMKIND=1
mpi_test_vcolls_mem_LDADD = $(MXH_MPI_MEM_LIBS)
mpi_test_vcolls_mem_LDFLAGS = $(MXH_MPI_NOINST)

# the executor's point-to-point algorithms are internal: link the core library
check_PROGRAMS += mpi/test_p2p
mpi_test_p2p_SOURCES = mpi/test_p2p.cc $(MXH_MPI_COMMON)
mpi_test_p2p_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src
mpi_test_p2p_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread -ldl
mpi_test_p2p_LDFLAGS = $(MXH_MPI_NOINST)

# the hierarchical alltoall (src/coll/alltoall.h) is internal: link the core library
check_PROGRAMS += mpi/test_alltoall_hier
mpi_test_alltoall_hier_SOURCES = mpi/test_alltoall_hier.cc $(MXH_MPI_COMMON)
mpi_test_alltoall_hier_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src
mpi_test_alltoall_hier_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread -ldl
mpi_test_alltoall_hier_LDFLAGS = $(MXH_MPI_NOINST)

TESTS += mpi/run_mpi_tests.sh
EXTRA_DIST += mpi/run_mpi_tests.sh mpi/run_common.sh mpi/README.md data/slurm/mpi_3level.conf \
              data/torus_2x2.cluster
CLEANFILES += mpi/mxh-*.log

# MPIX_HIER_EXCLUDE_RAILS (mpi/test_xrail.c, a plain MPI program with PMPI byte counters)
check_PROGRAMS += mpi/test_xrail
mpi_test_xrail_SOURCES = mpi/test_xrail.c
mpi_test_xrail_LDADD = $(top_builddir)/libmpixhier.la
mpi_test_xrail_LDFLAGS = $(MXH_MPI_NOINST)
TESTS += mpi/run_xrail_tests.sh
EXTRA_DIST += mpi/run_xrail_tests.sh
# metrics (MPIX_Hier_comm_get_stats, the Prometheus text); run_mpi_tests.sh
# also checks the files written at MPI_Finalize (check_prometheus.py)
check_PROGRAMS += mpi/test_metrics
mpi_test_metrics_SOURCES = mpi/test_metrics.cc $(MXH_MPI_COMMON)
mpi_test_metrics_LDADD = $(MXH_MPI_LIBS)
mpi_test_metrics_LDFLAGS = $(MXH_MPI_NOINST)
EXTRA_DIST += mpi/check_prometheus.py
