"""Turn a log (Darshan with DXT, or aggio traces) into the same access pattern
for aggio-bench, at the ranks this machine has; print the command (--run:
run it).

Exit status: 0 when the replay was built (and, with --run, ran), 1 when the
input cannot be read, has no per-operation data, or the run failed, 2 for
bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass, field

from . import benchrun
from .argtypes import parse_size, positive_float, positive_int
from .findings.base import fmt_bytes
from .model import LAYER_NAMES, MPIIO
from .pattern import Pattern, PatternError, detect
from .sources import InputError, load_jobs

DEFAULT_MAX_BYTES = 256 << 20
# Scaling up stops at this many requests in all (or the log's own count, if
# larger): 64 MiB of 1-byte reads would take hours.
MAX_SCALED_REQUESTS = 500_000

LIMITS = ("A replay reproduces one file's requests - sizes, offsets by rank, collective or "
          "independent calls, fsync - back to back.  It does not reproduce the compute time "
          "between I/O phases, the other files, metadata beyond open and close, the "
          "original number of ranks and nodes (here every rank is on this machine, so "
          "aggregator placement and network traffic differ), or the original file system "
          "(striping, other jobs on the servers).  Bandwidths measured here rank the "
          "settings for this pattern; they do not predict the original run's times.")


@dataclass
class Phase:
    """One aggio-bench run of a replay.  A rewrite or a read-modify-write
    takes several, in order, on one file: -k keeps it for the next,
    --overwrite writes over it instead of a fresh file."""
    name: str
    write: bool
    read: bool = False
    overwrite: bool = False
    keep: bool = False
    fraction: float = 1.0     # share of the layout's bytes this run moves
    timed: bool = True        # counted in the figure tune compares


def phases(p: Pattern) -> list[Phase]:
    """The runs that reproduce the file's rewrites and read-modify-write:
    a plain replay is one run (write, and read back where the log read)."""
    if not p.write:         # aggio-bench reads what it wrote: the read is timed
        return [Phase("write, read back", True, True)]
    out = []
    if p.rmw > 0:
        # the bytes the program read were there before; making them is not
        # part of what the log timed
        out += [Phase("fill (untimed)", True, keep=True, timed=False),
                Phase("read before write", False, True, keep=True, fraction=min(p.rmw, 1.0))]
    out.append(Phase("write", True, overwrite=p.rmw > 0))
    if p.rewrite > 0:
        out[-1].keep = True
        out.append(Phase("rewrite", True, overwrite=True, fraction=min(p.rewrite, 1.0)))
    out[-1].read = p.read and not p.rmw      # the read-back, after the last write
    return out


@dataclass
class Replay:
    pattern: Pattern
    nranks: int
    block: int
    segments: int
    scale_note: str
    notes: list = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return self.nranks * self.block * self.segments

    @property
    def phases(self) -> list[Phase]:
        return phases(self.pattern)

    def sized(self, fraction: float) -> tuple[int, int]:
        """(block, segments) for a run that moves `fraction` of the layout:
        fewer segments, else a shorter block in whole transfers."""
        if fraction >= 1.0:
            return self.block, self.segments
        if self.segments > 1:
            return self.block, max(1, round(self.segments * fraction))
        t = self.pattern.transfer
        return max(t, int(self.block * fraction) // t * t), 1

    def bench_args(self, api: str | None = None, collective: bool | None = None,
                   hints: dict | None = None, path: str = "aggio-replay.dat",
                   reps: int = 1, phase: Phase | None = None) -> list[str]:
        """aggio-bench options for one run of this replay (default: the
        main write, or the read of a read-only file; the program's own API
        and call mode unless `api` / `collective` say otherwise)."""
        p = self.pattern
        phase = phase or next(ph for ph in self.phases if ph.timed and ph.write)
        api = api or ("MPIIO" if p.layer == MPIIO else "POSIX")
        coll = p.collective if collective is None else collective
        block, segments = self.sized(phase.fraction)
        args = ["-a", api, "--pattern", p.layout, "-t", str(p.transfer), "-b", str(block),
                "-s", str(segments), "-i", str(reps), "-o", path, "--json", "-"]
        if coll and api != "POSIX":
            args.append("-c")
        if p.fsync and phase.write:
            args.append("-e")
        args += _phase_flags(phase)
        for key, value in (hints or {}).items():
            args += ["--hint", f"{key}={value}"]
        return args

    def runs(self, **kw) -> list[tuple[Phase, list[str]]]:
        """Every run of the replay, in order, with its aggio-bench options."""
        return [(ph, self.bench_args(phase=ph, **kw)) for ph in self.phases]


def _phase_flags(phase: Phase) -> list[str]:
    return ((["-w"] if phase.write else []) + (["-r"] if phase.read else [])
            + (["--overwrite"] if phase.overwrite else []) + (["-k"] if phase.keep else []))


def build(pattern: Pattern, nranks: int | None = None, max_bytes: int = DEFAULT_MAX_BYTES,
          scale: float | None = None, min_bytes: int = 0) -> Replay:
    """Scales the pattern to `nranks` ranks: each keeps the log's bytes per
    rank (times `scale`; or more, up to `min_bytes` for the whole file, when
    no scale is given), within `max_bytes` for the whole file."""
    n = nranks or max(1, min(pattern.ranks, os.cpu_count() or 1))
    want = pattern.bytes_per_rank * (scale or 1.0)
    if not scale and min_bytes and want * n < min_bytes:
        requests = max(MAX_SCALED_REQUESTS, pattern.requests)
        want = max(want, min(min_bytes / n, requests * pattern.transfer / n))
    per_rank = min(want, max_bytes / n) if max_bytes else want
    t = pattern.transfer
    if pattern.layout == "strided":
        block, segments = max(1, int(per_rank // t)) * t, 1
    else:
        block = max(t, min(pattern.block, int(per_rank)) // t * t)
        segments = max(1, int(per_rank // block))
    got = block * segments
    note = (f"{pattern.ranks} ranks x {fmt_bytes(pattern.bytes_per_rank)} in the log -> "
            f"{n} ranks x {fmt_bytes(got)} here")
    ratio = got / max(pattern.bytes_per_rank, 1)
    if ratio < 0.999:
        note += (f" (scaled to {100 * ratio:.2g}% per rank to stay within "
                 f"{fmt_bytes(max_bytes)}; --max-bytes changes it)")
    elif ratio > 1.001:
        note += (f" (scaled up {ratio:.3g}x" + (" as --scale asks)" if scale else
                 f" towards {fmt_bytes(min_bytes)} (at most {MAX_SCALED_REQUESTS:,} requests), "
                 "so that a run lasts long enough to measure; --min-bytes changes it)"))
    return Replay(pattern, n, block, segments, note, list(pattern.notes))


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="a Darshan log with DXT, or the aggio traces of one job")
    add_replay_arguments(parser)
    parser.add_argument("--run", action="store_true", help="run the replay once and print "
                        "aggio-bench's result")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def add_replay_arguments(parser) -> None:
    parser.add_argument("-n", "--nranks", type=positive_int, metavar="N",
                        help="ranks to replay with (default: the log's, at most this "
                             "machine's cores)")
    parser.add_argument("--max-bytes", type=parse_size, default=DEFAULT_MAX_BYTES, metavar="SIZE",
                        help="largest file the replay writes (k/m/g suffixes; default 256m; 0: no limit)")
    parser.add_argument("--scale", type=positive_float, metavar="F",
                        help="bytes per rank = the log's x F (still within --max-bytes)")
    parser.add_argument("--file", metavar="PATH", help="the file of the log to replay "
                        "(default: the one with the most bytes written, else read)")
    parser.add_argument("--record", type=positive_int, metavar="SIZE",
                        help="the calls go through a file view dealing records of SIZE bytes "
                             "over the ranks (ior-hard: 47008); the log cannot show a view")
    parser.add_argument("-o", "--output", default="aggio-replay.dat", metavar="PATH",
                        help="the file aggio-bench writes (removed after each run); put it on "
                             "the file system you want to measure")
    parser.add_argument("--bench", metavar="PATH", help="aggio-bench to run (default: "
                        "$AGGIO_BENCH, PATH, or this source tree's build)")
    parser.add_argument("--mpiexec", metavar="CMD", help="launcher (default: the one that "
                        "matches aggio-bench's MPI library)")


def from_args(args) -> Replay:
    """Reads the inputs and builds the replay (raises InputError, PatternError)."""
    jobs = load_jobs(args.logs)
    if len(jobs) != 1:
        raise InputError("give one Darshan log, or the aggio traces of one job")
    pattern = detect(jobs[0], args.file, args.record)
    return build(pattern, args.nranks, args.max_bytes, args.scale)


def commands(replay: Replay, args) -> tuple[list, dict]:
    """([(phase, command)] in order, environment)."""
    try:
        bench = benchrun.find_bench(args.bench)
        prefix, env, _ = benchrun.launcher(bench, replay.nranks, args.mpiexec)
    except benchrun.BenchError:
        if args.run:
            raise
        bench, prefix, env = "aggio-bench", ["mpiexec", "-n", str(replay.nranks)], {}
    return [(ph, prefix + [bench] + a) for ph, a in replay.runs(path=args.output)], env


def main(argv: list[str] | None = None) -> int:
    args = setup_parser(argparse.ArgumentParser(prog="aggio replay")).parse_args(argv)
    try:
        replay = from_args(args)
    except (InputError, PatternError, OSError) as exc:
        print(f"aggio replay: {exc}", file=sys.stderr)
        return 1
    try:
        cmds, env = commands(replay, args)
        results = [benchrun.run(c, env, timeout=600)[-1] for _, c in cmds] if args.run else None
    except benchrun.BenchError as exc:
        print(f"aggio replay: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(replay_json(replay, cmds, results), indent=1) if args.json
          else describe(replay, cmds, results))
    return 0


def replay_json(replay, cmds, results=None) -> dict:
    """`command` is the main write's (the one run of a plain replay);
    `runs` lists every run in order, with its result after --run."""
    runs = [{"phase": ph.name, "timed": ph.timed, "command": c} for ph, c in cmds]
    for run, rec in zip(runs, results or []):
        run["result"] = rec
    main = next((r for r in runs if r["timed"] and "-w" in r["command"]), runs[-1] if runs
                else {"command": []})
    pattern = asdict(replay.pattern)
    if pattern["fit"] != pattern["fit"]:         # NaN: unknown, which JSON writes as null
        pattern["fit"] = None
    return {"pattern": pattern, "nranks": replay.nranks, "block": replay.block,
            "segments": replay.segments, "bytes": replay.total_bytes,
            "scale": replay.scale_note, "notes": replay.notes, "command": main["command"],
            "runs": runs, "limits": LIMITS,
            "result": main.get("result")}


def describe(replay: Replay, cmds, results=None) -> str:
    p = replay.pattern
    mode = "collective" if p.collective else "independent"
    lines = [f"replay of {p.path}: {p.requests:,} {LAYER_NAMES[p.layer]} "
             f"{'write' if p.write else 'read'}s by {p.ranks} ranks ({mode}), "
             f"{fmt_bytes(p.bytes)}",
             f"layout: {p.layout}, transfer {p.transfer} bytes; " + _fit_words(p),
             f"scale: {replay.scale_note}"]
    lines += [f"note: {n}" for n in replay.notes]
    lines.append("")
    for i, (ph, c) in enumerate(cmds):
        lines.append(f"  {shlex.join(c)}" + (f"    # {i + 1}. {ph.name}" if len(cmds) > 1
                                             else ""))
    lines += ["", "limits: " + LIMITS]
    for (ph, _), rec in zip(cmds, results or []):
        lines.append(f"result{' (' + ph.name + ')' if len(cmds) > 1 else ''}: " + summary(rec))
    return "\n".join(lines)


def _fit_words(p: Pattern) -> str:
    """The share reproduced, over the requests whose offsets the log has."""
    if p.unknown_offsets == p.requests:
        return "no request has an offset in the log: the share reproduced is unknown"
    known = p.requests - p.unknown_offsets
    words = f"reproduces {100 * p.fit:.1f}% of the requests exactly"
    return words if not p.unknown_offsets else words + f" (of the {known:,} with an offset)"


def summary(record: dict) -> str:
    parts = []
    for d in ("write", "read"):
        r = record.get(d)
        if r:
            key = "bw_durable_MiBps" if d == "write" and record["params"].get("fsync") \
                else ("bw_buffered_MiBps" if d == "write" else "bw_MiBps")
            bw = r.get(key) or r.get("bw_MiBps") or {}
            if bw:
                parts.append(f"{d} {bw['median']:.1f} MiB/s (median of {len(r['reps'])})")
    return ", ".join(parts) or "no bandwidth in the record"
