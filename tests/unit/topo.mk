# Unit tests of src/topo (Slurm topology.conf parser, hostlist expansion).
# Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += unit/test_topo_conf
unit_test_topo_conf_SOURCES = unit/test_topo_conf.cc unit/unit_util.hh
unit_test_topo_conf_LDADD = $(top_builddir)/src/libmxh.la -lgtest_main $(GTEST_LIBS)
TESTS += unit/test_topo_conf
EXTRA_DIST += data/slurm/README.md data/slurm/slurm_topology.txt data/slurm/topology.txt \
	data/slurm/block_topology.txt data/slurm/nodes_guids.txt data/slurm/tree3.conf \
	data/slurm/bad_undefined.conf data/slurm/bad_cycle.conf data/slurm/bad_two_leaves.conf
