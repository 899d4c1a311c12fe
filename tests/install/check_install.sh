#!/usr/bin/env bash
# Installs aggio into a scratch prefix, then builds the README example twice,
# once with pkg-config and once with CMake's find_package(aggio), and runs
# both at 2 ranks.  Args: build-dir source-dir mpicc mpiexec [mpiexec flags]
set -euo pipefail
build=$1 src=$2 cc=$3 run=$4
shift 4
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/aggio.h"
test -f "$prefix/lib/pkgconfig/aggio.pc" || test -f "$prefix/lib/x86_64-linux-gnu/pkgconfig/aggio.pc"
pcdir=$(dirname "$(find "$prefix" -name aggio.pc | head -1)")
libdir=$(dirname "$(find "$prefix" -name 'libaggio.so' | head -1)")
export PKG_CONFIG_PATH="$pcdir"
"$cc" "$src/examples/hello_aggio.c" $(pkg-config --cflags --libs aggio) \
  -Wl,-rpath,"$libdir" -o "$prefix/hello_pc"
"$run" -n 2 "$@" "$prefix/hello_pc" "$prefix/out1.dat"
cmake -S "$src/tests/install/consumer" -B "$prefix/consumer" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" \
  -DHELLO_SOURCE="$src/examples/hello_aggio.c" \
  -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
cmake --build "$prefix/consumer" >/dev/null
"$run" -n 2 "$@" "$prefix/consumer/hello_aggio" "$prefix/out2.dat"
cmp "$prefix/out1.dat" "$prefix/out2.dat"
echo "install check: ok"
