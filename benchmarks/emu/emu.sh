#!/bin/bash
# emu.sh: an emulated rail-optimized cluster on one Linux machine (root), for
# mpix-hier's benchmarks and tests. See README.md next to this script.
#
#   emu.sh up [-H HOSTS] [-g RANKS] [--variant rail|generic] [--rate R]
#             [--spine-rate R] [--delay D] [--loss P]     create (idempotent)
#   emu.sh run [--timeout S] [--grace S] [--np N] [--stats] [--round-robin] -- PROG ARGS...
#                                   run PROG under mpiexec, g ranks per host (rank r
#                                   on host r % H with --round-robin)
#   emu.sh stats                    byte counters of every shaped link
#   emu.sh degrade HOST RAIL tx|rx FACTOR   divide one link's rate by FACTOR
#   emu.sh heal [HOST RAIL tx|rx]   undo degradations (all, or one)
#   emu.sh status                   hosts, rails, rates, degradations
#   emu.sh hosts                    the mpiexec host list (h0:g,h1:g,...)
#   emu.sh exec HOST RAIL -- CMD... run CMD on HOST in RAIL's net namespace
#                                   (e.g. ss -tin; generic variant: RAIL 0)
#   emu.sh down                     remove everything of this EMU_ID (idempotent)
#
# Parameters also come from the environment: EMU_ID (0..7, default 0; picks the
# names and a /18 of 198.18.0.0/15 so clusters coexist), EMU_HOSTS, EMU_GPUS,
# EMU_VARIANT, EMU_RATE, EMU_SPINE_RATE, EMU_DELAY, EMU_LOSS.
#
# Internal entry points (called by mpiexec through the files in the state dir):
#   emu.sh _launch -x HOST CMD...   Hydra's "ssh": runs CMD inside HOST
#   emu.sh _rank PROG ARGS...       a rank: enters its (host, rail) namespace
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
EMU_ID=${EMU_ID:-0}
STATE_ROOT=${EMU_STATE_ROOT:-/run/mpix-emu}
STATE=$STATE_ROOT/$EMU_ID
P=emu$EMU_ID # prefix of every namespace name of this cluster

die() { echo "emu.sh: error: $*" >&2; exit 1; }
note() { echo "emu.sh: $*" >&2; }

case $EMU_ID in [0-7]) ;; *) die "EMU_ID must be 0..7 (got '$EMU_ID')" ;; esac

# ---- addresses: EMU_ID i owns 198.18.0.0/15's i-th /18 (64 /24 subnets):
# subnet 0: management (mpiexec <-> Hydra proxies, unshaped); subnet 1+r: rail r
# (generic variant: subnet 1, the one switch). Host h is .(h+1), routers .254.
subnet() { # subnet K -> "A.B.C" (the /24's first three octets)
    local third=$((EMU_ID * 64 + $1))
    echo "198.$((18 + third / 256)).$((third % 256))"
}

# ---- rates: numbers in bit/s; tc gets "<n>bit"
to_bps() { # to_bps 200mbit|1gbit|500kbit|12345 -> bit/s
    local v=${1,,} n u
    [[ $v =~ ^([0-9]+)(bit|kbit|mbit|gbit)?$ ]] || die "bad rate '$1' (use e.g. 200mbit)"
    n=${BASH_REMATCH[1]} u=${BASH_REMATCH[2]}
    case $u in
        kbit) echo $((n * 1000)) ;; mbit) echo $((n * 1000000)) ;;
        gbit) echo $((n * 1000000000)) ;; *) echo "$n" ;;
    esac
}
human() { # bit/s -> "200Mbit"
    local b=$1
    if ((b % 1000000000 == 0)); then echo "$((b / 1000000000))Gbit"
    elif ((b >= 1000000)); then awk -v b="$b" 'BEGIN { printf "%gMbit", b / 1e6 }'
    else awk -v b="$b" 'BEGIN { printf "%gkbit", b / 1e3 }'; fi
}

nsx() { nsenter --net="/run/netns/$1" -- "${@:2}"; } # run a command in a named net ns

# ---- state ----------------------------------------------------------------
load_params() {
    [ -f "$STATE/params" ] || die "cluster $EMU_ID is not up (emu.sh up first)"
    # shellcheck source=/dev/null
    . "$STATE/params"
}
host_ns() { # host_ns H R -> the net namespace of host H's rail R (generic: its NIC)
    if [ "$VARIANT" = generic ]; then echo "$P-h$1n"; else echo "$P-h$1r$2"; fi
}
host_if() { if [ "$VARIANT" = generic ]; then echo nic0; else echo "rail$1"; fi; }
sw_ns() { if [ "$VARIANT" = generic ]; then echo "$P-sw"; else echo "$P-leaf$1"; fi; }

# ---- shaping: a tbf on the egress of a veth end; netem first when present ----
netem_args() { # the netem arguments for DELAY/LOSS, empty when neither is set
    local a=()
    if [ "$DELAY" != 0 ]; then a+=(delay "$DELAY"); fi
    if [ "$LOSS" != 0 ]; then a+=(loss "$LOSS"); fi
    echo "${a[*]}"
}
shape() { # shape NS DEV BPS: (re)apply the qdiscs of one link direction
    local ns=$1 dev=$2 bps=$3 burst ne
    # burst: 5 ms at the rate, at least 32 KiB (several MTU; GSO packets are
    # segmented by tbf); latency: how long a packet may wait in the queue
    burst=$((bps / 8 / 200))
    ((burst < 32768)) && burst=32768
    ne=$(netem_args)
    nsx "$ns" tc qdisc del dev "$dev" root 2>/dev/null || true
    if [ -n "$ne" ] && [ "$NETEM" = yes ]; then
        # shellcheck disable=SC2086 # ne: several words
        nsx "$ns" tc qdisc add dev "$dev" root handle 1: netem $ne
        nsx "$ns" tc qdisc add dev "$dev" parent 1:1 handle 10: tbf rate "${bps}bit" \
            burst "$burst" latency "${EMU_QUEUE:-100ms}"
    else
        nsx "$ns" tc qdisc add dev "$dev" root handle 10: tbf rate "${bps}bit" \
            burst "$burst" latency "${EMU_QUEUE:-100ms}"
    fi
}
probe_netem() { # yes when this kernel has the netem qdisc (tried on a scratch veth)
    local ns=$P-mgmt
    nsx "$ns" ip link add name emu-probe0 type veth peer name emu-probe1 2>/dev/null || { echo no; return; }
    if nsx "$ns" tc qdisc add dev emu-probe0 root netem delay 1ms 2>/dev/null; then echo yes
    else echo no; fi
    nsx "$ns" ip link del emu-probe0 2>/dev/null || true
}

# ---- up -------------------------------------------------------------------
addns() { # addns NS: a net namespace, lo up, no IPv6 (no neighbour discovery noise in the counters)
    ip netns add "$1"
    ip -n "$1" link set dev lo up
    nsx "$1" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1
}
veth() { # veth NS1 IF1 NS2 IF2: a veth pair between two namespaces, both ends up
    ip -n "$1" link add name "$2" type veth peer name "$4" netns "$3"
    ip -n "$1" link set dev "$2" up
    ip -n "$3" link set dev "$4" up
}
bridge() { # bridge NS: the namespace's bridge "br0" (a switch), up
    ip -n "$1" link add name br0 type bridge
    ip -n "$1" link set dev br0 up
}

start_host() { # start_host H: the host's UTS, IPC and mount namespaces, held by a sleep
    local h=$1 name=$P-h$1
    # slave propagation: net namespaces added later under /run/netns stay
    # visible; a private tmpfs on /dev/shm separates this host's shared memory
    setsid unshare -u -i -m --propagation slave -- /bin/bash -c \
        "hostname $name && mount -t tmpfs -o mode=1777 emu-shm /dev/shm && exec sleep infinity" \
        </dev/null >/dev/null 2>&1 9>&- &
    local pid=$! _
    for _ in $(seq 50); do
        [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$name" ] &&
            nsenter -t "$pid" -m -- grep -q ' /dev/shm tmpfs' /proc/self/mounts 2>/dev/null && break
        sleep 0.1
    done
    [ "$(nsenter -t "$pid" -u hostname 2>/dev/null)" = "$name" ] || die "host $name did not start"
    echo "$pid $(readlink "/proc/$pid/ns/uts")" >"$STATE/host$h.pid"
}
host_pid() { # host_pid H: the holder's pid, checked against its recorded UTS namespace
    local pid uts
    read -r pid uts <"$STATE/host$1.pid" || return 1
    [ "$(readlink "/proc/$pid/ns/uts" 2>/dev/null)" = "$uts" ] || return 1
    echo "$pid"
}

cmd_up() {
    local hosts=${EMU_HOSTS:-2} gpus=${EMU_GPUS:-2} variant=${EMU_VARIANT:-rail}
    local rate=${EMU_RATE:-200mbit} spine=${EMU_SPINE_RATE:-} delay=${EMU_DELAY:-0}
    local loss=${EMU_LOSS:-0}
    while [ $# -gt 0 ]; do
        case $1 in
            -H | --hosts) hosts=$2; shift 2 ;;
            -g | --gpus | --ranks) gpus=$2; shift 2 ;;
            --variant) variant=$2; shift 2 ;;
            --rate) rate=$2; shift 2 ;;
            --spine-rate) spine=$2; shift 2 ;;
            --delay) delay=$2; shift 2 ;;
            --loss) loss=$2; shift 2 ;;
            *) die "up: unknown argument '$1'" ;;
        esac
    done
    [[ $hosts =~ ^[0-9]+$ ]] || die "hosts must be a number"
    [[ $gpus =~ ^[0-9]+$ ]] || die "ranks per host must be a number"
    ((hosts >= 1 && hosts <= 64)) || die "hosts must be 1..64"
    ((gpus >= 1 && gpus <= 16)) || die "ranks per host must be 1..16"
    case $variant in rail | generic) ;; *) die "variant must be rail or generic" ;; esac
    local rbps sbps
    rbps=$(to_bps "$rate")
    # spine default: non-blocking (every host of a rail at full rate)
    if [ -n "$spine" ]; then sbps=$(to_bps "$spine"); else sbps=$((rbps * hosts)); fi
    local want="HOSTS=$hosts GPUS=$gpus VARIANT=$variant RATE=$rbps SPINE=$sbps DELAY=$delay LOSS=$loss"
    if [ -f "$STATE/params" ]; then
        if [ "$(cat "$STATE/want")" = "$want" ] && cmd_check >/dev/null 2>&1; then
            note "cluster $EMU_ID already up with these parameters"
            return 0
        fi
        note "cluster $EMU_ID is up with other parameters (or broken): down, then up"
        cmd_down
    fi
    [ "$(id -u)" = 0 ] || die "needs root (network namespaces, tc)"
    stale_cleanup
    mkdir -p "$STATE"
    # from here on a failure removes what was created
    trap 'rc=$?; if [ $rc -ne 0 ]; then note "up failed: tearing down"; cmd_down >/dev/null 2>&1; fi' EXIT
    HOSTS=$hosts GPUS=$gpus VARIANT=$variant RATE=$rbps SPINE=$sbps DELAY=$delay LOSS=$loss

    local mg h r
    mg=$(subnet 0)
    # management: a bridge in $P-mgmt (mpiexec runs there), one veth per host
    addns "$P-mgmt"
    bridge "$P-mgmt"
    ip -n "$P-mgmt" addr add "$mg.254/24" dev br0
    NETEM=no
    if [ "$DELAY" != 0 ] || [ "$LOSS" != 0 ]; then
        NETEM=$(probe_netem)
        [ "$NETEM" = yes ] || note "netem is absent on this kernel: delay $DELAY and loss $LOSS are NOT emulated"
    fi
    for ((h = 0; h < HOSTS; h++)); do
        addns "$P-h$h"
        veth "$P-h$h" mg "$P-mgmt" "h$h"
        ip -n "$P-mgmt" link set dev "h$h" master br0
        ip -n "$P-h$h" addr add "$mg.$((h + 1))/24" dev mg
    done

    if [ "$VARIANT" = rail ]; then
        # rail r: leaf switch $P-leaf$r (bridge), subnet 1+r; the spine routes
        # between the rails' subnets over one uplink per leaf
        addns "$P-spine"
        nsx "$P-spine" sysctl -qw net.ipv4.ip_forward=1
        for ((r = 0; r < GPUS; r++)); do
            local sn
            sn=$(subnet $((1 + r)))
            addns "$P-leaf$r"
            bridge "$P-leaf$r"
            veth "$P-leaf$r" uplink "$P-spine" "l$r"
            ip -n "$P-leaf$r" link set dev uplink master br0
            ip -n "$P-spine" addr add "$sn.254/24" dev "l$r"
            shape "$P-leaf$r" uplink "$SPINE"
            shape "$P-spine" "l$r" "$SPINE"
            for ((h = 0; h < HOSTS; h++)); do
                local ns=$P-h${h}r$r
                addns "$ns"
                veth "$ns" "rail$r" "$P-leaf$r" "h$h"
                ip -n "$P-leaf$r" link set dev "h$h" master br0
                ip -n "$ns" addr add "$sn.$((h + 1))/24" dev "rail$r"
                ip -n "$ns" route add default via "$sn.254"
                shape "$ns" "rail$r" "$RATE"      # tx: host -> leaf
                shape "$P-leaf$r" "h$h" "$RATE"   # rx: leaf -> host
            done
        done
    else
        # generic: one NIC per host of GPUS x the rail rate into one switch
        local sn nic=$((RATE * GPUS))
        sn=$(subnet 1)
        addns "$P-sw"
        bridge "$P-sw"
        for ((h = 0; h < HOSTS; h++)); do
            local ns=$P-h${h}n
            addns "$ns"
            veth "$ns" nic0 "$P-sw" "h$h"
            ip -n "$P-sw" link set dev "h$h" master br0
            ip -n "$ns" addr add "$sn.$((h + 1))/24" dev nic0
            shape "$ns" nic0 "$nic"
            shape "$P-sw" "h$h" "$nic"
        done
    fi
    for ((h = 0; h < HOSTS; h++)); do start_host "$h"; done

    # the ranks' preload (emu_preload.c: MPI_Finalize marker, polite polling),
    # when an MPI compiler is there
    if command -v mpicc >/dev/null 2>&1; then
        mpicc -shared -fPIC -O2 -o "$STATE/preload.so" "$(dirname "$SELF")/emu_preload.c" -ldl ||
            note "could not build emu_preload.c: a finalize hang will read as a timeout"
    fi
    # Hydra's launcher and the rank wrapper: one executable each (mpiexec takes
    # a path for -launcher-exec)
    printf '#!/bin/sh\nEMU_ID=%s exec %q _launch "$@"\n' "$EMU_ID" "$SELF" >"$STATE/launch"
    chmod +x "$STATE/launch"
    cat >"$STATE/params" <<EOF
HOSTS=$HOSTS
GPUS=$GPUS
VARIANT=$VARIANT
RATE=$RATE
SPINE=$SPINE
DELAY=$DELAY
LOSS=$LOSS
NETEM=$NETEM
EOF
    echo "$want" >"$STATE/want"
    trap - EXIT
    note "cluster $EMU_ID up: $HOSTS hosts x $GPUS ranks, $VARIANT, $(human "$RATE") per rail"
}

stale_cleanup() { # leftovers of a crashed run of this EMU_ID (no params file)
    local n
    n=$(ip netns list | awk -v p="$P-" 'index($1, p) == 1' | wc -l)
    if [ "$n" -gt 0 ] || [ -d "$STATE" ]; then
        note "removing leftovers of cluster $EMU_ID"
        cmd_down
    fi
}

# ---- down -----------------------------------------------------------------
cmd_down() {
    local f pid ns
    # the host holders (and anything still running inside those hosts)
    for f in "$STATE"/host*.pid; do
        [ -e "$f" ] || continue
        local h=${f##*/host}
        h=${h%.pid}
        if pid=$(host_pid "$h"); then
            kill "$pid" 2>/dev/null || true
        fi
    done
    # every net namespace of this cluster: the processes in it (ranks left
    # behind by a killed job), then the namespace
    for ns in $(ip netns list | awk -v p="$P-" 'index($1, p) == 1 { print $1 }'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
        ip netns del "$ns" 2>/dev/null || true
    done
    rm -rf "$STATE"
    return 0
}

# ---- check / status -------------------------------------------------------
cmd_check() { # every namespace and holder of the recorded cluster exists
    load_params
    local h r
    [ -e "/run/netns/$P-mgmt" ] || return 1
    for ((h = 0; h < HOSTS; h++)); do
        host_pid "$h" >/dev/null || return 1
        [ -e "/run/netns/$P-h$h" ] || return 1
        for ((r = 0; r < GPUS; r++)); do
            [ -e "/run/netns/$(host_ns "$h" "$r")" ] || return 1
            if [ "$VARIANT" = generic ]; then break; fi
        done
    done
}

cmd_status() {
    if [ ! -f "$STATE/params" ]; then echo "cluster $EMU_ID: down"; return 0; fi
    load_params
    local state=up
    cmd_check >/dev/null 2>&1 || state="BROKEN (emu.sh down; emu.sh up)"
    echo "cluster $EMU_ID: $state; $VARIANT, $HOSTS hosts x $GPUS ranks; state $STATE"
    if [ "$VARIANT" = rail ]; then
        echo "  rails: $GPUS, $(human "$RATE") each way per host link; spine uplinks $(human "$SPINE")"
    else
        echo "  one NIC per host: $(human $((RATE * GPUS))) each way (= $GPUS x $(human "$RATE"))"
    fi
    if [ "$DELAY" != 0 ] || [ "$LOSS" != 0 ]; then
        if [ "$NETEM" = yes ]; then echo "  delay $DELAY, loss $LOSS (netem)"
        else echo "  delay $DELAY, loss $LOSS requested: NOT emulated (no netem in this kernel)"; fi
    else
        echo "  delay, loss: none"
    fi
    local h r
    for ((h = 0; h < HOSTS; h++)); do
        local line
        line="  host $P-h$h (mgmt $(subnet 0).$((h + 1))):"
        for ((r = 0; r < GPUS; r++)); do
            if [ "$VARIANT" = rail ]; then line+=" rail$r=$(subnet $((1 + r))).$((h + 1))"
            else line+=" nic0=$(subnet 1).$((h + 1))"; break; fi
        done
        echo "$line"
    done
    local d
    for d in "$STATE"/degrade.*; do
        [ -e "$d" ] || continue
        echo "  degraded: $(cut -d' ' -f2- "$d")"
    done
}

# ---- degrade / heal -------------------------------------------------------
link_end() { # link_end HOST RAIL tx|rx -> "NS DEV" of the egress that shapes it
    local h=$1 r=$2
    ((h >= 0 && h < HOSTS)) || die "host must be 0..$((HOSTS - 1))"
    if [ "$VARIANT" = rail ]; then ((r >= 0 && r < GPUS)) || die "rail must be 0..$((GPUS - 1))"
    else [ "$r" = 0 ] || die "the generic variant has one NIC: rail must be 0"; fi
    case $3 in
        tx) echo "$(host_ns "$h" "$r") $(host_if "$r")" ;;
        rx) echo "$(sw_ns "$r") h$h" ;;
        *) die "direction must be tx or rx" ;;
    esac
}
link_rate() { if [ "$VARIANT" = rail ]; then echo "$RATE"; else echo $((RATE * GPUS)); fi; }

cmd_degrade() {
    [ $# -eq 4 ] || die "usage: emu.sh degrade HOST RAIL tx|rx FACTOR"
    load_params
    local h=${1#h} r=${2#rail} dir=$3 f=$4 ns dev base
    [[ $f =~ ^[0-9]+([.][0-9]+)?$ ]] || die "FACTOR must be a number (rate / FACTOR)"
    read -r ns dev < <(link_end "$h" "$r" "$dir")
    base=$(link_rate)
    local new
    new=$(awk -v b="$base" -v f="$f" 'BEGIN { printf "%d", b / f }')
    shape "$ns" "$dev" "$new"
    echo "$new host $h rail $r $dir: $(human "$base") / $f = $(human "$new")" >"$STATE/degrade.h$h.r$r.$dir"
    note "degraded host $h rail $r $dir to $(human "$new")"
}
cmd_heal() {
    load_params
    local d
    if [ $# -eq 3 ]; then
        local h=${1#h} r=${2#rail} ns dev
        read -r ns dev < <(link_end "$h" "$r" "$3")
        shape "$ns" "$dev" "$(link_rate)"
        rm -f "$STATE/degrade.h$h.r$r.$3"
        return 0
    fi
    [ $# -eq 0 ] || die "usage: emu.sh heal [HOST RAIL tx|rx]"
    for d in "$STATE"/degrade.*; do
        [ -e "$d" ] || continue
        local k=${d#"$STATE"/degrade.h} hh rr dd
        IFS=. read -r hh rr dd <<<"$k"
        cmd_heal "$hh" "${rr#r}" "$dd"
    done
}

# ---- stats: bytes sent by each shaped egress (tc -s) ------------------------
qbytes() { # qbytes NS DEV -> "bytes packets drops" of the root qdisc
    nsx "$1" tc -s qdisc show dev "$2" | awk '
        / root / { root = 1 } root && /Sent/ { print $2, $4, $7 + 0; exit }' | tr -d ,
}
cmd_stats() {
    load_params
    local h r
    printf '%-8s %-5s %-6s %-22s %-10s %14s %10s %6s\n' link rail dir path rate bytes packets drops
    for ((h = 0; h < HOSTS; h++)); do
        for ((r = 0; r < GPUS; r++)); do
            local ns dev rate d b k dr
            for d in tx rx; do
                read -r ns dev < <(link_end "$h" "$r" "$d")
                rate=$(link_rate)
                if [ -e "$STATE/degrade.h$h.r$r.$d" ]; then rate=$(cut -d' ' -f1 "$STATE/degrade.h$h.r$r.$d"); fi
                read -r b k dr < <(qbytes "$ns" "$dev")
                local path
                if [ "$VARIANT" = rail ]; then
                    path="leaf$r->h$h.rail$r"
                    if [ $d = tx ]; then path="h$h.rail$r->leaf$r"; fi
                else
                    path="switch->h$h.nic0"
                    if [ $d = tx ]; then path="h$h.nic0->switch"; fi
                fi
                printf '%-8s %-5s %-6s %-22s %-10s %14s %10s %6s\n' "h$h" "$r" "$d" "$path" \
                    "$(human "$rate")" "$b" "$k" "$dr"
            done
            if [ "$VARIANT" = generic ]; then break; fi
        done
    done
    if [ "$VARIANT" = rail ]; then
        for ((r = 0; r < GPUS; r++)); do
            read -r b k dr < <(qbytes "$P-leaf$r" uplink)
            printf '%-8s %-5s %-6s %-22s %-10s %14s %10s %6s\n' spine "$r" up "leaf$r->spine" \
                "$(human "$SPINE")" "$b" "$k" "$dr"
            read -r b k dr < <(qbytes "$P-spine" "l$r")
            printf '%-8s %-5s %-6s %-22s %-10s %14s %10s %6s\n' spine "$r" down "spine->leaf$r" \
                "$(human "$SPINE")" "$b" "$k" "$dr"
        done
    fi
}

# ---- run ------------------------------------------------------------------
cmd_hosts() { # [1]: one slot a host, so that mpiexec deals the ranks round robin
    load_params
    local h s= slots=${1:-$GPUS}
    for ((h = 0; h < HOSTS; h++)); do s+="${s:+,}$P-h$h:$slots"; done
    echo "$s"
}

cmd_run() {
    load_params
    cmd_check || die "cluster $EMU_ID is broken: emu.sh down; emu.sh up"
    local tmo=${EMU_TIMEOUT:-600} grace=${EMU_GRACE:-10} np=$((HOSTS * GPUS)) stats=0 slots=
    while [ $# -gt 0 ]; do
        case $1 in
            --round-robin) slots=1; shift ;;
            --timeout) tmo=$2; shift 2 ;;
            --grace) grace=$2; shift 2 ;;
            --np) np=$2; shift 2 ;;
            --stats) stats=1; shift ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    [ $# -gt 0 ] || die "usage: emu.sh run [--timeout S] [--grace S] [--np N] [--stats] [--round-robin] -- PROG ARGS..."
    local job
    job=$(mktemp -d "$STATE/job.XXXXXX")
    if [ $stats = 1 ]; then
        cmd_stats >"$job/stats.before"
        mark "$job/t0"
    fi
    # mpiexec runs in the management namespace; -iface: the proxies connect to
    # its control port over the management bridge
    nsx "$P-mgmt" env EMU_ID="$EMU_ID" EMU_JOB="$job" \
        timeout -k 5 "$tmo" mpiexec -launcher ssh -launcher-exec "$STATE/launch" -iface br0 \
        -hosts "$(cmd_hosts $slots)" -n "$np" "$SELF" _rank "$@" &
    local mp=$! rc=0 t=0 fin=
    # interrupted: the job goes too (mpiexec runs in the background)
    # shellcheck disable=SC2064 # mp and job: expanded now
    trap "kill_job $mp '$job'; rm -rf '$job'; exit 130" INT TERM
    # wait for mpiexec; when every rank has reached MPI_Finalize (the preloaded
    # marker) and the job is still there after $grace s, teardown hung
    while kill -0 "$mp" 2>/dev/null; do
        sleep 1
        t=$((t + 1))
        local n
        n=$(find "$job" -name 'fini.*' 2>/dev/null | wc -l)
        if [ "$n" -ge "$np" ]; then
            if [ -z "$fin" ]; then
                fin=$t
                mark "$job/t1"
            fi
            if ((t - fin >= grace)); then
                note "results complete: all $np ranks reached MPI_Finalize; teardown hung for ${grace}s (UCX TCP, see README): killing the job"
                kill_job "$mp" "$job"
                wait "$mp" 2>/dev/null || true
                finish_run "$job" "$stats"
                return 0
            fi
        fi
    done
    wait "$mp" || rc=$?
    local n
    n=$(find "$job" -name 'fini.*' 2>/dev/null | wc -l)
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        note "TIMEOUT after ${tmo}s: $n of $np ranks reached MPI_Finalize (a real hang)"
        kill_job "$mp" "$job"
    fi
    finish_run "$job" "$stats"
    return $rc
}
kill_job() { # kill_job PID JOB: mpiexec, then what is left of job JOB's processes
    local mp=$1 job=$2 ns pid
    kill -TERM "$mp" 2>/dev/null || true
    sleep 1
    # the job's proxies and ranks: the processes in this cluster's namespaces
    # whose environment names the job (another job on this cluster survives)
    for ns in $(ip netns list | awk -v p="$P-" 'index($1, p) == 1 { print $1 }'); do
        for pid in $(ip netns pids "$ns" 2>/dev/null); do
            if tr '\0' '\n' 2>/dev/null <"/proc/$pid/environ" | grep -qxF "EMU_JOB=$job"; then
                kill -9 "$pid" 2>/dev/null || true
            fi
        done
    done
}
mark() { # mark FILE: the time and the machine's CPU counters (/proc/stat) now
    { date +%s.%N; head -n 1 /proc/stat; } >"$1"
}
finish_run() {
    local job=$1 stats=$2
    if [ "$stats" = 1 ]; then
        cmd_stats >"$job/stats.after"
        # the end: when the last rank reached MPI_Finalize, else the job's exit
        if [ ! -e "$job/t1" ]; then mark "$job/t1"; fi
        local el busy
        # elapsed seconds; CPU busy = 1 - (idle + iowait) / all, over every core
        read -r el busy < <(cat "$job/t0" "$job/t1" | awk '
            NR == 1 { t0 = $1 } NR == 3 { t1 = $1 }
            /^cpu / { a = 0; for (i = 2; i <= NF; i++) a += $i; id = $5 + $6
                      if (NR == 2) { a0 = a; i0 = id } else { a1 = a; i1 = id } }
            END { printf "%.2f %.0f\n", t1 - t0, 100 * (1 - (i1 - i0) / (a1 - a0)) }')
        echo "during the run: ${el} s (mpiexec start to the last rank's MPI_Finalize or exit)," \
            "machine CPU busy ${busy}% of $(nproc) cores (every process, not only this job's)"
        # the ranks' own CPU time up to MPI_Finalize (written by the preload)
        cat "$job"/fini.* 2>/dev/null | awk -v el="$el" -v n="$(nproc)" '
            NF == 2 { u += $1; s += $2; k++ }
            END { if (k) printf "ranks (%d) used %.1f s user + %.1f s system = %.2f of %d cores\n",
                               k, u, s, (el > 0 ? (u + s) / el : 0), n }'
        echo "bytes sent on each shaped link (util: bytes x 8 / (${el} s x rate)):"
        # the same rows before and after: print after - before
        awk -v el="$el" '
            function bps(r) { return r ~ /Gbit/ ? r * 1e9 : r ~ /Mbit/ ? r * 1e6 : r * 1e3 }
            NR == FNR { b6[FNR] = $6; b7[FNR] = $7; b8[FNR] = $8; next }
            FNR == 1 { print $0 "  util"; next }
            { d = $6 - b6[FNR]
              printf "%-8s %-5s %-6s %-22s %-10s %14d %10d %6d %5.0f%%\n", $1, $2, $3, $4, $5,
                 d, $7 - b7[FNR], $8 - b8[FNR], (el > 0 ? 100 * d * 8 / (el * bps($5)) : 0) }' \
            "$job/stats.before" "$job/stats.after"
    fi
    rm -rf "$job"
}

cmd_exec() { # exec HOST RAIL -- CMD: CMD inside host HOST, in rail RAIL's net namespace
    load_params
    [ $# -ge 3 ] || die "usage: emu.sh exec HOST RAIL -- CMD..."
    local h=${1#h} r=${2#rail} pid ns
    shift 2
    if [ "${1:-}" = -- ]; then shift; fi
    ((h >= 0 && h < HOSTS)) || die "host must be 0..$((HOSTS - 1))"
    if [ "$VARIANT" = rail ]; then ((r >= 0 && r < GPUS)) || die "rail must be 0..$((GPUS - 1))"
    else [ "$r" = 0 ] || die "the generic variant has one NIC: rail must be 0"; fi
    pid=$(host_pid "$h") || die "host $h is not running"
    ns=$(host_ns "$h" "$r")
    # as a rank: the host's UTS, IPC and mount namespaces, the rail's net
    # namespace, sysfs of that net namespace
    # shellcheck disable=SC2016 # $@: expanded by that sh
    exec nsenter -t "$pid" -u -i -m --net="/run/netns/$ns" -- unshare -m --propagation slave -- \
        /bin/sh -c 'umount -l /sys && mount -t sysfs -o ro emu-sysfs /sys && exec "$@"' emu-exec "$@"
}

# ---- internal: Hydra's launcher and the rank wrapper -----------------------
cmd_launch() {
    # Hydra calls: launch -x HOST CMD... (as ssh would: CMD is run by a shell)
    if [ "${1:-}" = -x ]; then shift; fi
    local host=$1
    shift
    load_params
    local h=${host##*-h}
    [[ $host == "$P-h"* && $h =~ ^[0-9]+$ ]] || die "launch: unknown host '$host'"
    local pid
    pid=$(host_pid "$h") || die "launch: host $host is not running"
    # the host's UTS, IPC and mount namespaces and its management net namespace
    exec nsenter -t "$pid" -u -i -m --net="/run/netns/$P-h$h" -- /bin/sh -c "$*"
}

cmd_rank() {
    load_params
    local lr=${MPI_LOCALRANKID:?MPI_LOCALRANKID unset: run through emu.sh run} h host
    host=$(hostname)
    h=${host##*-h}
    local r=$((lr % GPUS)) ns dev
    ns=$(host_ns "$h" "$r")
    dev=$(host_if "$r")
    export UCX_NET_DEVICES=${EMU_UCX_NET_DEVICES:-$dev}
    # UCX's own defaults (users do not tune UCX); a caller's UCX_* settings reach the
    # ranks through Hydra.
    if [ -n "${EMU_JOB:-}" ] && [ -f "$STATE/preload.so" ]; then
        export EMU_FINI_FILE=$EMU_JOB/fini.${PMI_RANK:-$lr}
        export EMU_YIELD=${EMU_YIELD:-1} EMU_FINALIZE=${EMU_FINALIZE:-skip-close}
        export EMU_PRELOAD=$STATE/preload.so
    fi
    # a mount namespace of its own (a slave copy of the host's: same /dev/shm)
    # with sysfs remounted: UCX lists network devices from /sys/class/net, which
    # shows the net namespace that mounted sysfs, not the caller's. The preload
    # goes to PROG only (not to nsenter, unshare, sh).
    # shellcheck disable=SC2016 # $@, $EMU_PRELOAD: expanded by that sh
    exec nsenter --net="/run/netns/$ns" -- unshare -m --propagation slave -- /bin/sh -c \
        'umount -l /sys && mount -t sysfs -o ro emu-sysfs /sys || exit 1
         if [ -n "${EMU_PRELOAD:-}" ]; then
             LD_PRELOAD=$EMU_PRELOAD${LD_PRELOAD:+:$LD_PRELOAD}; export LD_PRELOAD
         fi
         exec "$@"' emu-rank "$@"
}

# ---- main -----------------------------------------------------------------
[ $# -ge 1 ] || { sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//'; exit 2; }
cmd=$1
shift
case $cmd in
    up) (flock 9; cmd_up "$@") 9>"$STATE_ROOT.lock.$EMU_ID" ;;
    down) cmd_down ;;
    status) cmd_status ;;
    stats) cmd_stats ;;
    run) cmd_run "$@" ;;
    hosts) cmd_hosts ;;
    exec) cmd_exec "$@" ;;
    degrade) cmd_degrade "$@" ;;
    heal) cmd_heal "$@" ;;
    _launch) cmd_launch "$@" ;;
    _rank) cmd_rank "$@" ;;
    -h | --help | help) sed -n '2,/^set -euo/p' "$SELF" | sed '$d; s/^# \{0,1\}//' ;;
    *) die "unknown command '$cmd' (up|run|stats|degrade|heal|status|hosts|exec|down)" ;;
esac
