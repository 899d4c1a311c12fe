#!/bin/sh
# Runs a plain MPI-IO program under aggio-run with aggio's observability
# switched on from the environment only (hints from AGGIO_HINTS, the hints
# display, statistics, timers, placement display, trace) and checks that
# each shows up, as it would for a program written against aggio_file_*.
# Args: mpiexec-and-flags... -- aggio-run program
set -eu
out=${AGGIO_TEST_DIR:-/tmp}/mpiio_observe.$$
trace=$out.trace
trap 'rm -f "$out" "$trace"' EXIT
AGGIO_HINTS='*shared*:cb_buffer_size=1m' AGGIO_HINTS_DISPLAY=1 AGGIO_STATS=1 AGGIO_TIMERS=1 \
  AGGIO_AGGREGATOR_PLACEMENT_DISPLAY=1 AGGIO_TRACE=$trace AGGIO_TEST_EXPECT_AGGIO=1 \
  "$@" >"$out" 2>&1 || { cat "$out"; exit 1; }
fail=0
for want in 'aggio hints for file' 'cb_buffer_size *= *1048576' 'aggio aggregator placement' \
            'aggio stats for file' 'aggio timers for file'; do
  grep -q "$want" "$out" || { echo "missing from the output: $want"; fail=1; }
done
[ -s "$trace" ] || { echo "no trace written to $trace"; fail=1; }
[ $fail = 0 ] || { cat "$out"; exit 1; }
echo "observability under aggio-run: ok"
