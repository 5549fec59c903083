# The configuration table (src/util/config.c): tests/unit/test_config.cc
check_PROGRAMS += unit/test_config
TESTS += unit/test_config
unit_test_config_SOURCES = unit/test_config.cc
unit_test_config_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
