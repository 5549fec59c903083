#!/bin/bash
# mpix_doctor on an emulated cluster (benchmarks/emu/emu.sh, see its README): N trials
# with one link direction slowed by FACTOR on a random host/rail/direction (a different
# random choice each), then M trials healthy. PASS when the JSON names exactly that host,
# rail and direction (degraded) or nothing (healthy, exit 0), and the job's exit status is
# the doctor's (3 / 0; IGNORE_RC=N also accepts N, e.g. the launcher's own). Needs the
# cluster up.
#
#   EMU=/path/emu.sh EMU_ID=6 DOCTOR=build/src/tools/mpix_doctor trials.sh N M [FACTOR] [DOCTOR ARGS]
set -u
EMU=${EMU:?EMU=/path/to/emu.sh}
DOCTOR=$(readlink -f "${DOCTOR:-build/src/tools/mpix_doctor}")
N=${1:-10} M=${2:-10} F=${3:-4}
shift $(($# < 3 ? $# : 3))
ARGS=("$@")
out=${OUT:-/tmp/doctor_trials.$EMU_ID}
mkdir -p "$out"
eval "$("$EMU" status | awk '/cluster/ { sub(/.*rail, /, ""); split($0, a, " "); print "HOSTS=" a[1] "; GPUS=" a[4] }')"
prefix=emu$EMU_ID-h
pass=0 fail=0
trial() { # trial NAME EXPECT(host rail dir | healthy)
    local name=$1 expect=$2 t0 t1 rc
    t0=$(date +%s.%N)
    "$EMU" run --timeout 150 -- "$DOCTOR" --json "$out/$name.json" "${ARGS[@]}" >"$out/$name.txt" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    local verdict
    verdict=$(python3 - "$out/$name.json" "$expect" "$rc" "${IGNORE_RC:-x}" <<'PY'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    print("FAIL no-json", e); sys.exit()
exp, rc = sys.argv[2], sys.argv[3]
f = [(x["host"], x["rail"], x["dir"]) for x in d["findings"]]
if exp == "healthy":
    ok = not f and d["exit_code"] == 0 and rc in ("0", sys.argv[4])
else:
    h, r, dr = exp.split()
    ok = f == [(h, int(r), dr)] and d["exit_code"] == 3 and rc in ("3", sys.argv[4])
print(("PASS" if ok else "FAIL"), "findings=%s rc=%s sweep=%.1fs exclude=%s" % (f, rc, d["sweep_seconds"], d["exclude_rails"]))
PY
)
    printf '%-10s expect %-22s %s wall=%.1fs\n' "$name" "$expect" "$verdict" "$(echo "$t1 - $t0" | bc)"
    case $verdict in PASS*) pass=$((pass + 1)) ;; *) fail=$((fail + 1)) ;; esac
}
used=" "
for ((i = 1; i <= N; i++)); do
    while :; do # a different random (host, rail, direction) each trial, while there are some
        h=$((RANDOM % HOSTS)) r=$((RANDOM % GPUS)) d=$([ $((RANDOM % 2)) = 0 ] && echo tx || echo rx)
        [[ $used == *" $h.$r.$d "* ]] && ((${#used} < HOSTS * GPUS * 2 * 8)) || break
    done
    used+="$h.$r.$d "
    "$EMU" heal
    "$EMU" degrade "$h" "$r" "$d" "$F" 2>/dev/null
    trial "deg$i" "$prefix$h $r $d"
done
"$EMU" heal
for ((i = 1; i <= M; i++)); do trial "ok$i" healthy; done
echo "passed $pass, failed $fail (logs in $out)"
[ $fail -eq 0 ]
