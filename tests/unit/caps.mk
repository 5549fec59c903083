# Transport capabilities (src/topo/caps.c): UCX query and description, no
# MPI_Init. tests/unit/test_caps.cc. Included from tests/Makefile.am; paths
# are relative to tests/. UCX_CFLAGS/UCX_LIBS are empty in builds without UCX.
check_PROGRAMS += unit/test_caps
unit_test_caps_SOURCES = unit/test_caps.cc
unit_test_caps_CPPFLAGS = $(AM_CPPFLAGS) $(UCX_CFLAGS)
unit_test_caps_LDADD = $(top_builddir)/src/libmxh.la $(UCX_LIBS) -lgtest_main $(GTEST_LIBS)
TESTS += unit/test_caps
