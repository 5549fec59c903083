#!/bin/bash
# mpix_bench smoke test: 4 ranks as 2 fake nodes, every collective, --check, CSV;
# and bad options exit non-zero with a message. Times are not checked.
set -u
bench=${MPIX_BENCH:-$(pwd)/../benchmarks/mpix_bench}
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=120
npass=0; nfail=0
ok()   { npass=$((npass + 1)); }
bad()  { nfail=$((nfail + 1)); echo "FAIL: $*"; }
check() { # check NAME EXPECTED-REGEX OUTPUT
    if grep -Eq -- "$2" <<<"$3"; then ok; else
        bad "$1: no match for /$2/ in:"; echo "$3" | head -n 40; fi
}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mpix_bench_test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
csv=$tmp/out.csv
if [ ! -x "$bench" ]; then echo "FAIL: $bench not found"; echo "0 passed, 1 failed"; exit 1; fi

args=(-c all -b 8 -e 64K -n 3 -w 1 --check --csv "$csv")
out=$($MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$bench" "${args[@]}" : \
               -n 2 -env MPIX_HIER_HOSTNAME b "$bench" "${args[@]}" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "run exit status $rc"
check "header version" '^# mpix_bench: mpix-hier [0-9]+\.[0-9]+\.[0-9]+' "$out"
check "header ranks" '^# ranks: 4,' "$out"
check "header hierarchy" 'level 1 rail' "$out"
check "header config" '^#   MPIX_HIER_HOSTNAME=a$' "$out"
for c in allreduce reduce_scatter allgather bcast reduce; do
    check "section $c" "^# Collective: $c\$" "$out"
done
check "check verdict" '^# check: all results correct$' "$out"
check "skip note" 'skipped \(0 elements of float per rank\)' "$out"
# data rows: size count type redop root, then 4 columns per implementation, then the ratio
rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float ' <<<"$out")
nrows=$(grep -c . <<<"$rows")
[ "$nrows" -eq 68 ] && ok || bad "expected 68 table rows, got $nrows"
wrong=$(awk '{ if ($9 != "0" || $13 != "0") n++ } END { print n + 0 }' <<<"$rows")
[ "$wrong" -eq 0 ] && ok || bad "$wrong rows with a non-zero #wrong"

if [ -f "$csv" ]; then
    ok
    check "csv header" '^collective,size_bytes,count,type,redop,root,hier_time_us,hier_algbw_gbs,hier_busbw_gbs,hier_wrong,mpi_time_us,mpi_algbw_gbs,mpi_busbw_gbs,mpi_wrong,hier_over_mpi$' "$(head -n 1 "$csv")"
    n=$(($(wc -l <"$csv") - 1))
    [ "$n" -eq 68 ] && ok || bad "expected 68 CSV rows, got $n"
    for c in allreduce reduce_scatter allgather bcast reduce; do
        check "csv $c" "^$c,65536,[0-9]+,float," "$(cat "$csv")"
    done
    check "csv rs count" '^reduce_scatter,16,4,float,sum,-1,' "$(cat "$csv")"
    nw=$(awk -F, 'NR > 1 && ($10 != "0" || $14 != "0") { n++ } END { print n + 0 }' "$csv")
    [ "$nw" -eq 0 ] && ok || bad "$nw CSV rows with a non-zero wrong count"
else
    bad "no CSV written"
fi

# usage errors: non-zero exit and a message
out=$($MPIEXEC -n 1 "$bench" -c nosuchcoll 2>&1); rc=$?
[ $rc -ne 0 ] && ok || bad "bad -c exited 0"
check "bad -c message" "unknown collective 'nosuchcoll'" "$out"
out=$($MPIEXEC -n 1 "$bench" -d bf16 2>&1); rc=$?
[ $rc -ne 0 ] && ok || bad "-d bf16 exited 0"
check "bf16 message" 'bf16/fp16 need MPIX_HIER_BFLOAT16/FLOAT16 \(not available in this version\)' "$out"
out=$($MPIEXEC -n 1 "$bench" -m cuda 2>&1); rc=$?
[ $rc -ne 0 ] && ok || bad "-m cuda exited 0"
check "cuda message" 'device buffers are not supported yet' "$out"

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
