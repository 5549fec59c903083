#!/bin/bash
# The installed library as applications use it: make install into a scratch DESTDIR, the
# tree moved elsewhere (the packages' paths must follow it), then a CMake project
# (find_package(mpix-hier), mpix-hier::mpix-hier) and a pkg-config build run under mpiexec.
set -u
top=${MXH_TOP_BUILDDIR:-$(pwd)/..}
prefix=${MXH_PREFIX:?run from make check (MXH_PREFIX, MXH_LIBDIR, MXH_INCLUDEDIR)}
libdir=${MXH_LIBDIR:?}
includedir=${MXH_INCLUDEDIR:?}
MPIEXEC=${MPIEXEC:-mpiexec}
export MPIEXEC_TIMEOUT=120
if ! command -v cmake >/dev/null 2>&1; then
    echo "SKIP: cmake not found (the CMake package test needs cmake >= 3.9)"; exit 77
fi
case $libdir in "$prefix"/*) ;; *)
    echo "SKIP: libdir $libdir is not under prefix $prefix (the test moves the prefix)"; exit 77;;
esac
case $includedir in "$prefix"/*) ;; *)
    echo "SKIP: includedir $includedir is not under prefix $prefix"; exit 77;;
esac
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mxh-consumer.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
npass=0; nfail=0
check() { # check NAME EXPECTED-REGEX OUTPUT
    if grep -Eq -- "$2" <<<"$3"; then npass=$((npass + 1)); else
        nfail=$((nfail + 1)); echo "FAIL: $1: no match for /$2/ in:"; echo "$3" | tail -n 40; fi
}

# the install (a DESTDIR one: libtool refuses another libdir than the configured one),
# without the make check's own flags and jobserver
if ! env -u MAKEFLAGS -u MFLAGS "${MAKE:-make}" -C "$top" install DESTDIR="$tmp/stage" >"$tmp/install.log" 2>&1; then
    tail -n 40 "$tmp/install.log"; echo "FAIL: make install DESTDIR=$tmp/stage"; exit 1
fi
root=$tmp/moved
mv "$tmp/stage$prefix" "$root" || exit 1
lib=$root/${libdir#"$prefix"/}
test -f "$lib/cmake/mpix-hier/mpix-hierConfig.cmake" && npass=$((npass + 1)) ||
    { nfail=$((nfail + 1)); echo "FAIL: no $lib/cmake/mpix-hier/mpix-hierConfig.cmake"; }
version=$(sed -n 's/^Version: //p' "$lib/pkgconfig/mpix-hier.pc")
check "pc version" '^[0-9]+\.[0-9]+\.[0-9]+$' "$version"

mkdir -p "$tmp/app" || exit 1
cat >"$tmp/app/app.c" <<'EOC'
#include <mpix_hier.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank, size, major, minor, patch, in, out = 0, nlevels = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPIX_Hier_get_version(&major, &minor, &patch);
    in = rank + 1;
    int rc = MPIX_Hier_comm_init(MPI_COMM_WORLD, MPI_INFO_NULL);
    if (rc == MPI_SUCCESS)
        rc = MPIX_Hier_allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rc == MPI_SUCCESS)
        rc = MPIX_Hier_comm_get_num_levels(MPI_COMM_WORLD, &nlevels);
    if (rank == 0)
        printf("app: header %d.%d.%d library %d.%d.%d ranks %d sum %d levels %d rc %d\n",
               MPIX_HIER_VERSION_MAJOR, MPIX_HIER_VERSION_MINOR, MPIX_HIER_VERSION_PATCH,
               major, minor, patch, size, out, nlevels, rc);
    MPI_Finalize();
    return rc != MPI_SUCCESS;
}
EOC
# the version file: another major and a newer minor are refused, a range inside the
# major accepted, then the target's properties
cat >"$tmp/app/CMakeLists.txt" <<'EOC'
cmake_minimum_required(VERSION 3.10)
project(mxh_consumer C)
string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _v "${WANT}")
math(EXPR next_major "${CMAKE_MATCH_1} + 1")
math(EXPR next_minor "${CMAKE_MATCH_2} + 1")
find_package(mpix-hier ${next_major} QUIET)
message(STATUS "check: major ${next_major} found=${mpix-hier_FOUND}")
find_package(mpix-hier ${CMAKE_MATCH_1}.${next_minor} QUIET)
message(STATUS "check: minor ${CMAKE_MATCH_1}.${next_minor} found=${mpix-hier_FOUND}")
if(NOT CMAKE_VERSION VERSION_LESS 3.19)
  find_package(mpix-hier ${CMAKE_MATCH_1}.0...<${next_major} QUIET)
  message(STATUS "check: range found=${mpix-hier_FOUND}")
else()
  message(STATUS "check: range found=1")
endif()
find_package(mpix-hier ${WANT} EXACT REQUIRED)
get_target_property(loc mpix-hier::mpix-hier IMPORTED_LOCATION)
get_target_property(inc mpix-hier::mpix-hier INTERFACE_INCLUDE_DIRECTORIES)
get_target_property(deps mpix-hier::mpix-hier INTERFACE_LINK_LIBRARIES)
message(STATUS "check: version ${mpix-hier_VERSION} location ${loc} include ${inc} links ${deps}")
add_executable(app app.c)
target_link_libraries(app PRIVATE mpix-hier::mpix-hier)
EOC
mpicc=$(command -v "${MXH_CC:-mpicc}")
out=$(cd "$tmp/app" && cmake -S . -B build -DWANT="$version" -DCMAKE_PREFIX_PATH="$root" \
      ${mpicc:+-DMPI_C_COMPILER="$mpicc"} 2>&1 && cmake --build build 2>&1)
rc=$?
check "cmake configure+build" 'Built target app' "$out"
check "cmake other major refused" '^-- check: major [0-9]+ found=0$' "$out"
check "cmake newer minor refused" '^-- check: minor [0-9.]+ found=0$' "$out"
check "cmake range accepted" '^-- check: range found=1$' "$out"
check "cmake target" "^-- check: version $version location $lib/libmpixhier.so include $root/include links MPI::MPI_C$" "$out"
if [ $rc -eq 0 ]; then
    out=$($MPIEXEC -n 2 "$tmp/app/build/app" 2>&1)
    check "cmake app runs" "^app: header $version library $version ranks 2 sum 3 levels [0-9]+ rc 0$" "$out"
    out=$(ldd "$tmp/app/build/app" 2>&1)
    check "cmake app's library" "libmpixhier.so.0 => $lib/libmpixhier.so.0" "$out"
fi

# pkg-config: the moved prefix through --define-variable (the .pc file's paths are absolute)
if command -v pkg-config >/dev/null 2>&1; then
    flags=$(PKG_CONFIG_PATH="$lib/pkgconfig" pkg-config --define-variable=prefix="$root" \
            --cflags --libs mpix-hier 2>&1)
    check "pkg-config flags" "^-I$root/include +-L$lib .*-lmpixhier" "$flags"
    # shellcheck disable=SC2086
    out=$("${mpicc:-mpicc}" -std=c11 -o "$tmp/app/app_pc" "$tmp/app/app.c" $flags 2>&1 &&
          $MPIEXEC -n 2 "$tmp/app/app_pc" 2>&1)
    check "pkg-config app runs" "^app: header $version library $version ranks 2 sum 3 levels [0-9]+ rc 0$" "$out"
fi
echo "$npass passed, $nfail failed"
[ $nfail -eq 0 ]
