# The XML well-formedness check in front of hwloc's importer (src/topo/xml_check.c):
# tests/unit/test_xml_check.cc. Included from tests/Makefile.am; paths are relative to tests/.
check_PROGRAMS += unit/test_xml_check
TESTS += unit/test_xml_check
unit_test_xml_check_SOURCES = unit/test_xml_check.cc unit/unit_util.hh
unit_test_xml_check_LDADD = $(top_builddir)/src/libmxh.la -lgtest_main $(GTEST_LIBS)
