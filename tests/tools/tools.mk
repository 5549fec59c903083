# mpix_info as a user runs it (tests/tools/test_mpix_info.sh)
TESTS += tools/test_mpix_info.sh
EXTRA_DIST += tools/test_mpix_info.sh
# mpix_doctor on fake nodes (tests/tools/test_mpix_doctor.sh)
TESTS += tools/test_mpix_doctor.sh
EXTRA_DIST += tools/test_mpix_doctor.sh
