#!/usr/bin/env python3
"""Runs a real MPI-IO client once through the MPI library's own MPI-IO and
once through aggio (aggio-run, or LD_PRELOAD of libaggio-mpiio), and checks
that nothing but the I/O path changed (issue 10 part 5; CTest label
"clients", tests/clients/CMakeLists.txt).

  clientrun.py hdf5    --exe hdf5_client ...      C, parallel HDF5
  clientrun.py pnetcdf --exe pnetcdf_client ...   C, PnetCDF (BTIO-like)
  clientrun.py h5py    --script h5py_client.py    Debian's h5py, driver='mpio'
  clientrun.py mpi4py  --build DIR                mpi4py's own test_io.py and
                                                  test_file.py, from its sdist

common: --np N --mpiexec PATH [--mpiexec-flags "..."] --flavor openmpi|mpich
        --dir SCRATCH (--aggio-run PATH | --preload LIBRARY)
        [--stage DIR]: the aggio runs stage every write through DIR
        (AGGIO_HINTS='*:aggio_stage_dir=DIR', docs/staging.md); their
        statistics must name the stage, and DIR must hold no staged bytes
        once the client has ended (every byte drained to the file)

For every client:
  1. the native run: no aggio; it must succeed and print no aggio block
     (so that the comparison really is aggio against the MPI library);
  2. the aggio run, with AGGIO_STATS=1: it must succeed, and aggio's
     statistics must show that aggio moved the data: a block for every
     file the client names, collective calls, and at least as many bytes
     written and read as the client's own count of its data;  a run in
     which aggio silently did nothing has no block and fails;
  3. the results compared: the files byte for byte (cmp: these programs
     turn HDF5's object times off, and classic netCDF has none), and with
     h5diff / ncmpidiff as well; mpi4py's unittest summaries (tests run,
     skipped, all passed) must be the same;
  4. for the C clients, each side reads the other's file (--read-only):
     aggio reads what the MPI library wrote and the other way round.

Exit status: 0 passed, 1 failed, 77 (CTest's SKIP_RETURN_CODE) when a tool
or package the check needs is missing here, with a line "SKIP: why".
"""
import argparse
import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile

SKIP = 77
args_stage = None  # --stage: the stage directory of the aggio runs
SYSTEM_PYTHON = "/usr/bin/python3"  # Debian's h5py-mpi and mpi4py live there
RUN_TIMEOUT = 240  # seconds per launch (--run-timeout): a hang fails, not the ctest timeout


class Skip(Exception):
    pass


class Failure(Exception):
    pass


# ---- launching -------------------------------------------------------------

def launch(args, argv, aggio, extra_env=None, cwd=None, label=""):
    """Runs argv on args.np ranks, natively or through aggio; returns
    (returncode, stdout, stderr).  Variables for the ranks are passed the
    way each launcher forwards them (Open MPI's -x, MPICH's -genv), never
    through mpiexec's own environment, so that LD_PRELOAD does not load
    libaggio-mpiio into the launcher itself."""
    env = dict(os.environ)
    for k in [k for k in env if k.startswith("AGGIO_") or k.startswith("MPICH_MPIIO_")]:
        del env[k]  # the native run must not see aggio's switches, nor the aggio run stray ones
    env.pop("LD_PRELOAD", None)
    rank_env = dict(extra_env or {})
    prefix = []
    if aggio:
        rank_env["AGGIO_STATS"] = "1"
        if args.stage:
            rank_env["AGGIO_HINTS"] = "*:aggio_stage_dir=" + args.stage
        if args.aggio_run:
            prefix = [args.aggio_run]
        else:
            rank_env["LD_PRELOAD"] = args.preload
    cmd = [args.mpiexec, "-n", str(args.np)] + shlex.split(args.mpiexec_flags or "")
    for k, v in rank_env.items():
        if args.flavor == "mpich":
            cmd += ["-genv", k, v]
        else:
            cmd += ["-x", "%s=%s" % (k, v)]
    cmd += prefix + argv
    print("== %s: %s" % (label, " ".join(shlex.quote(c) for c in cmd)), flush=True)
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True,
                           timeout=args.run_timeout)
    except subprocess.TimeoutExpired as e:
        raise Failure("%s: no result after %d s (hung?)\n%s" % (label, args.run_timeout, e.stdout or ""))
    return p.returncode, p.stdout, p.stderr


def run_ok(args, argv, aggio, label, **kw):
    rc, out, err = launch(args, argv, aggio, label=label, **kw)
    if rc != 0:
        raise Failure("%s: exit status %d\n--- stdout\n%s\n--- stderr\n%s" % (label, rc, out[-6000:], err[-6000:]))
    return out


# ---- aggio's statistics ----------------------------------------------------

BLOCK = re.compile(r'^aggio stats for file "([^\n]*)"\n(.*?)^aggio stats end$', re.M | re.S)


def stats_blocks(out):
    """[(path, {key: value})] of every statistics block in a run's output
    (docs/observability.md: '  key: value' lines between the markers)."""
    blocks = []
    for m in BLOCK.finditer(out):
        kv = {}
        for line in m.group(2).splitlines():
            if line.startswith("  ") and not line.startswith("   ") and ": " in line:
                k, v = line[2:].split(": ", 1)
                kv[k] = v
        blocks.append((m.group(1), kv))
    return blocks


def counter(kv, key):
    try:
        return int(kv.get(key, "0"))
    except ValueError:
        return 0


def totals(blocks, path=None):
    """Sums the counters of the blocks of `path` (every block when None)."""
    want = os.path.realpath(path) if path else None
    sel = [kv for p, kv in blocks if want is None or os.path.realpath(p) == want]
    keys = ("bytes written", "bytes read", "collective writes", "collective reads",
            "independent writes", "independent reads")
    t = {k: sum(counter(kv, k) for kv in sel) for k in keys}
    t["blocks"] = len(sel)
    return t


def require_native(out, label):
    if "aggio stats for file" in out:
        raise Failure("%s: the native run printed aggio statistics: aggio was loaded where "
                      "the MPI library's MPI-IO was meant" % label)


def require_aggio(out, label, path, written=0, read=0, collective=True):
    """Checks that aggio's statistics account for the client's data."""
    t = totals(stats_blocks(out), path)
    print("   aggio stats for %s: %s" % (path or "all files", t))
    if t["blocks"] == 0:
        raise Failure("%s: no aggio statistics block for %s: aggio did not handle this file "
                      "(output:\n%s)" % (label, path or "any file", out[-3000:]))
    if t["bytes written"] < written:
        raise Failure("%s: aggio wrote %d bytes of %s, the client wrote %d bytes of data"
                      % (label, t["bytes written"], path, written))
    if t["bytes read"] < read:
        raise Failure("%s: aggio read %d bytes of %s, the client read %d bytes of data"
                      % (label, t["bytes read"], path, read))
    if collective and written and t["collective writes"] == 0:
        raise Failure("%s: no collective write went through aggio for %s" % (label, path))
    if collective and read and t["collective reads"] == 0:
        raise Failure("%s: no collective read went through aggio for %s" % (label, path))
    if args_stage:
        require_staged(out, label, path)
    return t


def require_staged(out, label, path):
    """With --stage: every block of the file names the stage directory,
    and the directory holds no staged data once the client has ended."""
    want = os.path.realpath(path) if path else None
    for p, kv in stats_blocks(out):
        if want and os.path.realpath(p) != want:
            continue
        if kv.get("stage dir") != args_stage:
            raise Failure("%s: %s was not staged through %s (stats say stage dir %r)"
                          % (label, p, args_stage, kv.get("stage dir")))
    left = []
    for root, _, files in os.walk(args_stage):
        left += [os.path.join(root, f) for f in files
                 if f.endswith((".data", ".index")) and os.path.getsize(os.path.join(root, f))]
    if left:
        raise Failure("%s: staged bytes left in %s after the client ended: %s"
                      % (label, args_stage, left[:5]))
    print("   staged through %s, nothing left there" % args_stage)


def client_bytes(out, name):
    m = re.search(r"^%s: ok.*data bytes written (\d+), data bytes read (\d+)" % name, out, re.M)
    if not m:
        raise Failure("%s printed no success line:\n%s" % (name, out[-3000:]))
    return int(m.group(1)), int(m.group(2))


# ---- comparisons -----------------------------------------------------------

def same_bytes(a, b, label):
    p = subprocess.run(["cmp", a, b], capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure("%s: the files differ byte for byte: %s%s" % (label, p.stdout, p.stderr))
    print("   cmp: %s and %s are identical" % (a, b))


def same_contents(tool, a, b, label):
    exe = shutil.which(tool)
    if not exe:
        raise Skip("%s is not installed (scripts/deps installs it)" % tool)
    p = subprocess.run([exe, a, b], capture_output=True, text=True)
    if p.returncode != 0:
        raise Failure("%s: %s finds differences (status %d):\n%s%s"
                      % (label, tool, p.returncode, p.stdout[-4000:], p.stderr[-2000:]))
    print("   %s: same contents" % tool)


def fresh_dir(path):
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ---- the clients -----------------------------------------------------------

def c_client(args, name, variants, diff_tool):
    """hdf5 / pnetcdf: variants is [(tag, extra argv)]."""
    for tag, extra in variants:
        d = fresh_dir(os.path.join(args.dir, tag))
        native, viaaggio = os.path.join(d, "native.out"), os.path.join(d, "aggio.out")
        out = run_ok(args, [args.exe, native] + extra, False, "%s native" % tag)
        require_native(out, tag)
        written, read = client_bytes(out, name)
        out = run_ok(args, [args.exe, viaaggio] + extra, True, "%s aggio" % tag)
        w2, r2 = client_bytes(out, name)
        if (w2, r2) != (written, read):
            raise Failure("%s: the client counted %d/%d bytes natively, %d/%d through aggio"
                          % (tag, written, read, w2, r2))
        require_aggio(out, tag + " aggio", viaaggio, written, read)
        same_bytes(native, viaaggio, tag)
        same_contents(diff_tool, native, viaaggio, tag)
        # each reads the other's file
        out = run_ok(args, [args.exe, native, "--read-only"] + extra, True,
                     "%s aggio reads the native file" % tag)
        require_aggio(out, tag + " aggio read", native, 0, read)
        out = run_ok(args, [args.exe, viaaggio, "--read-only"] + extra, False,
                     "%s native reads aggio's file" % tag)
        require_native(out, tag)
    return 0


def cmd_hdf5(args):
    variants = [("hdf5-collmeta-%s" % v, ["--coll-meta", v]) for v in ("on", "off")]
    return c_client(args, "hdf5_client", variants, "h5diff")


def cmd_pnetcdf(args):
    return c_client(args, "pnetcdf_client", [("pnetcdf", [])], "ncmpidiff")


def system_python_has(*modules):
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        raise Skip("%s is missing" % SYSTEM_PYTHON)
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import " + ", ".join(modules)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("Debian's %s cannot import %s (python3-h5py-mpi, python3-mpi4py: "
                   "scripts/deps): %s" % (SYSTEM_PYTHON, ", ".join(modules),
                                          p.stderr.strip().splitlines()[-1:]))


def cmd_h5py(args):
    system_python_has("h5py", "mpi4py")
    d = fresh_dir(os.path.join(args.dir, "h5py"))
    native, viaaggio = os.path.join(d, "native.h5"), os.path.join(d, "aggio.h5")
    out = run_ok(args, [SYSTEM_PYTHON, args.script, native], False, "h5py native")
    require_native(out, "h5py")
    written, read = client_bytes(out, "h5py_client")
    out = run_ok(args, [SYSTEM_PYTHON, args.script, viaaggio], True, "h5py aggio")
    if client_bytes(out, "h5py_client") != (written, read):
        raise Failure("h5py: the client's counts differ with aggio:\n" + out[-2000:])
    size = os.path.getsize(native)
    require_aggio(out, "h5py aggio", viaaggio, written, read)
    same_bytes(native, viaaggio, "h5py")
    same_contents("h5diff", native, viaaggio, "h5py")
    print("   file size %d bytes" % size)
    return 0


# ---- mpi4py's own tests ----------------------------------------------------

# mpi4py's tests, and whether they move data: test_file.py exercises the
# file calls without data (open, sizes, views, atomicity, info), so aggio
# must only have opened its files; test_io.py reads and writes.
MPI4PY_TESTS = (("test_io.py", True), ("test_file.py", False))


def mpi4py_version():
    p = subprocess.run([SYSTEM_PYTHON, "-c", "import mpi4py; print(mpi4py.__version__)"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise Skip("Debian's mpi4py (python3-mpi4py) is not importable by %s" % SYSTEM_PYTHON)
    return p.stdout.strip()


def mpi4py_test_dir(build):
    """The test directory of mpi4py's source distribution, the version of
    Debian's python3-mpi4py, fetched once into `build` (ranks' tests run
    side by side: a lock keeps them from fetching at once)."""
    version = mpi4py_version()
    os.makedirs(build, exist_ok=True)
    tests = os.path.join(build, "mpi4py-%s" % version, "test")
    with open(os.path.join(build, ".fetch.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if all(os.path.exists(os.path.join(tests, t)) for t, _ in MPI4PY_TESTS):
            return tests, version
        sdist = os.path.join(build, "mpi4py-%s.tar.gz" % version)
        if not os.path.exists(sdist):
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                   "--disable-pip-version-check", "-d", build, "mpi4py==%s" % version]
            print("== fetching mpi4py's source distribution: " + " ".join(cmd), flush=True)
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            except subprocess.TimeoutExpired:
                raise Skip("mpi4py %s's source distribution could not be fetched in 300 s "
                           "(package registry unreachable?)" % version)
            if p.returncode != 0 or not os.path.exists(sdist):
                last = (p.stderr.strip().splitlines() or ["?"])[-1]
                raise Skip("mpi4py %s's source distribution could not be fetched (package "
                           "registry unreachable?): %s" % (version, last))
        with tarfile.open(sdist) as tf:
            members = [m for m in tf.getmembers()
                       if m.name.startswith("mpi4py-%s/test/" % version) and m.isfile()]
            tf.extractall(build, members=members)
    return tests, version


SUMMARY = re.compile(r"^Ran (\d+) tests? in .*?\n\n(OK|FAILED)(?: \((.*)\))?$", re.M)


# Each rank's stderr (where unittest writes) goes to its own file: through
# one pipe, two ranks' summaries can interleave within a line ("Ran 28 tests
# in 2.1sRan 28 tests in 2.2s") and no summary would parse.
PER_RANK_STDERR = ('exec "$0" "$@" 2> "$CLIENT_STDERR.${OMPI_COMM_WORLD_RANK:-$PMI_RANK}"')


def rank_stderrs(prefix, np):
    """Each rank's stderr as written by PER_RANK_STDERR."""
    texts = []
    for r in range(np):
        try:
            with open("%s.%d" % (prefix, r), errors="replace") as f:
                texts.append(f.read())
        except FileNotFoundError:
            texts.append("")
    return texts


def unittest_summary(texts, label):
    """(tests run, outcome, details) of the unittest summaries in the ranks'
    outputs: exactly one per rank, and they must agree."""
    found = set()
    for r, text in enumerate(texts):
        mine = [(int(m.group(1)), m.group(2), m.group(3) or "") for m in SUMMARY.finditer(text)]
        if len(mine) != 1:
            raise Failure("%s: rank %d printed %d unittest summaries, expected one:\n%s"
                          % (label, r, len(mine), text[-4000:]))
        found.add(mine[0])
    if len(found) != 1:
        raise Failure("%s: the ranks' unittest summaries differ: %s" % (label, sorted(found)))
    return found.pop()


def cmd_mpi4py(args):
    system_python_has("mpi4py")
    tests, version = mpi4py_test_dir(args.build)
    for test, moves_data in MPI4PY_TESTS:
        label = "mpi4py %s %s" % (version, test)
        d = fresh_dir(os.path.join(args.dir, "mpi4py-" + test[:-3]))
        results = {}
        for aggio in (False, True):
            how = "aggio" if aggio else "native"
            errs = os.path.join(d, "stderr-" + how)
            env = {"TMPDIR": d, "CLIENT_STDERR": errs}  # TMPDIR: where tempfile puts the tests' files
            rc, out, err = launch(args, ["/bin/sh", "-c", PER_RANK_STDERR, SYSTEM_PYTHON, test],
                                  aggio, extra_env=env, cwd=tests, label=label + " " + how)
            texts = rank_stderrs(errs, args.np)
            summary = unittest_summary(texts, label + " " + how)
            print("   %s: %s" % (how, summary))
            if rc != 0 or summary[1] != "OK":
                raise Failure("%s %s: failed (status %d):\n%s\n%s\n%s" % (
                    label, "through aggio" if aggio else "natively", rc, out[-4000:], err[-2000:],
                    "\n".join(t[-3000:] for t in texts)))
            if aggio:
                require_aggio(out, label + " aggio", None, int(moves_data), int(moves_data),
                              collective=moves_data)
            else:
                require_native(out, label)
            results[aggio] = summary
        if results[False] != results[True]:
            raise Failure("%s: natively %s, through aggio %s" % (label, results[False], results[True]))
    return 0


# ---- main ------------------------------------------------------------------

def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", choices=["hdf5", "pnetcdf", "h5py", "mpi4py"])
    ap.add_argument("--np", type=int, required=True)
    ap.add_argument("--mpiexec", required=True)
    ap.add_argument("--mpiexec-flags", default="")
    ap.add_argument("--flavor", choices=["openmpi", "mpich"], required=True)
    ap.add_argument("--dir", required=True, help="scratch directory (emptied)")
    how = ap.add_mutually_exclusive_group(required=True)
    how.add_argument("--aggio-run", help="the aggio-run launcher")
    how.add_argument("--preload", help="libaggio-mpiio, for LD_PRELOAD")
    ap.add_argument("--exe", help="hdf5_client or pnetcdf_client")
    ap.add_argument("--script", help="h5py_client.py")
    ap.add_argument("--build", help="where mpi4py's source distribution is fetched")
    ap.add_argument("--stage", help="stage the aggio runs' writes through this directory")
    ap.add_argument("--run-timeout", type=int, default=RUN_TIMEOUT,
                    help="seconds one launch may take (default %d)" % RUN_TIMEOUT)
    args = ap.parse_args(argv)
    args.dir = os.path.abspath(args.dir)
    os.makedirs(args.dir, exist_ok=True)
    global args_stage
    args_stage = os.path.abspath(args.stage) if args.stage else None
    if args_stage:
        shutil.rmtree(args_stage, ignore_errors=True)
    try:
        rc = {"hdf5": cmd_hdf5, "pnetcdf": cmd_pnetcdf, "h5py": cmd_h5py,
              "mpi4py": cmd_mpi4py}[args.client](args)
    except Skip as s:
        print("SKIP: %s" % s)
        return SKIP
    except Failure as f:
        print("FAIL: %s" % f)
        return 1
    print("PASS: %s at %d ranks (%s): identical with and without aggio, and aggio moved the data"
          % (args.client, args.np, args.flavor))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
