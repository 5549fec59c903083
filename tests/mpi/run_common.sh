# Sourced by the run_*_tests.sh scripts next to it: the settings they share.
#   mxh_run_setup RUN_TIMEOUT [TEST_TIMEOUT]
# sets bindir (MXH_TEST_BINDIR, default ./mpi), logdir (MXH_TEST_LOGDIR, default
# bindir), MPIEXEC (default mpiexec), run_timeout (MXH_TEST_RUN_TIMEOUT, default
# RUN_TIMEOUT) and exports MPIEXEC_TIMEOUT=run_timeout and, with TEST_TIMEOUT,
# MXH_TEST_TIMEOUT (the in-process watchdog, default TEST_TIMEOUT); exits 77
# (skipped) where the launcher is missing; creates logdir.
mxh_run_setup() {
    bindir=${MXH_TEST_BINDIR:-$(pwd)/mpi}
    logdir=${MXH_TEST_LOGDIR:-$bindir}
    MPIEXEC=${MPIEXEC:-mpiexec}
    run_timeout=${MXH_TEST_RUN_TIMEOUT:-$1}
    export MPIEXEC_TIMEOUT=$run_timeout
    if [ $# -gt 1 ]; then
        export MXH_TEST_TIMEOUT=${MXH_TEST_TIMEOUT:-$2}
    fi
    if ! command -v "${MPIEXEC%% *}" >/dev/null 2>&1; then
        echo "SKIP: $MPIEXEC not found"
        exit 77
    fi
    mkdir -p "$logdir"
}

# mxh_run_report LABEL RC SECONDS LOG
# One line for a run: PASS or FAIL, LABEL (already padded), the time and the
# gtest summary of LOG; after a FAIL the failed tests and the first failure in
# full (the rest: in LOG). Counts the run in npass or nfail.
mxh_run_report() {
    local label=$1 rc=$2 secs=$3 log=$4 summary
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$log" | tr -s ' ' | tr '\n' ' ')
    if [ "$rc" -eq 0 ]; then
        printf 'PASS  %s %4ds  %s\n' "$label" "$secs" "$summary"
        npass=$((npass + 1))
    else
        printf 'FAIL  %s %4ds  exit %d  %s  (log: %s)\n' "$label" "$secs" "$rc" "$summary" "$log"
        grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/ ([0-9]* ms)$//' | sort -u |
            head -n 15 | sed 's/^/      /'
        grep -m1 -E -A6 'Failure|BAD TERMINATION|mxh watchdog' "$log" | head -n 8 |
            sed 's/^/      | /'
        nfail=$((nfail + 1))
    fi
}
