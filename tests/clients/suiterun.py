#!/usr/bin/env python3
"""Runs a client library's own parallel test suite, built from its Debian
source package, once through the MPI library's own MPI-IO and once
through aggio-run, and compares (issue 22; CTest label "clients",
tests/clients/CMakeLists.txt; docs/testing.md, "Real clients").

  suiterun.py SUITE build --sources .deps/src --build DIR --mpicc mpicc.openmpi
  suiterun.py SUITE run   --sources .deps/src --build DIR [--mpicc ...] --np 4
                          --mpiexec PATH [--mpiexec-flags "..."]
                          --aggio-run PATH --dir SCRATCH [--dirs a,b]

SUITE is pnetcdf (PnetCDF's `make ptest` in test/testcases, test/nonblocking,
...) or hdf5 (HDF5's `make check` in testpar/).

build: copies the newest SOURCES/PACKAGE-VERSION/ (scripts/deps fetches it
  with `apt-get source`) into DIR, configures it against this MPI library's
  compiler (C only, static library) and builds the library and the test
  programs; once: a stamp in DIR says what was built.

run: the suite's own test target, twice: natively, with the suite's
  launcher variable (PnetCDF's TESTMPIRUN, HDF5's RUNPARALLEL) set to
  "mpiexec -n N", and through aggio, set to "mpiexec -n N -x AGGIO_STATS=1
  aggio-run" (default settings, no hints).  Every launch of the suite goes
  through `suiterun.py record`, which notes its command, exit status and
  output and exits 0, so that the suite's scripts (which stop at the first
  failure) run every test; this script then decides:
  1. the two runs launched the same commands, and every launch that
     passed natively (exit status 0, and the same verdicts of the test's
     own: PnetCDF's "------ pass", HDF5's PASSED / SKIPPED) passes
     through aggio; a launch that failed through Open MPI's OMPIO is run
     again through its ROMIO, the reference when it passes there;
  2. the native run printed no aggio statistics, and aggio's statistics
     show that it served the files: PnetCDF, a block for every file the
     tests left, in the launch that made it; HDF5 (whose tests delete
     their files), a block in every launch but those of programs that open
     no file;
  3. PnetCDF: the files the tests left are byte for byte the same (cmp).
     A file that differs is made again natively by the same command,
     through Open MPI's OMPIO and through its ROMIO (--mca io romio321): if
     OMPIO's second file differs from its first, the test's data is not
     deterministic and the file is not compared; if aggio's file is
     ROMIO's, it is accepted (both reported); otherwise it fails, with the
     differing bytes, ncmpidiff and the command to reproduce it.

Exit status: 0 passed, 1 failed, 77 (CTest's SKIP_RETURN_CODE) with a line
"SKIP: why" when the suite's source or a tool to build it is missing.
"""
import argparse
import collections
import fcntl
import glob
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

SKIP = 77
LAUNCH_TIMEOUT = 300  # seconds per launch of the suite: a hang fails, not ctest's timeout
ROMIO = ["--mca", "io", "romio321"]  # Open MPI 4.1's ROMIO component


class Skip(Exception):
    pass


class Failure(Exception):
    pass


# ---- the suites ----------------------------------------------------------------

# aggio's statistics (docs/observability.md), printed by a rank 0 at close;
# a block may start in the middle of a test's line ("------ " then "pass").
BLOCK = re.compile(r'aggio stats for file "([^"\n]*)"\n.*?^aggio stats end\n?', re.M | re.S)


def without_blocks(text):
    """The program's own output, aggio's statistics blocks taken out.  The
    ranks print at once, so another rank's line (HDF5's " PASSED") can land
    inside a block: only the block's own lines go (its header, its end, its
    body lines, which start with two spaces), the others stay."""
    def others(m):
        lines = m.group(0).splitlines(keepends=True)[1:]  # after the header
        return "".join(x for x in lines
                       if not x.startswith("  ") and not x.startswith("aggio stats end"))
    return BLOCK.sub(others, text)


def check_words(words, placeholder=None):
    """The suites' scripts split their launcher variables on blanks (and
    PnetCDF's replaces every "NP" in TESTMPIRUN)."""
    for word in words:
        if " " in word or (placeholder and word != placeholder and placeholder in word):
            raise Skip("%r cannot go into the suite's launcher variable (split on blanks%s): "
                       "use other paths" % (word, placeholder and ", NP replaced" or ""))


def pnetcdf_command(args, d, out, mpirun, seqrun):
    """PnetCDF's `make ptest` (parallel_run.sh) in test/D, files in OUT."""
    check_words(mpirun + seqrun + [out], "NP")
    return ["make", "-C", os.path.join(args.build, "obj", "test", d), "ptest",
            "TESTMPIRUN=" + " ".join(mpirun), "TESTSEQRUN=" + " ".join(seqrun),
            "TESTOUTDIR=" + out], {}


def hdf5_command(args, d, out, mpirun, seqrun):
    """HDF5's `make check` in testpar/ for the programs of HDF5_PROGRAMS,
    files in OUT (HDF5_PARAPREFIX).  Its harness skips a test whose stamp
    (.chkexe) is newer than the program: the stamps go first."""
    obj = os.path.join(args.build, "obj", d)
    check_words(mpirun)
    for stamp in glob.glob(os.path.join(obj, "*.chkexe")) + glob.glob(os.path.join(obj, "*.chklog")):
        os.remove(stamp)
    return ["make", "-C", obj, "check", "TEST_PROG_PARA=" + " ".join(HDF5_PROGRAMS),
            "TEST_SCRIPT_PARA=", "RUNPARALLEL=" + " ".join(mpirun)], {"HDF5_PARAPREFIX": out}


# HDF5's testpar programs run here, in its order (t_prestart reads the file
# t_pshutdown left).  Left out: t_cache_image (not done after 400 s natively
# at 4 ranks on 2 cores), t_bigio (2.5 minutes and GiBs of writes natively),
# t_pflush1/2 (testpflush.sh: programs that exit without closing on purpose).
HDF5_PROGRAMS = ["t_mpi", "testphdf5", "t_cache", "t_pread", "t_pshutdown", "t_prestart",
                 "t_init_term", "t_shapesame", "t_filters_parallel"]
HDF5_NOT_RUN = ["t_cache_image", "t_bigio", "t_pflush1", "t_pflush2"]  # built: `make check` wants them

# What each suite is: its source package; how to configure it; what to
# build, [(directory, make targets)] after `make` at the top or not; the
# test directories `run` uses by default; how to run one; the test's own
# verdict words; programs that open no file (no aggio block expected); and
# whether its files stay for comparing.
SUITES = {
    "pnetcdf": {
        "package": "pnetcdf",
        "autoreconf": True,  # Debian's source has no configure
        "configure": ["MPICC={mpicc}", "--disable-fortran", "--disable-cxx",
                      "--disable-dependency-tracking"],
        "build": lambda dirs: [(".", [])] + [(os.path.join("test", d), ["tests"]) for d in dirs],
        # test/subfile needs --enable-subfiling; test/largefile writes GiBs for minutes
        "dirs": ["testcases", "nonblocking", "C", "cdf_format", "header"],
        "command": pnetcdf_command,
        "np_word": "NP",  # parallel_run.sh puts the rank count there
        # "------ pass" (testutils.h), or "pass" alone on its line where
        # aggio's statistics, printed by several ranks at once, came between
        "verdicts": re.compile(r"(?:-{6} |^)(?:\x1b\[3[12]m)?(pass|skip|fail)\b", re.M),
        "fail": "fail",
        "no_files": [],
        "no_files_said": re.compile(r"(?!)"),  # never: files are compared instead
        "files": True,
        "diff": "ncmpidiff",
        "env": "PNETCDF_",
    },
    "hdf5": {
        "package": "hdf5",
        "autoreconf": False,
        "configure": ["CC={mpicc}", "--enable-parallel", "--disable-shared", "--disable-hl",
                      "--disable-tools", "--disable-fortran", "--disable-cxx",
                      "--enable-build-mode=production", "--disable-dependency-tracking"],
        "build": lambda dirs: [("src", []), ("test", ["libh5test.la"]),
                               ("testpar", HDF5_PROGRAMS + HDF5_NOT_RUN)],
        "dirs": ["testpar"],
        "command": hdf5_command,
        "np_word": None,
        "verdicts": re.compile(r"\s(PASSED|FAILED|SKIPPED|-SKIP-)\s*$", re.M),
        "fail": "FAILED",
        "no_files": ["t_init_term"],  # H5open/H5close only
        # a test that needs more ranks than it has says so and opens nothing
        # (t_pread at 2 ranks, as MPICH runs the suite here)
        "no_files_said": re.compile(r"Need at least \d+ processes"),
        "files": False,  # the tests delete their files; HDF5 stores object times
        "diff": "h5diff",
        "env": "HDF5_",
    },
}


def newest_source(sources, package):
    """The newest SOURCES/PACKAGE-VERSION/ that apt-get source unpacked; a
    Skip with scripts/deps' reason (SOURCES/PACKAGE.unavailable) if none."""
    found = sorted(d for d in glob.glob(os.path.join(sources, package + "-[0-9]*"))
                   if os.path.isdir(d))
    if found:
        return found[-1]
    why = os.path.join(sources, package + ".unavailable")
    reason = open(why).read().strip() if os.path.exists(why) else \
        "scripts/deps has not fetched it"
    raise Skip("the source package of %s is not in %s: %s" % (package, sources, reason))


# ---- building --------------------------------------------------------------------

def logged(cmd, log, cwd, what):
    """Runs cmd with its output appended to the file log; a Failure if it fails."""
    with open(log, "a") as f:
        f.write("\n== %s: %s (in %s)\n" % (what, " ".join(map(shlex.quote, cmd)), cwd))
        f.flush()
        p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        tail = open(log).read()[-3000:]
        raise Failure("%s failed (status %d; %s):\n%s" % (what, p.returncode, log, tail))


def build(args, suite):
    """Builds the suite in args.build once (a stamp names what was built)."""
    tools = ["make", args.mpicc] + (["autoreconf", "libtoolize"] if suite["autoreconf"] else [])
    for tool in tools:
        if not shutil.which(tool):
            raise Skip("%s is not installed (autoconf, automake, libtool: scripts/deps)" % tool)
    source = os.path.abspath(newest_source(args.sources, suite["package"]))
    want = {"source": os.path.realpath(source), "mpicc": args.mpicc, "dirs": args.dirs}
    os.makedirs(args.build, exist_ok=True)
    stamp = os.path.join(args.build, "stamp.json")
    with open(os.path.join(args.build, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two ctest runs at once: one builds, the other waits
        if os.path.exists(stamp) and json.load(open(stamp)) == want:
            print("== %s is built in %s" % (os.path.basename(source), args.build))
            return
        started = time.time()
        src, obj = os.path.join(args.build, "src"), os.path.join(args.build, "obj")
        log = os.path.join(args.build, "build.log")
        shutil.rmtree(src, ignore_errors=True)
        shutil.rmtree(obj, ignore_errors=True)
        for f in (stamp, log):
            if os.path.exists(f):
                os.remove(f)
        print("== building %s's test suite in %s (log: %s)" % (os.path.basename(source), obj, log),
              flush=True)
        if suite["autoreconf"]:  # it writes into the source: a copy of it
            shutil.copytree(source, src, symlinks=True)
            logged(["autoreconf", "-fi"], log, src, "autoreconf")
        else:
            src = source  # built outside it (VPATH)
        os.makedirs(obj)
        jobs = "-j%d" % max(1, min(2, os.cpu_count() or 1))  # PROCESSORS 2 in CMake
        configure = [w.format(mpicc=args.mpicc) for w in suite["configure"]]
        logged([os.path.join(src, "configure")] + configure, log, obj, "configure")
        for d, targets in suite["build"](args.dirs):
            logged(["make", jobs] + targets, log, os.path.join(obj, d), "make in " + d)
        json.dump(want, open(stamp, "w"))
        print("== built in %.0f s" % (time.time() - started))


# ---- recording the suite's launches ------------------------------------------

def record(args):
    """`suiterun.py record --log L --kind mpi|seq --env PREFIX -- CMD...`: runs
    CMD (a launch of the suite), appends {argv, cwd, env (the variables of
    PREFIX), status, output file} to L and exits 0."""
    seq = sum(1 for _ in open(args.log)) if os.path.exists(args.log) else 0
    out = "%s.%04d.txt" % (args.log[:-len(".jsonl")], seq)
    started = time.time()
    with open(out, "w") as f:
        p = subprocess.Popen(args.cmd, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = "timeout after %d s" % args.timeout
    entry = {"seq": seq, "kind": args.kind, "argv": args.cmd, "cwd": os.getcwd(),
             "env": {k: v for k, v in os.environ.items() if k.startswith(args.env)},
             "status": rc, "secs": round(time.time() - started, 2), "output": out}
    with open(args.log, "a") as f:
        f.write(json.dumps(entry) + "\n")
    return 0


# ---- running the suite -----------------------------------------------------------

def mpi_prefix(args, aggio, np_word="NP", extra=()):
    cmd = [args.mpiexec, "-n", np_word] + shlex.split(args.mpiexec_flags or "") + list(extra)
    if aggio:  # to the ranks only, not to mpiexec
        cmd += (["-genv", "AGGIO_STATS", "1"] if args.flavor == "mpich" else ["-x", "AGGIO_STATS=1"])
        cmd += [args.aggio_run]
    return cmd


def clean_env():
    """The environment of both runs: none of aggio's switches, no LD_PRELOAD."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("AGGIO_") and not k.startswith("MPICH_MPIIO_")}
    env.pop("LD_PRELOAD", None)
    return env


def run_suite(args, suite, mode):
    """The suite's test target in every chosen directory, with the recording
    launchers; returns {dir: [launch entries]}."""
    me = [sys.executable, os.path.abspath(__file__), "record", "--timeout",
          str(args.launch_timeout), "--env", suite["env"]]
    np_word = suite["np_word"] or str(args.np)
    launches = {}
    for d in args.dirs:
        out = os.path.join(args.dir, mode, d)
        os.makedirs(out)
        log = os.path.join(args.dir, mode, d + ".jsonl")
        mpirun = me + ["--log", log, "--kind", "mpi", "--"] + mpi_prefix(args, mode == "aggio", np_word)
        seqrun = me + ["--log", log, "--kind", "seq", "--"]
        cmd, env = suite["command"](args, d, out, mpirun, seqrun)
        started = time.time()
        with open(os.path.join(args.dir, mode, d + ".make.log"), "w") as f:
            p = subprocess.run(cmd, env=dict(clean_env(), **env), stdout=f, stderr=subprocess.STDOUT)
        entries = [json.loads(line) for line in open(log)] if os.path.exists(log) else []
        print("   %s %-12s %3d launches in %5.1f s" % (mode, d, len(entries), time.time() - started),
              flush=True)
        if p.returncode != 0:
            raise Failure("%s run: %s in %s stopped (status %d): see %s.make.log"
                          % (mode, cmd[3], d, p.returncode, os.path.join(args.dir, mode, d)))
        if not entries:
            raise Failure("%s run: %s in %s launched nothing" % (mode, cmd[3], d))
        launches[d] = entries
    return launches


# ---- what a launch did -------------------------------------------------------------

def output_of(entry):
    with open(entry["output"], errors="replace") as f:
        return f.read()


def verdicts(suite, entry):
    """The test's own verdicts ("pass", "PASSED", ...) with their counts,
    aggio's statistics taken out of its output first."""
    return dict(collections.Counter(suite["verdicts"].findall(without_blocks(output_of(entry)))))


def passed(suite, entry):
    return entry["status"] == 0 and suite["fail"] not in verdicts(suite, entry)


def stats_files(entry):
    return {os.path.realpath(m.group(1)) for m in BLOCK.finditer(output_of(entry))}


def program_argv(args, entry, aggio):
    return entry["argv"][len(mpi_prefix(args, aggio)):] if entry["kind"] == "mpi" else entry["argv"]


def launch_name(args, entry, aggio=False):
    """The program and the files it names, for messages: "ncvalidator vectors.nc"."""
    prog = program_argv(args, entry, aggio)
    return " ".join(os.path.basename(w) for w in prog if w == prog[0] or os.path.isabs(w))


def reproducer(entry):
    """The command line that repeats one launch by hand."""
    env = " ".join("%s=%s" % kv for kv in sorted(entry["env"].items()))
    return "cd %s && %s %s" % (entry["cwd"], env, " ".join(map(shlex.quote, entry["argv"])))


# ---- comparing ------------------------------------------------------------------------

class Report:
    """What the comparison found: failures fail the test, notes are reported."""

    def __init__(self):
        self.failures, self.notes = [], []
        self.compared = self.identical = 0


def same_commands(args, d, native, aggio):
    """The runs' launches pair up, and their commands differ only in the output directory."""
    nout, aout = os.path.join(args.dir, "native"), os.path.join(args.dir, "aggio")
    if len(native) != len(aggio):
        raise Failure("%s: %d launches natively, %d through aggio" % (d, len(native), len(aggio)))
    for n, a in zip(native, aggio):
        nv = [w.replace(nout, "OUT") for w in program_argv(args, n, False)]
        av = [w.replace(aout, "OUT") for w in program_argv(args, a, True)]
        if nv != av or n["kind"] != a["kind"]:
            raise Failure("%s: launch %d differs: %s natively, %s through aggio" % (d, n["seq"], nv, av))


def native_verdicts(args, suite, n, name, report):
    """The verdicts a launch's native run reached, when it passed: through
    Open MPI's default MPI-IO (OMPIO) or, where that failed, through its
    ROMIO (OMPIO's atomic mode fails HDF5's atomicity test now and then);
    None when it passed through neither."""
    if passed(suite, n):
        return verdicts(suite, n)
    if n["kind"] == "mpi" and args.flavor == "openmpi":
        _, rc, text = rerun(args, n, ROMIO, "romio-%04d" % n["seq"])
        found = dict(collections.Counter(suite["verdicts"].findall(text)))
        if rc == 0 and suite["fail"] not in found:
            report.notes.append("%s fails through OMPIO (status %s, verdicts %s), passes through "
                                "ROMIO: compared with ROMIO" % (name, n["status"], verdicts(suite, n)))
            return found
    report.notes.append("%s fails natively (status %s, verdicts %s): not compared"
                        % (name, n["status"], verdicts(suite, n)))
    return None


def compare_launches(args, suite, d, native, aggio, report):
    same_commands(args, d, native, aggio)
    for n, a in zip(native, aggio):
        name = "%s %s" % (d, launch_name(args, n))
        if "aggio stats for file" in output_of(n):
            report.failures.append("%s: the native run printed aggio statistics" % name)
        expected = native_verdicts(args, suite, n, name, report)
        if expected is None:
            continue
        if not passed(suite, a) or verdicts(suite, a) != expected:
            report.failures.append(
                "%s passes natively (verdicts %s), not through aggio (status %s, verdicts %s)\n"
                "      reproduce: %s\n      output: %s" % (
                    name, expected, a["status"], verdicts(suite, a), reproducer(a),
                    without_blocks(output_of(a)).strip()[-1500:].replace("\n", "\n      ")))
        elif not suite["files"] and a["kind"] == "mpi" and not stats_files(a) and \
                os.path.basename(program_argv(args, a, True)[0]) not in suite["no_files"] and \
                not suite["no_files_said"].search(output_of(a)):
            report.failures.append("%s: no aggio statistics block: aggio served none of its files"
                                   % name)


def producer(launches, path):
    """The last MPI launch whose arguments name `path` or its stem
    (put_all_kinds X.nc writes X.nc1, X.nc2, X.nc5)."""
    found = None
    for e in launches:
        if e["kind"] == "mpi" and any(os.path.isabs(w) and path.startswith(w) for w in e["argv"]):
            found = e
    return found


def compare_files(args, suite, d, native, aggio, report):
    nout, aout = os.path.join(args.dir, "native", d), os.path.join(args.dir, "aggio", d)
    for name in sorted(set(os.listdir(nout)) | set(os.listdir(aout))):
        nf, af = os.path.join(nout, name), os.path.join(aout, name)
        made_n, made_a = producer(native, nf), producer(aggio, af)
        label = "%s %s" % (d, name)
        if made_n is None or not passed(suite, made_n):
            continue  # not made by a test that passed natively
        if not os.path.exists(af) or not os.path.exists(nf):
            report.failures.append("%s: left by one run only (native %s, aggio %s)"
                                   % (label, os.path.exists(nf), os.path.exists(af)))
            continue
        if made_a is None or os.path.realpath(af) not in stats_files(made_a):
            report.failures.append("%s: no aggio statistics block for it in the launch that made it "
                                   "(aggio did not serve this file)" % label)
        report.compared += 1
        if identical(nf, af):
            report.identical += 1
        else:
            judge_difference(args, suite, d, name, made_n, made_a, report)


def identical(a, b):
    return os.path.exists(a) and os.path.exists(b) and \
        subprocess.run(["cmp", "-s", a, b]).returncode == 0


def describe_difference(a, b, names=("native", "aggio"), diff_tool=None):
    """The sizes, cmp's count and first differing bytes, and the diff tool's report."""
    p = subprocess.run(["cmp", "-l", a, b], capture_output=True, text=True)
    lines = p.stdout.splitlines()
    text = "sizes %d (%s) and %d (%s), %d bytes differ in the common part" % (
        os.path.getsize(a), names[0], os.path.getsize(b), names[1], len(lines))
    if lines:
        text += " (offset from 1, octal %s and %s: %s)" % (names + ("; ".join(lines[:6]),))
    tool = diff_tool and shutil.which(diff_tool)
    if tool:
        q = subprocess.run([tool, a, b], capture_output=True, text=True)
        text += "\n      %s (status %d): %s" % (
            diff_tool, q.returncode, (q.stdout + q.stderr).strip()[-1500:].replace("\n", "\n      "))
    return text


def rerun(args, entry, extra, tag):
    """Runs a native launch again, its files under scratch/replay/TAG instead
    of the native run's directory; returns (that directory, status, output)."""
    native, out = os.path.join(args.dir, "native"), os.path.join(args.dir, "replay", tag)
    shutil.rmtree(out, ignore_errors=True)
    prog = [w.replace(native, out) for w in program_argv(args, entry, False)]
    env = {k: v.replace(native, out) for k, v in entry["env"].items()}  # HDF5_PARAPREFIX
    for w in prog + list(env.values()):  # the directories it writes in
        if w.startswith(out + os.sep):
            os.makedirs(w if w in env.values() else os.path.dirname(w), exist_ok=True)
    cmd = mpi_prefix(args, False, str(args.np), extra) + prog
    p = subprocess.run(cmd, cwd=entry["cwd"], env=dict(clean_env(), **env), capture_output=True,
                       text=True, timeout=args.launch_timeout)
    return out, p.returncode, p.stdout + p.stderr


def remake(args, entry, extra, tag):
    """Makes a native launch's files again under scratch/replay/TAG."""
    out, rc, text = rerun(args, entry, extra, tag)
    if rc != 0:
        raise Failure("making a file again natively (%s) failed (status %d): %s\n%s"
                      % (tag, rc, reproducer(entry), text[-2000:]))
    return out


def judge_difference(args, suite, d, name, made_n, made_a, report):
    label = "%s %s" % (d, name)
    nf, af = (os.path.join(args.dir, m, d, name) for m in ("native", "aggio"))
    again = os.path.join(remake(args, made_n, [], "ompio"), d, name)
    romio = os.path.join(remake(args, made_n, ROMIO, "romio"), d, name) \
        if args.flavor == "openmpi" else again
    if not identical(nf, again):
        report.notes.append("%s: not compared, natively not deterministic (two OMPIO runs: %s)"
                            % (label, describe_difference(nf, again, ("first", "second"))))
    elif identical(af, romio):
        report.notes.append("%s: aggio's file is ROMIO's (--mca io romio321), OMPIO's differs: %s"
                            % (label, describe_difference(nf, af)))
    else:
        report.failures.append("%s differs from the native run's (OMPIO's and ROMIO's are the "
                               "same: %s): %s\n      reproduce: %s" % (
                                   label, identical(nf, romio),
                                   describe_difference(nf, af, diff_tool=suite["diff"]),
                                   reproducer(made_a)))


def run(args, suite):
    if not os.path.exists(os.path.join(args.build, "stamp.json")):
        build(args, suite)  # normally the build test's work
    shutil.rmtree(args.dir, ignore_errors=True)
    started = time.time()
    runs = {mode: run_suite(args, suite, mode) for mode in ("native", "aggio")}
    report = Report()
    for d in args.dirs:
        native, aggio = runs["native"][d], runs["aggio"][d]
        compare_launches(args, suite, d, native, aggio, report)
        if suite["files"]:
            compare_files(args, suite, d, native, aggio, report)
    n = sum(len(v) for v in runs["native"].values())
    print("== %d launches each way in %s%s; %.0f s" % (
        n, ", ".join(args.dirs), "; %d files compared, %d identical" % (
            report.compared, report.identical) if suite["files"] else "", time.time() - started))
    for note in report.notes:
        print("   note: " + note)
    if report.failures:
        raise Failure("%d problems:\n  - %s" % (len(report.failures), "\n  - ".join(report.failures)))
    if suite["files"] and report.compared == 0:
        raise Failure("no file was compared: the suite left no files")


# ---- main ------------------------------------------------------------------------------

def parse(argv):
    """`suiterun.py SUITE build|run ...` or `suiterun.py record ...`."""
    if argv[:1] == ["record"]:
        ap = argparse.ArgumentParser(prog="suiterun.py record")
        ap.add_argument("--log", required=True)
        ap.add_argument("--kind", choices=["mpi", "seq"], required=True)
        ap.add_argument("--timeout", type=int, default=LAUNCH_TIMEOUT)
        ap.add_argument("--env", required=True, help="prefix of the variables to note")
        ap.add_argument("cmd", nargs=argparse.REMAINDER)
        args = ap.parse_args(argv[1:])
        args.cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        args.what = "record"
        return args
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", choices=sorted(SUITES))
    ap.add_argument("what", choices=["build", "run"])
    ap.add_argument("--sources", required=True, help="where scripts/deps unpacks source packages")
    ap.add_argument("--build", required=True, help="the suite's build directory")
    ap.add_argument("--mpicc", default="mpicc", help="this MPI library's C compiler wrapper")
    ap.add_argument("--dirs", help="test directories, comma-separated (default: the suite's list)")
    ap.add_argument("--np", type=int, default=4)
    ap.add_argument("--mpiexec")
    ap.add_argument("--mpiexec-flags", default="")
    ap.add_argument("--flavor", choices=["openmpi", "mpich"], default="openmpi",
                    help="the MPI library (Open MPI: ROMIO is the second reference)")
    ap.add_argument("--aggio-run")
    ap.add_argument("--dir", help="scratch directory (emptied)")
    ap.add_argument("--launch-timeout", type=int, default=LAUNCH_TIMEOUT)
    args = ap.parse_args(argv)
    args.dirs = args.dirs.split(",") if args.dirs else SUITES[args.suite]["dirs"]
    args.build = os.path.abspath(args.build)
    if args.what == "run":
        for opt in ("mpiexec", "aggio_run", "dir"):
            if not getattr(args, opt):
                ap.error("run needs --%s" % opt.replace("_", "-"))
        args.dir = os.path.abspath(args.dir)
        args.aggio_run = os.path.abspath(args.aggio_run)
    return args


def main(argv):
    args = parse(argv)
    if args.what == "record":
        return record(args)
    suite = SUITES[args.suite]
    try:
        if args.what == "build":
            build(args, suite)
        else:
            run(args, suite)
    except Skip as s:
        print("SKIP: %s" % s)
        return SKIP
    except Failure as f:
        print("FAIL: %s" % f)
        return 1
    if args.what == "build":
        print("PASS: %s's own test suite is built" % args.suite)
    else:
        print("PASS: %s's own test suite (%s) at %d ranks: every test that passes natively passes "
              "through aggio%s, and aggio served the files" % (
                  args.suite, ", ".join(args.dirs), args.np,
                  ", the files are the same" if suite["files"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
