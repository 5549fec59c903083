#!/bin/bash
# MPIX_HIER_EXCLUDE_RAILS on fake nodes (mpi/test_xrail.c): 2x2 without rail 1, 2x3 without
# rail 0 (uneven pieces), 3 nodes x 2 without rail 1 (odd node count).
set -u
bin=${MXH_TEST_BINDIR:-$(pwd)/mpi}/test_xrail
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=${MXH_TEST_RUN_TIMEOUT:-300}
command -v "${MPIEXEC%% *}" >/dev/null 2>&1 || { echo "SKIP: $MPIEXEC not found"; exit 77; }
unset MPIX_HIER_HOSTNAME MPIX_HIER_EXCLUDE_RAILS MPIX_HIER_TOPO_FILE MPIR_CVAR_NUM_CLIQUES
nfail=0
run() { # run RANKS_PER_NODE NODES EXCLUDED
    local g=$1 n=$2 x=$3 args=() i
    for ((i = 0; i < n; i++)); do
        [ $i -gt 0 ] && args+=(":")
        args+=(-n "$g" -env MPIX_HIER_HOSTNAME "node$i" "$bin" "$x")
    done
    local out
    out=$($MPIEXEC "${args[@]}" 2>&1); local rc=$?
    echo "$out" | grep -E '^(PASS|FAIL)|FAIL' | head -20
    if [ $rc -ne 0 ] || ! grep -q '^PASS' <<<"$out"; then
        echo "FAIL: ${n}x${g} exclude $x (rc $rc)"; echo "$out" | tail -20; nfail=$((nfail + 1))
    fi
}
run 2 2 1
run 3 2 0
run 2 3 1
[ $nfail -eq 0 ]
