"""Bytes a program wrote more than once, or read before writing them again:
what a replay must repeat so that it costs what the log's I/O cost.

Issue 26 (item 7): the findings are about rewrites and read-modify-write, so
a replay that writes each byte once, to a fresh file, measures something
else.  This module measures, from one file's requests at one layer:

* rewritten bytes: bytes written minus the bytes of the union of the written
  ranges (what the same ranges cost the second time);
* read-before-write bytes: bytes read that lie in written ranges, by reads
  that end before the file's last write starts (read, modify, write back);
  reads of written ranges after every write are a read-back, not a
  read-modify-write.

Requests whose offset is -1 (unknown: Darshan before 3.2 wrote that for
calls through the file pointer) cannot be placed, so they are counted, not
guessed.  Pure numpy, no I/O: the tests give it arrays.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class Reuse:
    written: int = 0            # bytes written (known offsets)
    unique_written: int = 0     # bytes of the union of the written ranges
    read_before_write: int = 0  # bytes read in written ranges, before the last write
    unknown: int = 0            # requests whose offset is unknown (-1)

    @property
    def rewritten(self) -> int:
        return self.written - self.unique_written

    @property
    def rewrite_fraction(self) -> float:
        """Rewritten bytes as a share of the file's distinct written bytes."""
        return self.rewritten / self.unique_written if self.unique_written else 0.0

    @property
    def rmw_fraction(self) -> float:
        """Bytes read before being written, as a share of the distinct written bytes."""
        return self.read_before_write / self.unique_written if self.unique_written else 0.0


def merge(offsets: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of [offset, offset + length) ranges as sorted, disjoint
    (starts, ends)."""
    keep = lengths > 0
    o, e = offsets[keep].astype(np.int64), (offsets[keep] + lengths[keep]).astype(np.int64)
    if not len(o):
        return o, e
    order = np.argsort(o, kind="stable")
    o, e = o[order], e[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, o[1:] > reach[:-1]]      # a gap before this range
    group = np.cumsum(new) - 1
    starts = o[new]
    ends = np.zeros(len(starts), np.int64)
    np.maximum.at(ends, group, e)
    return starts, ends


def covered_below(x: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Bytes of the union (starts, ends) below each position in x."""
    before = np.r_[0, np.cumsum(ends - starts)]
    i = np.searchsorted(starts, x, side="right") - 1
    inside = np.where(i >= 0, np.minimum(x, ends[np.maximum(i, 0)]) - starts[np.maximum(i, 0)], 0)
    return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)


def overlap(offsets, lengths, starts, ends) -> np.ndarray:
    """Bytes of each [offset, offset + length) inside the union (starts, ends)."""
    if not len(starts) or not len(offsets):
        return np.zeros(len(offsets), np.int64)
    return covered_below(offsets + lengths, starts, ends) - covered_below(offsets, starts,
                                                                          ends)


def measure(writes: np.ndarray, reads: np.ndarray) -> Reuse:
    """Rewrites and read-before-write of one file's requests at one layer
    (structured arrays with offset, length, t_start, t_end)."""
    known_w, known_r = writes[writes["offset"] >= 0], reads[reads["offset"] >= 0]
    out = Reuse(unknown=int((writes["offset"] < 0).sum() + (reads["offset"] < 0).sum()))
    out.written = int(known_w["length"].sum())
    starts, ends = merge(known_w["offset"], known_w["length"])
    out.unique_written = int((ends - starts).sum())
    if len(known_w) and len(known_r):
        last_write = float(known_w["t_start"].max())
        early = known_r[known_r["t_end"] <= last_write]
        out.read_before_write = int(overlap(early["offset"].astype(np.int64),
                                            early["length"].astype(np.int64),
                                            starts, ends).sum())
    return out
