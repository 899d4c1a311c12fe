#!/bin/sh
# Runs one Fortran MPI-IO program (f_*.f90) natively and under aggio-run
# and checks that aggio served it: the program checks its file handle is
# aggio's (or the MPI library's natively) and its data; here, aggio's
# statistics must name the file, and both runs must leave the same bytes.
# Args: program dir aggio-run -- mpiexec-and-flags...
set -eu
prog=$1 dir=$2 run=$3
shift 4
mkdir -p "$dir"
name=$(basename "$prog")
native=$dir/$name.native.dat aggio=$dir/$name.aggio.dat out=$dir/$name.out
rm -f "$native" "$aggio"
AGGIO_TEST_EXPECT_AGGIO=0 "$@" "$prog" "$native" >"$out" 2>&1 \
  || { echo "native run failed:"; cat "$out"; exit 1; }
grep -q '^ok' "$out" || { echo "native run did not pass:"; cat "$out"; exit 1; }
AGGIO_TEST_EXPECT_AGGIO=1 AGGIO_STATS=1 "$@" "$run" "$prog" "$aggio" >"$out" 2>&1 \
  || { echo "aggio run failed:"; cat "$out"; exit 1; }
grep -q '^ok' "$out" || { echo "aggio run did not pass:"; cat "$out"; exit 1; }
grep -q "aggio stats for file \"$aggio\"" "$out" \
  || { echo "aggio printed no statistics for $aggio:"; cat "$out"; exit 1; }
cmp "$native" "$aggio" || { echo "the files differ"; exit 1; }
echo "$name: served by aggio, same bytes as the MPI library's MPI-IO"
