# Unit tests of src/topo/cluster_file.c (MPIX_HIER_CLUSTER_FILE parser).
# Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += unit/test_cluster_file
unit_test_cluster_file_SOURCES = unit/test_cluster_file.cc
unit_test_cluster_file_LDADD = $(top_builddir)/src/libmxh.la -lgtest_main $(GTEST_LIBS)
TESTS += unit/test_cluster_file
