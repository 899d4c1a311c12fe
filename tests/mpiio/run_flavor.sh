#!/bin/sh
# aggio-run's choice of library where both MPI builds are installed and no
# launcher says which MPI library runs (src/mpiio/aggio-run.in): a program
# that links no MPI library starts as it is, without aggio; an interpreter
# (which may load MPI itself, as mpi4py does) is refused with the way out;
# AGGIO_MPI_FLAVOR picks the build; a tool already in LD_PRELOAD stays
# in front of aggio.
# Args: the source of aggio-run (aggio-run.in).
set -u
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/lib/openmpi" "$tmp/lib/mpich"
: >"$tmp/lib/openmpi/libaggio-mpiio.so"
: >"$tmp/lib/mpich/libaggio-mpiio.so"
sed "s#@AGGIO_RUN_LIBROOT@#$tmp/lib#" "$1" >"$tmp/aggio-run"
chmod +x "$tmp/aggio-run"
clean="env -u LD_PRELOAD -u AGGIO_MPI_FLAVOR -u AGGIO_MPIIO_LIB -u OMPI_COMM_WORLD_SIZE
           -u PMI_RANK -u PMI_SIZE -u HYDRA_CONTROL_FD"
fail=0

# a program without MPI: no library preloaded, its own exit status kept
out=$($clean "$tmp/aggio-run" sh -c 'echo "preload=[${LD_PRELOAD:-}]"; exit 3')
rc=$?
[ "$out" = "preload=[]" ] && [ $rc = 3 ] \
  || { echo "FAIL: a program without MPI: '$out' (exit $rc)"; fail=1; }

# an interpreter: refused, saying how to choose
py=$(command -v python3 || true)
if [ -n "$py" ]; then
  err=$($clean "$tmp/aggio-run" python3 -c pass 2>&1)
  rc=$?
  [ $rc = 2 ] && echo "$err" | grep -q AGGIO_MPI_FLAVOR \
    || { echo "FAIL: python3 without a flavor: exit $rc, '$err'"; fail=1; }
else
  echo "SKIP: no python3 for the interpreter case"
fi

# an explicit flavor: that build is preloaded
out=$($clean AGGIO_MPI_FLAVOR=mpich "$tmp/aggio-run" sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
[ "$out" = "$tmp/lib/mpich/libaggio-mpiio.so" ] \
  || { echo "FAIL: AGGIO_MPI_FLAVOR=mpich preloaded '$out'"; fail=1; }

# a tool already preloaded (Darshan, as centres set it) stays in front
out=$($clean LD_PRELOAD=/opt/tool/libtool.so AGGIO_MPI_FLAVOR=mpich "$tmp/aggio-run" \
  sh -c 'echo "$LD_PRELOAD"' 2>/dev/null)
[ "$out" = "/opt/tool/libtool.so:$tmp/lib/mpich/libaggio-mpiio.so" ] \
  || { echo "FAIL: with a tool preloaded, LD_PRELOAD was '$out'"; fail=1; }

[ $fail = 0 ] && echo "aggio-run flavors: ok"
exit $fail
