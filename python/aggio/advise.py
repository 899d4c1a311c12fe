"""Print the findings (text or --json), each with evidence and a fix.

Exit status: 0 when the inputs were read (findings or not; a damaged input
that could be read in part says so), 1 when an input cannot be read (the
others are still reported), 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import json
import sys
import textwrap

from . import thresholds as thr
from .findings import REGISTRY, run_all, unknown_codes
from .findings.cost import top
from .sources import InputError, load_jobs


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("logs", nargs="*", metavar="LOG",
                        help="aggio trace files (one job) and/or Darshan logs")
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    parser.add_argument("--only", action="append", metavar="CODE",
                        help="run only this finding (repeatable; see --list)")
    parser.add_argument("--list", action="store_true", help="list the finding codes")
    parser.add_argument("--list-thresholds", action="store_true",
                        help="list thresholds and their defaults")
    thr.add_arguments(parser)
    return parser


def analyse(paths, th, only=None, unread=None):
    """[(job, findings)] for the inputs (raises InputError; see load_jobs
    for `unread`)."""
    return [(job, run_all(job, th, only)) for job in load_jobs(paths, unread)]


def main(argv: list[str] | None = None) -> int:
    parser = setup_parser(argparse.ArgumentParser(prog="aggio advise"))
    args = parser.parse_args(argv)
    if args.list or args.list_thresholds:
        _print_lists(args)
        return 0
    if not args.logs:
        print("aggio advise: give at least one LOG", file=sys.stderr)
        return 2
    bad = unknown_codes(args.only)
    if bad:
        print(f"aggio advise: unknown finding code(s) {', '.join(bad)}; known: "
              f"{', '.join(REGISTRY)}", file=sys.stderr)
        return 2
    unread: list[InputError] = []
    try:
        th = thr.from_args(args.threshold, args.thresholds)
        results = analyse(args.logs, th, args.only, unread)
    except (InputError, KeyError, ValueError, OSError) as exc:
        print(f"aggio advise: {exc}", file=sys.stderr)
        return 1
    for exc in unread:          # the other inputs are still reported
        print(f"aggio advise: {exc}", file=sys.stderr)
    warn_damaged(results, "aggio advise")
    if args.json:
        print(json.dumps([job_json(j, f, th["top_findings"]) for j, f in results], indent=1,
                         default=_np))
    else:
        for job, found in results:
            print(render_text(job, found, th["top_findings"]))
    return 1 if unread else 0


def warn_damaged(results, prog) -> None:
    for job, _ in results:
        for d in job.damaged:
            print(f"{prog}: {job.source}: damaged input, read in part: {d}", file=sys.stderr)


def _np(value):
    return value.item() if hasattr(value, "item") else str(value)


def combined_forms(job) -> list[tuple[str, str]]:
    """Every hint the report's fixes give, at once, in the three forms."""
    plan = job.__dict__.get("fix_plan")
    return plan.forms() if plan else []


def job_json(job, found, top_n: int = 3) -> dict:
    plan = job.__dict__.get("fix_plan")
    return {"source": job.source, "kind": job.kind, "nprocs": job.nprocs,
            "notes": job.notes, "damaged": job.damaged,
            "partial_modules": sorted(job.partial),
            "costliest": [{"code": f.code, "subject": f.subject, **f.cost}
                          for f in top(found, top_n)],
            "findings": [f.to_dict() for f in found],
            "hints_all_findings": [{"pattern": p, "hints": h} for p, h in plan.entries()]
            if plan else []}


def render_text(job, found, top_n: int = 3) -> str:
    lines = [f"== {job.source} ({job.kind}, {job.nprocs} processes, "
             f"{len(job.files)} files)"]
    lines += [f"DAMAGED: {d}" for d in job.damaged]
    lines += [f"note: {n}" for n in job.notes]
    lines += costliest_lines(found, top_n)
    if job.empty:
        lines.append("no I/O recorded in this input: nothing to advise")
    elif not found:
        lines.append("no findings: nothing above the thresholds")
    for f in found:
        lines.append(f"\n[{f.severity.upper()}] {f.code}  {f.title}"
                     + (f"  ({f.subject})" if f.subject != "job" else ""))
        lines.append(textwrap.fill(f.message, 100, initial_indent="  ",
                                   subsequent_indent="  "))
        if f.rests_on.get("modules"):
            lines.append(f"  rests on: {rests_on_text(f.rests_on)}")
        for fix in f.fixes:
            label = fix.to_dict()["label"]
            lines.append(f"  fix - {label}:")
            lines += [f"      {line}" for line in fix.text.splitlines()]
    forms = combined_forms(job)
    if forms:
        lines.append("\nall hints above together (one value per file):")
        lines += [f"  {text}" if kind != "romio-hints" else
                  "  hints file (the hints with one value for every file):\n"
                  + textwrap.indent(text, "      ") for kind, text in forms]
    return "\n".join(lines)


def rests_on_text(rests_on: dict) -> str:
    ranks = rests_on.get("ranks")
    return (", ".join(rests_on["modules"])
            + (f" (ranks {', '.join(map(str, ranks[:8]))}{', ...' if len(ranks) > 8 else ''})"
               if isinstance(ranks, list) else ""))


def costliest_lines(found, top_n: int) -> list[str]:
    """The report's top: the findings that cost the job the most time."""
    best = top(found, top_n)
    if not best:
        return []
    out = ["costliest findings (seconds per rank they cost the job; an upper bound on "
           "what their fixes save):"]
    for i, f in enumerate(best, 1):
        share = f.cost["share_of_io"]
        out.append(f"  {i}. {f.code} [{f.severity}]"
                   + (f" {f.subject}" if f.subject != "job" else "")
                   + f": {f.cost['seconds']:.3g} s"
                   + (f", {100 * share:.0f}% of the I/O time" if share is not None else ""))
    return out


def _print_lists(args):
    if args.list:
        for code, chk in REGISTRY.items():
            print(f"{code:24} {chk.title}")
    if args.list_thresholds:
        for name, (value, doc) in thr.DEFAULTS.items():
            print(f"{name:24} {value!s:>10}  {doc}")
