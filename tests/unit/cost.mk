# the cost model (no MPI): tests/unit/test_cost.cc
check_PROGRAMS += unit/test_cost
TESTS += unit/test_cost
unit_test_cost_SOURCES = unit/test_cost.cc
unit_test_cost_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
# the hierarchy's model-trust rules (no MPI): tests/unit/test_tune_hier.cc
check_PROGRAMS += unit/test_tune_hier
TESTS += unit/test_tune_hier
unit_test_tune_hier_SOURCES = unit/test_tune_hier.cc
unit_test_tune_hier_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
