"""Input sources: each turns files into model.Job objects.

load_jobs() picks the reader by the file's first bytes: aggio traces (all of
them together form one job) and Darshan logs (one job each).
"""
from __future__ import annotations

import os

from ..model import Job
from ..trace import TraceError, is_trace


class InputError(ValueError):
    """An input file cannot be read."""


def check_inputs(paths: list[str]) -> None:
    """Raises InputError naming each input that is not a readable file."""
    problems = []
    for p in paths:
        if os.path.isdir(p):
            problems.append(f"{p}: is a directory (give the log or trace files in it)")
        elif not os.path.exists(p):
            problems.append(f"{p}: no such file")
        elif not os.path.isfile(p):
            problems.append(f"{p}: not a regular file")
        elif not os.access(p, os.R_OK):
            problems.append(f"{p}: permission denied")
    if problems:
        raise InputError("; ".join(problems))


def load_jobs(paths: list[str], unread: list | None = None) -> list[Job]:
    """The jobs of the inputs.  An input that cannot be read raises
    InputError; with a list as `unread`, its InputError is appended there
    instead and the other inputs are still read."""
    check_inputs(paths)
    traces = [p for p in paths if is_trace(p)]
    others = [p for p in paths if p not in traces]
    jobs = []
    if traces:
        from .trace import load_traces
        _load(jobs, unread, TraceError, load_traces, traces)
    for path in others:
        from .darshan import DarshanError
        from .darshan_isolated import load_darshan_isolated
        _load(jobs, unread, DarshanError, load_darshan_isolated, path)
    return jobs


def _load(jobs, unread, error, reader, what):
    try:
        jobs.append(reader(what))
    except error as exc:
        problem = InputError(str(exc))
        problem.__cause__ = exc
        if unread is None:
            raise problem from exc
        unread.append(problem)
