# Memory kinds (src/mem): host and test kinds, the peer IPC mapping cache with
# a fake opener. No MPI_Init, no GPU. tests/unit/test_mem.cc. Included from
# tests/Makefile.am inside `if HAVE_GTEST`; paths are relative to tests/.
check_PROGRAMS += unit/test_mem
TESTS += unit/test_mem
unit_test_mem_SOURCES = unit/test_mem.cc
unit_test_mem_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
unit_test_mem_LDFLAGS = -no-install
