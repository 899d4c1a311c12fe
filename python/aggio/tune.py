"""Replay a log through the MPI library's own MPI-IO and through aggio with
the candidate settings (the hints `advise` gives for the log, and a small
table of aggio settings), as an experiment (issue 26, item 8): runs in
seeded random order, interleaved, each from a cold page cache or a fresh
file; each MPI library's hints only under the implementation that reads
them; repetitions until the winner's interval clears the runner-up's, up to
a cap, else "no significant difference"; the recommendation scoped to the
ranks, file system and MPI library measured.  The statistics live in
tunestats (pure functions).

Exit status: 0 when every configuration ran, 1 when the input cannot be read
or replayed, aggio-bench is missing, or a run failed, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shlex
import shutil
import statistics
import sys
from dataclasses import dataclass, field

from . import benchrun, hintforms, replay
from . import thresholds as thr
from . import tunestats as ts
from .argtypes import positive_float, positive_int
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
# Where ROMIO reads the advised ROMIO hints: MPICH's MPI-IO is ROMIO; Open
# MPI's is OMPIO unless its ROMIO component is chosen (OMPI_MCA_io=romio321,
# i.e. --mca io romio321).  Under an unknown library they are not tried.
ROMIO_UNDER = {"mpich": ("", ()), "openmpi": (" (ROMIO)", tuple(OPENMPI_IO[0][1]))}
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
    if romio and flavor in ROMIO_UNDER:
        # Open MPI's default MPI-IO (OMPIO) ignores ROMIO's hints: measured
        # under OMPIO they would name a winner for settings never applied
        out.append(Config("MPI-IO collective + advised hints" + ROMIO_UNDER[flavor][0], "MPIIO",
                          True, romio, launcher_args=list(ROMIO_UNDER[flavor][1]),
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
    parser.add_argument("--reps", type=positive_int, default=ts.runs_needed(), metavar="N",
                        help="rounds in which every configuration runs once, in random order "
                             f"(default {ts.runs_needed()}, the fewest for a 95%% interval)")
    parser.add_argument("--max-reps", type=positive_int, default=20, metavar="N",
                        help="rounds at most: after --reps, the configurations still in "
                             "contention run until the winner's interval clears the "
                             "runner-up's (default 20)")
    parser.add_argument("--confidence", type=level, default=ts.DEFAULT_LEVEL,
                        metavar="P", help="level of the medians' intervals (default 0.95)")
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run the default and this configuration alone (repeatable): an "
                             "independent re-measurement of a winner")
    parser.add_argument("--seed", type=int, metavar="N",
                        help="seed of the random order (default: a new one, printed, so "
                             "that a run can be repeated)")
    parser.add_argument("--timeout", type=positive_int, default=300, metavar="S",
                        help="seconds one run may take (default 300)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    thr.add_arguments(parser)
    return parser


def level(text: str) -> float:
    """A confidence level, strictly between 0 and 1."""
    value = positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"{text} is not below 1 (e.g. 0.95)")
    return value


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
        left_out += romio_left_out(advised, flavor)
        configs = only(configs, args.only)
        seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
        cold = measure(configs, rp, prefix, env, bench, args, random.Random(seed))
    except (InputError, PatternError, KeyError, ValueError, OSError,
            benchrun.BenchError) as exc:
        print(f"aggio tune: {exc}", file=sys.stderr)
        return 1
    verdict = ts.decide({c.name: c.values for c in configs}, configs[0].name, args.confidence)
    result = outcome(rp, configs, advised, verdict)
    result.update(left_out=left_out, seed=seed, cold=cold, cold_words=benchrun.COLD_WORDS[cold],
                  confidence=args.confidence,
                  scope=scope(jobs[0], rp, flavor, os.path.abspath(args.output)))
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


def only(configs: list[Config], names: list | None) -> list[Config]:
    """The baseline and the configurations `names` gives (all without it)."""
    if not names:
        return configs
    unknown = set(names) - {c.name for c in configs}
    if unknown:
        raise ValueError(f"--only {', '.join(sorted(unknown))}: not a configuration of this "
                         f"replay ({', '.join(c.name for c in configs)})")
    return [c for c in configs if c.baseline or c.name in names]


def romio_left_out(advised: dict, flavor: str) -> list:
    """[[name, why]] for the advised ROMIO hints when no ROMIO is known to read them."""
    if flavor in ROMIO_UNDER or not any(not hintforms.aggio_only(k) for k in advised):
        return []
    return [["MPI-IO collective + advised hints", f"the MPI library ({flavor}) is neither "
             "MPICH nor Open MPI: whether its MPI-IO reads ROMIO's hints is unknown"]]


def measure(configs, rp, prefix, env, bench, args, rng) -> str:
    """Runs the configurations in random interleaved rounds (tunestats)
    until the verdict is clear or args.max_reps rounds; returns how each run
    started cold (benchrun.COLD_WORDS)."""
    by_name = {c.name: c for c in configs}
    count = iter(range(1 << 30))
    cold = "drop_caches" if benchrun.can_drop_caches() else "fadvise"

    def run_one(name):
        c = by_name[name]
        path = benchrun.rotated(args.output, next(count))
        records, cmds = [], []
        for phase, bench_args in rp.runs(api=c.api, collective=c.collective, hints=c.hints,
                                         path=path):
            benchrun.make_cold(path)
            extra = ["--drop-caches"] if cold == "drop_caches" and phase.read else []
            cmds.append(prefix + c.launcher_args + [bench] + bench_args + extra)
            records.append((phase, benchrun.run(cmds[-1], env, args.timeout)[-1]))
        c.__dict__["commands"] = cmds            # the last run's, for the output
        return bandwidth(records, rp.pattern)

    samples, order = ts.run_rounds([c.name for c in configs], run_one, rng, args.reps,
                                   max(args.reps, args.max_reps), configs[0].name,
                                   args.confidence)
    for c in configs:
        c.values = samples[c.name]
    configs[0].__dict__["order"] = order
    return cold


def phase_figure(phase, record: dict, pattern) -> tuple[int, float]:
    """(bytes, MiB/s) of one timed run: its write (durable with fsync)
    where the run writes a written file, else its read."""
    if phase.write and pattern.write and record.get("write"):
        key = "bw_durable_MiBps" if pattern.fsync else "bw_buffered_MiBps"
        return int(record["write"]["bytes"]), float(record["write"][key]["median"])
    return int(record["read"]["bytes"]), float(record["read"]["bw_MiBps"]["median"])


def combined(figures: list) -> float:
    """MiB/s over several runs: all their bytes over all their time."""
    seconds = sum(b / bw for b, bw in figures if bw > 0)
    return sum(b for b, _ in figures) / seconds if seconds else 0.0


def bandwidth(records: list, pattern) -> float:
    """The figure compared for one replay (its timed runs together)."""
    return combined([phase_figure(ph, rec, pattern) for ph, rec in records if ph.timed])


def outcome(rp, configs, advised, verdict: ts.Verdict) -> dict:
    base = configs[0]
    rows = []
    for c in configs:
        iv = verdict.intervals.get(c.name)
        rows.append({"name": c.name, "api": c.api, "collective": c.collective,
                     "hints": c.hints, "launcher_args": c.launcher_args,
                     "baseline": c.baseline, "code_change": c.code_change,
                     "MiBps": c.values, "median": c.median, "interval": list(iv) if iv else None,
                     "speedup": c.median / base.median if base.median else None,
                     "commands": c.__dict__.get("commands")})
    best = next(c for c in configs if c.name == verdict.leader)
    win = verdict.beats_baseline
    return {"replay": replay.replay_json(rp, []), "metric": _metric(rp),
            "advised_hints": advised, "configs": rows, "order": base.__dict__.get("order", []),
            "leader": verdict.leader, "runner_up": verdict.runner_up,
            "significant": verdict.significant, "reason": verdict.reason,
            "winner": verdict.leader if verdict.significant else None,
            "winner_beats_default": win,
            "paste": paste(best, rp) if win else [], "aggio_run": _aggio_run(best, rp) if win
            else ""}


def scope(job, rp, flavor: str, output: str) -> dict:
    """What was measured against what the log's job ran on: a setting is
    recommended only for the ranks, file system and MPI library measured."""
    log_fs = benchrun.mount_type(job.mounts, rp.pattern.path) or job.fstype or "unknown"
    here_fs = benchrun.mount_type(benchrun.local_mounts(), os.path.dirname(output)) or "unknown"
    log_ranks = job.nprocs or rp.pattern.ranks
    differs = []
    if log_ranks != rp.nranks:
        differs.append(f"{log_ranks} ranks in the log, {rp.nranks} here")
    if log_fs != here_fs or here_fs == "unknown":
        differs.append(f"file system {log_fs} in the log, {here_fs} here")
    return {"log_ranks": log_ranks, "ranks": rp.nranks, "log_fs": log_fs, "fs": here_fs,
            "mpi": flavor, "differs": differs}


def _metric(rp) -> str:
    pattern = rp.pattern
    words = ("write MiB/s, " + ("durable (with fsync)" if pattern.fsync else "buffered")
             if pattern.write else "read MiB/s")
    more = [ph.name for ph in rp.phases if ph.timed and not ph.name.startswith("write")]
    return words + (f", with the {' and '.join(more)} run (all bytes over all time)"
                    if more else "")


def paste(best: Config, rp) -> list:
    """The winning settings, ready to paste: [(label, text)]."""
    if best.baseline:
        return []
    out = []
    if best.code_change:
        out.append(("needs", best.code_change))
    if best.launcher_args:
        words = " ".join(best.launcher_args)
        if best.launcher_args == list(OPENMPI_IO[0][1]):
            words += " (or export OMPI_MCA_io=romio321)"
        out.append(("launcher", words))
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
    sc = result["scope"]
    runs = [len(c["MiBps"]) for c in result["configs"]]
    lines = [f"aggio tune: {p['path']} replayed as {p['layout']} (t={p['transfer']}), "
             f"{r['nranks']} ranks, {r['bytes'] / 2**20:.1f} MiB; {r['scale']}",
             f"measured here: {sc['ranks']} ranks, file system {sc['fs']}, MPI library "
             f"{sc['mpi']}",
             f"figure compared: {result['metric']}; {_span(runs)} runs of each "
             f"configuration in random interleaved rounds, seed {result['seed']} (--seed "
             f"{result['seed']} repeats the order)",
             f"cold start: {result['cold_words']}", ""]
    lines += _table(result)
    for name, why in result.get("left_out", []):
        lines.append(f"left out: {name} - {why}")
    lines += [""] + _verdict_lines(result) + ["", "limits: " + replay.LIMITS]
    return "\n".join(lines)


def _span(counts: list) -> str:
    return f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}-{max(counts)}"


def _table(result: dict) -> list:
    level = f"{100 * result['confidence']:g}%"
    lines = [f"{'configuration':44} {'API':6} {'calls':11} {'median':>9} "
             f"{level + ' interval':>19} {'speedup':>8}  hints"]
    for c in result["configs"]:
        iv = c["interval"]
        span = f"{iv[0]:.1f}-{iv[1]:.1f}" if iv else "(too few runs)"
        hints = ":".join(f"{k}={v_}" for k, v_ in c["hints"].items()) or "-"
        launch = f" [{' '.join(c['launcher_args'])}]" if c["launcher_args"] else ""
        lines.append(f"{c['name'] + (' *' if c['baseline'] else ''):44} {c['api']:6} "
                     f"{'collective' if c['collective'] else 'independent':11} "
                     f"{c['median']:9.1f} {span:>19} {(c['speedup'] or 0):7.2f}x  "
                     f"{hints}{launch}")
    lines.append("* the MPI library's default, as the program calls it; speedups are its "
                 "medians'; intervals are the medians' (distribution-free, order statistics)")
    return lines


def _verdict_lines(result: dict) -> list:
    if not result["significant"]:
        return [f"no significant difference: {result['reason']}.  Nothing is recommended; "
                "more rounds (--max-reps) or a larger replay (--min-bytes) may separate them."]
    if not result["winner_beats_default"]:
        return [f"winner: {result['leader']}, the baseline ({result['reason']}); keep it"]
    win = next(c for c in result["configs"] if c["name"] == result["winner"])
    sc = result["scope"]
    head = f"winner: {result['winner']}, {win['speedup']:.2f}x the default ({result['reason']})"
    if sc["differs"]:
        lines = [head, f"  measured at another scale ({'; '.join(sc['differs'])}): settings "
                 "to try on the original job and measure there, not to paste into "
                 "production:"]
        indent = "  try "
    else:
        lines = [head, f"  for this job as measured ({sc['ranks']} ranks, {sc['fs']}, "
                 f"{sc['mpi']}):"]
        indent = "  "
    for kind, text in result["paste"]:
        label = PASTE_LABELS.get(kind, kind)
        lines.append(f"{indent}{label}: {text}" if "\n" not in text else
                     f"{indent}{label}:\n" + "\n".join("      " + t for t in text.splitlines()))
    if result["aggio_run"]:
        lines.append(f"{indent}aggio-run: {result['aggio_run']}")
    return lines
