#!/usr/bin/env python3
"""Tests of aggio-bench, run by CTest at 2 ranks (label "bench").

  smoke    every pattern through every back end with -W -R -C (tiny sizes),
           and the shared file checked byte by byte against the data
           generator here, so a layout with holes or overlaps fails too
  json     the JSON record parses and holds the documented fields; the
           strategy is the one aggio chose; calls and peak memory per rank
  corrupt  a byte flipped between write and read-back makes -R fail
  calls    ior-hard (-t 47008 -b 47008 -s N -c) makes IOR's calls: aggio's
           trace holds one write_at_all of 47008 bytes per segment per rank
           at file offset (s * ranks + r) * 47008; -V goes through a view
  short    a read of a truncated file fails with "short transfer" through
           every back end (one transfer loop for all)
  matrix   bench/matrix --quick on ior-hard and the 4 KiB calls, two
           repetitions: interleaved order, report sections and JSON

Each subcommand is a function of argv (main(argv)); nothing runs at import.
"""
import argparse
import importlib
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys

MASK = (1 << 64) - 1
RANKS = 2  # what CTest's launcher starts (bench/CMakeLists.txt): AGGIO-subfiles' count

# Tiny sizes per pattern: a few hundred KiB per run.
PATTERN_ARGS = {
    "segmented": ["-b", "64k", "-t", "16k", "-s", "2"],
    "strided": ["-t", "47008", "-b", "94016", "-s", "2"],
    "hacc-aos": ["--particles", "1000", "-s", "2"],
    "hacc-soa": ["--particles", "1000", "-s", "2"],
    "random": ["-b", "64k", "-s", "3"],
    "subarray": ["--subarray", "8,6,5", "-s", "2"],
}

FIXED_BACKENDS = {
    "POSIX": ["-a", "POSIX"],
    "POSIX-fpp": ["-a", "POSIX", "-F"],
    "POSIX-fpp-odirect": ["-a", "POSIX", "-F", "-B"],
    "POSIX-odirect": ["-a", "POSIX", "-B"],
    "MPIIO": ["-a", "MPIIO"],
    "MPIIO-coll": ["-a", "MPIIO", "-c"],
    "AGGIO": ["-a", "AGGIO"],
    "AGGIO-coll": ["-a", "AGGIO", "-c"],  # no hint: the library's default
}


def matrix_plan():
    """bench/matrixlib/plan.py, which holds the one list of aggio strategies."""
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if bench_dir not in sys.path:
        sys.path.insert(0, bench_dir)
    return importlib.import_module("matrixlib.plan")


def backend_flags():
    """The back ends tested: the fixed ones, then one per aggio strategy,
    as the matrix's configurations run them."""
    out = dict(FIXED_BACKENDS)
    plan = matrix_plan()
    out.update({c.name: plan.config_flags(c, RANKS) for c in plan.CONFIGS if c.kind == "aggio"})
    return out


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
        """Runs aggio-bench; expect_rc None: any failure."""
        cmd = self.launcher + [self.bench] + extra
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if (p.returncode == 0) if expect_rc is None else (p.returncode != expect_rc):
            self.fail(f"{what}: exit {p.returncode}, wanted {'a failure' if expect_rc is None else expect_rc}\n  "
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

def logical_bytes(path):
    """The file's bytes; for a subfiled file (AGGIO-subfiles) the logical
    ones, put together from its subfiles by the layout's arithmetic
    (docs/subfiling.md): stripe i of subfile k is logical stripe i*M + k."""
    data = open(path, "rb").read()
    if not data.startswith(b"aggio subfiled file, format 1\n"):
        return data
    lines = data.decode().splitlines()
    stripe, count = int(lines[4].split()[1]), int(lines[5].split()[1])
    out = bytearray()
    for k in range(count):
        sub = open(os.path.join(os.path.dirname(path), lines[6 + k].split(" ", 2)[2]), "rb").read()
        for i in range(0, len(sub), stripe):
            at = (i // stripe * count + k) * stripe
            if len(out) < at + len(sub[i:i + stripe]):
                out.extend(bytes(at + len(sub[i:i + stripe]) - len(out)))
            out[at:at + len(sub[i:i + stripe])] = sub[i:i + stripe]
    return bytes(out)


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
    data = logical_bytes(path)
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
            p = ctx.run(backend_flags()[name] + common(pattern, path) +
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
    "api": str, "pattern": str, "strategy": str, "strategy_requested": str,
    "calls": dict, "params": dict, "hints": dict, "mpi": dict, "nranks": int,
    "fs": dict, "bytes": dict, "write": dict, "read": dict, "memory": dict,
    "verify": dict, "ok": bool,
}
PARAMS = ["pattern", "api", "block", "transfer", "segments", "call_size",
          "file_per_process", "collective", "file_view", "fsync", "odirect", "reps",
          "reorder", "seed", "path"]
# The json check's layout: strided, 2 records of 47008 bytes per call, 2 calls.
JSON_CALLS = {"POSIX": (4, "extents"), "MPIIO-coll": (2, "view"), "AGGIO-coll": (2, "view"),
              "AGGIO-two_phase": (2, "view")}
JSON_BUFFER_BYTES = 2 * 2 * 94016  # write and read buffers of one rank


def check_record(ctx, rec, api, reps, what):
    for key, typ in REQUIRED.items():
        ctx.check(isinstance(rec.get(key), typ), f"{what}: field {key} missing or not {typ.__name__}")
    if ctx.failures:
        return
    ctx.check(rec["tool"] == "aggio-bench" and rec["schema"] == 2 and rec["api"] == api,
              f"{what}: tool/schema/api")
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


def check_strategy(ctx, rec, name, what):
    """aggio's record says the strategy it chose, and what was asked for."""
    chosen, asked = rec["strategy"], rec["strategy_requested"]
    per_access = [rec[a].get("strategy") for a in ("write", "read")]
    if not name.startswith("AGGIO"):
        ctx.check(chosen == asked and per_access == [chosen, chosen],
                  f"{what}: strategy {chosen!r} requested {asked!r} per access {per_access}")
        return
    concrete = [s for s in matrix_plan().AGGIO_STRATEGIES if s != "auto"]
    hint = next((a.split("=", 1)[1] for a in backend_flags()[name] if a.startswith("aggio_strategy=")),
                "auto")
    ctx.check(asked == hint, f"{what}: strategy_requested {asked!r}, hint {hint!r}")
    ctx.check(chosen in concrete and chosen == per_access[0],
              f"{what}: strategy {chosen!r} is not a strategy aggio chose (write {per_access[0]!r})")
    ctx.check(per_access[1] in concrete, f"{what}: read strategy {per_access[1]!r}")
    if hint != "auto":
        ctx.check(chosen == hint, f"{what}: asked for {hint}, record says {chosen}")


def check_calls_memory(ctx, rec, name, what):
    calls, mode = JSON_CALLS[name]
    c = rec["calls"]
    ctx.check(c.get("write") == calls and c.get("read") == calls and c.get("mode") == mode,
              f"{what}: calls {c}, wanted {calls} per access, mode {mode}")
    m = rec["memory"]
    n = rec["nranks"]
    lists = [m.get(k) or [] for k in ("peak_kib", "baseline_kib", "data_bytes")]
    ctx.check(all(len(v) == n for v in lists), f"{what}: memory lists not one per rank: {m}")
    if ctx.failures:
        return
    peak, base, data = lists
    ctx.check(m["peak_kib_min"] == min(peak) and m["peak_kib_max"] == max(peak),
              f"{what}: memory min/max {m}")
    ctx.check(all(0 < b <= p for b, p in zip(base, peak)), f"{what}: peak below baseline {m}")
    ctx.check(data == [JSON_BUFFER_BYTES] * n, f"{what}: data_bytes {data}")


def json_check(ctx, backends, patterns):
    del patterns  # one pattern is enough
    for name in backends:
        api = backend_flags()[name][1]
        path = os.path.join(ctx.dir, f"json-{name}")
        jpath = path + ".jsonl"
        ctx.run(backend_flags()[name] + common("strided", path) +
                ["-e", "-W", "-R", "-i", "3", "--json", jpath, "--label", "t",
                 "--hint", "cb_buffer_size=1048576"], what=f"json {name}")
        if not os.path.exists(jpath):
            ctx.fail(f"json {name}: no record written")
            continue
        recs = read_records(jpath)
        ctx.check(len(recs) == 1, f"json {name}: {len(recs)} records, wanted 1")
        check_record(ctx, recs[-1], api, 3, f"json {name}")
        if ctx.failures:
            continue
        check_strategy(ctx, recs[-1], name, f"json {name}")
        check_calls_memory(ctx, recs[-1], name, f"json {name}")
        print(f"json {name}: strategy={recs[-1]['strategy']} "
              f"requested={recs[-1]['strategy_requested']} calls={recs[-1]['calls']} "
              f"peak_kib_max={recs[-1]['memory']['peak_kib_max']}")


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
            base = backend_flags()[name] + common(pattern, path)
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


# ---- calls: ior-hard makes IOR's calls ---------------------------------------

TRACE_HEADER = struct.Struct("<8sIIIIQQQQd")  # docs/trace-format.md, 64 bytes
TRACE_RECORD = struct.Struct("<ddqqqHHi")     # 48 bytes
OP_WRITE_AT_ALL, OP_SET_VIEW = 3, 8
RECORD, SEGMENTS = 47008, 20


def trace_calls(path):
    """nranks and the API records of an aggio trace, read here with struct
    alone (independent of the aggio package's reader)."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, nranks, size, _, total, _, _, first, _ = TRACE_HEADER.unpack_from(data, 0)
    if magic != b"AGGIOTRC" or size != TRACE_RECORD.size:
        raise ValueError(f"{path}: not an aggio trace")
    recs = [TRACE_RECORD.unpack_from(data, first + i * size) for i in range(total)]
    return nranks, [r for r in recs if r[5] < 32]


def expected_writes(nranks, rank, view):
    """IOR's segmented layout with -t = -b: segment s of rank r at file
    offset (s * nranks + r) * b; through a view, at s * b in the view."""
    return [((s if view else s * nranks + rank) * RECORD, RECORD) for s in range(SEGMENTS)]


def check_trace(ctx, trace, view, what):
    try:
        nranks, recs = trace_calls(trace)
    except (OSError, ValueError) as e:
        ctx.fail(f"{what}: {e}")
        return
    for rank in range(nranks):
        got = [(r[2], r[3] * r[4]) for r in recs if r[7] == rank and r[5] == OP_WRITE_AT_ALL]
        ctx.check(got == expected_writes(nranks, rank, view),
                  f"{what}: rank {rank} write_at_all calls (offset, bytes) {got[:4]}..., "
                  f"wanted {expected_writes(nranks, rank, view)[:4]}...")
    if not view:
        ctx.check(not any(r[5] == OP_SET_VIEW for r in recs), f"{what}: a set_view was made")


def ior_hard_calls(ctx, backends, patterns):
    del patterns
    for name in backends:
        for view in (False, True):
            what = f"calls {name}{' -V' if view else ''}"
            path = os.path.join(ctx.dir, f"calls-{name}")
            trace, jpath = path + ".trc", path + ".jsonl"
            extra = ["-V"] if view else []
            if name.startswith("AGGIO"):
                extra += ["--hint", f"aggio_trace={trace}"]
            ctx.run(backend_flags()[name] + extra + ["-t", str(RECORD), "-b", str(RECORD), "-s",
                    str(SEGMENTS), "-w", "-o", path, "--json", jpath], what=what)
            recs = read_jsonl_path(jpath)
            calls = recs[-1].get("calls") if recs else None
            mode = "view" if view else "explicit"
            ctx.check(calls == {"write": SEGMENTS, "read": 0, "mode": mode},
                      f"{what}: record says calls {calls}, wanted {SEGMENTS} {mode}")
            if name.startswith("AGGIO"):
                check_trace(ctx, trace, view, what)
            print(f"{'FAIL' if ctx.failures else 'ok  '} {what}", flush=True)
            for f in os.listdir(ctx.dir):
                os.unlink(os.path.join(ctx.dir, f))


# ---- short: every back end rejects a short transfer -----------------------------

def short_transfer(ctx, backends, patterns):
    del patterns
    for name in backends:
        path = os.path.join(ctx.dir, f"short-{name}")
        base = backend_flags()[name] + ["-t", str(RECORD), "-b", str(RECORD), "-s", "4", "-o", path]
        what = f"short {name}"
        ctx.run(base + ["-w", "-k"], what=what + " write")
        if os.path.exists(path):
            os.truncate(path, 3 * RECORD + 100)  # record 3 short, the rest gone
        p = ctx.run(base + ["-r"], expect_rc=None, what=what + " read of a truncated file")
        ctx.check("short transfer" in p.stderr, f"{what}: no short transfer reported\n{p.stderr[-1500:]}")
        print(f"{'FAIL' if ctx.failures else 'ok  '} {what}", flush=True)
        for f in os.listdir(ctx.dir):
            os.unlink(os.path.join(ctx.dir, f))


# ---- overwrite: --overwrite writes over the file an earlier -k run left ---------

def overwrite(ctx, backends, patterns):
    """A shorter write with --overwrite leaves the longer file in place (a
    fresh file would be the shorter one) and its bytes are the generator's:
    aggio replay's rewrites and read-modify-write rest on it."""
    del patterns
    for name in backends:
        path = os.path.join(ctx.dir, f"overwrite-{name}")
        base = backend_flags()[name] + ["-t", str(RECORD), "-b", str(RECORD), "-o", path, "-k"]
        what = f"overwrite {name}"
        ctx.run(base + ["-s", "8", "-w", "--json", path + ".json"], what=what + " first write")
        first = read_records(path + ".json")[-1] if os.path.exists(path + ".json") else None
        ctx.run(base + ["-s", "2", "-w", "-W", "--overwrite"], what=what + " overwrite")
        if first and os.path.exists(path):
            check_file_content(ctx, path, first, what)
        ctx.run(base + ["-s", "2", "-w"], what=what + " fresh write")
        ctx.check(os.path.getsize(path) < first["bytes"]["file"] if first else False,
                  f"{what}: a write without --overwrite did not start a fresh file")
        print(f"{'FAIL' if ctx.failures else 'ok  '} {what}", flush=True)
        for f in os.listdir(ctx.dir):
            os.unlink(os.path.join(ctx.dir, f))


# ---- matrix ------------------------------------------------------------------

MATRIX_ORDER = [("ior-hard", 1, "FPP"), ("ior-hard", 1, "POSIX"), ("ior-hard", 1, "AGGIO-auto"),
                ("ior-hard", 2, "FPP"), ("ior-hard", 2, "POSIX"), ("ior-hard", 2, "AGGIO-auto"),
                ("4k-calls", 1, "POSIX"), ("4k-calls", 1, "AGGIO-auto"),
                ("4k-calls", 2, "POSIX"), ("4k-calls", 2, "AGGIO-auto")]
MATRIX_SECTIONS = ("# aggio benchmarks", "## Patterns and the IOR command lines",
                   "`mpiexec -n 2 ior -a MPIIO -c -t 47008 -b 47008 -s 30 -w -r -C -e`",
                   "## Targets", "## aggio against the references", "## 4 KiB collective calls",
                   "## Every configuration", "peak RSS", "## Commands")


def matrix(ctx, backends, patterns, flavor):
    """bench/matrix --quick, two repetitions of ior-hard and the 4 KiB calls:
    the runs come interleaved (A B C, A B C), and the report has its parts."""
    del backends, patterns
    here = os.path.dirname(os.path.abspath(__file__))
    script = os.path.join(os.path.dirname(here), "matrix")
    build_dir = os.path.dirname(os.path.dirname(os.path.abspath(ctx.bench)))
    out = os.path.join(ctx.dir, "BENCHMARKS.md")
    cmd = [sys.executable, script, "--quick", "--flavors", flavor, f"--{flavor}-build", build_dir,
           "--ranks", f"{flavor}=2", "--base-ranks", f"{flavor}=2", "--patterns",
           "ior-hard,4k-calls", "--configs", "FPP,POSIX,AGGIO-auto", "--reps", "2",
           "--segments", "ior-hard=30", "4k-calls=50", "--no-html", "--no-drop-caches",
           "--dir", os.path.join(ctx.dir, "data"), "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=200)
    ctx.check(p.returncode == 0, f"matrix: exit {p.returncode}\n{p.stdout}{p.stderr}")
    n = len(MATRIX_ORDER)
    lines = [l.split() for l in p.stdout.splitlines() if l.startswith("[") and f"/{n}]" in l]
    order = [(w[3], int(w[5].split("/")[0]), w[6]) for w in lines]
    ctx.check(order == MATRIX_ORDER, f"matrix: run order {order}, wanted {MATRIX_ORDER}")
    report = open(out).read() if os.path.exists(out) else ""
    for part in MATRIX_SECTIONS:
        ctx.check(part in report, f"matrix: report lacks '{part}'")
    recs = read_jsonl_path(os.path.join(ctx.dir, "bench-quick.jsonl"))
    labels = [tuple(r["label"].split("/")[2:]) for r in recs]
    ctx.check(labels == [(pat, cfg) for pat, _, cfg in MATRIX_ORDER],
              f"matrix: JSON records {labels}")
    print(p.stdout[-1500:])


def read_jsonl_path(path):
    return read_records(path) if os.path.exists(path) else []


# ---- command line ------------------------------------------------------------

# check: (function, back ends; None: all of them)
CHECKS = {"smoke": (smoke, None),
          "json": (json_check, ["POSIX", "MPIIO-coll", "AGGIO-coll", "AGGIO-two_phase"]),
          "corrupt": (corrupt, ["POSIX", "POSIX-fpp", "MPIIO-coll", "AGGIO-coll"]),
          "calls": (ior_hard_calls, ["MPIIO-coll", "AGGIO-coll"]),
          "short": (short_transfer, ["POSIX", "MPIIO-coll", "AGGIO-coll", "AGGIO"]),
          "overwrite": (overwrite, ["POSIX", "MPIIO-coll", "AGGIO-coll"]),
          "matrix": (matrix, [])}


def setup_parser(parser):
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--bench", required=True, help="the aggio-bench binary")
    parser.add_argument("--launcher", default="mpiexec -n 2",
                        help="launcher and its flags, e.g. 'mpiexec -n 2 --oversubscribe'")
    parser.add_argument("--dir", required=True, help="scratch directory (emptied)")
    parser.add_argument("--backends", help="comma-separated subset of: " + ",".join(FIXED_BACKENDS)
                        + " and AGGIO-<strategy>")
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
    elif backends is None:
        backends = list(backend_flags())
    ctx = Ctx(args)
    if fn is matrix:
        matrix(ctx, backends, args.patterns.split(","), args.flavor)
    else:
        fn(ctx, backends, args.patterns.split(","))
    shutil.rmtree(ctx.dir, ignore_errors=True)
    return ctx.done(args.check)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
