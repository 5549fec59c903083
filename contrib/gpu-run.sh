#!/bin/bash
# GPU runs of mpix-hier on a machine that has only CUDA (driver, toolkit) and
# Python: no MPICH, UCX, hwloc, no network. Two halves:
#
#   contrib/gpu-run.sh pack [PKG]   here (Debian 12, with network): build with
#        CUDA in build-gpu/, `apt-get download` the Debian runtime packages the
#        binaries need, unpack them with `dpkg -x` into PKG/root (never over /),
#        copy the binaries and libmpixhier into PKG, and check with ldd that every
#        library resolves under the carried LD_LIBRARY_PATH. PKG defaults to
#        build-gpu-pkg (ignored by git, small enough to carry: a few tens of MiB).
#   contrib/gpu-run.sh run [PKG] [OUT]   on the GPU machine, from the repository
#        root: the GPU test suite under mpiexec with 1, 2 and 4 ranks on the one
#        GPU plus fake two-node layouts; compute-sanitizer memcheck on a subset;
#        the kernel bandwidth benchmark; the device-buffer allreduce benchmark
#        (mpix-hier vs host-staged MPI_Allreduce, 1/2/4 ranks). Logs and figures
#        go to OUT (default: $OUT when set, else gpu-results/).
#   contrib/gpu-run.sh env [PKG]    print the environment `run` uses.
#
# With the device tool: pack here, then two calls of at most 600 s each, e.g.
#   run(command="MXH_GPU_DEADLINE=560 MXH_GPU_STEPS='preflight-mpiexec kernel-bench
#       tests-quick path-log gpu-bench-1ranks gpu-bench-4ranks gpu-bench-4ranks-ipc
#       gpu-bench-2x2'
#       contrib/gpu-run.sh run build-gpu-pkg", carry=["build-gpu-pkg"])
#   run(command="MXH_GPU_DEADLINE=560 MXH_GPU_STEPS='tests-full tests-repeat sanitizer'
#       contrib/gpu-run.sh run build-gpu-pkg", carry=["build-gpu-pkg"])
# (measured on an H200: the 4-rank CUDA matrix takes minutes per layout; the
# layouts of one step run side by side, MXH_TEST_PARALLEL).
# The binaries are built against Debian 12's glibc (2.36): the GPU machine's
# glibc must not be older (checked).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1:-}
pkg=${2:-$here/build-gpu-pkg}
case $pkg in /*) ;; *) pkg=$here/$pkg ;; esac

# Debian packages of the runtime libraries (libc6, libgcc-s1 and libstdc++6 come from
# the target: its libstdc++ is newer, and an older one first on the path breaks its tools)
DEBS="mpich libmpich12 libucx0 libhwloc15 libnuma1 libslurm38 libudev1 libibverbs1 librdmacm1 libnl-3-200 libnl-route-3-200"

# The unpacked packages: $pkg/root here; on the GPU machine root.tar.xz is
# unpacked into a temporary folder first (libmpich alone is 40 MiB unpacked).
root=$pkg/root

setenv() {
    local r=$root
    export PATH=$pkg/bin:$r/usr/bin:$PATH
    export LD_LIBRARY_PATH=$pkg/lib:$r/usr/lib/x86_64-linux-gnu:$r/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    export UCX_MODULE_DIR=$r/usr/lib/x86_64-linux-gnu/ucx
    export HWLOC_PLUGINS_PATH=$r/usr/lib/x86_64-linux-gnu/hwloc
    export MPIEXEC="$r/usr/bin/mpiexec.hydra"
    # hydra finds its proxy next to mpiexec; shared memory and TCP only
    export HYDRA_LAUNCHER=fork
}

do_pack() {
    local build=$here/build-gpu
    mkdir -p "$build"
    if [ ! -f "$build/Makefile" ]; then
        (cd "$here" && [ -x configure ] || ./autogen.sh)
        (cd "$build" && ../configure --with-cuda)
    fi
    grep -q '^#define HAVE_CUDA 1' "$build/config.h" || { echo "build-gpu is not a CUDA build" >&2; exit 1; }
    make -C "$build" -j"$(nproc)"
    make -C "$build/tests" -j"$(nproc)" cuda/test_cuda_colls
    rm -rf "$pkg"
    mkdir -p "$pkg/debs" "$pkg/root" "$pkg/bin" "$pkg/lib"
    # shellcheck disable=SC2086 # a list of package names
    (cd "$pkg/debs" && chmod 777 . && apt-get download $DEBS)
    for d in "$pkg"/debs/*.deb; do dpkg -x "$d" "$pkg/root"; done
    rm -rf "$pkg/debs" "$pkg/root/usr/share/doc" "$pkg/root/usr/share/man"
    cp -a "$build"/.libs/libmpixhier.so* "$pkg/lib/"
    cp -aL "$(ldd "$build/.libs/libmpixhier.so" | awk '/libcudart/ {print $3}')" "$pkg/lib/"
    local p
    for p in tests/cuda/test_cuda_colls benchmarks/mpix_kernel_bench benchmarks/mpix_gpu_bench; do
        # installed programs are libtool wrapper scripts: take the real binary
        if [ -x "$build/$(dirname $p)/.libs/$(basename $p)" ]; then
            cp "$build/$(dirname $p)/.libs/$(basename $p)" "$pkg/bin/"
        else
            cp "$build/$p" "$pkg/bin/"
        fi
    done
    setenv
    local bad=0 f
    for f in "$pkg"/bin/* "$pkg"/lib/libmpixhier.so.0 "$pkg/root/usr/bin/mpiexec.hydra"; do
        if ldd "$f" | grep -q 'not found'; then
            echo "unresolved libraries of $f:"; ldd "$f" | grep 'not found'; bad=1
        fi
        # every library must come from the package (or the C runtime, or the driver)
        ldd "$f" | awk '$3 ~ /^\// {print $3}' |
            grep -vE "^($pkg/|/lib/x86_64-linux-gnu/(libc|libm|libgcc_s|libpthread|libdl|librt|libresolv)\.|/lib64/ld-linux)" |
            sed "s|^|  from the build machine (not carried) by $(basename "$f"): |" || true
    done
    [ $bad -eq 0 ] || exit 1
    tar -C "$pkg" -cJf "$pkg/root.tar.xz" root
    rm -rf "$pkg/root"
    echo "packed: $(du -sh "$pkg" | cut -f1) in $pkg (glibc of this machine: $(ldd --version | head -n1 | awk '{print $NF}'))"
}

# step NAME CAP COMMAND...: run COMMAND with a timeout of CAP seconds, cut to
# what is left before the run's deadline (MXH_GPU_DEADLINE seconds after the
# start, default 540, less 20 s for packing the logs); record PASS/FAIL/TIMEOUT
# in the summary. A step that finds no time left is recorded as NOT RUN.
step() {
    local name=$1 cap=$2 left t0 rc
    shift 2
    # MXH_GPU_STEPS="kernel-bench tests-quick ...": only these steps
    if [ -n "${MXH_GPU_STEPS:-}" ]; then
        case " $MXH_GPU_STEPS " in *" $name "*) ;; *) return 0 ;; esac
    fi
    left=$((deadline - SECONDS - 20))
    [ "$cap" -gt "$left" ] && cap=$left
    if [ "$cap" -lt 5 ]; then
        printf '%-28s NOT RUN (no time left)\n' "$name" | tee -a "$summary"
        rc_all=1
        return 0
    fi
    t0=$SECONDS
    echo "=== $name (cap ${cap}s)"
    rc=0
    if [ "$(type -t "$1")" = function ]; then
        timeout -k 5 "$cap" bash -c '"$@"' _ "$@" >"$out/$name.txt" 2>&1 || rc=$?
    else
        timeout -k 5 "$cap" "$@" >"$out/$name.txt" 2>&1 || rc=$?
    fi
    tail -n 25 "$out/$name.txt"
    local what=PASS
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then what=TIMEOUT; elif [ $rc -ne 0 ]; then what="FAIL($rc)"; fi
    # a skipped GPU test on a machine with a GPU is a failure (driver/runtime mismatch)
    if [ $rc -eq 0 ] && grep -qE '^SKIP ' "$out/$name.txt"; then what="FAIL(skip)"; rc=1; fi
    printf '%-28s %-10s %4ds\n' "$name" "$what" $((SECONDS - t0)) | tee -a "$summary"
    [ $rc -eq 0 ] || rc_all=1
    return 0
}

# cuda_tests TAG LAYOUTS [VAR=VALUE...]: tests/cuda/run_cuda_tests.sh on those
# layouts, the logs in TAG/ of the tarball (step runs it in a child bash under
# timeout, hence exported)
cuda_tests() {
    local tag=$1 layouts=$2 bin
    shift 2
    # the logs are written where they are kept: a step's timeout loses nothing
    bin=$logs/$tag
    mkdir -p "$bin"
    ln -sf "$pkg/bin/test_cuda_colls" "$bin/"
    env MXH_TEST_BINDIR="$bin" MXH_TEST_LAYOUTS="$layouts" "$@" bash "$here/tests/cuda/run_cuda_tests.sh"
}

# with_mps CMD...: CMD with the CUDA MPS daemon running (one shared context for every
# process on the GPU, as a node with MPS runs); pipe and log folders in a temporary folder
with_mps() {
    local ctl d rc=0
    ctl=$(command -v nvidia-cuda-mps-control || true)
    if [ -z "$ctl" ]; then
        echo "nvidia-cuda-mps-control not found: MPS not measured"
        return 3
    fi
    d=$(mktemp -d)
    export CUDA_MPS_PIPE_DIRECTORY=$d/pipe CUDA_MPS_LOG_DIRECTORY=$d/log
    mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
    "$ctl" -d || { echo "MPS daemon did not start"; return 4; }
    "$@" || rc=$?
    echo quit | "$ctl" || true
    cat "$CUDA_MPS_LOG_DIRECTORY"/*.log 2>/dev/null | tail -n 20
    return $rc
}

do_run() {
    local out=${3:-${OUT:-$here/gpu-results}}
    deadline=${MXH_GPU_DEADLINE:-540}
    SECONDS=0
    rc_all=0
    mkdir -p "$out"
    # at most 8 files come back from the device tool: the logs go into one tarball
    logs=$(mktemp -d)
    local final=$out
    out=$logs
    summary=$final/summary.txt
    : >"$summary"
    if [ ! -d "$root" ]; then
        root=${TMPDIR:-/tmp}/mxh-gpu-root
        rm -rf "$root" && mkdir -p "$root"
        tar -C "$root" --strip-components=1 -xJf "$pkg/root.tar.xz"
    fi
    setenv
    export pkg here logs
    export -f cuda_tests with_mps
    # cross-process memory reads (CMA) may be refused in the device sandboxes
    export UCX_TLS=${UCX_TLS:-^cma}
    local need=2.36 have
    have=$(ldd --version 2>&1 | awk 'NR == 1 {print $NF}')
    if [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | awk 'NR == 1')" != "$need" ]; then
        echo "glibc $have is older than $need (the binaries come from Debian 12)" | tee "$summary"
        exit 1
    fi
    { nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; uname -r; } \
        >"$final/gpu.txt" 2>&1 || true
    cat "$final/gpu.txt"
    local H=MPIX_HIER_HOSTNAME cs
    step preflight-mpiexec 20 $MPIEXEC -n 2 true
    step kernel-bench 40 "$pkg/bin/mpix_kernel_bench" -b 256 -n 20
    # the quick matrix (counts 0, 1, 7) on every layout, then the full one on two
    # (MXH_GPU_QUICK_LAYOUTS / _PARALLEL / _TIMEOUT: another set; measured on an H200, the 4-rank
    # layouts need more than 180 s when all eight share the 16 cores)
    local qt=${MXH_GPU_QUICK_TIMEOUT:-180}
    step tests-quick $((qt + 20)) cuda_tests quick "${MXH_GPU_QUICK_LAYOUTS:-1rank 1node-2 1node-4 2x2 1+1 3+1 1node-2-ipc 1node-4-ipc}" \
        MXH_TEST_PARALLEL=${MXH_GPU_QUICK_PARALLEL:-8} MXH_TEST_QUICK=1 MXH_TEST_RUN_TIMEOUT=$qt MXH_TEST_TIMEOUT=$((qt - 10))
    # which path device buffers took: the schedule and the metrics of one run
    step path-log 40 cuda_tests path "2x2" MXH_TEST_QUICK=1 MXH_TEST_RUN_TIMEOUT=35 \
        MXH_TEST_GTEST_FILTER='*AllreduceOddOffsetsLarge*:*AllgatherAndBcast*' \
        MPIX_HIER_LOG_LEVEL=debug MPIX_HIER_METRICS_FILE="$logs/metrics-%h-%r.prom"
    for n in 1 2 4; do
        step gpu-bench-${n}ranks 40 $MPIEXEC -n $n "$pkg/bin/mpix_gpu_bench" -b 1M -e 64M -n 10
    done
    # the device node level forced on (MPIX_HIER_IPC=yes; auto takes it when
    # discovery binds every rank to a GPU): peer reads + kernels, no staging
    step gpu-bench-4ranks-ipc 40 $MPIEXEC -genv MPIX_HIER_IPC yes -genv MPIX_HIER_IPC_MIN 0 -n 4 \
        "$pkg/bin/mpix_gpu_bench" \
        -b 64K -e 64M -n 10
    # where the device node level's time goes (MXH_IPC_STATS=1: fence, device waits and
    # shared-memory rounds per call, printed per rank at the end), 2 and 4 ranks on the GPU
    for n in 2 4; do
        step ipc-phases-${n}ranks 40 $MPIEXEC -genv MPIX_HIER_IPC yes -genv MPIX_HIER_IPC_MIN 0 \
            -genv MXH_IPC_STATS 1 -n $n "$pkg/bin/mpix_gpu_bench" -b 64K -e 16M -n 20
    done
    # the same under MPS: is the per-call floor the time slicing between the processes' contexts?
    step ipc-phases-4ranks-mps 50 with_mps $MPIEXEC -genv MPIX_HIER_IPC yes -genv MPIX_HIER_IPC_MIN 0 \
        -genv MXH_IPC_STATS 1 -n 4 "$pkg/bin/mpix_gpu_bench" -b 64K -e 16M -n 20
    step gpu-bench-2x2 40 $MPIEXEC -n 2 -env $H a "$pkg/bin/mpix_gpu_bench" -b 1M -e 64M -n 10 : \
        -n 2 -env $H b "$pkg/bin/mpix_gpu_bench" -b 1M -e 64M -n 10
    step tests-full 300 cuda_tests full "1node-2 2x2 3+1" MXH_TEST_PARALLEL=3 MXH_TEST_RUN_TIMEOUT=280 \
        MXH_TEST_TIMEOUT=270
    step tests-repeat 60 cuda_tests repeat "2x2" MXH_TEST_RUN_TIMEOUT=55 \
        MXH_TEST_GTEST_FILTER='*IpcCacheFollowsReallocation*:*AllreduceOddOffsetsLarge*:*ManyInFlight*' \
        MXH_TEST_GTEST_EXTRA=--gtest_repeat=3
    cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || true)
    if [ -n "$cs" ]; then
        step sanitizer 120 cuda_tests sanitizer "1rank 1node-2 1node-2-ipc" MXH_TEST_QUICK=1 MXH_TEST_RUN_TIMEOUT=55 \
            MXH_TEST_GTEST_FILTER='*Allreduce*:*ReduceScatter*:*Ipc*:*AllgatherAndBcast*' \
            MXH_TEST_WRAPPER="$cs --tool memcheck --error-exitcode 99 --print-limit 20"
    else
        printf '%-28s NOT RUN (compute-sanitizer not found)\n' sanitizer | tee -a "$summary"
    fi
    tar -C "$logs" -czf "$final/gpu-logs.tar.gz" .
    echo "summary ($SECONDS s):"; cat "$summary"
    echo "results in $final (exit $rc_all)"
    return $rc_all
}

case $cmd in
pack) do_pack ;;
run) do_run "$@" ;;
env) [ -d "$root" ] || root=${TMPDIR:-/tmp}/mxh-gpu-root; setenv; env | grep -E '^(PATH|LD_LIBRARY_PATH|UCX_MODULE_DIR|HWLOC_PLUGINS_PATH|MPIEXEC|HYDRA_LAUNCHER)=' ;;
*) sed -n '2,24p' "$0"; exit 1 ;;
esac
