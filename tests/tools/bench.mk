# mpix_bench smoke test (tests/tools/test_mpix_bench.sh)
TESTS += tools/test_mpix_bench.sh
EXTRA_DIST += tools/test_mpix_bench.sh
