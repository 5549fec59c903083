#!/bin/bash
# mpix_bench smoke test: 4 ranks as 2 fake nodes, every collective, --check, CSV;
# the nonblocking mode (-N) likewise, with its columns and overlap formula checked;
# every datatype (fp16/bf16 included) with --check; --plot (a PNG with gnuplot,
# else a clear message and exit 3 with the CSV written); bad options exit
# non-zero with a message; nccl-tests' format and flags. Times are not checked.
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
for c in allreduce reduce_scatter_block allgather bcast reduce allgatherv reduce_scatter \
         alltoall alltoallv; do
    check "section $c" "^# Collective: $c\$" "$out"
done
check "check verdict" '^# check: all results correct$' "$out"
check "skip note" 'skipped \(0 elements of float per rank\)' "$out"
# data rows: size count type redop root, then 4 columns per implementation, then the ratio;
# 14 sizes (8 B .. 64 KiB): 14 rows for allreduce, bcast, reduce and allgatherv (size per
# rank), 13 for reduce_scatter_block, allgather, reduce_scatter, alltoall and alltoallv
# (8 B is 0 floats per rank, or per pair, on 4 ranks)
rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float ' <<<"$out")
nrows=$(grep -c . <<<"$rows")
[ "$nrows" -eq 121 ] && ok || bad "expected 121 table rows, got $nrows"
wrong=$(awk '{ if ($9 != "0" || $13 != "0") n++ } END { print n + 0 }' <<<"$rows")
[ "$wrong" -eq 0 ] && ok || bad "$wrong rows with a non-zero #wrong"

if [ -f "$csv" ]; then
    ok
    check "csv header" '^collective,size_bytes,count,type,redop,root,hier_time_us,hier_algbw_gbs,hier_busbw_gbs,hier_wrong,mpi_time_us,mpi_algbw_gbs,mpi_busbw_gbs,mpi_wrong,hier_over_mpi$' "$(head -n 1 "$csv")"
    n=$(($(wc -l <"$csv") - 1))
    [ "$n" -eq 121 ] && ok || bad "expected 121 CSV rows, got $n"
    for c in allreduce reduce_scatter_block allgather bcast reduce allgatherv reduce_scatter \
             alltoall alltoallv; do
        check "csv $c" "^$c,65536,[0-9]+,float," "$(cat "$csv")"
    done
    check "csv rsb count" '^reduce_scatter_block,16,4,float,sum,-1,' "$(cat "$csv")"
    # the v-forms: size = bytes per rank; count = its elements (reduce_scatter: 1 per rank
    # on average at 16 B; allgatherv: 4)
    check "csv rs count" '^reduce_scatter,16,4,float,sum,-1,' "$(cat "$csv")"
    check "csv agv count" '^allgatherv,16,4,float,none,-1,' "$(cat "$csv")"
    check "csv a2av count" '^alltoallv,64,16,float,none,-1,' "$(cat "$csv")"
    nw=$(awk -F, 'NR > 1 && ($10 != "0" || $14 != "0") { n++ } END { print n + 0 }' "$csv")
    [ "$nw" -eq 0 ] && ok || bad "$nw CSV rows with a non-zero wrong count"
else
    bad "no CSV written"
fi

# -N (nonblocking, OSU osu_iallreduce style): every collective, --check, CSV and JSON;
# the table's columns, t_compute >= t_pure (the computation runs at least t_pure
# outside MPI_Test), overlap = max(0, 100 (1 - (t_total - t_compute) / t_pure))
nbcsv=$tmp/nb.csv nbjson=$tmp/nb.json
args=(-N -c all -b 8 -e 4K -f 8 -n 3 -w 1 --check --csv "$nbcsv" --json "$nbjson")
out=$($MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$bench" "${args[@]}" : \
               -n 2 -env MPIX_HIER_HOSTNAME b "$bench" "${args[@]}" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || { bad "-N run exit status $rc"; echo "$out" | tail -n 15; }
check "-N mode line" '^# mode: nonblocking \(-N\): t_pure = post \+ MPI_Wait; .*MPI_Test every 50 us' "$out"
check "-N overlap formula" '^#   overlap = max\(0, 100 \(1 - \(t_total - t_compute\) / t_pure\)\) %' "$out"
for c in allreduce:Iallreduce reduce_scatter_block:Ireduce_scatter_block allgather:Iallgather \
         bcast:Ibcast reduce:Ireduce allgatherv:Iallgatherv reduce_scatter:Ireduce_scatter \
         alltoall:Ialltoall alltoallv:Ialltoallv; do
    check "-N section ${c%%:*}" "^# Collective: ${c%%:*} \\(nonblocking: MPIX_Hier_${c#*:} vs MPI_${c#*:}; MPI_Test every 50 us of computation\\)\$" "$out"
done
check "-N columns" '^# +size +count +type +redop +root +t_total t_compute +t_pure overlap +#wrong +t_total t_compute +t_pure overlap +#wrong +hier/mpi$' "$out"
check "-N units" '^# +\(B\) +\(elements\) +\(us\) +\(us\) +\(us\) +\(%\) +\(us\) +\(us\) +\(us\) +\(%\) +\(t_pure\)$' "$out"
check "-N check verdict" '^# check: all results correct$' "$out"
# rows: 4 sizes (8, 64, 512, 4096 B) for allreduce, bcast, reduce, allgatherv; 3 for
# reduce_scatter_block, allgather, reduce_scatter, alltoall, alltoallv (8 B is 0 floats
# per rank on 4 ranks): 31 rows of 16 fields
rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float ' <<<"$out")
nrows=$(grep -c . <<<"$rows")
[ "$nrows" -eq 31 ] && ok || bad "-N: expected 31 table rows, got $nrows"
nbad=$(awk 'NF != 16 || $10 != "0" || $15 != "0" || $9 < 0 || $9 > 100 || $14 < 0 || $14 > 100 ||
            $8 <= 0 || $13 <= 0 { n++ } END { print n + 0 }' <<<"$rows")
[ "$nbad" -eq 0 ] && ok || { bad "-N: $nbad malformed rows (16 fields, #wrong 0, 0 <= overlap <= 100, t_pure > 0)"; echo "$rows"; }
if [ -f "$nbcsv" ]; then
    check "-N csv header" '^collective,size_bytes,count,type,redop,root,hier_total_us,hier_compute_us,hier_pure_us,hier_overlap_pct,hier_wrong,mpi_total_us,mpi_compute_us,mpi_pure_us,mpi_overlap_pct,mpi_wrong,hier_over_mpi$' "$(head -n 1 "$nbcsv")"
    n=$(($(wc -l <"$nbcsv") - 1))
    [ "$n" -eq 31 ] && ok || bad "-N: expected 31 CSV rows, got $n"
    # per implementation (columns 7-11 hier, 12-16 mpi): t_compute >= t_pure and the
    # overlap column recomputed from the times (0.5 % for the rounding)
    nbad=$(awk -F, 'NR > 1 { for (b = 7; b <= 12; b += 5) {
                        tot = $b; comp = $(b + 1); pure = $(b + 2); ov = $(b + 3)
                        want = 100 * (1 - (tot - comp) / pure); if (want < 0) want = 0
                        d = ov - want; if (d < 0) d = -d
                        if (comp < pure - 0.002 || d > 0.5 || $(b + 4) != "0") n++ } }
                    END { print n + 0 }' "$nbcsv")
    [ "$nbad" -eq 0 ] && ok || { bad "-N: $nbad CSV entries with t_compute < t_pure, a wrong overlap or wrong elements"; cat "$nbcsv"; }
else
    bad "-N: no CSV written"
fi
if [ -f "$nbjson" ]; then
    check "-N json mode" '"mode": "nonblocking",' "$(cat "$nbjson")"
    check "-N json fields" '"hier": \{"t_total_us": [0-9.]+, "t_compute_us": [0-9.]+, "t_pure_us": [0-9.]+, "overlap_pct": [0-9.]+, "wrong": 0\}' "$(cat "$nbjson")"
else
    bad "-N: no JSON written"
fi
# --test-interval 0: no MPI_Test, progress in MPI_Wait only; hier only
out=$($MPIEXEC -n 2 "$bench" --nonblocking --test-interval 0 --impl hier -c bcast -b 64 -e 64 \
      -n 2 -w 0 --check 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "--test-interval 0 exit status $rc"
check "--test-interval 0 header" 'MPI_Test every 0 us of computation: none, progress in MPI_Wait only\)$' "$out"
check "--test-interval 0 row" '^ +64 +16 +float +none +0 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+ +0 +N/A$' "$out"
# -N usage errors
out=$($MPIEXEC -n 1 "$bench" -N --batch 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "-N --batch: exit $rc, expected 2"
check "-N --batch message" 'does not apply to -N' "$out"
out=$($MPIEXEC -n 1 "$bench" -N --test-interval -5 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "--test-interval -5: exit $rc, expected 2"
check "--test-interval message" "bad --test-interval value '-5'" "$out"

# usage errors: non-zero exit and a message
out=$($MPIEXEC -n 1 "$bench" -c nosuchcoll 2>&1); rc=$?
[ $rc -ne 0 ] && ok || bad "bad -c exited 0"
check "bad -c message" "unknown collective 'nosuchcoll'" "$out"
out=$($MPIEXEC -n 1 "$bench" -d nosuchtype 2>&1); rc=$?
[ $rc -ne 0 ] && ok || bad "bad -d exited 0"
check "bad -d message" "unknown datatype 'nosuchtype'" "$out"
out=$($MPIEXEC -n 1 "$bench" -m cuda -e 1K -n 2 -w 1 --check 2>&1); rc=$?
if grep -q 'memory cuda' <<<"$out" && grep -q '^# check: all results correct' <<<"$out"; then
    [ $rc -eq 0 ] && ok || bad "-m cuda on a GPU exited $rc"   # a GPU is present
    out="no CUDA device on some rank: nothing measured"         # (for the check below)
else
    [ $rc -ne 0 ] && ok || bad "-m cuda without a GPU exited 0"
fi
check "cuda message" 'no CUDA device on some rank: nothing measured|built without CUDA' "$out"

# every datatype with --check, every collective, 2 fake nodes x 2 ranks
# (fp16/bf16: MPIX_HIER_FLOAT16/BFLOAT16; half is an alias)
# (sum for all; max too where the comparison is special: unsigned, half types)
for d in double long_double int unsigned long_long unsigned_short int8 uint8 int16 int32 \
         int64 uint64 fp16 bf16 half; do
    ops=sum
    case $d in unsigned|uint8|uint64|fp16|bf16) ops="sum max" ;; esac
    for op in $ops; do
        a=(-c all -d "$d" -o "$op" -b 8 -e 4K -f 4 -n 2 -w 1 --check)
        out=$($MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$bench" "${a[@]}" : \
                       -n 2 -env MPIX_HIER_HOSTNAME b "$bench" "${a[@]}" 2>&1); rc=$?
        if [ $rc -eq 0 ] && grep -q '^# check: all results correct$' <<<"$out"; then ok; else
            bad "-d $d -o $op --check: exit $rc"; echo "$out" | tail -n 15; fi
    done
done
out=$($MPIEXEC -n 1 "$bench" -d half -e 64 -n 1 -w 0 2>&1)
check "half is fp16" '^# ranks: 1, type fp16,' "$out"

# --plot: a PNG with gnuplot; without it a clear message, exit 3, the CSV written
png=$tmp/plot.png
a=(-c all -b 8 -e 4K -f 4 -n 2 -w 1 --plot "$png")
out=$($MPIEXEC -n 2 "$bench" "${a[@]}" 2>&1); rc=$?
if [ -s "$tmp/plot.csv" ] && [ "$(wc -l <"$tmp/plot.csv")" -gt 5 ]; then ok; else
    bad "--plot: no CSV data $tmp/plot.csv"; fi
if command -v gnuplot >/dev/null 2>&1; then
    [ $rc -eq 0 ] && ok || bad "--plot exit status $rc with gnuplot"
    if [ -s "$png" ] && [ "$(head -c 4 "$png" | od -An -c | tr -d ' ')" = '211PNG' ]; then ok; else
        bad "--plot: $png missing, empty or not a PNG"; echo "$out" | tail -n 5; fi
    check "plot line" "^# plot: $png " "$out"
else
    [ $rc -eq 3 ] && ok || bad "--plot without gnuplot: exit $rc, expected 3"
    check "no gnuplot message" 'gnuplot not found in PATH.*apt-get install gnuplot-nox' "$out"
    [ ! -e "$png" ] && ok || bad "--plot without gnuplot left $png"
    # the same with gnuplot hidden from PATH is tested on machines that have it
fi
if command -v gnuplot >/dev/null 2>&1; then # hide gnuplot: the message and exit 3
    nog=$tmp/nogp; mkdir -p "$nog"
    for t in "$(dirname "$(command -v "${MPIEXEC%% *}")")"/*; do ln -sf "$t" "$nog/" 2>/dev/null; done
    rm -f "$nog/gnuplot"
    out=$(PATH=$nog $MPIEXEC -n 1 "$bench" -e 64 -n 1 -w 0 --plot "$tmp/p2.png" 2>&1); rc=$?
    [ $rc -eq 3 ] && ok || bad "--plot with gnuplot hidden: exit $rc, expected 3"
    check "hidden gnuplot message" 'gnuplot not found in PATH.*apt-get install gnuplot-nox' "$out"
    [ -s "$tmp/p2.csv" ] && ok || bad "--plot with gnuplot hidden: no CSV"
fi

# nccl-tests' format (--nccl-tests): what scripts written for nccl-tests parse (the
# 'out-of-place' head, rows of 13 fields with the out-of-place busbw at $8 and the in-place
# one at $12, the closing lines), its -c CHECK and -g/-t flags, NCCL_TESTS_MIN_BW
args=(--nccl-tests -c all -b 64 -e 4K -f 4 -n 2 -w 1 -c 1 -g 1 -t 1)
out=$($MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$bench" "${args[@]}" : \
               -n 2 -env MPIX_HIER_HOSTNAME b "$bench" "${args[@]}" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || { bad "--nccl-tests exit status $rc"; echo "$out" | tail -n 15; }
check "nccl nThread line" '^# nThread 1 nGpus 1 minBytes 64 maxBytes 4096 step: 4\(factor\) warmup iters: 1 iters: 2 agg iters: 1 validation: 1 graph: 0$' "$out"
check "nccl head" '^#  .* out-of-place \(hier\) .* in-place \(hier\)$' "$out"
check "nccl columns" '^# +size +count +type +redop +root +time +algbw +busbw +#wrong +time +algbw +busbw +#wrong$' "$out"
check "nccl oob" '^# Out of bounds values : 0 OK$' "$out"
check "nccl avg" '^# Avg bus bandwidth    : [0-9.e+-]+ $' "$out"
check "nccl -c 1 checks" '^# check: all results correct$' "$out"
rows=$(grep -E '^ +[0-9]+ +[0-9]+ +float ' <<<"$out")
# 4 sizes x 9 collectives, less 64 B of the per-rank and per-pair forms on 4 ranks: none
n13=$(awk 'NF == 13 && $9 == "0" && ($13 == "0" || $13 == "N/A") && $8 + 0 >= 0 { n++ } END { print n + 0 }' <<<"$rows")
nrows=$(grep -c . <<<"$rows")
[ "$nrows" -eq 36 ] && [ "$n13" -eq 36 ] && ok || { bad "--nccl-tests: $nrows rows, $n13 of 13 fields with #wrong 0"; echo "$rows" | head; }
inpl=$(awk '$12 != "N/A" && $13 == "0" { n++ } END { print n + 0 }' <<<"$rows")
[ "$inpl" -eq 32 ] && ok || bad "--nccl-tests: $inpl in-place measurements, expected 32 (alltoallv has none)"
# superbench's parse: the rows from the head's line + 4 to the closing line, busbw at [-6]
python3 - "$out" <<'PY' && ok || bad "--nccl-tests: a nccl-tests parser could not read the table"
import re, sys
lines = sys.argv[1].splitlines()
head = [i for i, l in enumerate(lines) if "out-of-place" in l][0]
end = [i for i, l in enumerate(lines) if "Out of bounds values" in l][0]
bw = [float(re.sub(" +", " ", l.strip()).split(" ")[-6]) for l in lines[head + 3:end]
      if len(l.split()) == 13]
assert len(bw) >= 4 and all(b >= 0 for b in bw), bw
PY
out=$(NCCL_TESTS_MIN_BW=1e9 $MPIEXEC -n 2 "$bench" --nccl-tests -e 64 -n 1 -w 0 2>&1); rc=$?
[ $rc -eq 1 ] && ok || bad "NCCL_TESTS_MIN_BW=1e9: exit $rc, expected 1"
check "min bw verdict" '^# Avg bus bandwidth    : [0-9.e+-]+ FAILED$' "$out"
out=$($MPIEXEC -n 1 "$bench" -g 2 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "-g 2: exit $rc, expected 2"
check "-g 2 message" 'one GPU and one thread per MPI rank' "$out"
out=$($MPIEXEC -n 1 "$bench" --nccl-tests --impl hier,mpi 2>&1); rc=$?
[ $rc -eq 2 ] && ok || bad "--nccl-tests with two implementations: exit $rc, expected 2"
# the default table closes with the same lines, MPI's mean beside
out=$($MPIEXEC -n 2 "$bench" -e 256 -n 1 -w 0 -c 0 2>&1)
check "default avg" '^# Avg bus bandwidth    : [0-9.e+-]+ \(hier; mpi: [0-9.e+-]+\)$' "$out"
check "default -c 0" '^# check: off' "$out"

echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
