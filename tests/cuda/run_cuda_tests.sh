#!/bin/bash
# Runs cuda/test_cuda_colls under mpiexec on 1, 2 and 4 ranks sharing the
# machine's GPU(s) (rank i uses device i % ndev), and on fake multi-node
# layouts (MPIX_HIER_HOSTNAME per MPMD segment), so that the IPC level, the
# ring between nodes and uneven nodes are all exercised on one GPU.
#
# Exit status (automake): 0 all passed, 1 a failure, 77 every run skipped
# because no rank had a CUDA device ("no CUDA device").
#
#   MXH_TEST_LAYOUTS="1rank 2x2"       only these layouts
#   MXH_TEST_WRAPPER="compute-sanitizer --tool memcheck"  run every rank under it
#   MXH_TEST_GTEST_FILTER='*Allreduce*'
#   MXH_TEST_GTEST_EXTRA=--gtest_repeat=3   more arguments of the test binary
#   MXH_TEST_BINDIR (default ./cuda), MXH_TEST_RUN_TIMEOUT (600), MXH_TEST_TIMEOUT (300)
#   MXH_TEST_PARALLEL=N  run up to N layouts at once (separate mpiexec jobs sharing
#                        the GPU; for a GPU machine with many cores: the 4-rank
#                        layouts take minutes each)
set -u

bindir=${MXH_TEST_BINDIR:-$(pwd)/cuda}
MPIEXEC=${MPIEXEC:-mpiexec}
run_timeout=${MXH_TEST_RUN_TIMEOUT:-600}
export MXH_TEST_TIMEOUT=${MXH_TEST_TIMEOUT:-300}
export MPIEXEC_TIMEOUT=$run_timeout
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIR_CVAR_NUM_CLIQUES

want() {
    [ -z "${MXH_TEST_LAYOUTS:-}" ] && return 0
    case " $MXH_TEST_LAYOUTS " in *" $1 "*) return 0 ;; esac
    return 1
}

run() { # run LAYOUT MPIEXEC-ARGS (BIN stands for the test binary)
    local layout=$1
    want "$layout" || return 0
    if [ "${MXH_TEST_PARALLEL:-1}" -gt 1 ]; then
        while [ "$(jobs -rp | wc -l)" -ge "$MXH_TEST_PARALLEL" ]; do
            wait -n 2>/dev/null || sleep 1
        done
        run_one "$@" >"$bindir/mxh-cuda-$layout.verdict" &
    else
        run_one "$@" | tee "$bindir/mxh-cuda-$layout.verdict"
    fi
}

run_one() {
    local layout=$1 args=() a log rc
    shift
    for a in "$@"; do
        if [ "$a" = BIN ]; then
            # shellcheck disable=SC2206 # a command line
            args+=(${MXH_TEST_WRAPPER:-} "$bindir/test_cuda_colls" --gtest_color=no
                   "--gtest_filter=${MXH_TEST_GTEST_FILTER:-*}" ${MXH_TEST_GTEST_EXTRA:-})
        else
            args+=("$a")
        fi
    done
    log=$bindir/mxh-cuda-$layout.log
    { echo "# layout $layout: $MPIEXEC ${args[*]}"
      env MXH_TEST_LAYOUT="$layout" timeout -k 10 $((run_timeout + 30)) $MPIEXEC "${args[@]}"
    } >"$log" 2>&1
    rc=$?
    local summary
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$log" | tr -s ' ' | tr '\n' ' ')
    if [ $rc -eq 0 ] && grep -q 'no CUDA device' "$log" && ! grep -qE '^\[  PASSED  \] [1-9]' "$log"; then
        printf 'SKIP  %-14s no CUDA device  %s\n' "$layout" "$summary"
    elif [ $rc -eq 0 ]; then
        printf 'PASS  %-14s %s\n' "$layout" "$summary"
    else
        printf 'FAIL  %-14s exit %d  %s (log: %s)\n' "$layout" $rc "$summary" "$log"
        grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sort -u | head -n 10 | sed 's/^/      /'
        grep -m1 -A6 -E 'Failure|BAD TERMINATION|mxh watchdog' "$log" | head -n 8 | sed 's/^/      | /'
    fi
}

if [ ! -x "$bindir/test_cuda_colls" ]; then
    echo "FAIL: missing $bindir/test_cuda_colls"
    exit 1
fi
rm -f "$bindir"/mxh-cuda-*.verdict
H=MPIX_HIER_HOSTNAME
run 1rank   -n 1 BIN
run 1node-2 -n 2 BIN
run 1node-4 -n 4 BIN
# the device node level (exec/ipc.h) forced on at every size: peer-mapped
# buffers, the reduction kernels, no staging (declined calls stage as before)
run 1node-2-ipc -genv MPIX_HIER_IPC yes -genv MPIX_HIER_IPC_MIN 0 -n 2 BIN
run 1node-4-ipc -genv MPIX_HIER_IPC yes -genv MPIX_HIER_IPC_MIN 0 -n 4 BIN
run 2x2     -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1+1     -n 1 -env $H a BIN : -n 1 -env $H b BIN
run 3+1     -n 3 -env $H a BIN : -n 1 -env $H b BIN
wait
if [ "${MXH_TEST_PARALLEL:-1}" -gt 1 ]; then
    cat "$bindir"/mxh-cuda-*.verdict 2>/dev/null
fi
npass=$(cat "$bindir"/mxh-cuda-*.verdict 2>/dev/null | grep -c '^PASS')
nfail=$(cat "$bindir"/mxh-cuda-*.verdict 2>/dev/null | grep -c '^FAIL')
nskip=$(cat "$bindir"/mxh-cuda-*.verdict 2>/dev/null | grep -c '^SKIP')

echo "$npass passed, $nfail failed, $nskip skipped (no CUDA device)"
[ $nfail -gt 0 ] && exit 1
[ $npass -eq 0 ] && [ $nskip -gt 0 ] && exit 77
exit 0
