# tests/python fragment (owned by the Python package); included from tests/Makefile.am
# outside the GoogleTest condition: it needs python3 with numpy and pytest only.
# run_python_tests.sh runs python/tests (pytest on every rank) and
# examples/horovod_style.py under mpiexec on one node and on 2 fake nodes.
TESTS += python/run_python_tests.sh
EXTRA_DIST += python/run_python_tests.sh python/check_after_finalize.py python/check_horovod_trace.py python/harness_selftest.py
AM_TESTS_ENVIRONMENT += abs_top_builddir='$(abs_top_builddir)'; export abs_top_builddir; \
	abs_top_srcdir='$(abs_top_srcdir)'; export abs_top_srcdir;
CLEANFILES += python/mxh-py-*.log python/horovod-trace.json
