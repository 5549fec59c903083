# records -> levels -> plans (no MPI): tests/unit/test_hier_plan.cc
check_PROGRAMS += unit/test_hier_plan
TESTS += unit/test_hier_plan
unit_test_hier_plan_SOURCES = unit/test_hier_plan.cc
unit_test_hier_plan_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread

# discovery glue: tests/unit/test_discover.cc
check_PROGRAMS += unit/test_discover
TESTS += unit/test_discover
unit_test_discover_SOURCES = unit/test_discover.cc unit/unit_util.hh
unit_test_discover_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
