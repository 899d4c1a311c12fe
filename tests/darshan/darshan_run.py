#!/usr/bin/env python3
"""Darshan and aggio in one run (issue 24): each must see and do its job.

Builds Darshan's runtime (libdarshan.so) from the source release in
../shared/third-party once per build tree, with this MPI's mpicc, then runs
darshan_app (a plain MPI-IO program whose calls are known) three ways:

  aggio-run     LD_PRELOAD=libdarshan.so set as a centre sets it, then
                aggio-run, which adds aggio behind it;
  darshan-first LD_PRELOAD=libdarshan.so:libaggio-mpiio.so by hand;
  aggio-first   LD_PRELOAD=libaggio-mpiio.so:libdarshan.so by hand (aggio
                starts the program again with the tool in front,
                src/mpiio/order.c).

Each run must: pass its own read-back check; leave a Darshan log whose
MPI-IO record of the file counts exactly the program's calls and bytes;
have aggio's statistics account for the same bytes (so aggio served the
file); leave a Darshan POSIX record of the file (aggio's own system calls,
seen below it); leave the right bytes in the file; and `aggio advise`
must read the Darshan log and aggio's trace of the run side by side.

Exit status 77 (skipped, with a line starting SKIP) when the Darshan
source or PyDarshan is not here.
"""
import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys

SKIP = 77


def skip(why):
    print(f"SKIP {why}")
    sys.exit(SKIP)


def build_darshan(tarball, build, mpicc):
    """libdarshan.so under build/install, built once (a stamp says from what)."""
    lib = os.path.join(build, "install", "lib", "libdarshan.so")
    stamp = os.path.join(build, "stamp")
    want = f"{os.path.realpath(tarball)} {os.path.getmtime(tarball)} {mpicc}\n"
    if os.path.exists(lib) and os.path.exists(stamp) and open(stamp).read() == want:
        return lib
    shutil.rmtree(build, ignore_errors=True)
    os.makedirs(build)
    log = os.path.join(build, "build.log")
    top = os.path.join(build, "src", "darshan-3.4.7")
    script = (
        f"tar -xzf {tarball} -C {build}/src && cd {top} && ./prepare.sh && "
        f"cd darshan-runtime && ./configure --prefix={build}/install "
        "--with-log-path-by-env=DARSHAN_LOGPATH --with-jobid-env=NONE "
        f"CC={mpicc} && make -j2 && make install")
    os.makedirs(os.path.join(build, "src"))
    with open(log, "w") as out:
        rc = subprocess.call(["sh", "-c", script], stdout=out, stderr=subprocess.STDOUT)
    if rc != 0 or not os.path.exists(lib):
        print(open(log).read()[-4000:])
        sys.exit(f"FAIL building Darshan's runtime (log: {log})")
    open(stamp, "w").write(want)
    return lib


def run(args, mode, darshan_lib, workdir):
    """Runs darshan_app one way; returns (output, file, log dir, trace dir)."""
    logs = os.path.join(workdir, "logs")
    traces = os.path.join(workdir, "traces")
    for d in (logs, traces):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    path = os.path.join(workdir, "app.dat")
    if os.path.exists(path):
        os.remove(path)
    env = dict(os.environ, DARSHAN_LOGPATH=logs, AGGIO_STATS="1",
               AGGIO_TRACE=os.path.join(traces, "%f.trc"))
    env.pop("LD_PRELOAD", None)
    preload = {"aggio-run": darshan_lib,
               "darshan-first": f"{darshan_lib}:{args.aggio_lib}",
               "aggio-first": f"{args.aggio_lib}:{darshan_lib}"}[mode]
    # the launcher must not preload them itself: the ranks get LD_PRELOAD
    setenv = ["-x", f"LD_PRELOAD={preload}"] if args.flavor == "openmpi" \
        else ["-genv", "LD_PRELOAD", preload]
    prog = [args.aggio_run, args.app] if mode == "aggio-run" else [args.app]
    cmd = args.mpiexec + setenv + prog + [path]
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    if p.returncode != 0 or not re.search(r"^ok ", p.stdout, re.M):
        print(p.stdout)
        sys.exit(f"FAIL {mode}: the program failed (exit {p.returncode}): {' '.join(cmd)}")
    return p.stdout, path, logs, traces


def aggio_stats(out, path):
    """Bytes written and read in aggio's statistics block for path."""
    m = re.search(r'aggio stats for file "%s"\n(.*?)aggio stats end' % re.escape(path),
                  out, re.S)
    if not m:
        return None
    block = m.group(1)
    num = lambda key: int(re.search(r"^\s*%s:\s*(\d+)" % key, block, re.M).group(1))
    return num("bytes written"), num("bytes read")


def darshan_records(logs, path):
    """The summed MPI-IO and POSIX counters of path in the run's one log."""
    import darshan
    found = glob.glob(os.path.join(logs, "*.darshan"))
    if len(found) != 1:
        sys.exit(f"FAIL Darshan left {len(found)} logs in {logs}, expected 1")
    rep = darshan.DarshanReport(found[0], read_all=True)
    sums = {}
    for mod in ("MPI-IO", "POSIX"):
        if mod not in rep.records:
            continue
        # records, not iterrows: a row as one Series turns the 64-bit ids
        # into floats
        for row in rep.records[mod].to_df()["counters"].to_dict("records"):
            if rep.name_records.get(int(row["id"])) != path:
                continue
            for key, value in row.items():
                if key not in ("rank", "id"):
                    sums[key] = sums.get(key, 0) + int(value)
    return found[0], sums


def expected_calls(out):
    """The program's own account: 'ok np=N K=8 S=47008 W=4 B=2 SMALL=4096'."""
    m = re.search(r"^ok (.*)$", out, re.M)
    v = {k: int(x) for k, x in re.findall(r"(\w+)=(\d+)", m.group(1))}
    n = v["np"]
    written = n * (v["K"] * v["S"] + (v["W"] + v["B"]) * v["SMALL"])
    return {"MPIIO_COLL_OPENS": n, "MPIIO_COLL_WRITES": n * v["K"],
            "MPIIO_INDEP_WRITES": n * v["W"], "MPIIO_NB_WRITES": n * v["B"],
            "MPIIO_COLL_READS": n * v["K"], "MPIIO_BYTES_WRITTEN": written,
            "MPIIO_BYTES_READ": n * v["K"] * v["S"]}


def check_bytes(path, size):
    data = open(path, "rb").read()
    if len(data) != size:
        return f"the file holds {len(data)} bytes, expected {size}"
    bad = sum(1 for off, b in enumerate(data) if b != (off * 31 + 7) % 251)
    return f"{bad} wrong bytes in the file" if bad else None


def side_by_side(args, trace, log):
    """aggio advise reads the trace and the Darshan log of the same run."""
    p = subprocess.run([sys.executable, "-m", "aggio", "advise", "--json", trace, log],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       env=dict(os.environ, PYTHONPATH=args.tool_path))
    if p.returncode != 0:
        return f"aggio advise failed ({p.returncode}): {p.stderr[-2000:]}"
    kinds = sorted(entry.get("kind", "?") for entry in json.loads(p.stdout))
    if kinds != ["aggio-trace", "darshan"]:
        return f"aggio advise read {kinds}, expected an aggio trace and a Darshan log"
    return None


def check(args, mode, darshan_lib):
    workdir = os.path.join(args.dir, mode)
    os.makedirs(workdir, exist_ok=True)
    out, path, logs, traces = run(args, mode, darshan_lib, workdir)
    problems = []
    want = expected_calls(out)
    log, got = darshan_records(logs, path)
    for key, value in want.items():
        if got.get(key) != value:
            problems.append(f"Darshan's {key} is {got.get(key)}, the program made {value}")
    stats = aggio_stats(out, path)
    if stats is None:
        problems.append(f"no aggio statistics for {path}: aggio did not serve it")
    elif stats != (want["MPIIO_BYTES_WRITTEN"], want["MPIIO_BYTES_READ"]):
        problems.append(f"aggio's statistics say {stats[0]} bytes written, {stats[1]} read; "
                        f"Darshan and the program {want['MPIIO_BYTES_WRITTEN']}, "
                        f"{want['MPIIO_BYTES_READ']}")
    if got.get("POSIX_BYTES_WRITTEN", 0) < want["MPIIO_BYTES_WRITTEN"]:
        problems.append(f"Darshan's POSIX record has {got.get('POSIX_BYTES_WRITTEN')} bytes "
                        "written: it did not see aggio's writes")
    bad = check_bytes(path, want["MPIIO_BYTES_WRITTEN"])
    if bad:
        problems.append(bad)
    trace = os.path.join(traces, os.path.basename(path) + ".trc")
    bad = side_by_side(args, trace, log) if os.path.exists(trace) else f"no trace {trace}"
    if bad:
        problems.append(bad)
    if problems:
        print(out)
        sys.exit(f"FAIL {mode}:\n  " + "\n  ".join(problems))
    print(f"{mode}: Darshan counted {want['MPIIO_COLL_WRITES']} collective, "
          f"{want['MPIIO_INDEP_WRITES']} independent and {want['MPIIO_NB_WRITES']} "
          f"non-blocking writes, {want['MPIIO_BYTES_WRITTEN']} bytes, as the program made "
          f"them; aggio served the file (its statistics agree); POSIX "
          f"{got.get('POSIX_BYTES_WRITTEN')} bytes written below aggio; bytes right; "
          f"advise read the log and the trace")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--darshan-src", required=True, help="darshan-3.4.7.tar.gz")
    ap.add_argument("--darshan-build", required=True, help="where to build it")
    ap.add_argument("--mpicc", required=True)
    ap.add_argument("--flavor", required=True, choices=["openmpi", "mpich"])
    ap.add_argument("--app", required=True)
    ap.add_argument("--aggio-run", required=True)
    ap.add_argument("--aggio-lib", required=True)
    ap.add_argument("--tool-path", required=True, help="the aggio Python package's directory")
    ap.add_argument("--dir", required=True)
    ap.add_argument("mpiexec", nargs="+", help="mpiexec and its flags, after --")
    args = ap.parse_args()
    if not os.path.exists(args.darshan_src):
        skip(f"no Darshan source release at {args.darshan_src} "
             "(../shared/third-party beside the clone)")
    try:
        import darshan  # noqa: F401  (PyDarshan, from scripts/deps' venv)
    except ImportError:
        skip("PyDarshan is not installed in this Python (scripts/deps installs it)")
    darshan_lib = build_darshan(args.darshan_src, args.darshan_build, args.mpicc)
    for mode in ("aggio-run", "darshan-first", "aggio-first"):
        check(args, mode, darshan_lib)
    print("darshan and aggio: ok")


if __name__ == "__main__":
    main()
