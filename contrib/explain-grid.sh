#!/bin/bash
# usage: contrib/explain-grid.sh MPIX_INFO OUTFILE
# mpix_info --explain over a grid of collectives, sizes, layouts and tuning variables:
# run it before and after a decision change and diff the two files (HACKING.md).
BIN=$1; OUT=$2; : > $OUT
for c in allreduce reduce_scatter_block allgather bcast reduce; do
 for sz in 8 4096 65536 1M 16M 256M; do
  for lay in "--nodes 16 --gpus 8" "--nodes 128 --gpus 8 --leaves 4" "--nodes 32 --gpus 8 --leaves 4" "--nodes 16 --gpus 8 --torus 4x2x2" "--nodes 4 --gpus 4"; do
   echo "== $c $sz $lay" >> $OUT
   env MPIX_HIER_LOG_LEVEL=error $BIN --explain $c $sz $lay >> $OUT 2>&1
  done
 done
done
for env in "MPIX_HIER_PIPELINE_PACE=yes" "MPIX_HIER_KARY=yes" "MPIX_HIER_RSAG=yes" "MPIX_HIER_COST_LAT_FACTOR=65536:10" "MPIX_HIER_PIPELINE_RAMP=linear"; do
 for c in allreduce allgather bcast reduce; do
  echo "== $env $c 256M 128x8x4" >> $OUT
  env $env MPIX_HIER_LOG_LEVEL=error $BIN --explain $c 256M --nodes 128 --gpus 8 --leaves 4 >> $OUT 2>&1
 done
done
