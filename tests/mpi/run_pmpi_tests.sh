#!/bin/bash
# Tests of the drop-in library libmpixhier_pmpi (README "Drop-in library"),
# every program run with LD_PRELOAD as a user would:
#   1. pmpi_check, a plain MPI program not linked with mpix-hier: exact results
#      of every intercepted collective, and the calls the library took
#      (MXH_PMPI_EXPECT, see pmpi_check.c), on one node, on fake nodes, under
#      the policies all / none / a list, and without the library at all;
#   2. Fortran programs (use mpi, use mpi_f08), compiled here with $MPIFORT
#      (skipped when there is none): results, and the calls taken as printed by
#      MPIX_HIER_PMPI_STATS=1;
#   3. the library's own MPI tests (test_hier, test_colls, test_nbc: programs
#      that call MPIX_Hier_* directly, whose MPI checks call MPI_Allreduce ...)
#      unmodified under LD_PRELOAD, through run_mpi_tests.sh (skipped when
#      they are not built: no GoogleTest).
#
#   MXH_PMPI_LA=.../libmpixhier_pmpi.la   the library (default: ../ from tests/)
#   MXH_TEST_BINDIR=./mpi                 pmpi_check and the test binaries
#   MXH_TEST_LOGDIR=$MXH_TEST_BINDIR       where pmpi-*.log go
#   MPIEXEC=mpiexec, MPIFORT=mpif90       the launcher, the Fortran compiler
#   MXH_PMPI_LIB_TESTS="test_hier test_colls test_nbc"   part 3's binaries ("" skips)
#   MXH_PMPI_LIB_LAYOUTS="2x2"            part 3's layouts (run_mpi_tests.sh names)
#   MXH_TEST_RUN_TIMEOUT=300              seconds per mpiexec run
set -u

srcdir_mpi=$(cd "$(dirname "$0")" && pwd)
. "$srcdir_mpi/run_common.sh"
mxh_run_setup 300
la=${MXH_PMPI_LA:-$(pwd)/../libmpixhier_pmpi.la}
MPIFORT=${MPIFORT:-mpif90}
# the shared library libtool built: .libs/<dlname> next to the .la
if [ ! -f "$la" ]; then
    echo "SKIP: $la not found (the drop-in library is not built: SimGrid build?)"
    exit 77
fi
dlname=$(sed -n "s/^dlname='\(.*\)'$/\1/p" "$la")
lib=$(cd "$(dirname "$la")" && pwd)/.libs/$dlname
if [ -z "$dlname" ] || [ ! -f "$lib" ]; then
    echo "SKIP: no shared library for $la (configured with --disable-shared?)"
    exit 77
fi

# The layout and the policy come from this script only.
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIX_HIER_PMPI MPIX_HIER_PMPI_STATS MXH_PMPI_EXPECT
unset MPIR_CVAR_NUM_CLIQUES LD_PRELOAD

npass=0
nfail=0
nskip=0
failed=()
H=MPIX_HIER_HOSTNAME
P=(-genv LD_PRELOAD "$lib") # the library in every rank, not in mpiexec itself

# check NAME WANT ENV... -- MPIEXEC-ARGS: run, pass when it exits 0 and its
# output has the line WANT (a grep -x pattern)
check() {
    local name=$1 want=$2
    shift 2
    local envs=()
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    local log=$logdir/pmpi-$name.log rc t0 t1
    t0=$(date +%s)
    {
        echo "# ${envs[*]} $MPIEXEC $*"
        env "${envs[@]}" timeout -k 10 $((run_timeout + 30)) $MPIEXEC "$@"
    } >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    if [ $rc -eq 0 ] && grep -qx -e "$want" "$log"; then
        printf 'PASS  %-28s %4ds\n' "$name" $((t1 - t0))
        npass=$((npass + 1))
    else
        printf 'FAIL  %-28s %4ds  exit %d  (log: %s)\n' "$name" $((t1 - t0)) $rc "$log"
        grep -v '^#' "$log" | head -n 12 | sed 's/^/      | /'
        nfail=$((nfail + 1))
        failed+=("$name")
    fi
}

skip() {
    printf 'SKIP  %-28s %s\n' "$1" "$2"
    nskip=$((nskip + 1))
}

# ---- 1. pmpi_check
pc=$bindir/pmpi_check
if [ -x "$pc" ]; then
    ok4='pmpi_check: 4 ranks, OK (0 failed checks)'
    ok6='pmpi_check: 6 ranks, OK (0 failed checks)'
    # without the library: the expectations themselves are MPI's results
    check no-library "$ok4" MXH_PMPI_EXPECT=absent -- -n 4 "$pc"
    check 1node-4 "$ok4" MXH_PMPI_EXPECT=all -- "${P[@]}" -n 4 "$pc"
    check 2x2 "$ok4" MXH_PMPI_EXPECT=all -- "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    # metrics of an unmodified program: the file of every rank at MPI_Finalize
    # (no %r in the name: .rank<r> appended), parsed
    md=$logdir/pmpi-metrics
    rm -rf "$md" && mkdir -p "$md"
    check 2x2-metrics "$ok4" MXH_PMPI_EXPECT=all MPIX_HIER_METRICS_FILE="$md/m.prom" -- \
        "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    if python3 "$srcdir_mpi/check_prometheus.py" --expect-ranks 4 "$md/m.prom.rank%r" \
        >"$logdir/pmpi-metrics-files.log" 2>&1; then
        printf 'PASS  %-28s\n' 2x2-metrics-files
        npass=$((npass + 1))
    else
        printf 'FAIL  %-28s (log: %s)\n' 2x2-metrics-files "$logdir/pmpi-metrics-files.log"
        nfail=$((nfail + 1))
        failed+=(2x2-metrics-files)
    fi
    # the exit lines: the calls MPI served and why (pmpi_check's intercommunicator
    # and user-op calls), and those the policy left to MPI
    check 2x2-stats "$ok4" MXH_PMPI_EXPECT=allreduce,bcast,reduce MPIX_HIER_PMPI=allreduce,bcast,reduce \
        MPIX_HIER_PMPI_STATS=1 -- "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    for want in 'mpixhier_pmpi: rank 0 fell back to MPI: allreduce 2 (intercomm 1, user_op 1), bcast 1 (intercomm 1), reduce 1 (user_op 1), iallreduce 1 (user_op 1)' \
        'mpixhier_pmpi: rank 3 left to MPI (MPIX_HIER_PMPI): reduce_scatter_block 2, reduce_scatter 2, allgather 3, allgatherv 1, alltoall 2, alltoallv 1, ireduce_scatter_block 1, ireduce_scatter 1, iallgather 1, iallgatherv 1, ialltoall 1, ialltoallv 1' \
        'mpixhier_pmpi: rank 1 left to MPI (count beyond INT_MAX, or a _c v-form): allgatherv 1'; do
        grep -qxF -e "$want" "$logdir/pmpi-2x2-stats.log" || {
            echo "FAIL  2x2-stats: no line: $want"
            grep '^mpixhier_pmpi: rank [03] [fl]' "$logdir/pmpi-2x2-stats.log" | sed 's/^/      | /'
            nfail=$((nfail + 1))
            failed+=(2x2-stats-lines)
        }
    done
    check 2x2-frag256k "$ok4" MXH_PMPI_EXPECT=all MPIX_HIER_FRAG_SIZE=256k -- \
        "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    check interleaved-3x2 "$ok6" MXH_PMPI_EXPECT=all -- \
        "${P[@]}" -n 6 /bin/bash "$srcdir_mpi/run_mpi_tests.sh" --interleave a,b,c "$pc"
    check 2x2-none "$ok4" MPIX_HIER_PMPI=none MXH_PMPI_EXPECT=none -- \
        "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    check 2x2-allreduce,bcast "$ok4" MPIX_HIER_PMPI=allreduce,bcast \
        MXH_PMPI_EXPECT=allreduce,bcast -- "${P[@]}" -n 2 -env $H a "$pc" : -n 2 -env $H b "$pc"
    check 1+2+3-no-alltoallv "$ok6" MPIX_HIER_PMPI=all,-alltoallv \
        MXH_PMPI_EXPECT=allreduce,reduce_scatter_block,reduce_scatter,allgather,allgatherv,alltoall,bcast,reduce \
        -- "${P[@]}" -n 1 -env $H a "$pc" : -n 2 -env $H b "$pc" : -n 3 -env $H c "$pc"
    # counts beyond INT_MAX (MPI_BYTE, bcast and allgather): served as MPICH
    # serves them (49 s alone on 2 cores, 201 s beside make check; without the library it passes the
    # same: MXH_PMPI_BIG_BOTH=1 runs that too); skipped where memory is short
    big='pmpi_check: big counts\(: bcast_c and allgather_c of 2147483660 bytes per rank checked\| skipped: .*\)'
    for lib_or_not in with-library ${MXH_PMPI_BIG_BOTH:+no-library}; do
        pre=("${P[@]}")
        [ $lib_or_not = no-library ] && pre=()
        name=2x1-big-counts-$lib_or_not
        saved_timeout=$run_timeout run_timeout=$((run_timeout * 3)) # 49 s alone, 201 s when loaded
        check "$name" "$big" MXH_PMPI_BIG=1 MPIEXEC_TIMEOUT=$run_timeout -- "${pre[@]}" -n 1 -env $H a "$pc" : -n 1 -env $H b "$pc"
        run_timeout=$saved_timeout
        why=$(sed -n 's/^pmpi_check: big counts skipped: //p' "$logdir/pmpi-$name.log")
        if [ -n "$why" ]; then # it passed, having checked nothing
            npass=$((npass - 1))
            skip "$name" "$why"
        fi
    done
else
    echo "FAIL  pmpi_check: missing binary $pc"
    nfail=$((nfail + 1))
    failed+=(pmpi_check)
fi

# ---- 2. Fortran. The calls of pmpi_fortran*.f90 (allreduce 3: its final
# PMPI_Allreduce counts, MPICH's Fortran PMPI_ calling the C MPI_ function).
stats='mpixhier_pmpi: rank 0 taken: allreduce 3 iallreduce 1 reduce_scatter_block 0 ireduce_scatter_block 0 reduce_scatter 0 ireduce_scatter 0 allgather 0 iallgather 0 allgatherv 1 iallgatherv 0 alltoall 1 ialltoall 0 alltoallv 0 ialltoallv 0 bcast 1 ibcast 0 reduce 1 ireduce 0'
for f in pmpi_fortran pmpi_fortran08; do
    if ! command -v "$MPIFORT" >/dev/null 2>&1; then
        skip "$f" "no Fortran compiler ($MPIFORT)"
        continue
    fi
    if ! "$MPIFORT" -o "$bindir/$f" "$srcdir_mpi/$f.f90" >"$logdir/pmpi-$f-build.log" 2>&1; then
        skip "$f" "$MPIFORT cannot build it (log: $logdir/pmpi-$f-build.log)"
        continue
    fi
    check "$f" "$f: 4 ranks, OK" MPIX_HIER_PMPI_STATS=1 -- \
        "${P[@]}" -n 2 -env $H a "$bindir/$f" : -n 2 -env $H b "$bindir/$f"
    grep -qx -e "$stats" "$logdir/pmpi-$f.log" || {
        echo "FAIL  $f: the calls taken differ from: $stats"
        grep '^mpixhier_pmpi: rank 0' "$logdir/pmpi-$f.log" | sed 's/^/      | /'
        nfail=$((nfail + 1))
        failed+=("$f-taken")
    }
done

# ---- 3. the library's own MPI tests under the drop-in library
lib_tests=${MXH_PMPI_LIB_TESTS-test_hier test_colls test_nbc}
missing=
for b in $lib_tests; do
    [ -x "$bindir/$b" ] || missing="$missing $b"
done
if [ -z "$lib_tests" ]; then
    skip library-tests "MXH_PMPI_LIB_TESTS is empty"
elif [ -n "$missing" ]; then
    skip library-tests "not built:$missing (GoogleTest missing?)"
else
    echo "# the library's MPI tests with LD_PRELOAD=$lib"
    MXH_TEST_WRAPPER="env LD_PRELOAD=$lib" MXH_TEST_QUICK=1 \
        MXH_TEST_LAYOUTS="${MXH_PMPI_LIB_LAYOUTS:-2x2}" MXH_TEST_BINARIES="$lib_tests" \
        MXH_TEST_BINDIR="$bindir" MXH_TEST_LOGDIR="$logdir/pmpi-logs" \
        MXH_TEST_RUN_TIMEOUT="$run_timeout" "$srcdir_mpi/run_mpi_tests.sh" | sed 's/^/  /'
    if [ "${PIPESTATUS[0]}" -eq 0 ]; then
        npass=$((npass + 1))
    else
        nfail=$((nfail + 1))
        failed+=(library-tests)
    fi
fi

echo "$npass passed, $nfail failed, $nskip skipped"
[ $nfail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
[ $npass -gt 0 ] || exit 77
exit 0
