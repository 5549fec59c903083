# mpix_info as a user runs it (tests/tools/test_mpix_info.sh)
TESTS += tools/test_mpix_info.sh
EXTRA_DIST += tools/test_mpix_info.sh
# mpix_doctor on fake nodes (tests/tools/test_mpix_doctor.sh)
TESTS += tools/test_mpix_doctor.sh
EXTRA_DIST += tools/test_mpix_doctor.sh
# the installed library through CMake's find_package and pkg-config (tests/tools/test_cmake_consumer.sh)
TESTS += tools/test_cmake_consumer.sh
EXTRA_DIST += tools/test_cmake_consumer.sh
AM_TESTS_ENVIRONMENT += MAKE='$(MAKE)'; MXH_CC='$(CC)'; MXH_PREFIX='$(prefix)'; MXH_LIBDIR='$(libdir)'; \
	MXH_INCLUDEDIR='$(includedir)'; export MAKE MXH_CC MXH_PREFIX MXH_LIBDIR MXH_INCLUDEDIR;
