"""Time in MPI-IO data calls beyond the POSIX time beneath them, per rank
(a summary record's time divided by the ranks)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import MPIIO, POSIX, Job
from .common import collective, file_ops, mpiio_callers, posix_missing

@dataclass
class Overhead:
    """Time in MPI-IO data calls beyond the POSIX time beneath them.

    Under collective I/O every rank waits for the aggregators, so a rank's
    MPI-IO time is compared with the busiest POSIX rank's time; under
    independent I/O each rank does its own POSIX calls and is compared with
    them."""
    path: str
    file: int
    mpiio_seconds: dict          # rank -> seconds in MPI-IO data calls
    posix_seconds: dict          # rank -> seconds in POSIX data calls
    collective: bool
    source: str
    from_summary: bool = False   # MPI-IO per rank is a summary record's mean

    @property
    def median_mpiio(self) -> float:
        return float(np.median(list(self.mpiio_seconds.values())))

    @property
    def busiest_rank(self) -> int:
        return int(max(self.posix_seconds, key=self.posix_seconds.get))

    @property
    def busiest_posix(self) -> float:
        return float(self.posix_seconds[self.busiest_rank])

    def per_rank_beyond(self) -> dict:
        if self.collective or self.from_summary:
            return {r: t - self.busiest_posix for r, t in self.mpiio_seconds.items()}
        return {r: t - self.posix_seconds.get(r, 0.0) for r, t in self.mpiio_seconds.items()}

    @property
    def beyond(self) -> float:
        """Median over ranks of the time beyond POSIX."""
        return float(np.median(list(self.per_rank_beyond().values())))


def mpiio_overhead(job: Job, index: int) -> Overhead | None:
    f = job.files[index]
    api, posix = f.layers.get(MPIIO), f.layers.get(POSIX)
    if api is None or posix is None or not api.ops or posix_missing(job, index):
        return None     # never measured against POSIX records that are missing
    coll = collective(f)
    if job.ops_complete(MPIIO) and job.ops_complete(POSIX) and \
            len(file_ops(job, index, MPIIO)) and len(file_ops(job, index, POSIX)):
        m, p = _rank_seconds(file_ops(job, index, MPIIO)), _rank_seconds(file_ops(job, index, POSIX))
        source, summary = "per-operation data", False
    elif api.per_rank and posix.per_rank:
        m, p = dict(api.rank_time), dict(posix.rank_time)
        source, summary = "per-rank records", False
    else:
        n = mpiio_callers(job, index) or 1
        m = {-1: (api.read_time + api.write_time) / n}
        p = _posix_from_summary(posix)
        source, summary = f"summary records (MPI-IO time / {n} ranks)", True
    if not m or not p:
        return None
    return Overhead(f.path, index, m, p, coll, source, summary)


def _rank_seconds(ops) -> dict:
    dur = ops["t_end"] - ops["t_start"]
    ranks, inv = np.unique(ops["rank"], return_inverse=True)
    sums = np.bincount(inv, weights=dur)
    return {int(r): float(s) for r, s in zip(ranks, sums)}


def _posix_from_summary(posix) -> dict:
    if posix.per_rank:
        return dict(posix.rank_time)
    if posix.slowest:   # the slowest rank's own time (includes its metadata time)
        return {int(posix.slowest[0]): float(posix.slowest[2])}
    return {}
