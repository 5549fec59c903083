# Fuzz targets of the parsers (tests/fuzz/fuzz_*.c, driver.c; docs/testing.md "Fuzzing").
# The parsers' sources are compiled again into a convenience library with the sanitizers
# (FUZZ_CFLAGS from configure: -fsanitize=address,undefined where the compiler has them);
# make check runs each target for FUZZ_SECONDS (12) on its seeds, `make fuzz` longer.
# Included from tests/Makefile.am; paths are relative to tests/.
FUZZ_TARGETS = fuzz/fuzz_topo_conf fuzz/fuzz_cluster_file fuzz/fuzz_nccl_xml \
	fuzz/fuzz_hwloc_xml fuzz/fuzz_config fuzz/fuzz_doctor_report
check_LTLIBRARIES = fuzz/libmxh_fuzz.la
fuzz_libmxh_fuzz_la_SOURCES = ../src/util/log.c ../src/util/coll_desc.c ../src/util/config.c \
	../src/util/doctor_report.c \
	../src/topo/topo_conf.c ../src/topo/cluster_file.c ../src/topo/xml_check.c \
	../src/topo/machine.c ../src/topo/machine_nccl.c ../src/topo/machine_hwloc.c
fuzz_libmxh_fuzz_la_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
fuzz_libmxh_fuzz_la_CFLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
FUZZ_PROG_FLAGS = $(AM_CFLAGS) $(FUZZ_CFLAGS)
FUZZ_PROG_LIBS = fuzz/libmxh_fuzz.la $(HWLOC_LIBS) $(JSONC_LIBS)
check_PROGRAMS += $(FUZZ_TARGETS)
fuzz_fuzz_topo_conf_SOURCES = fuzz/fuzz_topo_conf.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_topo_conf_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_topo_conf_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_topo_conf_LDADD = $(FUZZ_PROG_LIBS)
fuzz_fuzz_cluster_file_SOURCES = fuzz/fuzz_cluster_file.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_cluster_file_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_cluster_file_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_cluster_file_LDADD = $(FUZZ_PROG_LIBS)
fuzz_fuzz_nccl_xml_SOURCES = fuzz/fuzz_nccl_xml.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_nccl_xml_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_nccl_xml_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_nccl_xml_LDADD = $(FUZZ_PROG_LIBS)
fuzz_fuzz_hwloc_xml_SOURCES = fuzz/fuzz_hwloc_xml.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_hwloc_xml_CPPFLAGS = $(AM_CPPFLAGS) $(HWLOC_CFLAGS)
fuzz_fuzz_hwloc_xml_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_hwloc_xml_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_hwloc_xml_LDADD = $(FUZZ_PROG_LIBS)
fuzz_fuzz_config_SOURCES = fuzz/fuzz_config.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_config_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_config_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_config_LDADD = $(FUZZ_PROG_LIBS)
fuzz_fuzz_doctor_report_SOURCES = fuzz/fuzz_doctor_report.c fuzz/driver.c fuzz/fuzz.h
fuzz_fuzz_doctor_report_CFLAGS = $(FUZZ_PROG_FLAGS)
fuzz_fuzz_doctor_report_LDFLAGS = $(FUZZ_CFLAGS)
fuzz_fuzz_doctor_report_LDADD = $(FUZZ_PROG_LIBS)
TESTS += fuzz/run_fuzz.sh
EXTRA_DIST += fuzz/run_fuzz.sh fuzz/corpus
CLEANFILES += fuzz/findings/*

# make fuzz [FUZZ_SECONDS=N] [FUZZ_SEED=S]: every target for N seconds (default 300)
FUZZ_SECONDS = 300
fuzz: $(FUZZ_TARGETS)
	srcdir=$(srcdir) FUZZ_SECONDS=$(FUZZ_SECONDS) $${FUZZ_SEED:+FUZZ_SEED=$$FUZZ_SEED} \
	  $(SHELL) $(srcdir)/fuzz/run_fuzz.sh
