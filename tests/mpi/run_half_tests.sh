#!/bin/bash
# Runs mpi/test_half (MPIX_HIER_FLOAT16 / MPIX_HIER_BFLOAT16 collectives) under
# mpiexec on 1-4 ranks, one node and fake multi-node layouts (MPIX_HIER_HOSTNAME
# per MPMD segment). One line per run; logs in mpi/mxh-half-<layout>.log.
#   MXH_TEST_LAYOUTS="2x2"  only these layouts; MXH_TEST_GTEST_FILTER  gtest filter
#   MXH_TEST_BINDIR, MXH_TEST_RUN_TIMEOUT (default 300), MXH_TEST_TIMEOUT (per test, 120)
set -u
. "$(dirname "$0")/run_common.sh"
mxh_run_setup 300 120
filter=${MXH_TEST_GTEST_FILTER:-*}
bin=$bindir/test_half
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIR_CVAR_NUM_CLIQUES
npass=0 nfail=0
H=MPIX_HIER_HOSTNAME
B=("$bin" "--gtest_filter=$filter" --gtest_color=no)

run() { # run LAYOUT MPIEXEC-ARGS...
    local layout=$1
    shift
    case " ${MXH_TEST_LAYOUTS:-$layout} " in *" $layout "*) ;; *) return 0 ;; esac
    local log=$logdir/mxh-half-$layout.log t0=$SECONDS rc
    if [ ! -x "$bin" ]; then
        echo "FAIL  $layout  missing binary $bin"
        nfail=$((nfail + 1))
        return 0
    fi
    { echo "# layout $layout: $MPIEXEC $*"
      MXH_TEST_LAYOUT=$layout timeout -k 10 $((run_timeout + 30)) $MPIEXEC "$@"; } >"$log" 2>&1
    rc=$?
    mxh_run_report "$(printf '%-10s' "$layout")" $rc $((SECONDS - t0)) "$log"
}

run 1rank -n 1 "${B[@]}"
run 1node-2 -n 2 "${B[@]}"
run 1+1 -n 1 -env $H a "${B[@]}" : -n 1 -env $H b "${B[@]}"
run 1node-3 -n 3 "${B[@]}"
run 2x2 -n 2 -env $H a "${B[@]}" : -n 2 -env $H b "${B[@]}"
run 3+1 -n 3 -env $H a "${B[@]}" : -n 1 -env $H b "${B[@]}"

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
