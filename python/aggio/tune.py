"""Replay a log through the MPI library's own MPI-IO and through aggio with
the candidate settings (the hints `advise` gives for the log, and a small
table of aggio settings); report each one's measured speedup and the winning
hints line.

Exit status: 0 when every configuration ran, 1 when the input cannot be read
or replayed, aggio-bench is missing, or a run failed, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import shlex
import shutil
import statistics
import sys
from dataclasses import dataclass, field

from . import benchrun, hintforms, replay
from . import thresholds as thr
from .argtypes import positive_int
from .findings import run_all
from .model import MPIIO
from .pattern import PatternError, detect
from .sources import InputError, load_jobs

# aggio settings tried besides the advised hints: data, not code.  Only hints
# that docs/hints.md documents (hintforms.KNOWN_HINTS checks each).
AGGIO_CANDIDATES = (
    ("aggio defaults", {}),
    ("aggio two_phase", {"aggio_strategy": "two_phase"}),
    ("aggio write_behind", {"aggio_strategy": "write_behind"}),
    ("aggio independent", {"aggio_strategy": "independent"}),
)
# Open MPI's two MPI-IO implementations: its default (OMPIO) and ROMIO.
OPENMPI_IO = (("Open MPI ROMIO", ["--mca", "io", "romio321"]),)
MIN_BYTES = 64 << 20
PASTE_LABELS = {"aggio-hints": "aggio", "cray-hints": "Cray MPICH",
                "romio-hints": "or a hints file (export AGGIO_HINTS_FILE=<file> for aggio, "
                               "ROMIO_HINTS=<file> for ROMIO)",
                "needs": "needs", "launcher": "launcher options"}


@dataclass
class Config:
    name: str
    api: str                      # MPIIO, AGGIO or POSIX (aggio-bench -a)
    collective: bool
    hints: dict = field(default_factory=dict)
    launcher_args: list = field(default_factory=list)
    baseline: bool = False        # the MPI library's default, as the program calls it
    code_change: str = ""         # what the program must change to use this setting
    values: list = field(default_factory=list)   # MiB/s per repetition

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else 0.0


def configurations(pattern, advised: dict, flavor: str) -> list[Config]:
    """The baseline, the MPI library's alternatives, and the candidates."""
    program = "MPIIO" if pattern.layer == MPIIO else "POSIX"
    coll = pattern.collective
    base = Config("MPI library default" if program == "MPIIO" else "POSIX, as the program",
                  program, coll, baseline=True)
    out = [base]
    to_coll = "" if coll else "collective calls (MPI_File_write_at_all, or a view + _all)"
    if program == "MPIIO" and flavor == "openmpi":
        out += [Config(name, "MPIIO", coll, launcher_args=mca) for name, mca in OPENMPI_IO]
    if not coll:
        out.append(Config("MPI-IO collective", "MPIIO", True, code_change=to_coll))
    romio = {k: v for k, v in advised.items() if not hintforms.aggio_only(k)}
    if romio:
        out.append(Config("MPI-IO collective + advised hints", "MPIIO", True, romio,
                          code_change=to_coll))
    port = "the aggio API (aggio_file_* calls)" + (f" with {to_coll}" if to_coll else "")
    for name, hints in AGGIO_CANDIDATES:
        hintforms.check(hints)
        out.append(Config(name, "AGGIO", True, dict(hints), code_change=port))
    if advised:
        out.append(Config("aggio + advised hints", "AGGIO", True, dict(advised),
                          code_change=port))
    return out


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="a Darshan log with DXT, or the aggio traces of one job")
    replay.add_replay_arguments(parser)
    parser.add_argument("--min-bytes", type=replay.parse_size, default=MIN_BYTES, metavar="SIZE",
                        help="scale a smaller log up to this many bytes, so that a run lasts "
                             "long enough to measure (default 64m; 0 keeps the log's size)")
    parser.add_argument("--reps", type=positive_int, default=3, metavar="N",
                        help="runs of each configuration, interleaved (default 3)")
    parser.add_argument("--timeout", type=positive_int, default=300, metavar="S",
                        help="seconds one run may take (default 300)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    thr.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = setup_parser(argparse.ArgumentParser(prog="aggio tune")).parse_args(argv)
    try:
        th = thr.from_args(args.threshold, args.thresholds)
        jobs = load_jobs(args.logs)
        if len(jobs) != 1:
            raise InputError("give one Darshan log, or the aggio traces of one job")
        pattern = detect(jobs[0], args.file, args.record)
        advised = {k: v for k, v in advised_hints(jobs[0], th, pattern.path).items()
                   if k in hintforms.KNOWN_HINTS}
        rp = replay.build(pattern, args.nranks, args.max_bytes, args.scale, args.min_bytes)
        bench = benchrun.find_bench(args.bench)
        prefix, env, flavor = benchrun.launcher(bench, rp.nranks, args.mpiexec)
        configs, left_out = drop_independent(configurations(rp.pattern, advised, flavor),
                                             aggregators_fit(jobs[0], pattern.path))
        measure(configs, rp, prefix, env, bench, args)
    except (InputError, PatternError, KeyError, ValueError, OSError,
            benchrun.BenchError) as exc:
        print(f"aggio tune: {exc}", file=sys.stderr)
        return 1
    result = outcome(rp, configs, advised)
    result["left_out"] = left_out
    print(json.dumps(result, indent=1) if args.json else render(result))
    return 0


def advised_hints(job, th, path: str) -> dict:
    """The hints `advise` gives for the replayed file."""
    job.__dict__["findings"] = run_all(job, th)
    plan = job.__dict__.get("fix_plan")
    return plan.for_file(path) if plan else {}


def aggregators_fit(job, path: str) -> str:
    """Why independent I/O is no candidate for `path` ("" when it may be):
    `advise` (run by advised_hints) found collective-buffering aggregators
    that fit the file's stripes.  A replay on a few ranks of this machine
    cannot show what aggregation saves at the log's scale, so tune does not
    recommend giving it up."""
    for f in job.__dict__.get("findings", []):
        if f.code == "AGG-AGGREGATORS" and f.subject == path and f.evidence.get("fits_stripes"):
            return (f"advise finds {f.evidence['aggregators']} collective-buffering "
                    f"aggregators that fit the {f.evidence['stripe_count']} stripes of {path} "
                    "(AGG-AGGREGATORS)")
    return ""


def independent(c: Config) -> bool:
    """A configuration that gives up collective buffering."""
    return (not c.collective or c.hints.get("aggio_strategy") == "independent"
            or c.hints.get("romio_cb_write") == "disable")


def drop_independent(configs: list[Config], why: str) -> tuple[list[Config], list]:
    """(configurations to run, [[name, why]] of those left out): when `why`
    says the aggregators fit, every configuration but the baseline that
    gives up collective buffering is left out."""
    if not why:
        return configs, []
    left = [c for c in configs if not c.baseline and independent(c)]
    return [c for c in configs if c not in left], [[c.name, why] for c in left]


def measure(configs, rp, prefix, env, bench, args) -> None:
    """Runs every configuration args.reps times, round-robin, so that a slow
    spell of a shared machine falls on all of them."""
    for _ in range(args.reps):
        for c in configs:
            cmd = prefix + c.launcher_args + [bench] + rp.bench_args(
                c.api, c.collective, c.hints, args.output)
            record = benchrun.run(cmd, env, args.timeout)[-1]
            c.values.append(bandwidth(record, rp.pattern))
            c.__dict__["command"] = cmd


def bandwidth(record: dict, pattern) -> float:
    """The figure compared: write MiB/s (durable with fsync), else read."""
    if pattern.write and record.get("write"):
        key = "bw_durable_MiBps" if pattern.fsync else "bw_buffered_MiBps"
        return float(record["write"][key]["median"])
    return float(record["read"]["bw_MiBps"]["median"])


def outcome(rp, configs, advised) -> dict:
    base = next(c for c in configs if c.baseline)
    best = max(configs, key=lambda c: c.median)
    rows = []
    for c in configs:
        rows.append({"name": c.name, "api": c.api, "collective": c.collective,
                     "hints": c.hints, "launcher_args": c.launcher_args,
                     "baseline": c.baseline, "code_change": c.code_change,
                     "MiBps": c.values, "median": c.median,
                     "speedup": c.median / base.median if base.median else None,
                     "command": c.__dict__.get("command")})
    clear = bool(best.values and base.values and min(best.values) > max(base.values))
    return {"replay": replay.replay_json(rp, []), "metric": _metric(rp.pattern),
            "advised_hints": advised, "configs": rows, "winner": best.name,
            "winner_beats_default": best is not base and best.median > base.median,
            "clear": clear, "paste": paste(best, rp), "aggio_run": _aggio_run(best, rp)}


def _metric(pattern) -> str:
    if pattern.write:
        return "write MiB/s, " + ("durable (with fsync)" if pattern.fsync else "buffered")
    return "read MiB/s"


def paste(best: Config, rp) -> list:
    """The winning settings, ready to paste: [(label, text)]."""
    if best.baseline:
        return []
    out = []
    if best.code_change:
        out.append(("needs", best.code_change))
    if best.launcher_args:
        out.append(("launcher", " ".join(best.launcher_args)))
    if best.hints:
        for kind, text in hintforms.forms(best.hints, rp.pattern.path):
            if best.api == "AGGIO" and kind == "cray-hints":
                continue
            if best.api == "MPIIO" and kind == "aggio-hints":
                continue
            out.append((kind, text))
    elif best.api == "AGGIO":
        out.append(("aggio-hints", "# none: aggio's defaults"))
    return out


def _aggio_run(best, rp) -> str:
    """The aggio-run line for unmodified programs, once aggio-run exists."""
    if best.api != "AGGIO":
        return ""
    if not shutil.which("aggio-run"):
        return ("aggio-run (interposition for unmodified MPI-IO programs) is not installed "
                "here: port the calls to aggio_file_* to use these settings")
    env = f"AGGIO_HINTS={shlex.quote(hintforms.env_value([('*', best.hints)]))} " \
        if best.hints else ""
    return f"{env}mpiexec -n <N> aggio-run ./program"


def render(result: dict) -> str:
    r = result["replay"]
    p = r["pattern"]
    lines = [f"aggio tune: {p['path']} replayed as {p['layout']} (t={p['transfer']}), "
             f"{r['nranks']} ranks, {r['bytes'] / 2**20:.1f} MiB; {r['scale']}",
             f"figure compared: {result['metric']}; each configuration run "
             f"{len(result['configs'][0]['MiBps'])} times, interleaved", ""]
    head = f"{'configuration':36} {'API':6} {'calls':11} {'median':>9} {'min':>9} {'max':>9} {'speedup':>8}  hints"
    lines.append(head)
    for c in result["configs"]:
        v = c["MiBps"]
        hints = ":".join(f"{k}={v_}" for k, v_ in c["hints"].items()) or "-"
        lines.append(f"{c['name'] + (' *' if c['baseline'] else ''):36} {c['api']:6} "
                     f"{'collective' if c['collective'] else 'independent':11} "
                     f"{c['median']:9.1f} {min(v):9.1f} {max(v):9.1f} "
                     f"{(c['speedup'] or 0):7.2f}x  {hints}")
    lines.append("* the MPI library's default, as the program calls it; speedups are against it")
    for name, why in result.get("left_out", []):
        lines.append(f"left out: {name} - {why}")
    lines.append("")
    if result["winner_beats_default"]:
        win = next(c for c in result["configs"] if c["name"] == result["winner"])
        lines.append(f"winner: {result['winner']}, {win['speedup']:.2f}x the default"
                     + ("" if result["clear"] else
                        " (its slowest run is not faster than the default's fastest: "
                        "within this machine's noise, run with more --reps)"))
        for kind, text in result["paste"]:
            label = PASTE_LABELS.get(kind, kind)
            lines.append(f"  {label}: {text}" if "\n" not in text else
                         f"  {label}:\n" + "\n".join("      " + t for t in text.splitlines()))
        if result["aggio_run"]:
            lines.append(f"  aggio-run: {result['aggio_run']}")
    else:
        lines.append("winner: the MPI library's default; no candidate was faster on this replay")
    lines += ["", "limits: " + replay.LIMITS]
    return "\n".join(lines)
