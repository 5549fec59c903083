#!/bin/bash
# cg.sh LIBDIR IMPL OUTDIR [2node|1node] [BYTES] [N] [LIST]: entry_cost (next to
# this script, or $ENTRY_COST) on 2 ranks under callgrind, libmpixhier from LIBDIR;
# 2node: fake nodes a and b (MPIX_HIER_HOSTNAME), 1node: one node (shm path).
LIB=$1; IMPL=$2; OUT=$3; LAY=${4:-2node}; B=${5:-8}; N=${6:-10000}
SEL=${7:-allreduce,rsb,allgather,bcast,reduce}
BIN=${ENTRY_COST:-$(dirname "$0")/entry_cost}
mkdir -p "$OUT"; rm -f "$OUT"/cg.*
VG="valgrind --tool=callgrind --toggle-collect=timed_* --callgrind-out-file=$OUT/cg.%p"
if [ "$LAY" = 2node ]; then
    mpiexec -n 1 -env LD_LIBRARY_PATH "$LIB" -env MPIX_HIER_HOSTNAME a $VG "$BIN" $IMPL $B $N $SEL : \
            -n 1 -env LD_LIBRARY_PATH "$LIB" -env MPIX_HIER_HOSTNAME b $VG "$BIN" $IMPL $B $N $SEL 2>"$OUT/err"
else
    mpiexec -n 2 -env LD_LIBRARY_PATH "$LIB" $VG "$BIN" $IMPL $B $N $SEL 2>"$OUT/err"
fi
