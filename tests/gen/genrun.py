#!/usr/bin/env python3
"""Runs random legal MPI-IO programs (tests/gen, issue 22 "Trust") natively
and through aggio, and compares them.

For each seed of --seeds A:B, the same program (gen_program.c) runs
  native     gen_mpiio as it is: the MPI library's own MPI-IO (the reference)
  libaggio   gen_aggio: the program through libaggio's API
  aggio-run  aggio-run gen_mpiio: aggio through interposition
  preload    gen_mpiio with LD_PRELOAD of libaggio-mpiio (only if asked)
each under a hard time bound (a run that does not end in time is killed,
its whole process tree, and reported as a hang).  Each run checks itself
against the program (every byte read, every count, every return code,
get_size, and each file at the end); the runner also compares every aggio
run with the native one: each rank's outcome log line by line (return
codes, counts, checksums of what was read) and the files byte for byte.

Every failure is printed with its class (hang, crash, wrong return code,
wrong count, wrong pointer, wrong bytes, wrong size, differs from native)
and a one-line reproducer.  A seed whose native run fails is "reference
failed" (an MPI library bug or a generator bug), reported apart from
aggio's failures; the programs keep clear of each library's known
deviations from MPI (--quirks, gen_model.h).

  genrun.py --build build/gen-openmpi --np 4 --seeds 0:20
  genrun.py --build build/gen-mpich --mpiexec mpiexec.mpich --np 2 \\
            --seeds 0:10000 --time-budget 3600 --env AGGIO_HINTS='*:aggio_strategy=two_phase'

Exit status: 0 every aggio run right, 1 an aggio run failed, or a program
broke a legality rule, or (--strict-reference) a native run failed; 2 a
usage error; 77 nothing could run here (a line "SKIP: why").
Standard library only: runs under the repository's .venv or /usr/bin/python3.
"""
import argparse
import filecmp
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
MODES = ("native", "libaggio", "aggio-run", "preload")
DEFAULT_MODES = "native,libaggio,aggio-run"
# Each MPI library's known deviations from MPI that the programs keep
# clear of (gen_model.h, GEN_QUIRKS), so that the native run is a reference.
AUTO_QUIRKS = {"openmpi": "ompio-sync,ompio-coll-write",
               "mpich": "romio-progress,romio-pointer,romio-one-nbc,mpich-testall"}

# The log's fields that must match native's, and the class of a mismatch.
FIELD_CLASS = {"rc": "wrong return code", "count": "wrong count", "sum": "wrong bytes",
               "data": "wrong bytes", "size": "wrong size", "pos": "wrong pointer",
               "content": "wrong bytes"}


class Run:
    """One launch of one program: command, outcome, and each rank's log."""

    def __init__(self, mode, cmd, workdir):
        self.mode, self.cmd, self.workdir = mode, cmd, workdir
        self.rc, self.timed_out, self.seconds, self.output = None, False, 0.0, ""
        self.logs, self.stacks = {}, []

    def ok(self):
        return self.rc == 0 and not self.timed_out


# ---- launching ---------------------------------------------------------------

def flavor_of(mpiexec):
    """openmpi or mpich, from the launcher's name or its --version."""
    name = os.path.basename(mpiexec)
    for flavor in ("openmpi", "mpich"):
        if flavor in name:
            return flavor
    try:
        out = subprocess.run([mpiexec, "--version"], capture_output=True, text=True,
                             timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "openmpi"
    return "mpich" if "HYDRA" in out or "MPICH" in out else "openmpi"


def launcher_env():
    """The launcher's environment: no aggio switch and no preload leaks into
    the native run (the aggio runs get theirs through the launcher's own
    forwarding, so that mpiexec itself never loads libaggio-mpiio); Open MPI
    as root needs its consent."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AGGIO_") and k != "LD_PRELOAD"}
    if os.geteuid() == 0:
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
        env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return env


def rank_env_args(flavor, rank_env):
    """Variables for the ranks, the way each launcher forwards them."""
    args = []
    for k, v in rank_env.items():
        args += ["-genv", k, v] if flavor == "mpich" else ["-x", "%s=%s" % (k, v)]
    return args


def descendants(pid):
    """Every process below pid (from /proc), deepest last."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def save_stacks(proc, exe, workdir):
    """For a hung launch: every rank's threads' stacks (gdb), into
    workdir/stacks.<pid>; returns the files written."""
    gdb, saved = shutil.which("gdb"), []
    for pid in descendants(proc.pid) if gdb else []:
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if os.path.basename(exe).encode() not in f.read():
                    continue
        except OSError:
            continue
        path = os.path.join(workdir, "stacks.%d" % pid)
        try:
            out = subprocess.run([gdb, "-batch", "-p", str(pid), "-ex", "thread apply all bt"],
                                 capture_output=True, text=True, timeout=60).stdout
        except subprocess.TimeoutExpired:
            continue
        with open(path, "w") as f:
            f.write(out)
        saved.append(path)
    return saved


def kill_tree(proc):
    """Ends a hung launch: its process group, and every process below it
    (a launcher may put its ranks in groups of their own)."""
    victims = descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except OSError:
            pass
        for pid in victims:
            try:
                os.kill(pid, sig)
            except OSError:
                pass
        try:
            proc.wait(timeout=3)
            return
        except subprocess.TimeoutExpired:
            continue


def program_args(args, seed, workdir):
    argv = ["--seed", str(seed), "--ops", str(args.ops), "--files", str(args.files),
            "--threads", args.threads, "--dir", workdir, "--log", os.path.join(workdir, "log")]
    return argv + ["--quirks", args.quirks]


def aggio_env(args, seed):
    env = dict(kv.split("=", 1) for kv in args.env)
    if args.perturb:
        spec = args.perturb if args.perturb.count(":") == 2 else "%d:%s" % (seed, args.perturb)
        env["AGGIO_TEST_PERTURB"] = spec
    return env


def command(args, mode, seed, workdir):
    """The launch line of one mode (a list), and the program it runs."""
    rank_env = {} if mode == "native" else aggio_env(args, seed)
    exe, prefix = args.mpiio_exe, []
    if mode == "native":
        rank_env["GEN_EXPECT_AGGIO"] = "0"
    elif mode == "libaggio":
        exe = args.aggio_exe
    elif mode == "aggio-run":
        prefix = [args.aggio_run]
        rank_env["GEN_EXPECT_AGGIO"] = "1"
    else:  # preload
        rank_env["LD_PRELOAD"] = args.preload
        rank_env["GEN_EXPECT_AGGIO"] = "1"
    cmd = [args.mpiexec, "-n", str(args.np)] + shlex.split(args.mpiexec_flags)
    cmd += rank_env_args(args.flavor, rank_env) + prefix + [exe] + program_args(args, seed, workdir)
    return cmd, exe


def launch(args, mode, seed, workdir):
    os.makedirs(workdir, exist_ok=True)
    cmd, exe = command(args, mode, seed, workdir)
    run = Run(mode, cmd, workdir)
    start = time.monotonic()
    proc = subprocess.Popen(run.cmd, env=launcher_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, errors="replace",
                            start_new_session=True)
    try:
        run.output, _ = proc.communicate(timeout=args.timeout)
        run.rc = proc.returncode
    except subprocess.TimeoutExpired:
        run.timed_out = True
        if args.stacks:
            run.stacks = save_stacks(proc, exe, workdir)
        kill_tree(proc)
        run.output = proc.communicate()[0] or ""
        run.rc = proc.returncode
    run.seconds = time.monotonic() - start
    for r in range(args.np):
        try:
            with open(os.path.join(workdir, "log.%d" % r)) as f:
                run.logs[r] = [line.rstrip("\n") for line in f if not line.startswith("#")]
        except OSError:
            run.logs[r] = []
    return run


# ---- judging -------------------------------------------------------------------

def fields(line):
    """'12 MPI_Wait f0 op3 rc=ok count=4 ...' -> ('12 MPI_Wait f0 op3', {rc: ok, ...})."""
    head, kv = [], {}
    for tok in line.split():
        if "=" in tok:
            k, v = tok.split("=", 1)
            kv[k.rstrip(">")] = v
        elif tok in ("ok", "BAD"):  # the verdict on the size or position before it
            kv["verdict"] = tok
        else:
            head.append(tok)
    return " ".join(head), kv


def own_failures(run):
    """What the run itself found wrong, from its logs: [(class, detail)]."""
    found = []
    for r, lines in sorted(run.logs.items()):
        for line in lines:
            head, kv = fields(line)
            cls = None
            if kv.get("rc", "ok") != "ok":
                cls = "wrong return code"
            elif "BAD" in kv.get("data", "") or "BAD" in kv.get("content", ""):
                cls = "wrong bytes"
            elif kv.get("verdict") == "BAD":
                cls = "wrong pointer" if "pos" in kv else "wrong size"
            if cls:
                found.append((cls, "rank %d: %s" % (r, line)))
    for line in run.output.splitlines():
        if line.startswith("gen: ") and "count" in line and "expected" in line:
            found.append(("wrong count", line[5:]))
    return found


def where_stopped(run, dump):
    """For a hung run: per rank, the last action it finished and the next one."""
    out = []
    for r, lines in sorted(run.logs.items()):
        last = -1
        for line in lines:
            tok = line.split(" ", 2)
            # the pointer's check comes before its access, with its index
            if tok[0].isdigit() and tok[1:2] != ["MPI_File_get_position"]:
                last = int(tok[0])
        nxt = dump.get(r, {}).get(last + 1, "(end of program)")
        out.append("rank %d: after action %d, in: %d %s" % (r, last, last + 1, nxt))
    return out


def compare_logs(native, run):
    """The first line per rank where run's outcome differs from native's."""
    found = []
    for r in sorted(native.logs):
        a, b = native.logs[r], run.logs.get(r, [])
        for i in range(max(len(a), len(b))):
            la = a[i] if i < len(a) else "(nothing)"
            lb = b[i] if i < len(b) else "(nothing)"
            if la == lb:
                continue
            ha, ka = fields(la)
            hb, kb = fields(lb)
            cls = "differs from native"
            for k, c in FIELD_CLASS.items():
                if ha == hb and ka.get(k) != kb.get(k):
                    cls = c
                    break
            found.append((cls, "rank %d line %d: native '%s', %s '%s'" % (r, i, la, run.mode, lb)))
            break
    return found


def holes(path):
    """[(offset, length)] of the bytes the program never wrote (PATH.holes,
    from gen_program): MPI leaves them undefined."""
    try:
        with open(path + ".holes") as f:
            return [tuple(int(x) for x in line.split()) for line in f if line.strip()]
    except (OSError, ValueError):
        return []


def first_difference(a, b, skip):
    """The first byte where files a and b differ outside the ranges skip,
    or None."""
    with open(a, "rb") as fa, open(b, "rb") as fb:
        da, db = fa.read(), fb.read()
    if len(da) != len(db):
        return "sizes %d and %d" % (len(da), len(db))
    mask = bytearray(b"\1") * len(da)
    for off, length in skip:
        mask[off:off + length] = bytes(min(length, max(0, len(da) - off)))
    for i in range(len(da)):
        if da[i] != db[i] and mask[i]:
            return "byte %d: %d and %d" % (i, da[i], db[i])
    return None


def compare_files(native, run):
    """The files byte for byte, but for the holes."""
    found = []
    for name in sorted(os.listdir(native.workdir)):
        if not (name.startswith("gen_f") and name.endswith(".dat")):
            continue
        a, b = os.path.join(native.workdir, name), os.path.join(run.workdir, name)
        if not os.path.exists(b):
            found.append(("wrong bytes", "no file %s" % b))
        elif not filecmp.cmp(a, b, shallow=False):
            diff = first_difference(a, b, holes(a))
            if diff:
                found.append(("wrong bytes", "file %s differs from native's at %s (cmp %s %s)"
                              % (name, diff, a, b)))
    return found


def judge(run, native, dump):
    """[(class, detail)] for one run; native=None when the reference failed."""
    if run.timed_out:
        stacks = "; stacks in %s" % " ".join(run.stacks) if run.stacks else ""
        return [("hang", "no end after %d s; %s%s" % (run.seconds, "; ".join(where_stopped(run, dump)),
                                                      stacks))]
    found = own_failures(run)
    if run.rc == 3:
        found.insert(0, ("generator bug", "the program broke a legality rule"))
    elif run.rc not in (0, 1) or (run.rc == 1 and not found):
        tail = " | ".join(run.output.strip().splitlines()[-4:])
        found.insert(0, ("crash", "exit status %s: %s" % (run.rc, tail)))
    if native is not None and not found:
        found = compare_logs(native, run) + compare_files(native, run)
    return found


# ---- the seeds -----------------------------------------------------------------

def dump_program(args, seed):
    """{rank: {index: description}}, from the program's --dump (no MPI)."""
    argv = [args.mpiio_exe, "--dump", "--np", str(args.np), "--seed", str(seed), "--ops",
            str(args.ops), "--files", str(args.files)]
    argv += ["--quirks", args.quirks]
    out = subprocess.run(argv, capture_output=True, text=True).stdout
    prog, rank = {}, None
    for line in out.splitlines():
        if line.startswith("rank "):
            rank = int(line.split()[1])
            prog[rank] = {}
        elif rank is not None and line.strip() and line.strip().split()[0].isdigit():
            idx, desc = line.strip().split(" ", 1)
            prog[rank][int(idx)] = desc
    return prog


def reproducer(args, seed, mode):
    """One line that runs this seed again, this mode against native."""
    argv = [sys.executable, os.path.abspath(__file__), "--seeds", "%d:%d" % (seed, seed + 1),
            "--np", str(args.np), "--mpiexec", args.mpiexec, "--ops", str(args.ops),
            "--files", str(args.files), "--threads", args.threads,
            "--modes", "native" if mode == "native" else "native," + mode,
            "--mpiio-exe", args.mpiio_exe, "--aggio-exe", args.aggio_exe,
            "--timeout", str(args.timeout), "--dir", args.dir, "--keep"]
    if args.mpiexec_flags:
        argv.append("--mpiexec-flags=" + args.mpiexec_flags)
    if args.aggio_run:
        argv += ["--aggio-run", args.aggio_run]
    if args.preload:
        argv += ["--preload", args.preload]
    argv += ["--quirks", args.quirks]
    for kv in args.env:
        argv += ["--env", kv]
    if args.perturb:
        argv += ["--perturb", args.perturb]
    return " ".join(shlex.quote(a) for a in argv)


def run_seed(args, seed, report):
    """Runs one seed in every mode; adds its failures to report; returns
    whether it passed."""
    seeddir = os.path.join(args.dir, "s%d" % seed)
    shutil.rmtree(seeddir, ignore_errors=True)
    runs = {m: launch(args, m, seed, os.path.join(seeddir, m)) for m in args.modes}
    dump = None
    passed = True
    native = runs.get("native")
    ref_ok = native is None or (native.ok() and not own_failures(native))
    for mode, run in runs.items():
        if run.timed_out and dump is None:
            dump = dump_program(args, seed)
        found = judge(run, native if ref_ok and mode != "native" else None, dump or {})
        if not found:
            continue
        passed = False
        kind = "reference failed" if mode == "native" else "aggio"
        for cls, detail in found[:args.max_details]:
            report.append((kind, cls, seed, mode, detail))
        print("FAIL seed %d %s (%s): %s" % (seed, mode, kind, "; ".join(sorted({c for c, _ in found}))))
        for cls, detail in found[:args.max_details]:
            print("    %s: %s" % (cls, detail))
        print("    command:   %s" % " ".join(shlex.quote(c) for c in run.cmd))
        print("    reproduce: %s" % reproducer(args, seed, mode), flush=True)
    times = " ".join("%s %.1fs" % (m, r.seconds) for m, r in runs.items())
    print("seed %d: %s (%s)" % (seed, "ok" if passed else "FAILED", times), flush=True)
    if passed and not args.keep:
        shutil.rmtree(seeddir, ignore_errors=True)
    return passed


# ---- command line ------------------------------------------------------------------

def setup_parser():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", default="0:10", help="A:B runs seeds A..B-1 (default 0:10)")
    p.add_argument("--np", type=int, default=2, help="ranks (default 2)")
    p.add_argument("--mpiexec", default="mpiexec", help="the MPI library's launcher")
    p.add_argument("--mpiexec-flags", default="", help='e.g. "--oversubscribe" (one string)')
    p.add_argument("--flavor", choices=("openmpi", "mpich"),
                   help="how to forward variables to the ranks (default: from --mpiexec)")
    p.add_argument("--build", help="a build directory: finds gen_mpiio, gen_aggio, aggio-run")
    p.add_argument("--mpiio-exe", help="gen_mpiio")
    p.add_argument("--aggio-exe", help="gen_aggio")
    p.add_argument("--aggio-run", help="the aggio-run launcher (aggio-run mode)")
    p.add_argument("--preload", help="libaggio-mpiio.so (preload mode)")
    p.add_argument("--modes", default=DEFAULT_MODES,
                   help="comma-separated, of %s (default %s)" % (", ".join(MODES), DEFAULT_MODES))
    p.add_argument("--ops", type=int, default=30, help="program length in steps (default 30)")
    p.add_argument("--files", type=int, default=3, help="at most this many files, 1..3")
    p.add_argument("--threads", default="seed",
                   help="single, funneled, multiple, or seed: drawn per seed (default)")
    p.add_argument("--quirks", default="auto",
                   help="restrictions that keep the programs clear of the reference library's "
                        "known deviations from MPI: none, a list of names (GEN_QUIRKS in "
                        "gen_model.h), or auto (by the library: %s)" %
                        "; ".join("%s: %s" % kv for kv in AUTO_QUIRKS.items()))
    p.add_argument("--env", action="append", default=[], metavar="K=V",
                   help="a variable for the aggio runs (repeatable)")
    p.add_argument("--perturb", metavar="[SEED:]PERCENT:MAX_US",
                   help="AGGIO_TEST_PERTURB for the aggio runs (the seed's number if no SEED)")
    p.add_argument("--timeout", type=float, default=60, help="seconds per run (default 60)")
    p.add_argument("--time-budget", type=float, default=0,
                   help="start no seed after this many seconds (0: no limit)")
    p.add_argument("--dir", default="genrun-work", help="work directory (default ./genrun-work)")
    p.add_argument("--keep", action="store_true", help="keep the files of passing seeds too")
    p.add_argument("--stacks", action="store_true",
                   help="on a hang, save each rank's stacks (gdb) beside its log first")
    p.add_argument("--max-details", type=int, default=3, help="details printed per failed run")
    p.add_argument("--strict-reference", action="store_true",
                   help="a failed native run fails too (otherwise it is reported only)")
    return p


def resolve(args):
    """Fills paths from --build, the flavor, the modes; returns a reason to
    skip, or None."""
    b = args.build
    args.mpiio_exe = args.mpiio_exe or (b and os.path.join(b, "tests/gen/gen_mpiio"))
    args.aggio_exe = args.aggio_exe or (b and os.path.join(b, "tests/gen/gen_aggio"))
    if b and not args.aggio_run and os.path.exists(os.path.join(b, "aggio-run")):
        args.aggio_run = os.path.join(b, "aggio-run")
    args.flavor = args.flavor or flavor_of(args.mpiexec)
    if args.quirks == "auto":
        args.quirks = AUTO_QUIRKS[args.flavor]
    args.modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    for m in args.modes:
        if m not in MODES:
            raise SystemExit("genrun: unknown mode %r (%s)" % (m, ", ".join(MODES)))
    need = {"native": args.mpiio_exe, "libaggio": args.aggio_exe,
            "aggio-run": args.aggio_run and args.mpiio_exe, "preload": args.preload and args.mpiio_exe}
    missing = [m for m in args.modes if not need[m] or not os.path.exists(need[m])]
    if "aggio-run" in missing and args.preload and os.path.exists(args.preload):
        args.modes = [("preload" if m == "aggio-run" else m) for m in args.modes]
        missing.remove("aggio-run")
    if missing:
        return "cannot run mode(s) %s: executable or library not found" % ", ".join(missing)
    if not shutil.which(args.mpiexec):
        return "no MPI launcher %s" % args.mpiexec
    return None


def summary(report, seeds_run, seeds_asked, elapsed):
    print("\n%d of %d seeds run in %.0f s" % (seeds_run, seeds_asked, elapsed))
    if not report:
        print("no failures")
        return
    counts = {}
    for kind, cls, seed, mode, _ in report:
        counts.setdefault((kind, cls, mode), set()).add(seed)
    for (kind, cls, mode), seeds in sorted(counts.items()):
        print("  %-16s %-20s %-9s seeds %s" % (kind, cls, mode, " ".join(map(str, sorted(seeds)))))


def main(argv=None):
    args = setup_parser().parse_args(argv)
    try:
        a, b = (int(x) for x in args.seeds.split(":"))
    except ValueError:
        print("genrun: --seeds wants A:B", file=sys.stderr)
        return 2
    why = resolve(args)
    if why:
        print("SKIP: %s" % why)
        return SKIP
    os.makedirs(args.dir, exist_ok=True)
    args.dir = os.path.abspath(args.dir)
    start, report, seeds_run = time.monotonic(), [], 0
    for seed in range(a, b):
        if args.time_budget and time.monotonic() - start > args.time_budget:
            print("time budget of %.0f s spent: seeds %d..%d not run" % (args.time_budget, seed, b - 1))
            break
        run_seed(args, seed, report)
        seeds_run += 1
    summary(report, seeds_run, b - a, time.monotonic() - start)
    failed = [r for r in report if r[0] == "aggio" or r[1] == "generator bug" or
              args.strict_reference]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
