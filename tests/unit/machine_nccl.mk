# NCCL topology XML -> machine record (src/topo/machine_nccl.c), no MPI:
# tests/unit/test_machine_nccl.cc on the real files in data/topologies.
# Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += unit/test_machine_nccl
unit_test_machine_nccl_SOURCES = unit/test_machine_nccl.cc
unit_test_machine_nccl_LDADD = $(top_builddir)/src/libmxh.la -lgtest_main $(GTEST_LIBS)
TESTS += unit/test_machine_nccl
EXTRA_DIST += data/topologies/README.nccl.md data/topologies/ndv5-topo.xml \
	data/topologies/H100-topology.xml data/topologies/p4d-24xl-topo.xml
