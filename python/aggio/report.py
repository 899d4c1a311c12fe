"""Write one self-contained, offline HTML report (findings, files, timeline,
request sizes, spatial map, phases, stragglers).

Exit status: 0 when the report was written (also for inputs with no I/O,
which the page says), 1 when an input cannot be read, 2 for bad arguments.
"""
from __future__ import annotations

import argparse
import sys

from . import thresholds as thr
from .findings import run_all
from .sources import InputError, load_jobs


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="aggio trace files (one job) and/or Darshan logs")
    parser.add_argument("-o", "--output", default="report.html", help="HTML file to write")
    parser.add_argument("--max-points", type=int, metavar="N",
                        help="draw every operation up to N, aggregate above "
                             "(threshold max_plot_points)")
    thr.add_arguments(parser)
    return parser


def build(paths: list[str], th) -> str:
    """The HTML text for the inputs (raises InputError)."""
    try:
        from plotly.offline import get_plotlyjs
    except ImportError as exc:  # an optional dependency (aggio[report])
        raise InputError("drawing the report needs Plotly "
                         "(pip install 'aggio[report]')") from exc

    from .html.page import render
    results = [(job, run_all(job, th)) for job in load_jobs(paths)]
    return render(results, th, get_plotlyjs())


def main(argv: list[str] | None = None) -> int:
    args = setup_parser(argparse.ArgumentParser(prog="aggio report")).parse_args(argv)
    try:
        th = thr.from_args(args.threshold, args.thresholds)
        if args.max_points:
            th.set("max_plot_points", args.max_points)
        page = build(args.logs, th)
    except (InputError, KeyError, ValueError, OSError) as exc:
        print(f"aggio report: {exc}", file=sys.stderr)
        return 1
    with open(args.output, "w", encoding="utf-8") as f:
        f.write(page)
    print(f"aggio report: wrote {args.output} ({len(page) / 1e6:.1f} MB)")
    return 0
