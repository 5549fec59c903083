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
