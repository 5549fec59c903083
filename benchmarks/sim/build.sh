#!/bin/sh
# Build the SimGrid SMPI flavour of mpix-hier (libmpixhier.a, mpix_bench, ...) out
# of tree: the same sources compiled with smpicc (configure --with-simgrid).
#   benchmarks/sim/build.sh [BUILD_DIR [extra configure arguments]]
# BUILD_DIR defaults to build-sim/ at the top of the source tree.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
bdir=${1:-$top/build-sim}
[ $# -gt 0 ] && shift
if ! command -v smpicc >/dev/null 2>&1; then
    echo "build.sh: smpicc not found (Debian: apt-get install libsimgrid-dev)" >&2
    exit 1
fi
[ -x "$top/configure" ] || (cd "$top" && ./autogen.sh)
mkdir -p "$bdir"
cd "$bdir"
if [ ! -f config.status ] || ! ./config.status --config | grep -q -- --with-simgrid; then
    "$top/configure" --with-simgrid "$@"
fi
make -j"$(nproc 2>/dev/null || echo 2)"
echo "build.sh: SimGrid build in $bdir (benchmarks/mpix_bench, .libs/libmpixhier.a)"
