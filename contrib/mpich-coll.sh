#!/bin/bash
# Runs MPICH's own collective tests (test/mpi/coll of the MPICH source tree) with
# the drop-in library libmpixhier_pmpi.so preloaded into every rank, on one node
# and on fake multi-node layouts, and lists the tests that fail with the drop-in
# but pass with plain MPICH.
#
#   contrib/mpich-coll.sh MPICH_SRC DROPIN_SO [LAYOUT...]
#
#   MPICH_SRC  MPICH source of the installed version, e.g. on Debian
#              (needs a deb-src line, e.g. "deb-src http://deb.debian.org/debian
#              bookworm main" in /etc/apt/sources.list, then apt-get update):
#                  apt-get source mpich        # -> ./mpich-4.0.2
#   DROPIN_SO  path of libmpixhier_pmpi.so (libmpixhier.so.0 is looked for next
#              to it first), e.g. build/.libs/libmpixhier_pmpi.so
#   LAYOUT     plain   MPICH alone, no drop-in (the baseline)
#              1node   drop-in, all ranks on one node
#              2nodes  drop-in, MPIX_HIER_HOSTNAME nodeA/nodeB by rank parity
#              3nodes  drop-in, MPIX_HIER_HOSTNAME nodeA/B/C by rank mod 3
#              (default: all four, plain first)
#
# Environment:
#   WORKDIR=/tmp/mpich-coll  build dir (WORKDIR/build: test/mpi configured out of
#                            tree once, only util/ and coll/ built) and logs:
#                            WORKDIR/logs/LAYOUT.log (runtests -verbose output),
#                            LAYOUT.junit.xml, LAYOUT.results, summary.txt
#   TESTS=REGEX              only testlist lines matching this grep -E regex
#                            (e.g. TESTS='^(allred|bcast|nonblocking)')
#   TESTS_SKIP=REGEX         leave out the testlist lines matching this regex
#   MPITEST_TIMEOUT=180      seconds per test (runtests kills it via MPIEXEC_TIMEOUT)
#   MPIEXEC=mpiexec          the launcher (Hydra; the rank comes from PMI_RANK)
# Exit status: 0 when no test fails with the drop-in that passes without it.
set -u

if [ "${1:-}" = "--rank" ]; then    # internal: per-rank wrapper (MPITEST_PROGRAM_WRAPPER)
    shift
    if [ -n "${MXH_DROPIN:-}" ]; then
        export LD_LIBRARY_PATH="$(dirname "$MXH_DROPIN")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        export LD_PRELOAD="$MXH_DROPIN${LD_PRELOAD:+:$LD_PRELOAD}"
    fi
    if [ -n "${MXH_NODES:-}" ]; then
        IFS=, read -r -a hosts <<<"$MXH_NODES"
        rank=${PMI_RANK:-${MPI_LOCALRANKID:-0}}
        export MPIX_HIER_HOSTNAME="${hosts[$((rank % ${#hosts[@]}))]}"
    fi
    exec "$@"
fi

if [ $# -lt 2 ]; then
    sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
    exit 2
fi
src=$(cd "$1/test/mpi" && pwd) || { echo "no test/mpi in $1"; exit 2; }
dropin=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
[ -f "$dropin" ] || { echo "no drop-in library $2"; exit 2; }
shift 2
layouts=${*:-plain 1node 2nodes 3nodes}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
work=${WORKDIR:-/tmp/mpich-coll}
logs=$work/logs
export MPITEST_TIMEOUT=${MPITEST_TIMEOUT:-180} MPITEST_CLEANUP=0
mkdir -p "$work/build" "$logs"

# Configure test/mpi against the installed MPICH (mpicc in PATH) and build coll/.
cd "$work/build" || exit 1
if [ ! -f Makefile ]; then
    "$src/configure" --with-mpi="$(dirname "$(dirname "$(command -v mpicc)")")" \
        --disable-fortran --disable-cxx --disable-romio --disable-spawn \
        --disable-ft-tests --disable-dtpools >"$logs/configure.log" 2>&1 ||
        { echo "configure failed: $logs/configure.log"; exit 1; }
fi
make -C util -j"$(nproc)" >"$logs/build.log" 2>&1 &&
    make -C coll -j"$(nproc)" >>"$logs/build.log" 2>&1 ||
    { echo "build failed: $logs/build.log"; exit 1; }

# The test list: the test lines of coll/testlist (filtered by $TESTS, $TESTS_SKIP).
cd coll || exit 1
sed 's/#.*//; /^[[:space:]]*$/d' testlist | grep -E "${TESTS:-.}" |
    grep -v -E "${TESTS_SKIP:-^$}" >testlist.sel

for layout in $layouts; do
    case $layout in
        plain) d= n= ;;
        1node) d=$dropin n= ;;
        2nodes) d=$dropin n=nodeA,nodeB ;;
        3nodes) d=$dropin n=nodeA,nodeB,nodeC ;;
        *) echo "unknown layout $layout"; exit 2 ;;
    esac
    echo "== $layout ($(wc -l <testlist.sel) tests, logs: $logs/$layout.*)"
    start=$SECONDS
    MXH_DROPIN=$d MXH_NODES=$n MPITEST_PROGRAM_WRAPPER="$self --rank" \
        ../runtests -tests=testlist.sel -srcdir="$src/coll" -mpiexec="${MPIEXEC:-mpiexec}" \
        -verbose -junitfile="$logs/$layout.junit.xml" >"$logs/$layout.log" 2>&1
    # LAYOUT.results: "pass|fail NAME NP ARGS", one line per test
    awk '/<testcase name=/ { if (t != "") print (f ? "fail " : "pass ") t
                             t = $0; sub(/.*name="[0-9]* - \.\//, "", t); sub(/ *".*/, "", t); f = 0 }
         /<failure/ { f = 1 }
         END { if (t != "") print (f ? "fail " : "pass ") t }' \
        "$logs/$layout.junit.xml" >"$logs/$layout.results"
    echo "   $(grep -c ^pass "$logs/$layout.results") passed," \
        "$(grep -c ^fail "$logs/$layout.results") failed, $((SECONDS - start)) s"
done

# Failures with the drop-in that plain MPICH does not have.
status=0
{
    for layout in $layouts; do
        r=$logs/$layout.results
        echo "$layout: $(grep -c ^pass "$r") passed, $(grep -c ^fail "$r") failed"
        [ "$layout" = plain ] && continue
        grep '^fail ' "$r" | cut -d' ' -f2- | while read -r t; do
            if [ -f "$logs/plain.results" ] && grep -qxF "fail $t" "$logs/plain.results"; then
                echo "   (also fails without the drop-in) $t"
            else
                echo "   FAIL $t"
            fi
        done
    done
} | tee "$logs/summary.txt"
grep -q '^   FAIL ' "$logs/summary.txt" && status=1
echo "details: the test output is in $logs/LAYOUT.junit.xml and LAYOUT.log"
exit $status
