"""What a DXT record must hold to be used: libdarshan-util returns a
damaged record's numbers as they are, and the timeline, the aggregator
views and the replay index by rank and trust times and lengths.

A record is left out when its rank is not one of the job's or its segment
counts are negative; a segment is left out when its times are not finite
or run backwards, or its length or offset is negative (offset -1 is what
old Darshan versions wrote for an unknown offset, and is kept).
"""
from __future__ import annotations

import numpy as np


def record_problem(rank: int, writes: int, reads: int, nprocs: int) -> str:
    """Why a DXT record cannot be used ("" when it can)."""
    if not 0 <= rank < max(nprocs, 1):
        return f"rank {rank} of a {nprocs}-process job"
    if writes < 0 or reads < 0:
        return f"{writes} writes and {reads} reads"
    return ""


def valid_segments(segs: np.ndarray) -> tuple[np.ndarray, int]:
    """The usable segments and how many were left out."""
    ok = (np.isfinite(segs["start"]) & np.isfinite(segs["end"])
          & (segs["end"] >= segs["start"]) & (segs["length"] >= 0)
          & (segs["offset"] >= -1))
    return (segs, 0) if ok.all() else (segs[ok], int((~ok).sum()))


def damage_note(mod: str, records: int, segments: int) -> str:
    parts = ([f"{_count(records, 'record')} with an impossible rank or count"]
             if records else [])
    parts += ([f"{_count(segments, 'segment')} with impossible times, lengths or offsets"]
              if segments else [])
    return f"the {mod} trace has {' and '.join(parts)}; left out of the timeline"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
