#!/bin/sh
# Simulation checks (the SimGrid build's counterpart of 'make check'):
#  1. mpix_bench --check, every collective, 8 B..1 MiB, on a 2 nodes x 2 GPUs
#     rail-optimized platform with its cluster file: results bit-exact, 2 levels
#     (MPIX_HIER_SIM_REDUCE=real: reductions executed);
#  2. the simulator against the analytic formulas (2-rank p2p, flat ring), 5 %;
#  3. run_sim.py --scale --check: mpix_bench --check on 32-rank dragonfly and 3D
#     torus platforms and a 2-leaf-group fat-tree (generator, cluster file, hierarchy
#     and results together);
#  4. run_sim.py --check-fold: smpi_fold.so does not change simulated times
#     (folding and skipped copies: within 0.1 %).
#   benchmarks/sim/check.sh [BUILD_DIR]       (default build-sim/)
set -u
here=$(cd "$(dirname "$0")" && pwd)
bdir=$(cd "${1:-$here/../../build-sim}" && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/mpix_sim_check.XXXXXX")
trap 'rm -rf "$out"' EXIT
fail=0
python3 "$here/gen_platform.py" --nodes 2 --gpus 2 -o "$out/p22" 2>/dev/null || exit 1
log=$out/bench.log
MPIX_HIER_SIM_REDUCE=real MPIX_HIER_CLUSTER_FILE=$out/p22.cluster timeout 600 \
    smpirun -np 4 -platform "$out/p22.xml" \
    -hostfile "$out/p22.hosts" --cfg=smpi/coll-selector:mpich \
    --cfg=smpi/simulate-computation:no --log=root.thres:warning \
    --log=smpi_config.thres:error --log=smpi_mpi.thres:error \
    "$bdir/benchmarks/mpix_bench" -c all -b 8 -e 1M -f 8 -n 2 -w 1 --check >"$log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '^# check: all results correct$' "$log" &&
   grep -q 'level 1 rail' "$log"; then
    echo "PASS: mpix_bench --check under SMPI (2 levels, all results correct)"
else
    echo "FAIL: mpix_bench --check under SMPI (exit $rc):"; tail -n 30 "$log"; fail=1
fi
if python3 "$here/run_sim.py" --build "$bdir" --check-model --out "$out/model" -e 16M \
        >"$out/model.log" 2>&1; then
    echo "PASS: simulator vs analytic formulas ($(tail -n 1 "$out/model.log" | sed 's/^# //'))"
else
    echo "FAIL: simulator vs analytic formulas:"; cat "$out/model.log"; fail=1
fi
if python3 "$here/run_sim.py" --build "$bdir" --scale 32 --gpus 4 \
        --topologies dragonfly,torus3d,fattree --df-routers 2 --df-nodes-per-router 2 \
        --su-nodes 4 --check -b 8 -e 64K -f 8 -n 1 -w 1 --out "$out/scale" \
        >"$out/scale.log" 2>&1; then
    echo "PASS: mpix_bench --check on dragonfly, 3D torus, 2-group fat-tree (32 ranks)"
else
    echo "FAIL: mpix_bench --check on dragonfly / torus / fat-tree:"
    tail -n 30 "$out/scale.log"; fail=1
fi
if python3 "$here/run_sim.py" --build "$bdir" --check-fold --nodes 4 --gpus 4 \
        -b 1K -e 16M -f 16 -n 1 -w 1 --out "$out/fold" >"$out/fold.log" 2>&1; then
    echo "PASS: smpi_fold.so keeps simulated times ($(tail -n 1 "$out/fold.log" | sed 's/^# //'))"
else
    echo "FAIL: smpi_fold.so changes simulated times:"; cat "$out/fold.log"; fail=1
fi
exit $fail
