# Unit tests of src/topo/machine_hwloc.c (hwloc discovery: GPUs, NICs, rails,
# NVLink islands) on the hwloc XML exports in data/topologies.
# Included from tests/Makefile.am; paths are relative to tests/.
if HAVE_HWLOC
check_PROGRAMS += unit/test_machine_hwloc
TESTS += unit/test_machine_hwloc
unit_test_machine_hwloc_SOURCES = unit/test_machine_hwloc.cc
unit_test_machine_hwloc_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
unit_test_machine_hwloc_LDADD = $(top_builddir)/src/libmxh.la -lgtest_main $(GTEST_LIBS) $(HWLOC_LIBS)
endif
EXTRA_DIST += data/topologies/README.hwloc.md \
	data/topologies/cts1-quartz-smt1.xml data/topologies/nvidiaDGX2.xml \
	data/topologies/g4dnmetal.xml data/topologies/power8gpudistances.xml \
	data/topologies/coral-ea-hwloc1.xml data/topologies/cts1-pascal.xml
