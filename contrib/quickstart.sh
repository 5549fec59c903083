#!/usr/bin/env bash
# mpix-hier quick start: install what is missing (Debian/Ubuntu), build, then
# run the demo or the test suite.
#
#   ./contrib/quickstart.sh demo    [--with-cuda[=DIR]|--without-cuda] [mpix_demo options]
#   ./contrib/quickstart.sh check   [--with-cuda[=DIR]|--without-cuda]
#   ./contrib/quickstart.sh build   [--with-cuda[=DIR]|--without-cuda]
#
# Environment:
#   CONFIGURE_FLAGS   extra ./configure arguments (e.g. "--prefix=$HOME/opt --enable-werror")
#   BUILD_DIR         build directory (default: <repo>/build)
#   JOBS              parallel compile jobs (default: nproc)
#   CHECK_JOBS        tests run in parallel by 'make check' (default: 1; MPI tests oversubscribe)
#   NO_INSTALL=1      never call apt-get, only report what is missing
#   NO_MAKE_INSTALL=1 do not 'make install' the library (default prefix /usr/local)
#   MPIEXEC_TIMEOUT   seconds before mpiexec kills the demo (default: 300)
#
# Copyright (c) 2026, The mpix-hier authors. BSD-3-Clause, see COPYING.
set -euo pipefail

SRC_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${BUILD_DIR:-$SRC_DIR/build}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
CHECK_JOBS=${CHECK_JOBS:-1}
LOG_TAIL=${LOG_TAIL:-60}
export DEBIAN_FRONTEND=noninteractive

# Debian 12 packages: MPICH, optional discovery libraries, GoogleTest, autotools, valgrind,
# and every program a test or tool calls that a minimal Debian (debootstrap minbase) lacks:
#   python3    tests/tools/test_mpix_info.sh (checks mpix_info --json), benchmarks/*.py
#   gnuplot    mpix_bench --plot (tests/tools/test_mpix_bench.sh)
#   binutils   nm (make check's exported-symbol check; also pulled in by g++)
#   xz-utils   contrib/gpu-run.sh pack (tar -J)
#   iproute2   ip and tc (/sbin/tc is iproute2's on Debian 12): the emulated cluster,
#              benchmarks/emu/emu.sh and its test tests/emu/test_emu.sh
#   python3-numpy python3-pytest  the Python package's tests (tests/python/run_python_tests.sh)
# Not python3-mpi4py: Debian 12 builds it on Open MPI, which cannot share a process
# with MPICH, and installing it raises Open MPI above MPICH in the mpicc/mpiexec
# alternatives, so the build would no longer find MPICH. The Python tests use an
# mpi4py built on MPICH when one is importable and MPICH through ctypes otherwise.
# (awk, timeout, mktemp, od, sha256sum, find, sed, grep: coreutils & co., always present.)
PACKAGES=(mpich libmpich-dev libucx-dev libhwloc-dev libjson-c-dev googletest libgtest-dev
          autoconf automake libtool pkg-config make g++ binutils valgrind gnuplot-nox
          python3 python3-numpy python3-pytest xz-utils
          iproute2)

step() { printf '\n==> %s\n' "$*"; }
note() { printf '    %s\n' "$*"; }
die()  { printf '\nquickstart: error: %s\n' "$*" >&2; exit 1; }

usage() {
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

# ---------------------------------------------------------------- arguments
cmd=${1:-}
case "$cmd" in
    demo|check|build) shift ;;
    -h|--help|help) usage; exit 0 ;;
    "") usage >&2; exit 2 ;;
    *) printf 'quickstart: unknown command "%s"\n\n' "$cmd" >&2; usage >&2; exit 2 ;;
esac

read -r -a configure_args <<< "${CONFIGURE_FLAGS:-}"
demo_args=()
for arg in "$@"; do
    case "$arg" in
        --with-cuda|--with-cuda=*|--without-cuda) configure_args+=("$arg") ;;
        *)
            [ "$cmd" = demo ] || die "unexpected argument '$arg' for '$cmd'"
            demo_args+=("$arg") ;;
    esac
done

# ---------------------------------------------------------------- install
missing_packages() {
    local p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' ||
            printf '%s\n' "$p"
    done
}

install_deps() {
    step "Checking dependencies"
    if ! command -v dpkg-query >/dev/null 2>&1; then
        note "not a Debian-based system: install MPICH (with mpicc/mpiexec), GoogleTest, autoconf,"
        note "automake, libtool, pkg-config, make, a C++ compiler, python3 (with numpy and pytest)"
        note "and gnuplot yourself;"
        note "continuing."
        return 0
    fi
    local missing
    mapfile -t missing < <(missing_packages)
    if [ "${#missing[@]}" -eq 0 ]; then
        note "all required packages are installed (${PACKAGES[*]})"
        return 0
    fi
    note "missing: ${missing[*]}"
    if [ "${NO_INSTALL:-0}" = 1 ]; then
        die "NO_INSTALL=1: install them with: apt-get install -y ${missing[*]}"
    fi
    local sudo=()
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 ||
            die "not root and no sudo: run as root, or: apt-get install -y ${missing[*]}"
        if [ -t 0 ]; then sudo=(sudo); else sudo=(sudo -n); fi
    fi
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install: ${missing[*]}"
    step "Installing ${missing[*]} (apt-get)"
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
    mapfile -t missing < <(missing_packages)
    [ "${#missing[@]}" -eq 0 ] || die "still missing after apt-get: ${missing[*]}"
}

# ---------------------------------------------------------------- build
hash_of() { { cat "$@" 2>/dev/null || true; } | sha256sum | cut -d' ' -f1; }

build() {
    local stamps ac_hash cfg_hash
    # A source tree configured in place cannot host an out-of-tree build.
    if [ -f "$SRC_DIR/config.status" ] && [ "$BUILD_DIR" != "$SRC_DIR" ]; then
        note "the source tree is already configured in place: building there (BUILD_DIR=$SRC_DIR)"
        BUILD_DIR=$SRC_DIR
    fi
    stamps=$BUILD_DIR/.quickstart
    mkdir -p "$stamps"
    ac_hash=$(hash_of "$SRC_DIR/configure.ac" "$SRC_DIR/autogen.sh")
    cfg_hash=$(printf '%s\n' "$ac_hash" "${configure_args[@]}" \
                   "${CC:-}" "${CXX:-}" "${CFLAGS:-}" "${CXXFLAGS:-}" | sha256sum | cut -d' ' -f1)

    if [ -x "$SRC_DIR/configure" ] && [ "$(cat "$stamps/autogen" 2>/dev/null)" = "$ac_hash" ]; then
        step "autogen: up to date (configure.ac unchanged)"
    else
        step "Generating the build system (./autogen.sh)"
        (cd "$SRC_DIR" && ./autogen.sh)
        echo "$ac_hash" > "$stamps/autogen"
        rm -f "$stamps/configure"
    fi

    if [ -f "$BUILD_DIR/config.status" ] && [ -f "$BUILD_DIR/Makefile" ] &&
       [ "$(cat "$stamps/configure" 2>/dev/null)" = "$cfg_hash" ]; then
        step "configure: up to date (in $BUILD_DIR)"
    else
        step "Configuring in $BUILD_DIR: configure ${configure_args[*]}"
        if ! (cd "$BUILD_DIR" && "$SRC_DIR/configure" "${configure_args[@]}"); then
            [ -f "$BUILD_DIR/config.log" ] && tail -n 40 "$BUILD_DIR/config.log" >&2
            die "configure failed (full log: $BUILD_DIR/config.log)"
        fi
        echo "$cfg_hash" > "$stamps/configure"
    fi

    step "Building (make -j$JOBS)"
    make -C "$BUILD_DIR" -j"$JOBS"
}

# Install (default prefix /usr/local) so that applications build with
# `mpicc app.c $(pkg-config --cflags --libs mpix-hier)`. Skipped with
# NO_MAKE_INSTALL=1 or when the prefix is not writable.
install_lib() {
    local prefix
    prefix=$(sed -n 's/^prefix = //p' "$BUILD_DIR/Makefile" | head -n 1)
    if [ "${NO_MAKE_INSTALL:-0}" = 1 ]; then
        note "NO_MAKE_INSTALL=1: not installing"
        return 0
    fi
    mkdir -p "$prefix" 2>/dev/null || true
    if [ ! -w "$prefix" ]; then
        note "prefix $prefix is not writable: not installing (run 'make -C $BUILD_DIR install' as root)"
        return 0
    fi
    step "Installing into $prefix (make install)"
    make -C "$BUILD_DIR" install >/dev/null
    if [ "$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig || true; fi
    note "applications: mpicc app.c \$(pkg-config --cflags --libs mpix-hier)"
    case ":${PKG_CONFIG_PATH:-}:$(pkg-config --variable pc_path pkg-config 2>/dev/null):" in
        *":$prefix/lib/pkgconfig:"*) ;;
        *) note "(export PKG_CONFIG_PATH=$prefix/lib/pkgconfig for pkg-config to find it)" ;;
    esac
}

# ---------------------------------------------------------------- demo
mpiexec_path() {
    local m
    m=$(sed -n 's/^MPIEXEC = //p' "$BUILD_DIR/Makefile" 2>/dev/null | head -n 1)
    [ -n "$m" ] && [ -x "$m" ] && { echo "$m"; return; }
    command -v mpiexec.hydra 2>/dev/null || command -v mpiexec 2>/dev/null ||
        die "mpiexec not found"
}

run_demo() {
    local mpiexec demo=./benchmarks/mpix_demo
    mpiexec=$(mpiexec_path)
    [ -x "$BUILD_DIR/$demo" ] || die "$BUILD_DIR/$demo was not built"
    step "Demo: 4 ranks as 2 simulated nodes x 2 ranks on this machine ($(nproc) cores)"
    note "node identity comes from MPIX_HIER_HOSTNAME, set per MPMD segment:"
    note "$mpiexec -n 2 -env MPIX_HIER_HOSTNAME node0 $demo ${demo_args[*]} : -n 2 -env MPIX_HIER_HOSTNAME node1 $demo ${demo_args[*]}"
    note "(times on an oversubscribed laptop-size machine are illustrative, not performance claims)"
    echo
    cd "$BUILD_DIR"
    MPIEXEC_TIMEOUT=${MPIEXEC_TIMEOUT:-300} "$mpiexec" \
        -n 2 -env MPIX_HIER_HOSTNAME node0 "$demo" "${demo_args[@]}" : \
        -n 2 -env MPIX_HIER_HOSTNAME node1 "$demo" "${demo_args[@]}" </dev/null
}

# ---------------------------------------------------------------- check
show_failed_logs() {
    local trs log found=0
    step "Failing tests (last $LOG_TAIL lines of each log)"
    while IFS= read -r trs; do
        if grep -qE '^:test-result: (FAIL|ERROR|XPASS)' "$trs"; then
            log=${trs%.trs}.log
            found=1
            printf '\n----- %s -----\n' "${log#"$BUILD_DIR"/}"
            tail -n "$LOG_TAIL" "$log" 2>/dev/null || echo "(no log)"
        fi
    done < <(find "$BUILD_DIR/tests" -name '*.trs' 2>/dev/null | sort)
    if [ "$found" = 0 ]; then
        note "no failing test log: the failure is in the build or a check-local step above"
        [ -f "$BUILD_DIR/tests/test-suite.log" ] && tail -n "$LOG_TAIL" "$BUILD_DIR/tests/test-suite.log"
    fi
}

# "N passed, N failed" over the test programs make check ran (from the .trs files).
summary_line() {
    local pass fail skip
    read -r pass fail skip < <(find "$BUILD_DIR/tests" -name '*.trs' -exec cat {} + 2>/dev/null |
        awk '/^:test-result: PASS/ {p++} /^:test-result: (FAIL|ERROR|XPASS)/ {f++}
             /^:test-result: SKIP/ {s++} END {print p + 0, f + 0, s + 0}')
    printf '\ncheck: %d passed, %d failed, %d skipped\n' "$pass" "$fail" "$skip"
}

run_check() {
    local rc=0 progs
    # Compile the test programs with JOBS jobs, then let 'make check' run the
    # suite with CHECK_JOBS parallel tests: MPI tests already oversubscribe.
    # shellcheck disable=SC2016 # $(check_PROGRAMS) is for make, not the shell
    progs=$(make -s --no-print-directory -C "$BUILD_DIR/tests" \
                --eval='qs-print-check-programs: ; @echo $(check_PROGRAMS)' \
                qs-print-check-programs)
    if [ -n "$progs" ]; then
        step "Building the tests (make -j$JOBS)"
        # shellcheck disable=SC2086 # word splitting wanted: a list of programs
        make -C "$BUILD_DIR/tests" -j"$JOBS" $progs || die "building the tests failed"
    fi
    step "Running the test suite (make -j$CHECK_JOBS check)"
    make -C "$BUILD_DIR" -j"$CHECK_JOBS" check </dev/null || rc=$?
    if [ "$rc" -ne 0 ]; then
        show_failed_logs
        summary_line
        printf '\nquickstart: make check FAILED (exit %d); logs under %s/tests\n' "$rc" "$BUILD_DIR" >&2
        exit "$rc"
    fi
    step "make check passed"
    summary_line
}

# ---------------------------------------------------------------- main
install_deps
build
install_lib
case "$cmd" in
    demo)  run_demo ;;
    check) run_check ;;
    build) step "Built in $BUILD_DIR (demo: $BUILD_DIR/benchmarks/mpix_demo)" ;;
esac
