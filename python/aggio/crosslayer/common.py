"""Shared by the cross-layer analyses: a file's operations at one layer,
who called MPI-IO on it, and which operation of one layer was running when
an operation of another layer ran (containing())."""
from __future__ import annotations

import numpy as np

from ..model import MPIIO, POSIX, READ, WRITE, Job

# Under collective MPI-IO the aggregators' POSIX calls carry every byte the
# ranks passed to MPI-IO (and more with read-modify-write).  A file whose
# POSIX bytes fall below this fraction of its MPI-IO bytes lacks the POSIX
# records of the ranks that did the rest: it cannot say who aggregated.
MIN_POSIX_COVERAGE = 0.5

def _data(ops: np.ndarray) -> np.ndarray:
    return (ops["kind"] == READ) | (ops["kind"] == WRITE)


def file_ops(job: Job, index: int, layer: int) -> np.ndarray:
    """Data operations of one file at one layer."""
    ops = job.ops
    return ops[(ops["file"] == index) & (ops["layer"] == layer) & _data(ops)]


def mpiio_callers(job: Job, index: int) -> int:
    """How many ranks called MPI-IO on the file (0 if none)."""
    f = job.files[index]
    api = f.layers.get(MPIIO)
    if api is None:
        return 0
    if job.has_ops:
        ranks = np.unique(file_ops(job, index, MPIIO)["rank"])
        if len(ranks):
            return len(ranks)
    if api.per_rank:
        return len(api.rank_bytes)
    return f.nranks or job.nprocs


def posix_missing(job: Job, index: int) -> str:
    """Why the log cannot say which ranks did the file's POSIX I/O ('' when
    it can): the POSIX module is partial (a rank hit Darshan's record limit,
    so its records are missing), or the POSIX records hold far fewer bytes
    than MPI-IO moved."""
    if "POSIX" in job.partial:
        return ("the log marks the POSIX module partial (a rank hit Darshan's record "
                "limit): some ranks' POSIX records are missing")
    f = job.files[index]
    api, posix = f.layers.get(MPIIO), f.layers.get(POSIX)
    if api is not None and api.bytes and (posix is None or
                                          posix.bytes < MIN_POSIX_COVERAGE * api.bytes):
        seen = posix.bytes if posix is not None else 0
        return (f"its POSIX records hold {seen} of the {api.bytes} bytes MPI-IO moved: the "
                "POSIX records of the ranks that did the rest are missing")
    return ""


def collective(f) -> bool:
    api = f.layers.get(MPIIO)
    return api is not None and (api.coll_reads + api.coll_writes) > 0


def containing(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """For each op of `inner`, the index in `outer` of the op of the same rank
    running at its midpoint (-1 when none).  Vectorised: one sort of `outer`
    by (rank, start) and one binary search."""
    result = np.full(len(inner), -1, np.int64)
    if not len(outer) or not len(inner):
        return result
    t0 = min(float(outer["t_start"].min()), float(inner["t_start"].min()))
    span = max(float(outer["t_end"].max()), float(inner["t_end"].max())) - t0 + 1.0
    okey = outer["rank"].astype(np.float64) * span + (outer["t_start"] - t0)
    order = np.argsort(okey, kind="stable")
    mid = (inner["t_start"] + inner["t_end"]) / 2 - t0
    ikey = inner["rank"].astype(np.float64) * span + mid
    pos = np.searchsorted(okey[order], ikey, side="right") - 1
    ok = pos >= 0
    cand = order[np.where(ok, pos, 0)]
    ok &= (outer["rank"][cand] == inner["rank"]) & (outer["t_end"][cand] - t0 >= mid)
    result[ok] = cand[ok]
    return result
