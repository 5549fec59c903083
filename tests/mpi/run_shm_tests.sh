#!/bin/bash
# Runs mpi/test_shm (shared-memory collectives, src/exec/shm.h) under mpiexec
# on 1, 2, 3, 4 and 8 ranks of this machine, and on 4 ranks split into two
# shared-memory cliques by MPICH (MPIR_CVAR_NUM_CLIQUES=2: creating the object
# on WORLD must then fail on every rank; the tests run on each clique), and on
# 3 ranks with single copy (process_vm_readv) forbidden (MXH_SHM_CMA=0: the
# slot protocol at every size, as where the kernel refuses it).
#
#   MXH_TEST_SHM_RANKS="1 2 3 4 8"   rank counts to run (plus "cliques", "nocma")
#   MXH_TEST_GTEST_FILTER='*Allreduce*'  gtest filter
#   MXH_TEST_BINDIR=/path/to/mpi     where test_shm is (default: ./mpi)
#   MPIEXEC=mpiexec                  the launcher (set by make check)
#   MXH_TEST_RUN_TIMEOUT=600         seconds per mpiexec run
#   MXH_TEST_TIMEOUT=300             seconds per test (the in-process watchdog)
#   MXH_TEST_WRAPPER="valgrind ..."  run every rank under this command
#   MXH_TEST_QUICK=1                 smaller matrix
set -u

. "$(dirname "$0")/run_common.sh"
mxh_run_setup 600 300
filter=${MXH_TEST_GTEST_FILTER:-*}
unset MPIX_HIER_HOSTNAME MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_ODD_EVEN_CLIQUES MXH_SHM_CMA MXH_SHM_CMA_MIN

npass=0
nfail=0
# run NAME NP ENV...
run() {
    local name=$1 np=$2 log rc t0 t1
    shift 2
    log=$logdir/mxh-shm-$name.log
    if [ ! -x "$bindir/test_shm" ]; then
        echo "FAIL  shm-$name  missing binary $bindir/test_shm"
        nfail=$((nfail + 1))
        return
    fi
    t0=$(date +%s)
    # shellcheck disable=SC2086 # MXH_TEST_WRAPPER is a command line
    env MXH_TEST_LAYOUT="shm-$name" "$@" timeout -k 10 $((run_timeout + 30)) \
        $MPIEXEC -n "$np" ${MXH_TEST_WRAPPER:-} "$bindir/test_shm" \
        "--gtest_filter=$filter" --gtest_color=no >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    mxh_run_report "$(printf 'shm-%-8s' "$name")" $rc $((t1 - t0)) "$log"
}

for np in ${MXH_TEST_SHM_RANKS:-1 2 3 4 8 cliques nocma}; do
    if [ "$np" = cliques ]; then
        run cliques 4 MPIR_CVAR_NUM_CLIQUES=2
    elif [ "$np" = nocma ]; then
        run nocma 3 MXH_SHM_CMA=0
    else
        run "$np" "$np"
    fi
done

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
