#!/usr/bin/env bash
# Installs aggio into a scratch prefix, then builds the README example twice,
# once with pkg-config and once with CMake's find_package(aggio), and runs
# both at 2 ranks; the installed aggio-bench must start from the prefix alone
# (its RPATH); the installed aggio-run runs a plain MPI-IO program on the
# installed libaggio-mpiio.  With --static first, it builds a static
# libaggio.a from the sources into the scratch prefix and checks the same
# against it.
# Args: [--static] build-dir source-dir mpicc mpiexec [mpiexec flags]
set -euo pipefail
static=0
if [ "${1:-}" = --static ]; then
  static=1
  shift
fi
build=$1 src=$2 cc=$3 run=$4
shift 4
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
if [ $static = 1 ]; then
  # A build of its own, configured as a packager would for libaggio.a.
  cmake -S "$src" -B "$prefix/build" -DBUILD_SHARED_LIBS=OFF -DAGGIO_BUILD_TESTS=OFF \
    -DMPI_C_COMPILER="$cc" -DMPIEXEC_EXECUTABLE="$run" >"$prefix/configure.log" 2>&1 \
    || { cat "$prefix/configure.log"; exit 1; }
  cmake --build "$prefix/build" -j 2 >"$prefix/build.log" 2>&1 || { cat "$prefix/build.log"; exit 1; }
  build="$prefix/build"
fi
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/aggio.h"
test -f "$prefix/include/aggio_version.h"
pc=$(find "$prefix" -path "$prefix/build" -prune -o -name aggio.pc -print | head -1)
test -n "$pc"
export PKG_CONFIG_PATH="$(dirname "$pc")"
if [ $static = 1 ]; then
  lib=$(find "$prefix" -path "$prefix/build" -prune -o -name 'libaggio.a' -print | head -1)
  test -n "$lib" || { echo "no libaggio.a installed"; exit 1; }
  if find "$prefix" -path "$prefix/build" -prune -o -name 'libaggio.so*' -print | grep -q .; then
    echo "a static build installed a shared libaggio"
    exit 1
  fi
  pcflags=$(pkg-config --static --cflags --libs aggio)
else
  lib=$(find "$prefix" -name 'libaggio.so' | head -1)
  test -n "$lib" || { echo "no libaggio.so installed"; exit 1; }
  pcflags="$(pkg-config --cflags --libs aggio) -Wl,-rpath,$(dirname "$lib")"
fi
libdir=$(dirname "$lib")
# shellcheck disable=SC2086 # pkg-config's output is a list of flags
"$cc" "$src/examples/hello_aggio.c" $pcflags -o "$prefix/hello_pc"
"$run" -n 2 "$@" "$prefix/hello_pc" "$prefix/out1.dat"
cmake -S "$src/tests/install/consumer" -B "$prefix/consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DHELLO_SOURCE="$src/examples/hello_aggio.c" \
  -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
"$run" -n 2 "$@" "$prefix/consumer/hello_aggio" "$prefix/out2.dat"
cmp "$prefix/out1.dat" "$prefix/out2.dat"
if [ -x "$prefix/bin/aggio-bench" ]; then
  # no LD_LIBRARY_PATH: the installed program finds libaggio by its RPATH
  env -u LD_LIBRARY_PATH "$prefix/bin/aggio-bench" -h >/dev/null \
    || { echo "installed aggio-bench -h failed"; exit 1; }
fi
# aggio-subfile-join (`aggio subfile join --mpi N` runs it): installed, and
# it finds libaggio by its RPATH (usage error: exit 2 before any file)
test -x "$prefix/bin/aggio-subfile-join" || { echo "no aggio-subfile-join installed"; exit 1; }
rc=0
env -u LD_LIBRARY_PATH "$run" -n 1 "$@" "$prefix/bin/aggio-subfile-join" >/dev/null 2>&1 || rc=$?
test "$rc" = 2 || { echo "installed aggio-subfile-join without arguments: exit $rc, not 2"; exit 1; }
# aggio-stage-drain (aggio_stage_drain=detach starts it): installed, and
# it runs without MPI (usage error: exit 2)
test -x "$prefix/bin/aggio-stage-drain" || { echo "no aggio-stage-drain installed"; exit 1; }
rc=0
env -u LD_LIBRARY_PATH "$prefix/bin/aggio-stage-drain" >/dev/null 2>&1 || rc=$?
test "$rc" = 2 || { echo "installed aggio-stage-drain without arguments: exit $rc, not 2"; exit 1; }
# libaggio-mpiio and aggio-run: a plain MPI-IO program, built against the
# MPI library alone, runs on aggio through the installed launcher, which
# finds the installed library for this MPI by itself.
test -x "$prefix/bin/aggio-run" || { echo "no aggio-run installed"; exit 1; }
mpiio_lib=$(find "$prefix" -path "$prefix/build" -prune -o -name 'libaggio-mpiio.so' -print | head -1)
test -n "$mpiio_lib" || { echo "no libaggio-mpiio.so installed"; exit 1; }
"$cc" -D_GNU_SOURCE -I"$src/tests" -I"$src/tests/mpiio" "$src/tests/mpiio/test_mpiio_shared.c" \
  -o "$prefix/mpiio_plain" -ldl
env -u LD_LIBRARY_PATH -u AGGIO_MPI_FLAVOR -u AGGIO_MPIIO_LIB AGGIO_TEST_EXPECT_AGGIO=1 \
  AGGIO_TEST_DIR="$prefix" "$run" -n 2 "$@" "$prefix/bin/aggio-run" "$prefix/mpiio_plain" \
  || { echo "a plain MPI-IO program under the installed aggio-run failed"; exit 1; }
echo "install check ($([ $static = 1 ] && echo static || echo shared)): ok"
