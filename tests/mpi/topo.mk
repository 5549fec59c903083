# Discovery on fake multi-GPU nodes: mpi/test_topo run by mpi/run_topo_tests.sh.
check_PROGRAMS += mpi/test_topo
mpi_test_topo_SOURCES = mpi/test_topo.cc mpi/mpi_util.hh mpi/main_mpi.cc shim/mxh_test_shim.c shim/mxh_test_shim.h
mpi_test_topo_LDADD = $(top_builddir)/libmpixhier.la $(GTEST_LIBS) -lpthread -ldl
mpi_test_topo_LDFLAGS = -no-install
TESTS += mpi/run_topo_tests.sh
EXTRA_DIST += mpi/run_topo_tests.sh
