# The metrics' pure parts (src/util/prom.h, fallback reasons, configuration): tests/unit/test_prom.cc
check_PROGRAMS += unit/test_prom
TESTS += unit/test_prom
unit_test_prom_SOURCES = unit/test_prom.cc
unit_test_prom_LDADD = $(top_builddir)/src/libmxh.la $(GTEST_LIBS) -lgtest_main -lpthread
