"""Write one self-contained, offline HTML report (findings, files, timeline,
aggregators, a collective call's translation, request sizes, spatial map,
phases, stragglers).

Exit status: 0 when the report was written (also for inputs with no I/O,
which the page says, and for damaged inputs read in part), 1 when an input
cannot be read (the page is still written for the others) or the output
cannot be written, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import copy
import os
import sys

import numpy as np

from . import thresholds as thr
from .argtypes import positive_int, rank_range, time_range
from .findings import run_all
from .sources import InputError, load_jobs


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="aggio trace files (one job) and/or Darshan logs")
    parser.add_argument("-o", "--output", default="report.html", help="HTML file to write")
    parser.add_argument("--max-points", type=positive_int, metavar="N",
                        help="draw every operation up to N, aggregate above "
                             "(threshold max_plot_points)")
    parser.add_argument("--time", type=time_range, metavar="START:END",
                        help="show only operations overlapping this time window (seconds; "
                             "either side may be empty); findings still use everything")
    parser.add_argument("--ranks", type=rank_range, metavar="FIRST:LAST",
                        help="show only these ranks (inclusive; either side may be empty)")
    parser.add_argument("--call", type=int, metavar="N",
                        help="the collective call to translate to POSIX (0-based, per file; "
                             "default: the slowest)")
    thr.add_arguments(parser)
    return parser


def output_problem(path: str) -> str | None:
    """Why `path` cannot be written, checked before any work (None if fine)."""
    if os.path.isdir(path):
        return f"{path}: is a directory; give a file name"
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        return f"{parent}: no such directory for the output"
    if not os.access(parent, os.W_OK):
        return f"{parent}: not writable"
    return None


def filtered(job, time=None, ranks=None):
    """A copy of the job whose operations are limited to a time window and a
    rank range (the counters and the findings are not touched)."""
    if not time and not ranks:
        return job
    view = copy.copy(job)
    ops = job.ops
    keep = np.ones(len(ops), bool)
    if time:
        lo, hi = time
        if lo is not None:
            keep &= ops["t_end"] >= lo
        if hi is not None:
            keep &= ops["t_start"] <= hi
    if ranks:
        lo, hi = ranks
        if lo is not None:
            keep &= ops["rank"] >= lo
        if hi is not None:
            keep &= ops["rank"] <= hi
    view.ops = ops[keep]
    view.__dict__["filter_text"] = describe_filter(time, ranks, len(view.ops), len(ops))
    return view


def describe_filter(time, ranks, kept, total) -> str:
    parts = []
    if time:
        parts.append(f"time {_side(time[0], 'the start', 's')} to {_side(time[1], 'the end', 's')}")
    if ranks:
        parts.append(f"ranks {_side(ranks[0], 'the first')} to {_side(ranks[1], 'the last')}")
    return (f"Filtered views: {' and '.join(parts)} ({kept:,} of {total:,} operations). "
            "Findings and the files table use the whole input.")


def _side(value, open_text, unit=""):
    return open_text if value is None else f"{value:g}{unit}" if unit else str(value)


def build(paths: list[str], th, time=None, ranks=None, call=None,
          unread=None) -> tuple[str, list]:
    """The HTML text for the inputs and what was damaged in them (raises
    InputError; see load_jobs for `unread`)."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError as exc:  # an optional dependency (aggio[report])
        raise InputError("drawing the report needs Plotly "
                         "(pip install 'aggio[report]')") from exc

    from .html.page import render
    jobs = load_jobs(paths, unread)
    if not jobs and unread:
        raise unread.pop(0)
    results = [(job, run_all(job, th), filtered(job, time, ranks)) for job in jobs]
    damaged = [f"{job.source}: {d}" for job in jobs for d in job.damaged]
    return render(results, th, get_plotlyjs(), call=call), damaged


def main(argv: list[str] | None = None) -> int:
    args = setup_parser(argparse.ArgumentParser(prog="aggio report")).parse_args(argv)
    problem = output_problem(args.output)
    if problem:
        print(f"aggio report: {problem}", file=sys.stderr)
        return 1
    unread: list[InputError] = []
    try:
        th = thr.from_args(args.threshold, args.thresholds)
        if args.max_points:
            th.set("max_plot_points", args.max_points)
        page, damaged = build(args.logs, th, args.time, args.ranks, args.call, unread)
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(page)
    except (InputError, KeyError, ValueError, OSError) as exc:
        for problem in [exc, *unread]:
            print(f"aggio report: {problem}", file=sys.stderr)
        return 1
    for problem in unread:      # the page has the other inputs
        print(f"aggio report: {problem}", file=sys.stderr)
    for line in damaged:
        print(f"aggio report: damaged input, read in part: {line}", file=sys.stderr)
    print(f"aggio report: wrote {args.output} ({len(page) / 1e6:.1f} MB)")
    return 1 if unread else 0

