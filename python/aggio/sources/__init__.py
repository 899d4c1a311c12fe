"""Input sources: each turns files into model.Job objects.

load_jobs() picks the reader by the file's first bytes: aggio traces (all of
them together form one job) and Darshan logs (one job each).  A file that is
neither is refused here, before PyDarshan sees it (PyDarshan's C library
prints its own "Error:" lines for such files).
"""
from __future__ import annotations

import os
import struct

from ..model import Job
from ..trace import TraceError, is_trace

# DARSHAN_MAGIC_NR (darshan-log-format.h): an int64 at byte 8 of every
# Darshan log's header, after the 8-byte version string, in the writer's
# byte order.
DARSHAN_MAGIC = 6567223


class InputError(ValueError):
    """An input file cannot be read."""


def is_darshan(path: str) -> bool:
    """True when the file starts with a Darshan log header."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    if len(head) < 16:
        return False
    return DARSHAN_MAGIC in (struct.unpack("<q", head[8:])[0], struct.unpack(">q", head[8:])[0])


def load_jobs(paths: list[str]) -> list[Job]:
    missing = [p for p in paths if not os.path.isfile(p)]
    if missing:
        raise InputError(f"no such file: {', '.join(missing)}")
    traces = [p for p in paths if is_trace(p)]
    others = [p for p in paths if p not in traces]
    unknown = [p for p in others if not is_darshan(p)]
    if unknown:
        raise InputError(f"{', '.join(unknown)}: neither an aggio trace nor a Darshan "
                         "log (by its first bytes)")
    jobs = []
    if traces:
        from .trace import load_traces
        try:
            jobs.append(load_traces(traces))
        except TraceError as exc:
            raise InputError(str(exc)) from exc
    for path in others:
        from .darshan import DarshanError, load_darshan
        try:
            jobs.append(load_darshan(path))
        except DarshanError as exc:
            raise InputError(str(exc)) from exc
    return jobs
