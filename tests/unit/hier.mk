# records -> levels -> plans (no MPI calls; the executor's scratch sizes, hence the core
# library): tests/unit/test_hier_plan.cc
check_PROGRAMS += unit/test_hier_plan
TESTS += unit/test_hier_plan
unit_test_hier_plan_SOURCES = unit/test_hier_plan.cc
unit_test_hier_plan_LDADD = $(top_builddir)/libmpixhier_core.la $(GTEST_LIBS) -lgtest_main -lpthread -ldl

# discovery glue: tests/unit/test_discover.cc
check_PROGRAMS += unit/test_discover
TESTS += unit/test_discover
unit_test_discover_SOURCES = unit/test_discover.cc unit/unit_util.hh
unit_test_discover_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread

# mpix_doctor's outlier detection and attribution (no MPI): tests/unit/test_doctor_stats.cc
check_PROGRAMS += unit/test_doctor_stats
TESTS += unit/test_doctor_stats
unit_test_doctor_stats_SOURCES = unit/test_doctor_stats.cc
unit_test_doctor_stats_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
