"""Per-operation analyses the report shows: I/O phases, per-rank time and the
slowest operations.  All vectorised over the OPS array.

Bytes are counted once, at the layer the program called for each file
(MPI-IO when the file has MPI-IO operations, else STDIO, else POSIX): the
POSIX writes of collective buffering carry the same bytes again.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import MPIIO, POSIX, STDIO, READ, WRITE, Job


@dataclass
class Phase:
    start: float
    end: float
    ops: int
    bytes: int                 # at the layer the program called (counted once)
    ranks: int
    slowest_rank: int
    slowest_rank_end: float    # when the last rank finished, relative to phase start
    median_rank_end: float


def data_ops(ops: np.ndarray) -> np.ndarray:
    return ops[(ops["kind"] == READ) | (ops["kind"] == WRITE)]


def program_layer(ops: np.ndarray, nfiles: int) -> np.ndarray:
    """Per file index: the top layer its operations show."""
    top = np.zeros(max(nfiles, int(ops["file"].max()) + 1 if len(ops) else 0), np.uint8)
    for layer in (POSIX, STDIO, MPIIO):          # later wins: MPI-IO on top
        files = np.unique(ops["file"][ops["layer"] == layer])
        top[files] = layer
    return top


def counted_once(ops: np.ndarray, nfiles: int) -> np.ndarray:
    """Mask of the data operations whose bytes count: those at their file's
    program layer."""
    top = program_layer(ops, nfiles)
    return ops["layer"] == top[ops["file"]] if len(ops) else np.zeros(0, bool)


def phases(job: Job, gap_fraction: float, limit: int = 50) -> list[Phase]:
    """Groups of data operations separated by idle gaps longer than
    gap_fraction of the run (all ranks, all layers)."""
    d = data_ops(job.ops)
    if not len(d):
        return []
    once = counted_once(d, len(job.files))
    order = np.argsort(d["t_start"], kind="stable")
    d, once = d[order], once[order]
    reach = np.maximum.accumulate(d["t_end"])
    span = max(float(reach[-1] - d["t_start"][0]), 1e-9)
    cut = np.flatnonzero(d["t_start"][1:] - reach[:-1] > gap_fraction * span) + 1
    bounds = np.concatenate(([0], cut, [len(d)]))
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        out.append(_phase(d[a:b], once[a:b]))
        if len(out) >= limit:
            break
    return out


def _phase(p: np.ndarray, once: np.ndarray) -> Phase:
    start = float(p["t_start"].min())
    n = int(p["rank"].max()) + 1
    last = np.full(n, -np.inf)
    np.maximum.at(last, p["rank"], p["t_end"])
    present = np.isfinite(last)
    ends = last[present] - start
    ranks = np.flatnonzero(present)
    worst = int(np.argmax(ends))
    return Phase(start, float(p["t_end"].max()), len(p), int(p["length"][once].sum()),
                 int(present.sum()), int(ranks[worst]), float(ends[worst]),
                 float(np.median(ends)))


def slowest_ops(job: Job, n: int = 10) -> np.ndarray:
    d = data_ops(job.ops)
    if not len(d):
        return d
    dur = d["t_end"] - d["t_start"]
    k = min(n, len(d))
    idx = np.argpartition(-dur, k - 1)[:k]
    return d[idx[np.argsort(-dur[idx])]]
