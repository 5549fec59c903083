# The emulated cluster's smoke test (tests/emu/test_emu.sh, benchmarks/emu/):
# 2 hosts x 2 ranks in namespaces, test_colls' quick subset, tc byte counters.
# Needs root and network namespaces; exits 77 (SKIP) with the reason otherwise.
TESTS += emu/test_emu.sh
EXTRA_DIST += emu/test_emu.sh
