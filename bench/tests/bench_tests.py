#!/usr/bin/env python3
"""Tests of aggio-bench, run by CTest at 2 ranks (label "bench").

  smoke    every pattern through every back end with -W -R -C (tiny sizes),
           and the shared file checked byte by byte against the data
           generator here, so a layout with holes or overlaps fails too
  json     the JSON record parses and holds the documented fields
  corrupt  a byte flipped between write and read-back makes -R fail
  matrix   bench/matrix --quick on one pattern writes its report and JSON

Each subcommand is a function of argv (main(argv)); nothing runs at import.
"""
import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys

MASK = (1 << 64) - 1

# Tiny sizes per pattern: a few hundred KiB per run.
PATTERN_ARGS = {
    "segmented": ["-b", "64k", "-t", "16k", "-s", "2"],
    "strided": ["-t", "47008", "-b", "94016", "-s", "2"],
    "hacc-aos": ["--particles", "1000", "-s", "2"],
    "hacc-soa": ["--particles", "1000", "-s", "2"],
    "random": ["-b", "64k", "-s", "3"],
    "subarray": ["--subarray", "8,6,5", "-s", "2"],
}

BACKENDS = {
    "POSIX": ["-a", "POSIX"],
    "POSIX-fpp": ["-a", "POSIX", "-F"],
    "POSIX-fpp-odirect": ["-a", "POSIX", "-F", "-B"],
    "POSIX-odirect": ["-a", "POSIX", "-B"],
    "MPIIO": ["-a", "MPIIO"],
    "MPIIO-coll": ["-a", "MPIIO", "-c"],
    "AGGIO": ["-a", "AGGIO"],
    "AGGIO-coll": ["-a", "AGGIO", "-c"],
    "AGGIO-two_phase": ["-a", "AGGIO", "-c", "--hint", "aggio_strategy=two_phase"],
    "AGGIO-independent": ["-a", "AGGIO", "-c", "--hint", "aggio_strategy=independent"],
}


# ---- the data generator, as in bench/verify.c --------------------------------

def mix64(z):
    z = (z + 0x9E3779B97F4A7C15) & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def file_seed(seed, fpp, rank):
    return mix64(seed ^ (0xF11E0000 + rank)) if fpp else seed


def expected(length, seed):
    """The first `length` bytes of a file written with this seed."""
    key = mix64(seed)
    words = (length + 7) // 8
    out = b"".join(mix64(k ^ key).to_bytes(8, "little") for k in range(words))
    return out[:length]


# ---- helpers -----------------------------------------------------------------

class Ctx:
    def __init__(self, args):
        self.bench = args.bench
        self.launcher = shlex.split(args.launcher)
        self.dir = args.dir
        self.failures = 0
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)

    def run(self, extra, expect_rc=0, what=""):
        cmd = self.launcher + [self.bench] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != expect_rc:
            self.fail(f"{what}: exit {p.returncode}, wanted {expect_rc}\n  "
                      f"{shlex.join(cmd)}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        return p

    def fail(self, msg):
        self.failures += 1
        print("FAIL", msg, flush=True)

    def check(self, cond, msg):
        if not cond:
            self.fail(msg)

    def done(self, name):
        print(f"{name}: {'FAILED' if self.failures else 'passed'} "
              f"({self.failures} failures)")
        return 1 if self.failures else 0


def common(pattern, path):
    return ["--pattern", pattern, "-o", path] + PATTERN_ARGS[pattern]


def read_records(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


# ---- smoke -------------------------------------------------------------------

def check_file_content(ctx, path, rec, what):
    """The whole shared file (or each rank's file) equals the generator."""
    seed = rec["params"]["seed"]
    if rec["params"]["file_per_process"]:
        for r in range(rec["nranks"]):
            name = f"{path}.{r:08d}"
            data = open(name, "rb").read()
            ctx.check(data == expected(len(data), file_seed(seed, True, r)),
                      f"{what}: {name} content differs from the generator")
        return
    data = open(path, "rb").read()
    ctx.check(len(data) == rec["bytes"]["file"],
              f"{what}: file is {len(data)} bytes, layout says {rec['bytes']['file']}")
    ctx.check(data == expected(len(data), seed),
              f"{what}: file content differs from the generator (hole or overlap?)")


def smoke(ctx, backends, patterns):
    for pattern in patterns:
        for name in backends:
            path = os.path.join(ctx.dir, f"{pattern}-{name}")
            jpath = path + ".json"
            what = f"{pattern} {name}"
            p = ctx.run(BACKENDS[name] + common(pattern, path) +
                        ["-w", "-r", "-W", "-R", "-C", "-e", "-k", "--json", jpath],
                        what=what)
            ok = p.returncode == 0 and "verification: passed" in p.stdout
            print(f"{'ok  ' if ok else 'FAIL'} {what}", flush=True)
            if p.returncode == 0:
                check_file_content(ctx, path, read_records(jpath)[-1], what)
            for f in os.listdir(ctx.dir):
                if f.startswith(f"{pattern}-{name}"):
                    os.unlink(os.path.join(ctx.dir, f))


# ---- json --------------------------------------------------------------------

REQUIRED = {
    "tool": str, "schema": int, "label": str, "start_time": str, "host": str,
    "api": str, "pattern": str, "strategy": str, "params": dict, "hints": dict,
    "mpi": dict, "nranks": int, "fs": dict, "bytes": dict, "write": dict,
    "read": dict, "verify": dict, "ok": bool,
}
PARAMS = ["pattern", "api", "block", "transfer", "segments", "call_size",
          "file_per_process", "collective", "fsync", "odirect", "reps",
          "reorder", "seed", "path"]


def check_record(ctx, rec, api, reps, what):
    for key, typ in REQUIRED.items():
        ctx.check(isinstance(rec.get(key), typ), f"{what}: field {key} missing or not {typ.__name__}")
    if ctx.failures:
        return
    ctx.check(rec["tool"] == "aggio-bench" and rec["api"] == api, f"{what}: tool/api")
    for key in PARAMS:
        ctx.check(key in rec["params"], f"{what}: params.{key} missing")
    ctx.check(rec["mpi"].get("flavor") in ("openmpi", "mpich", "other"), f"{what}: mpi.flavor")
    ctx.check(bool(rec["mpi"].get("library")), f"{what}: mpi.library empty")
    ctx.check("standard" in rec["mpi"] and "mca" in rec["mpi"], f"{what}: mpi.standard/mca")
    ctx.check(rec["nranks"] == 2, f"{what}: nranks {rec['nranks']}")
    ctx.check(bool(rec["fs"].get("type")), f"{what}: fs.type")
    ctx.check(rec["bytes"]["write"] > 0 and rec["bytes"]["file"] > 0, f"{what}: bytes")
    w, r = rec["write"], rec["read"]
    ctx.check(len(w["reps"]) == reps and len(r["reps"]) == reps, f"{what}: reps")
    for rep in w["reps"]:
        for key in ("open", "write", "sync", "close", "total", "bw_durable_MiBps",
                    "bw_buffered_MiBps"):
            ctx.check(isinstance(rep.get(key), (int, float)), f"{what}: write rep {key}")
        ctx.check(rep["total"] + 1e-6 >= rep["open"] + rep["write"] + rep["sync"] + rep["close"] - 1e-3,
                  f"{what}: phases add up to more than the total")
    for stat in ("bw_durable_MiBps", "bw_buffered_MiBps"):
        s = w.get(stat) or {}
        ctx.check(all(k in s for k in ("min", "median", "max")) and
                  s["min"] <= s["median"] <= s["max"], f"{what}: write.{stat}")
    ctx.check(all(k in r["bw_MiBps"] for k in ("min", "median", "max")), f"{what}: read.bw_MiBps")
    ctx.check(rec["verify"]["write_errors"] == 0 and rec["verify"]["read_errors"] == 0 and rec["ok"],
              f"{what}: verify")


def json_check(ctx, backends, patterns):
    del patterns  # one pattern is enough
    for name in backends:
        api = BACKENDS[name][1]
        path = os.path.join(ctx.dir, f"json-{name}")
        jpath = path + ".jsonl"
        ctx.run(BACKENDS[name] + common("strided", path) +
                ["-e", "-W", "-R", "-i", "3", "--json", jpath, "--label", "t",
                 "--hint", "cb_buffer_size=1048576"], what=f"json {name}")
        if not os.path.exists(jpath):
            ctx.fail(f"json {name}: no record written")
            continue
        recs = read_records(jpath)
        ctx.check(len(recs) == 1, f"json {name}: {len(recs)} records, wanted 1")
        check_record(ctx, recs[-1], api, 3, f"json {name}")
        print(f"json {name}: strategy={recs[-1].get('strategy')} hints={len(recs[-1].get('hints', {}))}")


# ---- corrupt -----------------------------------------------------------------

def flip_byte(path, offset):
    with open(path, "r+b") as f:
        f.seek(offset)
        b = f.read(1)
        f.seek(offset)
        f.write(bytes([b[0] ^ 0x5A]))


def corrupt(ctx, backends, patterns):
    for name in backends:
        for pattern in [p for p in ("strided", "hacc-soa") if p in patterns]:
            path = os.path.join(ctx.dir, f"corrupt-{pattern}-{name}")
            base = BACKENDS[name] + common(pattern, path)
            what = f"corrupt {pattern} {name}"
            ctx.run(base + ["-w", "-k"], what=what + " write")
            ctx.run(base + ["-r", "-R", "-C"], what=what + " clean read")
            target = f"{path}.00000001" if "-F" in base else path
            size = os.path.getsize(target)
            flip_byte(target, size // 2 + 3)
            p = ctx.run(base + ["-r", "-R", "-C"], expect_rc=1, what=what + " corrupted read")
            ctx.check("bad bytes" in p.stderr and "FAILED" in p.stdout,
                      f"{what}: no mismatch report\n{p.stdout}{p.stderr}")
            print(f"{'ok  ' if p.returncode == 1 else 'FAIL'} {what}", flush=True)
            for f in os.listdir(ctx.dir):
                os.unlink(os.path.join(ctx.dir, f))


# ---- matrix ------------------------------------------------------------------

def matrix(ctx, backends, patterns, flavor):
    del backends
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(os.path.dirname(here), "matrix")
    build_dir = os.path.dirname(os.path.dirname(os.path.abspath(ctx.bench)))
    out = os.path.join(ctx.dir, "BENCHMARKS.md")
    cmd = [sys.executable, script, "--quick", "--flavors", flavor, f"--{flavor}-build", build_dir,
           f"--np-{flavor}", "2", "--patterns", patterns[0], "--configs", "FPP,POSIX,AGGIO-auto",
           "--no-html", "--no-drop-caches", "--dir", os.path.join(ctx.dir, "data"), "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    ctx.check(p.returncode == 0, f"matrix: exit {p.returncode}\n{p.stdout}{p.stderr}")
    ctx.check("[3/3]" in p.stdout, f"matrix: no progress lines\n{p.stdout}")
    report = open(out).read() if os.path.exists(out) else ""
    for part in ("# aggio benchmarks", "Durable write", "Targets", "Raw figures", "Commands"):
        ctx.check(part in report, f"matrix: report lacks '{part}'")
    recs = read_jsonl_path(os.path.join(ctx.dir, "bench-quick.jsonl"))
    ctx.check(len(recs) == 3, f"matrix: {len(recs)} JSON records, wanted 3")
    print(p.stdout[-1500:])


def read_jsonl_path(path):
    return read_records(path) if os.path.exists(path) else []


# ---- command line ------------------------------------------------------------

CHECKS = {"smoke": (smoke, list(BACKENDS)),
          "json": (json_check, ["POSIX", "MPIIO-coll", "AGGIO-coll"]),
          "corrupt": (corrupt, ["POSIX", "POSIX-fpp", "MPIIO-coll", "AGGIO-coll"]),
          "matrix": (matrix, [])}


def setup_parser(parser):
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--bench", required=True, help="the aggio-bench binary")
    parser.add_argument("--launcher", default="mpiexec -n 2",
                        help="launcher and its flags, e.g. 'mpiexec -n 2 --oversubscribe'")
    parser.add_argument("--dir", required=True, help="scratch directory (emptied)")
    parser.add_argument("--backends", help="comma-separated subset of: " + ",".join(BACKENDS))
    parser.add_argument("--flavor", default="openmpi",
                        help="the MPI library of --bench (for the matrix check)")
    parser.add_argument("--patterns", default=",".join(PATTERN_ARGS),
                        help="comma-separated subset of: " + ",".join(PATTERN_ARGS))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    setup_parser(parser)
    args = parser.parse_args(argv)
    fn, backends = CHECKS[args.check]
    if args.backends:
        backends = args.backends.split(",")
    ctx = Ctx(args)
    if fn is matrix:
        matrix(ctx, backends, args.patterns.split(","), args.flavor)
    else:
        fn(ctx, backends, args.patterns.split(","))
    shutil.rmtree(ctx.dir, ignore_errors=True)
    return ctx.done(args.check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
