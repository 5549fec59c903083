#!/bin/bash
# mpix_doctor as a user runs it, on 2 fake nodes x 2 ranks: the report, the JSON and its
# documented fields (README: mpix_doctor), exit status 0. The floors are loose here: the
# fake nodes' "network" is shared memory on busy cores; detection itself is tested on
# synthetic matrices (unit/test_doctor_stats) and on the emulated cluster
# (benchmarks/doctor/trials.sh).
set -u
doctor=${MPIX_DOCTOR:-$(pwd)/../src/tools/mpix_doctor}
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=180
command -v "${MPIEXEC%% *}" >/dev/null 2>&1 || { echo "SKIP: $MPIEXEC not found"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not found"; exit 77; }
unset MPIX_HIER_HOSTNAME MPIX_HIER_EXCLUDE_RAILS
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(--json "$tmp/d.json" --png "$tmp/d.png" --floor 0.2 --node-floor 0.05 --target 0.03)
out=$($MPIEXEC -n 2 -env MPIX_HIER_HOSTNAME a "$doctor" "${args[@]}" : \
      -n 2 -env MPIX_HIER_HOSTNAME b "$doctor" "${args[@]}" 2>&1); rc=$?
nfail=0
check() { grep -Eq -- "$1" <<<"$out" || { echo "FAIL: no /$1/ in the report"; nfail=$((nfail + 1)); }; }
[ $rc -eq 0 ] || { echo "FAIL: exit status $rc (0 expected)"; nfail=$((nfail + 1)); }
check '^\[rail\] 1 rounds, 4 transfers'
check '^\[spine\] '
check '^\[node\] '
check '^VERDICT: healthy$'
check '^sweep [0-9.]+ s$'
python3 - "$tmp/d.json" <<'PY' || nfail=$((nfail + 1))
import json, sys
d = json.load(open(sys.argv[1]))
assert d["tool"] == "mpix_doctor" and d["schema_version"] == 1, d.get("tool")
assert d["ranks"] == 4 and d["hosts"] == 2 and d["rails"] == 2
for k in ("k", "floor", "node_floor", "reps", "target_seconds", "max_size", "confirm"):
    assert k in d["params"], k
assert [r["rail"] for r in d["rank_info"]] == [0, 1, 0, 1]
assert all(set(r) >= {"rank", "host", "node", "node_index", "rail", "local_index", "iface"} for r in d["rank_info"])
assert [l["name"] for l in d["levels"]] == ["rail", "spine", "node"]
for l in d["levels"]:
    assert l["median_bw"] > 0 and l["bytes"] > 0 and len(l["transfers"]) == 4, l["name"]
    assert set(l["busbw"]) >= {"collective", "ranks", "bytes", "expected", "measured"}
    for p in l["ports"]:
        assert p["dir"] in ("tx", "rx") and set(p) >= {"rank", "host", "rail", "iface", "median_bw", "samples", "ratio", "suspect"}
assert d["outliers"] == [] and d["findings"] == [] and d["exclude_rails"] == []
assert d["healthy"] is True and d["exit_code"] == 0 and d["sweep_seconds"] > 0
print("json ok")
PY
if command -v gnuplot >/dev/null 2>&1; then
    [ -s "$tmp/d.png" ] || { echo "FAIL: no PNG"; nfail=$((nfail + 1)); }
fi
[ $nfail -eq 0 ] || echo "$out" | tail -40
echo "$nfail failures"
[ $nfail -eq 0 ]
