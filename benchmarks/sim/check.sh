#!/bin/sh
# Simulation checks (the SimGrid build's counterpart of 'make check'):
#  1. mpix_bench --check, every collective, 8 B..1 MiB, on a 2 nodes x 2 GPUs
#     rail-optimized platform with its cluster file: results bit-exact, 2 levels;
#  2. the simulator against the analytic formulas (2-rank p2p, flat ring), 5 %.
#   benchmarks/sim/check.sh [BUILD_DIR]       (default build-sim/)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bdir=${1:-$here/../../build-sim}
out=$(mktemp -d "${TMPDIR:-/tmp}/mpix_sim_check.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail=0
python3 "$here/gen_platform.py" --nodes 2 --gpus 2 -o "$out/p22" || exit 1
log=$out/bench.log
MPIX_HIER_CLUSTER_FILE=$out/p22.cluster timeout 600 smpirun -np 4 -platform "$out/p22.xml" \
    -hostfile "$out/p22.hosts" --cfg=smpi/coll-selector:mpich \
    --cfg=smpi/simulate-computation:no --log=root.thres:warning \
    --log=smpi_config.thres:error \
    "$bdir/benchmarks/mpix_bench" -c all -b 8 -e 1M -f 8 -n 2 -w 1 --check >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^# check: all results correct$' "$log" &&
   grep -q 'level 1 rail' "$log"; then
    echo "PASS: mpix_bench --check under SMPI (2 levels, all results correct)"
else
    echo "FAIL: mpix_bench --check under SMPI (exit $rc):"; tail -n 30 "$log"; fail=1
fi
if python3 "$here/run_sim.py" --check-model --out "$out/model" -e 16M >"$out/model.log" 2>&1; then
    echo "PASS: simulator vs analytic formulas ($(tail -n 1 "$out/model.log" | sed 's/^# //'))"
else
    echo "FAIL: simulator vs analytic formulas:"; cat "$out/model.log"; fail=1
fi
exit $fail
