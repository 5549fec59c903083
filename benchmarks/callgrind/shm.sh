#!/bin/bash
# shm.sh LIBDIR OUTDIR [BYTES] [N]: one node (shm path), per collective and rank,
# instructions per call minus wait_slow (inclusive: the wait for the peer)
LIB=$1; OUT=$2; B=${3:-8}; N=${4:-10000}
for c in allreduce rsb allgather bcast reduce; do
  "$(dirname "$0")"/cg.sh $LIB hier $OUT/$c 1node $B $N $c
  for f in $OUT/$c/cg.*; do
    callgrind_annotate --inclusive=yes --threshold=100 $f | awk -v c=$c -v n=$N '
      / \[/ { v=$1; gsub(",","",v); split($0,a,"%\\)  "); nm=a[2]; sub(/ \[.*/,"",nm); sub(/.*:/,"",nm); if (!(nm in I) || v+0>I[nm]) I[nm]=v+0 }
      END { printf "%s %.0f (wait_slow %.0f) ", c, (I["timed_" c]-I["wait_slow"])/n, I["wait_slow"]/n }'
  done; echo
done
