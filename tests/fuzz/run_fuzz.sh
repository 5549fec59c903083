#!/bin/sh
# Runs every fuzz target of tests/fuzz on its seeds, then on random mutations for
# FUZZ_SECONDS seconds each (default 12: make check), with the fixed FUZZ_SEED (default 1)
# unless given. A finding (crash-*, timeout-*, oom-*, leak-* in FUZZ_OUT, default
# fuzz/findings) fails the run; reproduce it with: tests/fuzz/fuzz_X FILE.
# Run from the build's tests/ folder (make check and make fuzz do).
set -u
srcdir=${srcdir:-.}
secs=${FUZZ_SECONDS:-12}
seed=${FUZZ_SEED:-1}
out=${FUZZ_OUT:-fuzz/findings}
data=$srcdir/data
corpus=$srcdir/fuzz/corpus
topo=$data/topologies
# ASan, not UCX (linked through MPI), reports the signals; hwloc keeps quiet on content
export UCX_HANDLE_ERRORS=none HWLOC_HIDE_ERRORS=2
mkdir -p "$out" || exit 1
status=0

run() {
    name=$1
    shift
    if ! ./fuzz/$name -t "$secs" -s "$seed" -o "$out" "$@"; then
        echo "FAIL $name: the finding is in $out (reproduce: tests/fuzz/$name $out/FILE)"
        status=1
    fi
}

run fuzz_topo_conf "$corpus/topo_conf" "$data/slurm"
run fuzz_cluster_file "$corpus/cluster_file" "$data/torus_2x2.cluster"
run fuzz_nccl_xml "$corpus/nccl_xml" "$topo/ndv5-topo.xml" "$topo/H100-topology.xml" \
    "$topo/p4d-24xl-topo.xml"
run fuzz_hwloc_xml "$corpus/hwloc_xml" "$topo/power8gpudistances.xml"
run fuzz_config "$corpus/config"
run fuzz_doctor_report "$corpus/doctor_report"
exit $status
