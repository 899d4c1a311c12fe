#!/bin/sh
# Runs abort_writer under a launcher (mpiexec and its flags, then aggio-run
# or nothing): the job must end by rank 0's MPI_Abort, and afterwards the
# file must hold every byte written before it (abort_writer.c).
# Args: nprocs program launcher...
set -u
n=$1 prog=$2
shift 2
file=${AGGIO_TEST_DIR:-/tmp}/mpiio_abort.$$.dat
out=$file.out
trap 'rm -f "$file" "$out"' EXIT
rm -f "$file"
if "$@" "$prog" write "$file" >"$out" 2>&1; then
  cat "$out"
  echo "FAIL: the job did not end by MPI_Abort"
  exit 1
fi
if grep -q FAIL "$out"; then
  cat "$out"
  exit 1
fi
"$prog" check "$file" "$n" || { cat "$out"; exit 1; }
