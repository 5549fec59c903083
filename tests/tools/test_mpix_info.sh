#!/bin/bash
# mpix_info as a user runs it: on real servers' exports, as JSON, and under mpiexec.
set -u
info=${MPIX_INFO:-$(pwd)/../src/tools/mpix_info}
data=${MXH_TEST_DATADIR:-$(cd "$(dirname "$0")/../data" && pwd)}/topologies
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=120
unset MPIX_HIER_HWLOC_XML MPIX_HIER_NCCL_TOPO_FILE NCCL_TOPO_FILE HWLOC_XMLFILE MPIX_HIER_GPU_BUSID
npass=0; nfail=0
check() { # check NAME EXPECTED-REGEX OUTPUT
    if grep -Eq -- "$2" <<<"$3"; then npass=$((npass + 1)); else
        nfail=$((nfail + 1)); echo "FAIL: $1: no match for /$2/ in:"; echo "$3" | head -n 40; fi
}
same() { # same NAME EXPECTED ACTUAL
    if [ "$2" = "$3" ]; then npass=$((npass + 1)); else
        nfail=$((nfail + 1)); echo "FAIL: $1: expected '$2', got '$3'"; fi
}
vars() { grep -Ec '^[A-Z][A-Z0-9_]*=' <<<"$1"; } # the NAME=value lines of an output
# the environment without any MPIX_HIER_*: a caller's would show as a changed variable
clean=(env)
for v in $(compgen -e -- MPIX_HIER_); do clean+=(-u "$v"); done

# the default summary: the machine, no hierarchy (one process), no variable at its default
out=$("${clean[@]}" "$info" --hwloc-xml "$data/coral-ea-hwloc1.xml" 2>&1)
check "coral GPUs" 'GPUs: 4' "$out"
check "coral rail 1" 'rail 1 +mlx5_1 +0004:01:00.0 .*serves GPUs: 2, 3' "$out"
check "coral gpu 0 rail" 'gpu 0 +0002:01:00.0 .*rail 0 \(mlx5_0' "$out"
check "summary one process" '^none: one process' "$out"
same "summary no variables at their defaults" 0 "$(vars "$out")"
check "summary says none changed" '^none: every variable at its default$' "$out"
check "summary hint" '^# .*: mpix_info -c --all$' "$out"
# one variable set: exactly its line, with its value and default (as -c prints them)
out=$("${clean[@]}" MPIX_HIER_FRAG_SIZE=4m "$info" --hwloc-xml "$data/coral-ea-hwloc1.xml" 2>&1)
check "summary changed variable" '^MPIX_HIER_FRAG_SIZE=4194304 \(default 8388608\)$' "$out"
same "summary only the changed variable" 1 "$(vars "$out")"
check "summary hint after a change" '^# .*: mpix_info -c --all$' "$out"
# -c: the users' variables with docs; --all: every one, which --markdown and --json list
out=$("${clean[@]}" "$info" -c 2>&1)
check "-c lists user variables" '^MPIX_HIER_TOPO_FILE=$' "$out"
nuser=$(vars "$out")
nall=$(vars "$("${clean[@]}" "$info" -c --all 2>&1)")
nrows=$("$info" -c --markdown | grep -c '^| `MPIX_HIER_')
[ "$nall" -gt "$nuser" ] && npass=$((npass + 1)) ||
    { nfail=$((nfail + 1)); echo "FAIL: -c --all lists $nall variables, -c $nuser"; }
same "-c --all lists every variable" "$nrows" "$nall"

out=$("$info" --hwloc-xml "$data/nvidiaDGX2.xml" 2>&1)
check "dgx2 islands" 'gpu 8 +0000:b7:00.0 .*nvlink island 1' "$out"
check "dgx2 no nic" 'NICs \(rails, in PCI bus order\): 0' "$out"

out=$("$info" --nccl-topo "$data/p4d-24xl-topo.xml" 2>&1)
check "p4d shared EFA" 'serves GPUs: 0, 1$' "$out"

out=$("$info" --hwloc-xml "$data/cts1-quartz-smt1.xml" 2>&1)
check "quartz cpu only" 'GPUs: 0' "$out"
check "quartz hfi" 'hfi1_0' "$out"

out=$("$info" --hwloc-xml "$data/does-not-exist.xml" 2>&1); rc=$?
check "missing file names it" 'does-not-exist.xml' "$out"
[ $rc -ne 0 ] && npass=$((npass + 1)) || { nfail=$((nfail + 1)); echo "FAIL: missing file exit 0"; }

# --version: no MPI_Init, the package version (the one --json reports) and the MPI library's
out=$("$info" --version 2>&1); rc=$?
check "--version package" '^mpix_info \(mpix-hier\) [0-9]+\.[0-9]+\.[0-9]+$' "$out"
check "--version mpi" '^MPI library: [^ ].*[0-9]' "$out"
[ $rc -eq 0 ] && npass=$((npass + 1)) || { nfail=$((nfail + 1)); echo "FAIL: --version exit $rc"; }
ver=$(sed -n 's/^mpix_info (mpix-hier) //p' <<<"$out")
check "--version = --json version" "^\{\"version\": \"${ver:-none}\",$" "$("$info" -c --json 2>/dev/null | head -n 1)"

out=$("$info" -c 2>&1)
check "-c documents" '# default: .yes.; must be equal on all ranks' "$out"

out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR "$info" --explain allreduce 256M --nodes 16 --gpus 8 2>&1)
check "explain bound" 'bound \(busiest link.s bytes, no latency\): 1310.72 us' "$out"
check "explain candidates" '^  pipeline +plan +8 MiB +2 +36 ' "$out"
# auto on a flat network: both ramps of every fragment size (sched.h MXH_SCHED_RAMP_PICK)
check "explain linear ramp" '^  pipeline +plan +8 MiB +linear +39 ' "$out"
# the choice of the unpaced model; paced (what the default auto picks here) the model picks
# 512 KiB fragments, which the simulation runs 10 % slower than 8 MiB with its 2 us poll
# step and as fast at 0.25 us (benchmarks/RESULTS.md, "The cost model's paced third
# fragment and small fragments")
out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR MPIX_HIER_PIPELINE_PACE=no \
    "$info" --explain allreduce 256M --nodes 16 --gpus 8 2>&1)
check "explain choice" '^model: pipeline, fragments of [0-9]+ MiB' "$out"
check "explain today" '^today: pipeline, fragments of 8 MiB .*36 fragment' "$out"
out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR "$info" --explain bcast 256M --nodes 16 --gpus 8 2>&1)
check "explain bcast bound" 'bound \(busiest link.s bytes, no latency\): 725.50 us' "$out"
# 32 fragments and the head ramp's 2 more pieces: bcast has no tail ramp (sched.h)
check "explain bcast today" '^today: pipeline, fragments of 8 MiB .*34 fragment' "$out"
# a 4x2x2 torus of nodes (the library's torus levels): every rail's link share, the
# torus_links bound of run_sim.py (2 x 15/16 x 256 MiB / 256 GB/s), bcast not modelled
out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR "$info" --explain allreduce 256M --nodes 16 --gpus 8 --torus 4x2x2 2>&1)
check "explain torus levels" '^# torus x4 x y2 x z2, network levels per rail: 0:y x z, 1:x- z y' "$out"
check "explain torus shares" '^#     rail 1: 8, 370; 4, 48; 2, 48; 2, 16;' "$out"
check "explain torus bound" 'bound \(busiest link.s bytes, no latency\): 1966.08 us' "$out"
check "explain torus today" '^today: pipeline, fragments of 8 MiB .*36 fragment' "$out"
out=$("$info" --explain bcast 256M --nodes 16 --gpus 8 --torus 4x2x2 2>&1)
check "explain torus bcast" 'not modelled \(bcast and reduce on torus levels' "$out"
out=$("$info" --explain allgather 16 --nodes 2 --gpus 4 2>&1)
check "explain not modelled" 'not modelled' "$out"
# small allreduces on node x rail x spine: the spread plan (6 us: node, spine, node
# latencies) beside the latency plan (7 us: node, rail, spine), MPIX_HIER_SPREAD=no its own
out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR "$info" --explain allreduce 8 --nodes 128 --gpus 8 --leaves 4 2>&1)
check "explain spread" '^  hier +plan +- +- +1 +6\.00 ' "$out"
check "explain spread latency" '^  hier +latency +- +- +1 +7\.01 ' "$out"
out=$(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR MPIX_HIER_SPREAD=no "$info" --explain allreduce 8 --nodes 128 --gpus 8 --leaves 4 2>&1)
check "explain spread off" '^today: hier .*7\.01 us' "$out"

# --parallel: the level each dimension's groups span (the placement's, exact), the model's
# figures for one group (tp: one node's 8 GPUs, 64 MiB: busbw = 2 (p-1)/p x 64 MiB / time),
# the naive orders beside it; with leaves the outermost crosses the spine
nofactors=(env -u MPIX_HIER_COST_LAT_FACTOR -u MPIX_HIER_COST_BW_FACTOR)
out=$("${nofactors[@]}" "$info" --parallel tp=8,pp=2,dp=2 --nodes 4 --gpus 8 2>&1); rc=$?
same "parallel exit status" 0 $rc
check "parallel header" '^# Parallel groups on 4 nodes x 8 GPUs, 1 leaf group \(32 ranks\): tp=8 pp=2 dp=2 \(innermost first\)$' "$out"
check "parallel tp node" '^placement +tp +8 +node +368\.8 +318\.4 +367\.7 +159\.7$' "$out"
check "parallel pp leaf" '^placement +pp +2 +leaf +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$out"
check "parallel dp leaf" '^placement +dp +2 +leaf +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' "$out"
check "parallel naive block order" '^naive-block +tp +8 +node .* 1\.00 1\.00$' "$out"
check "parallel naive round robin" '^naive-rr +tp +8 +leaf +111\.0 +1058\.2 .* 3\.32 3\.32$' "$out"
check "parallel naive round robin pp" '^naive-rr +pp +2 +node ' "$out"
out=$("$info" --parallel tp=8,pp=4,dp --nodes 8 --gpus 8 --leaves 2 --bytes 1m 2>&1)
check "parallel bytes" '^# per group: allreduce and all-gather of 1 MiB ' "$out"
same "parallel spans with leaves" "node leaf spine spine" \
    "$(awk '$1 == "placement" && $2 == "tp" {a = $4} $1 == "placement" && $2 == "pp" {b = $4}
            $1 == "placement" && $2 == "dp" {c = $4} $1 == "naive-rr" && $2 == "tp" {d = $4}
            END {print a, b, c, d}' <<<"$out")"
# sizes that do not fit a node (4 x 3 GPUs of 8): the reason, exit 1, the naive orders
out=$("$info" --parallel tp=4,pp=3,dp=2 --nodes 3 --gpus 8 2>&1); rc=$?
same "parallel no placement exit status" 1 $rc
check "parallel no placement reason" '^mpix_info: --parallel: no placement: dimension 1: groups of 12 consecutive ranks \(the sizes up to it\) split a node$' "$out"
check "parallel no placement row" '^placement +no placement: dimension 1: ' "$out"
check "parallel no placement naive" '^naive-block +tp +4 +node ' "$out"
check "parallel not modelled why" '^# naive-block pp not modelled: the group.s ranks are not a grid' "$out"
out=$("$info" --parallel tp=5,dp --nodes 4 --gpus 8 2>&1); rc=$?
same "parallel sizes exit status" 1 $rc
check "parallel sizes reason" "^mpix_info: --parallel: no placement: the sizes' product \(without the rest\) 5 does not divide the 32 ranks$" "$out"
out=$("$info" --parallel tp=8,,dp --nodes 4 --gpus 8 2>&1); rc=$?
same "parallel malformed exit status" 2 $rc
check "parallel malformed" "cannot read 'tp=8,,dp'" "$out"

out=$("$info" -m 2>&1)
check "-m metrics" '^mpix_hier_fallbacks_total counter \{coll,blocking,reason\}' "$out"
check "-m reasons" '^  user_op +a user-defined reduction operation' "$out"
check "-m variables" 'MPIX_HIER_METRICS_FILE=' "$("$info" -c 2>&1)"

if command -v python3 >/dev/null 2>&1; then
    out=$("$info" --json --hwloc-xml "$data/g4dnmetal.xml" 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin); m=d["machine"]; print(len(m["gpus"]), m["nics"][0]["name"], m["nics"][0]["gpus"])' 2>&1)
    check "json g4dn" '^8 rdmap197s0 \[0, 1, 2, 3, 4, 5, 6, 7\]$' "$out"
    # --json has every variable (the summary's changes among them) and the metrics
    out=$("${clean[@]}" MPIX_HIER_FRAG_SIZE=4m "$info" --json --hwloc-xml "$data/g4dnmetal.xml" 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin); c=d["config"]; f=[v for v in c if v["name"]=="MPIX_HIER_FRAG_SIZE"][0]; print(len(c), sum(v["user"] for v in c), f["value"], f["set"], len(d["metrics"]["families"]))' 2>&1)
    same "json every variable" "$nrows $nuser 4194304 True 10" "$out"
    out=$("$info" -m --json 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin)["metrics"]; print(len(d["families"]), d["label_values"]["level"])' 2>&1)
    check "json metrics" "^10 \['node', 'rail', 'spine', 'island'\]$" "$out"
    out=$("$info" --parallel tp=8,pp=2,dp --nodes 4 --gpus 8 --json 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin)["parallel"]; print(d["ranks"], d["placement"]["ok"], [(o["order"], [(x["name"], x["size"], x["span"]) for x in o["dims"]]) for o in d["orders"]], round(d["orders"][0]["dims"][0]["allreduce"]["busbw_GBps"], 1))' 2>&1)
    same "json parallel" "32 True [('placement', [('tp', 8, 'node'), ('pp', 2, 'leaf'), ('dp', 2, 'leaf')]), ('naive-block', [('tp', 8, 'node'), ('pp', 2, 'leaf'), ('dp', 2, 'leaf')]), ('naive-rr', [('tp', 8, 'leaf'), ('pp', 2, 'node'), ('dp', 2, 'node')])] 368.8" "$out"
    out=$("$info" --parallel tp=4,pp=3,dp=2 --nodes 3 --gpus 8 --json 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin)["parallel"]; print(d["placement"]["ok"], d["placement"]["why"], [o["order"] for o in d["orders"]], d["orders"][0]["dims"][1]["allreduce"])' 2>&1)
    same "json parallel no placement" "False dimension 1: groups of 12 consecutive ranks (the sizes up to it) split a node ['naive-block', 'naive-rr'] None" "$out"
fi

if command -v "${MPIEXEC%% *}" >/dev/null 2>&1; then
    # the summary: a line per level, rank 0's changed variable, no plans (--hier has them)
    out=$("${clean[@]}" $MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$info" : -n 2 -env MPIX_HIER_HOSTNAME b "$info" 2>&1)
    check "mpiexec summary levels" '^hierarchy: 4 ranks, 2 nodes' "$out"
    check "mpiexec summary rail" '^  level 1 rail +top +2 groups of 2: \{0,2\} \{1,3\}$' "$out"
    check "mpiexec summary variable" "^MPIX_HIER_HOSTNAME=a \(default ''\)$" "$out"
    same "mpiexec summary no plans" 0 "$(grep -c -e '^# Plan' -e '^  node ' <<<"$out")"
    # no measurement of the network: the algorithms by size are the configured figures,
    # not a timing of this (maybe busy) machine, which may move a threshold or cap fragments
    nomeasure=(-genv MPIX_HIER_COST_MEASURE no)
    out=$("${clean[@]}" $MPIEXEC "${nomeasure[@]}" -n 2 -env MPIX_HIER_HOSTNAME a "$info" --hier --count 1000 : -n 2 -env MPIX_HIER_HOSTNAME b "$info" --hier --count 1000 2>&1)
    check "mpiexec hierarchy" 'level 1 rail +top +2 groups of 2: \{0,2\} \{1,3\}' "$out"
    check "mpiexec hierarchy nodes" '^  node b +leaf - +ranks 2\(rail 0\) 3\(rail 1\)' "$out"
    check "mpiexec plan" 'Plan of rank 0: allreduce count=1000' "$out"
    check "mpiexec algorithms" 'allreduce +\[0 B, 16 MiB\) hier; \[16 MiB, inf\) pipeline \(fragments of 8 MiB\)' "$out"
    out=$("${clean[@]}" $MPIEXEC "${nomeasure[@]}" -n 2 -env MPIX_HIER_HOSTNAME a "$info" --json : -n 2 -env MPIX_HIER_HOSTNAME b "$info" --json 2>/dev/null |
          python3 -c 'import json,sys; d=json.load(sys.stdin); print([l["name"] for l in d["hierarchy"]["levels"]], len(d["plans"]), d["algorithms"]["bcast"])' 2>&1)
    check "mpiexec json" "^\['node', 'rail'\] 5 \[0 B, 16 MiB\) hier; " "$out"
    # --parallel on MPI_COMM_WORLD, ranks alternating between nodes a and b: placed, tp is
    # one node's pair; in MPI_COMM_WORLD order it is ranks 0 and 1, on a and b
    ab=(-n 1 -env MPIX_HIER_HOSTNAME a "$info" --parallel tp=2,dp :
        -n 1 -env MPIX_HIER_HOSTNAME b "$info" --parallel tp=2,dp)
    out=$("${nofactors[@]}" $MPIEXEC "${nomeasure[@]}" "${ab[@]}" : "${ab[@]}" 2>&1)
    check "mpiexec parallel header" "^# Parallel groups on MPI_COMM_WORLD's hierarchy, 2 nodes, 1 leaf group \(4 ranks\)" "$out"
    check "mpiexec parallel placed" '^placement +tp +2 +node ' "$out"
    check "mpiexec parallel naive" '^naive +tp +2 +leaf .* [0-9.]+ [0-9.]+$' "$out"
fi
echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
