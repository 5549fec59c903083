# Memory kinds (src/mem): host and test kinds, the peer IPC mapping cache with
# a fake opener. No MPI_Init, no GPU. tests/unit/test_mem.cc. Included from
# tests/Makefile.am inside `if HAVE_GTEST`; paths are relative to tests/.
check_PROGRAMS += unit/test_mem
TESTS += unit/test_mem
unit_test_mem_SOURCES = unit/test_mem.cc
unit_test_mem_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
unit_test_mem_LDFLAGS = -no-install

# The test kind's device node level (IPC between a forked peer and this
# process, deferred reductions with the CPU kernels, fences): the reductions
# use MPI datatypes, so it links the core library and calls MPI_Init
# (singleton, no mpiexec). tests/unit/test_mem_ipc.cc.
check_PROGRAMS += unit/test_mem_ipc
TESTS += unit/test_mem_ipc
unit_test_mem_ipc_SOURCES = unit/test_mem_ipc.cc unit/unit_util.hh
unit_test_mem_ipc_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lpthread
unit_test_mem_ipc_LDFLAGS = -no-install
