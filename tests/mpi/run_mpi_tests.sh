#!/bin/bash
# Runs the MPI GoogleTest binaries (test_hier, test_errors, test_colls, test_vcolls,
# test_nbc, test_colls_mem, test_nbc_mem, test_vcolls_mem, test_p2p,
# test_alltoall_hier) under mpiexec on fake multi-node layouts;
# see README.md next to this script.
#
#   run_mpi_tests.sh                 all layouts (make check runs it from tests/)
#   MXH_TEST_LAYOUTS="2x2 3level-4x2" run_mpi_tests.sh     only these layouts
#   MXH_TEST_BINARIES="test_hier"    only these binaries
#   MXH_TEST_GTEST_FILTER='*Allreduce*'  gtest filter for every run
#   MXH_TEST_BINDIR=/path/to/mpi     where the binaries are (default: ./mpi)
#   MPIEXEC=mpiexec                  the launcher (set by make check)
#   MXH_TEST_RUN_TIMEOUT=600         seconds per mpiexec run (MPIEXEC_TIMEOUT + timeout)
#   MXH_TEST_TIMEOUT=120             seconds per test (the in-process watchdog)
#   MXH_TEST_LOGDIR=./mpi            where mxh-<layout>-<binary>.log go
#   MXH_TEST_WRAPPER="valgrind ..."  run every rank under this command (make check-valgrind)
#   MXH_TEST_NBC_FULL="2x2 1+2+3 3level-4x2"  layouts where test_nbc runs its full matrix
#                                    (elsewhere MXH_TEST_QUICK=1)
#
# Internal: run_mpi_tests.sh --interleave a,b,c PROG ARGS... sets
# MPIX_HIER_HOSTNAME to the (rank mod 3)-th name (rank from PMI_RANK) and
# execs PROG: ranks 0,1,2,3,... land on nodes a,b,c,a,...
set -u

if [ "${1:-}" = "--interleave" ]; then
    IFS=, read -r -a hosts <<<"$2"
    shift 2
    rank=${PMI_RANK:-${MPI_LOCALRANKID:-0}}
    export MPIX_HIER_HOSTNAME="${hosts[$((rank % ${#hosts[@]}))]}"
    exec "$@"
fi

self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
srcdir_mpi=$(dirname "$self")
datadir=${MXH_TEST_DATADIR:-$srcdir_mpi/../data}
. "$srcdir_mpi/run_common.sh"
mxh_run_setup 600 120

# The layout comes from this script only.
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIR_CVAR_NUM_CLIQUES MPIR_CVAR_ODD_EVEN_CLIQUES
unset MXH_TEST_EXPECT_NODES MXH_TEST_EXPECT_LEVELS MXH_TEST_EXPECT_LEAF MXH_TEST_LAYOUT
unset MXH_TEST_MEM

npass=0
nfail=0
failed=()

want() { # want WORD LIST: LIST empty or containing WORD
    [ -z "$2" ] && return 0
    case " $2 " in *" $1 "*) return 0 ;; esac
    return 1
}

# run LAYOUT BINARY FILTER ENV... -- MPIEXEC-ARGS (the word BIN stands for the
# binary and its gtest arguments). $tag (if set) names a variant of the same
# binary on the same layout (log mxh-LAYOUT-BINARY-TAG.log).
tag=
run() {
    local layout=$1 bin=$2 filter=$3
    shift 3
    want "$layout" "${MXH_TEST_LAYOUTS:-}" || return 0
    want "$bin" "${MXH_TEST_BINARIES:-}" || return 0
    local envs=() args=() a
    while [ $# -gt 0 ] && [ "$1" != "--" ]; do
        envs+=("$1")
        shift
    done
    shift
    [ -n "${MXH_TEST_GTEST_FILTER:-}" ] && filter=$MXH_TEST_GTEST_FILTER
    for a in "$@"; do
        if [ "$a" = BIN ]; then
            # shellcheck disable=SC2206 # MXH_TEST_WRAPPER is a command line (valgrind ...)
            args+=(${MXH_TEST_WRAPPER:-} "$bindir/$bin" "--gtest_filter=$filter" --gtest_color=no)
        else
            args+=("$a")
        fi
    done
    if [ ! -x "$bindir/$bin" ]; then
        printf 'FAIL  %-22s %-12s missing binary %s\n' "$layout" "$bin" "$bindir/$bin"
        nfail=$((nfail + 1))
        failed+=("$layout/$bin")
        return 0
    fi
    local log=$logdir/mxh-$layout-$bin${tag:+-$tag}.log t0 t1 rc name=$bin${tag:+[$tag]}
    t0=$(date +%s)
    {
        echo "# layout $layout: ${envs[*]} $MPIEXEC ${args[*]}"
        env MXH_TEST_LAYOUT="$layout" "${envs[@]}" \
            timeout -k 10 $((run_timeout + 30)) $MPIEXEC "${args[@]}"
    } >"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    local summary
    summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ test' "$log" | tr -s ' ' | tr '\n' ' ')
    if [ $rc -eq 0 ]; then
        printf 'PASS  %-22s %-12s %4ds  %s\n' "$layout" "$name" $((t1 - t0)) "$summary"
        npass=$((npass + 1))
    else
        local why="exit $rc"
        [ $rc -eq 124 ] && why="timeout/hang (exit 124)"
        grep -q 'mxh watchdog' "$log" && why="hang: $(grep -m1 'mxh watchdog' "$log")"
        printf 'FAIL  %-22s %-12s %4ds  %s  %s  (log: %s)\n' "$layout" "$name" $((t1 - t0)) \
            "$why" "$summary" "$log"
        # the failed tests, then the first failure in full (the rest: in the log)
        grep -E '^\[  FAILED  \] [A-Za-z]' "$log" | sed 's/ ([0-9]* ms)$//' | sort -u |
            head -n 15 | sed 's/^/      /'
        grep -m1 -E -A6 'Failure|BAD TERMINATION|EXIT STRING|mxh watchdog' "$log" |
            head -n 8 | sed 's/^/      | /'
        nfail=$((nfail + 1))
        failed+=("$layout/$name")
    fi
}

topo=$datadir/slurm/mpi_3level.conf
H=MPIX_HIER_HOSTNAME
L=MXH_TEST_EXPECT_LEAF

# Per layout: hier (introspection), colls and vcolls (the full matrices) everywhere,
# errors on the layouts that change the hierarchy's shape. Fast binaries first.
# MXH_TEST_QUICK=1 (exported by the caller) trims test_colls' matrix.
for bin in test_hier test_errors test_colls test_vcolls; do
    # test_vcolls: its contract tests that fail today run separately (below)
    flt='*'
    [ $bin = test_vcolls ] && flt='-Comms/Signatures.*:*AllgathervOneRankKeepsDispls*'

    # one node
    run 1rank $bin "$flt" MXH_TEST_EXPECT_NODES=1 -- -n 1 BIN
    run 1node-2 $bin "$flt" MXH_TEST_EXPECT_NODES=1 MXH_TEST_EXPECT_LEVELS=node -- -n 2 BIN
    [ $bin != test_errors ] &&
        run 1node-3 $bin "$flt" MXH_TEST_EXPECT_NODES=1 MXH_TEST_EXPECT_LEVELS=node -- -n 3 BIN

    # fake nodes from MPMD segments (each segment: contiguous ranks)
    run 2x2 $bin "$flt" MXH_TEST_EXPECT_NODES=2 MXH_TEST_EXPECT_LEVELS=node,rail -- \
        -n 2 -env $H a BIN : -n 2 -env $H b BIN
    # (errors too: nothing to exploit, the entry calls MPI's collective itself)
    run 1+1 $bin "$flt" MXH_TEST_EXPECT_NODES=2 MXH_TEST_EXPECT_LEVELS=rail -- \
        -n 1 -env $H a BIN : -n 1 -env $H b BIN
    run 3+1 $bin "$flt" MXH_TEST_EXPECT_NODES=2 -- \
        -n 3 -env $H a BIN : -n 1 -env $H b BIN
    run 1+2+3 $bin "$flt" MXH_TEST_EXPECT_NODES=3 -- \
        -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN

    # interleaved rank order: a b a b / a b c a b c (hostname from PMI_RANK)
    [ $bin != test_errors ] &&
        run interleaved-2x2 $bin "$flt" MXH_TEST_EXPECT_NODES=2 MXH_TEST_EXPECT_LEVELS=node,rail -- \
            -n 4 /bin/bash "$self" --interleave a,b BIN
    [ $bin != test_errors ] &&
        run interleaved-3x2 $bin "$flt" MXH_TEST_EXPECT_NODES=3 MXH_TEST_EXPECT_LEVELS=node,rail -- \
            -n 6 /bin/bash "$self" --interleave a,b,c BIN

    # MPICH splits MPI_COMM_TYPE_SHARED round-robin into 2 cliques: {0,2} {1,3}
    [ $bin != test_errors ] &&
        run cliques-2x2 $bin "$flt" MPIR_CVAR_NUM_CLIQUES=2 MXH_TEST_EXPECT_NODES=2 \
            MXH_TEST_EXPECT_LEVELS=node,rail -- -n 4 BIN

    # 3 levels: nodes a b under leaf0, c d under leaf1, one spine (topology.conf)
    run 3level-4x2 $bin "$flt" MPIX_HIER_TOPO_FILE="$topo" MXH_TEST_EXPECT_NODES=4 \
        MXH_TEST_EXPECT_LEVELS=node,rail,spine -- \
        -n 2 -env $H a -env $L leaf0 BIN : -n 2 -env $H b -env $L leaf0 BIN : \
        -n 2 -env $H c -env $L leaf1 BIN : -n 2 -env $H d -env $L leaf1 BIN

    # a 2x2 torus of nodes (cluster file torus=): node level, then one level per
    # dimension, the two rails in different orders (test_hier's checks assume the
    # leaf-based levels: not run here). The trimmed matrix unless the caller sets
    # MXH_TEST_QUICK=0: the full one on 8 ranks took over 600 s on the loaded 2-core VM
    [ $bin != test_errors ] && [ $bin != test_hier ] &&
        run torus-2x2 $bin "$flt" MPIX_HIER_CLUSTER_FILE="$datadir/torus_2x2.cluster" \
            MXH_TEST_QUICK="${MXH_TEST_QUICK:-1}" -- \
            -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
done

# Nonblocking collectives (test_nbc): the trimmed matrix (MXH_TEST_QUICK=1) on
# the small and irregular layouts, the full one on $MXH_TEST_NBC_FULL.
nbc_full=${MXH_TEST_NBC_FULL:-2x2 1+2+3 3level-4x2}
nbcq() { # the quick setting for layout $1 (the caller's MXH_TEST_QUICK wins)
    if want "$1" "$nbc_full" && [ "${MXH_TEST_QUICK:-0}" = 0 ]; then echo MXH_TEST_QUICK=0
    else echo MXH_TEST_QUICK=1; fi
}
run 1rank test_nbc '*' "$(nbcq 1rank)" -- -n 1 BIN
run 1node-3 test_nbc '*' "$(nbcq 1node-3)" -- -n 3 BIN
run 2x2 test_nbc '*' "$(nbcq 2x2)" -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1+1 test_nbc '*' "$(nbcq 1+1)" -- -n 1 -env $H a BIN : -n 1 -env $H b BIN
run 3+1 test_nbc '*' "$(nbcq 3+1)" -- -n 3 -env $H a BIN : -n 1 -env $H b BIN
run 1+2+3 test_nbc '*' "$(nbcq 1+2+3)" -- \
    -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
run interleaved-3x2 test_nbc '*' "$(nbcq interleaved-3x2)" -- \
    -n 6 /bin/bash "$self" --interleave a,b,c BIN
run 3level-4x2 test_nbc '*' "$(nbcq 3level-4x2)" MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
run torus-2x2 test_nbc '*' "$(nbcq torus-2x2)" MPIX_HIER_CLUSTER_FILE="$datadir/torus_2x2.cluster" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN

# The test memory kind (test_colls_mem, test_nbc_mem; $MXH_TEST_MEM picks the
# kinds of send and receive buffers and the copy delay in polls): every
# collective, counts 0/1/primes/large, in place, roots, on a few layouts, with
# both buffers of the test kind, host send + test receive and the reverse, delay
# 0, 3 and 5. test_colls_mem: the communicators and algorithm settings named in
# the filters, its matrix trimmed (MXH_TEST_QUICK=1; every type/op pair only on
# 2x2); 256 KiB fragments make its large counts pipelined.
cm_tt='Comms/Colls.*/world:PipelineRamp.*'
cm_ht='Comms/Colls.*/interleaved:Forced/Algos.*-*AllTypesOps*'
cm_th='Comms/Colls.*/evenodd:Forced/Algos.*pipeline*:PipelineRamp.*-*AllTypesOps*'
tag=mem-tt-d3
run 2x2 test_colls_mem "$cm_tt" MXH_TEST_MEM=send=test,recv=test,delay=3 MXH_TEST_QUICK=1 \
    MPIX_HIER_FRAG_SIZE=256k -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1rank test_colls_mem 'Comms/Colls.*/world' MXH_TEST_MEM=send=test,recv=test,delay=3 \
    MXH_TEST_QUICK=1 -- -n 1 BIN
# one rank: a device copy of the kind (coll.c self_device), blocking and nonblocking
run 1rank test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=3 MXH_TEST_QUICK=1 -- -n 1 BIN
run 2x2 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=3 "$(nbcq 2x2)" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1node-2 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=4 MXH_TEST_QUICK=1 -- \
    -n 2 BIN
tag=mem-ht-d0
run 3level-4x2 test_colls_mem "$cm_ht" MXH_TEST_MEM=send=host,recv=test,delay=0 \
    MXH_TEST_QUICK=1 MPIX_HIER_FRAG_SIZE=256k MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
run 3level-4x2 test_nbc_mem '*' MXH_TEST_MEM=send=host,recv=test,delay=0 MXH_TEST_QUICK=1 \
    MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
tag=mem-th-d5
run 1+2+3 test_colls_mem "$cm_th" MXH_TEST_MEM=send=test,recv=host,delay=5 MXH_TEST_QUICK=1 \
    MPIX_HIER_FRAG_SIZE=256k -- -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
run 1+2+3 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=host,delay=5 MXH_TEST_QUICK=1 -- \
    -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
tag=

# The device node level (exec/ipc.h) on the test kind, whose IPC maps a peer's
# memfd through /proc/PID/fd: forced on at every size (MPIX_HIER_IPC=yes,
# MPIX_HIER_IPC_MIN=0) for test_colls_mem's whole matrix on one node (every
# collective through peer mappings) and for the nonblocking matrix; then
# DeviceNodeLevel.* (a communicator of its own, forced on by MPI_Info) on one
# node, even and uneven nodes (MXH_TEST_EXPECT_IPC=1 where every node holds >= 2
# ranks: the kind's reductions must have run), and with mixed kinds (the agreed
# decline to staging).
ipcf='MPIX_HIER_IPC=yes MPIX_HIER_IPC_MIN=0'
tag=ipc-all
# shellcheck disable=SC2086 # $ipcf: two assignments
run 1node-3 test_colls_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=3 MXH_TEST_QUICK=1 $ipcf \
    -- -n 3 BIN
# shellcheck disable=SC2086
run 1node-2 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=2 MXH_TEST_QUICK=1 $ipcf \
    -- -n 2 BIN
# shellcheck disable=SC2086
run 2x2 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=2 MXH_TEST_QUICK=1 $ipcf -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN
tag=ipc-dn
dn='DeviceNodeLevel.*'
tt='MXH_TEST_MEM=send=test,recv=test,delay=3'
run 1node-3 test_colls_mem "$dn" $tt MXH_TEST_EXPECT_IPC=1 -- -n 3 BIN
run 2x2 test_colls_mem "$dn" $tt MXH_TEST_EXPECT_IPC=1 -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run interleaved-3x2 test_colls_mem "$dn" $tt MXH_TEST_EXPECT_IPC=1 -- \
    -n 6 /bin/bash "$self" --interleave a,b,c BIN
run 3level-4x2 test_colls_mem "$dn" $tt MXH_TEST_EXPECT_IPC=1 MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
run 3+1 test_colls_mem "$dn" $tt -- -n 3 -env $H a BIN : -n 1 -env $H b BIN
run 1+2+3 test_colls_mem "$dn" $tt -- -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
# The device network path (coll.c device_net) across nodes: the network steps on the
# test-kind buffers, direct (mpi=direct: the test-only CUDA-aware MPI, nothing staged)
# and staged (a bounded bounce pool); DeviceNetwork.* asserts both, and no CPU
# reduction of device data, on even layouts
tag=dnet-direct
dnf='DeviceNetwork.*'
run 2x2 test_colls_mem "$dnf" MXH_TEST_MEM=send=test,recv=test,delay=3,mpi=direct -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN
run interleaved-3x2 test_colls_mem "$dnf:$dn" MXH_TEST_MEM=send=test,recv=test,delay=1,mpi=direct \
    -- -n 6 /bin/bash "$self" --interleave a,b,c BIN
# shellcheck disable=SC2086
run 2x2 test_nbc_mem '*' MXH_TEST_MEM=send=test,recv=test,delay=2,mpi=direct MXH_TEST_QUICK=1 \
    $ipcf -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
tag=dnet-staged
run 2x2 test_colls_mem "$dnf" MXH_TEST_MEM=send=test,recv=test,delay=3 -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 3level-4x2 test_colls_mem "$dnf" MXH_TEST_MEM=send=test,recv=test,delay=2 \
    MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
# MPIX_HIER_CHECK=yes: mismatches found on every rank (CheckMode), none where the
# arguments agree (every error case, the collectives of test_vcolls)
tag=check
run 2x2 test_errors '*' MPIX_HIER_CHECK=yes -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1+2+3 test_vcolls '*' MPIX_HIER_CHECK=yes MXH_TEST_QUICK=1 -- \
    -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
tag=ipc-mixed
run 2x2 test_colls_mem "$dn" MXH_TEST_MEM=send=host,recv=test,delay=0 -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1node-3 test_colls_mem "$dn" MXH_TEST_MEM=send=test,recv=host,delay=5 -- -n 3 BIN
# nodes that decide differently (a, c: peer-mapped node parts; b: host buffers;
# d: mixed kinds, staged) must still exchange the same network messages
tag=ipc-nodes-differ
M=MXH_TEST_MEM
run 3level-4x2 test_colls_mem "$dn" MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a -env $M send=test,recv=test,delay=3 -env MXH_TEST_EXPECT_IPC 1 BIN : \
    -n 2 -env $H b -env $M send=host,recv=host BIN : \
    -n 2 -env $H c -env $M send=test,recv=test,delay=1 -env MXH_TEST_EXPECT_IPC 1 BIN : \
    -n 2 -env $H d -env $M send=test,recv=host BIN
tag=

# test_vcolls' contract tests, on their own so that a hang or a known
# deviation is reported here and not in the matrix above: type signatures (even
# ranks MPI_INT, odd ranks a contiguous or vector type of 2 ints; a rank whose
# path differs from its peers' hangs) and allgatherv's displacements on
# one-rank communicators (MPICH 4.0.2 ignores them; evenodd is one rank on
# 1node-2, world on 1rank)
tag=contract
sigf='Comms/Signatures.*:*AllgathervOneRankKeepsDispls*'
run 1rank test_vcolls "$sigf" -- -n 1 BIN
run 1node-2 test_vcolls "$sigf" -- -n 2 BIN
run 2x2 test_vcolls "$sigf" -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 1+2+3 test_vcolls "$sigf" -- -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
run 3level-4x2 test_vcolls "$sigf" MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
# test_vcolls_mem: the case runners' buffers of the test memory kind (every
# type only on 2x2)
vm_all='Comms/VColls.*-*PairsWithout*:*CFloat16*:*PlainPath*'
vm_some='Comms/VColls.*Layouts*:Comms/VColls.LargeCounts*:Comms/VColls.MixedSequence*:Pairs/VNbc.*:Forced/VAlgos.*'
tag=mem-tt-d3
run 2x2 test_vcolls_mem "$vm_all" MXH_TEST_MEM=send=test,recv=test,delay=3 MXH_TEST_QUICK=1 \
    -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
tag=mem-ht-d0
run 3level-4x2 test_vcolls_mem "$vm_some" MXH_TEST_MEM=send=host,recv=test,delay=0 \
    MXH_TEST_QUICK=1 MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
tag=mem-th-d5
run 1+2+3 test_vcolls_mem "$vm_some" MXH_TEST_MEM=send=test,recv=host,delay=5 MXH_TEST_QUICK=1 \
    -- -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
tag=

# the executor's point-to-point algorithms on communicators of 2..6 ranks
run p2p-6 test_p2p '*' -- -n 6 BIN

# the hierarchical alltoall: even nodes (N nodes x g ranks, contiguous and
# interleaved), and layouts where it must say it does not apply
run 2x2 test_alltoall_hier '*' -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
run 2x3 test_alltoall_hier '*' -- -n 3 -env $H a BIN : -n 3 -env $H b BIN
run 3x2 test_alltoall_hier '*' -- -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN
run 4x2 test_alltoall_hier '*' -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
run interleaved-3x2 test_alltoall_hier '*' -- -n 6 /bin/bash "$self" --interleave a,b,c BIN
run 1+2+3 test_alltoall_hier '*' -- -n 1 -env $H a BIN : -n 2 -env $H b BIN : -n 3 -env $H c BIN
run 1node-3 test_alltoall_hier '*' -- -n 3 BIN

# metrics: the API's exact counts, the text on demand; then the files written at
# MPI_Finalize (MPIX_HIER_METRICS_FILE, %r per rank) must exist and parse
mdir=$logdir/metrics-2x2
if want test_metrics "${MXH_TEST_BINARIES:-}"; then
    rm -rf "$mdir" && mkdir -p "$mdir"
fi
run 2x2 test_metrics '*' MXH_TEST_METRICS_DIR="$mdir" MPIX_HIER_METRICS_FILE="$mdir/final-%r.prom" \
    -- -n 2 -env $H a BIN : -n 2 -env $H b BIN
if want 2x2 "${MXH_TEST_LAYOUTS:-}" && want test_metrics "${MXH_TEST_BINARIES:-}"; then
    if python3 "$srcdir_mpi/check_prometheus.py" --expect-ranks 4 "$mdir/final-%r.prom" \
        >"$logdir/mxh-2x2-metrics-files.log" 2>&1; then
        printf 'PASS  %-22s %-12s finalize-time files of 4 ranks parse\n' 2x2 metrics-files
        npass=$((npass + 1))
    else
        printf 'FAIL  %-22s %-12s (log: %s)\n' 2x2 metrics-files "$logdir/mxh-2x2-metrics-files.log"
        sed 's/^/      | /' "$logdir/mxh-2x2-metrics-files.log" | head -5
        nfail=$((nfail + 1))
        failed+=("2x2/metrics-files")
    fi
fi
run 1node-2 test_metrics '*' -- -n 2 BIN
run 3level-4x2 test_metrics '*' MPIX_HIER_TOPO_FILE="$topo" -- \
    -n 2 -env $H a BIN : -n 2 -env $H b BIN : -n 2 -env $H c BIN : -n 2 -env $H d BIN
tag=off
run 1node-2 test_metrics '*Disabled*' MPIX_HIER_METRICS=no MXH_TEST_METRICS_OFF=1 -- -n 2 BIN
tag=periodic
run 1node-2 test_metrics '*PeriodicFile*' MPIX_HIER_METRICS_FILE="$mdir/periodic-%r.prom" \
    MPIX_HIER_METRICS_INTERVAL=0.2 MXH_TEST_METRICS_PERIODIC="$mdir/periodic-%r.prom" -- -n 2 BIN
tag=
run 1rank test_metrics '*' -- -n 1 BIN
tag=plain
run 1+1 test_metrics '*RepeatedShapes*' MXH_TEST_EXPECT_PLAIN=1 -- -n 1 -env $H a BIN : -n 1 -env $H b BIN
tag=off-plain
run 1+1 test_metrics '*Disabled*' MPIX_HIER_METRICS=no MXH_TEST_METRICS_OFF=1 -- -n 1 -env $H a BIN : -n 1 -env $H b BIN
tag=

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ] || { echo "failed: ${failed[*]}"; exit 1; }
exit 0
