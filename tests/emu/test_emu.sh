#!/bin/bash
# Smoke test of the emulated cluster (benchmarks/emu/emu.sh, see its README.md):
# 2 hosts x 2 ranks on 2 shaped rails, real UTS/IPC/mount/net namespaces (no
# MPIX_HIER_HOSTNAME). Checks that
#   - the library sees 2 nodes and one rail level {0,2} {1,3} (mpix_info),
#   - the collective matrix's quick subset (test_colls, world + evenodd) matches
#     MPICH, on 2 nodes, with bytes on every host's rail links (tc counters),
#   - a hierarchical allreduce keeps its inter-host bytes on the rails (the
#     spine carries next to nothing) and at least its payload crossed them,
#   - two ranks of one host exchange through shared memory (no link bytes),
#   - degrade/heal change one link's tbf rate,
#   - down removes every namespace and the state.
# Exits 77 (SKIP) when not root or namespaces/veth/bridges/tbf cannot be made.
# Every step is bounded in time (emu.sh run --timeout, timeout).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$here/../..}
top=$(cd "$top" && pwd)
emu=$top/benchmarks/emu/emu.sh
bindir=${MXH_TEST_BINDIR:-$(pwd)/mpi}
info=${MPIX_INFO:-$(pwd)/../src/tools/mpix_info}
bench=${MPIX_BENCH:-$(pwd)/../benchmarks/mpix_bench}

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "not root (network namespaces need root)"
for c in ip tc nsenter unshare timeout mpiexec mpicc; do
    command -v "$c" >/dev/null 2>&1 || skip "$c not found (iproute2, util-linux, MPICH)"
done
for f in "$bindir/test_colls" "$info" "$bench"; do
    [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
# can this kernel/container make what emu.sh needs? (a throwaway namespace:
# it vanishes with the process)
if ! timeout 20 unshare -n -u -i -m -- /bin/sh -c \
    'ip link add name p0 type veth peer name p1 && ip link add name b0 type bridge &&
     tc qdisc add dev p0 root tbf rate 1mbit burst 32k latency 10ms' >/dev/null 2>&1; then
    skip "cannot create namespaces, veth, bridges or a tbf qdisc here"
fi

# a cluster id no one else uses now (the state dir and the namespaces are free)
if [ -z "${EMU_ID:-}" ]; then
    for id in 7 6 5 4 3 2 1 0; do
        if [ ! -e "/run/mpix-emu/$id" ] && ! ip netns list | grep -q "^emu$id-"; then
            EMU_ID=$id
            break
        fi
    done
fi
[ -n "${EMU_ID:-}" ] || skip "all 8 emulated cluster ids are in use"
export EMU_ID
echo "emulated cluster id $EMU_ID"

npass=0
nfail=0
ok() { npass=$((npass + 1)); }
bad() { nfail=$((nfail + 1)); echo "FAIL: $*"; }
check() { # check NAME REGEX TEXT
    if grep -Eq -- "$2" <<<"$3"; then ok; else bad "$1: no match for /$2/ in:"; echo "$3" | tail -n 30; fi
}
link() { # link STATS ROW-REGEX -> bytes of the first matching row of a stats table
    awk -v re="$2" '$0 ~ re { print $6; exit }' <<<"$1"
}

trap 'timeout 60 "$emu" down || true' EXIT
timeout 120 "$emu" up -H 2 -g 2 --rate 400mbit
out=$(timeout 20 "$emu" status)
check "status" "cluster $EMU_ID: up; rail, 2 hosts x 2 ranks" "$out"
check "status rates" "rails: 2, 400Mbit each way" "$out"
out=$(timeout 120 "$emu" up -H 2 -g 2 --rate 400mbit 2>&1)
check "up is idempotent" "already up with these parameters" "$out"

# 1. the hierarchy the library builds on the emulated hosts (real hostnames; --hier:
# in full, with its node lines, beside the summary's transports)
unset MPIX_HIER_HOSTNAME MPIX_HIER_TOPO_FILE MPIX_HIER_CLUSTER_FILE
out=$("$emu" run --timeout 120 -- "$info" --hier --count 1000 2>&1) || bad "mpix_info run"
check "2 nodes" 'hierarchy: 4 ranks, 2 nodes' "$out"
check "rail level" 'level 1 rail +top +2 groups of 2: \{0,2\} \{1,3\}' "$out"
check "host names" "node emu$EMU_ID-h1 .*ranks 2\(rail 0\) 3\(rail 1\)" "$out"
check "tcp on the rail device" 'tcp/rail0' "$out"

# 2. the collective matrix's quick subset against MPICH (the binary carries its
# own polling shim: EMU_YIELD=0)
out=$(EMU_YIELD=0 MXH_TEST_QUICK=1 MXH_TEST_TIMEOUT=120 "$emu" run --timeout 300 --stats -- \
    "$bindir/test_colls" --gtest_filter='Comms/Colls.*/world:Comms/Colls.*/evenodd' \
    --gtest_color=no 2>&1) || bad "test_colls run (exit status)"
check "test_colls on 2 nodes" "on 2 node\(s\); rank->node: emu$EMU_ID-h0 emu$EMU_ID-h0 emu$EMU_ID-h1 emu$EMU_ID-h1" "$out"
check "test_colls passed" '^\[  PASSED  \] [0-9]+ tests' "$out"
check "test_colls verdict" '^mxh: passed on all 4 rank\(s\)' "$out"
for h in 0 1; do
    for r in 0 1; do
        b=$(link "$out" "^h$h +$r +tx ")
        if [ "${b:-0}" -gt 1000000 ]; then ok; else bad "test_colls: h$h rail $r tx carried ${b:-?} bytes (<= 1 MB)"; fi
    done
done

# 3. hierarchical allreduce of 4 MiB, 6 calls: each rail rank sends its half
# (2 MiB) to the other host per call, over its own rail only
out=$("$emu" run --timeout 120 --stats -- "$bench" -b 4m -e 4m -n 5 -w 1 --impl hier --check 2>&1) ||
    bad "mpix_bench hier allreduce (exit status)"
check "hier allreduce result" '^ +4194304 +1048576 +float +sum +-1 +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 ' "$out"
rails=0
for h in 0 1; do
    for r in 0 1; do
        b=$(link "$out" "^h$h +$r +tx ")
        rails=$((rails + ${b:-0}))
        if [ "${b:-0}" -ge $((6 * 2 * 1048576)) ]; then ok; else
            bad "hier allreduce: h$h rail $r tx ${b:-?} bytes < the payload 6 x 2 MiB"; fi
    done
done
spine=0
for r in 0 1; do
    for d in up down; do
        b=$(link "$out" "^spine +$r +$d ")
        spine=$((spine + ${b:-0}))
    done
done
if [ $((spine * 100)) -lt "$rails" ]; then ok; else
    bad "hier allreduce: the spine carried $spine bytes, >= 1% of the rails' $rails"; fi

# 4. two ranks of one host (--np 2: both on host 0): shared memory, no link bytes
out=$("$emu" run --np 2 --timeout 120 --stats -- "$bench" -b 4m -e 4m -n 5 -w 1 --check 2>&1) ||
    bad "mpix_bench on one host (exit status)"
check "one host" "node emu$EMU_ID-h0 .*ranks 0\(rail 0\) 1\(rail 1\)" "$out"
tot=$(awk '/^(h[0-9]|spine) / { s += $6 } END { print s + 0 }' <<<"$out")
if [ "$tot" -lt 65536 ]; then ok; else bad "one host: $tot bytes crossed the links (shm expected)"; fi

# 5. degrade and heal one link direction
timeout 20 "$emu" degrade 1 0 rx 4 >/dev/null 2>&1 || bad "degrade (exit status)"
out=$(nsenter --net="/run/netns/emu$EMU_ID-leaf0" tc qdisc show dev h1)
check "degrade h1 rail0 rx" 'tbf .*rate 100Mbit' "$out"
check "degrade in status" 'degraded: host 1 rail 0 rx: 400Mbit / 4 = 100Mbit' "$(timeout 20 "$emu" status)"
timeout 20 "$emu" heal || bad "heal (exit status)"
out=$(nsenter --net="/run/netns/emu$EMU_ID-leaf0" tc qdisc show dev h1)
check "heal" 'tbf .*rate 400Mbit' "$out"

# 6. down removes everything of this id, and is idempotent
timeout 60 "$emu" down
timeout 60 "$emu" down
trap - EXIT
if ip netns list | grep -q "^emu$EMU_ID-"; then bad "namespaces left: $(ip netns list | grep "^emu$EMU_ID-" | tr '\n' ' ')"; else ok; fi
if [ -e "/run/mpix-emu/$EMU_ID" ]; then bad "state dir left"; else ok; fi

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
