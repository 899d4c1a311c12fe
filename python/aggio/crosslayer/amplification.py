"""What the MPI-IO library's read-modify-write costs, by time, calls and
bytes rather than by the bytes it read alone: a read of a hole past the end
of the file returns 0 bytes yet costs a call and its wait, so on a file that
is being created the reads can dominate the aggregators' time while moving
nothing.  Three figures, from the best evidence the log has:

* rmw_cost(): the library's reads beneath a file's MPI-IO writes, their
  count, bytes, seconds and share of the POSIX time on the file;
* write_amplification(): POSIX bytes written against MPI-IO bytes written
  (two-phase and data sieving write the holes they read back);
* rmw_calls(): per collective write call (per-operation data only), the
  POSIX reads it caused against the bytes it carried.

Times of a summary record are sums over ranks; the busiest rank's share is
estimated from its own time (its slowest-rank field) and the file's read
share, and the result says so.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import MPIIO, POSIX, READ, WRITE, Job
from .calls import _collective_parts
from .common import containing, file_ops
from .reads import posix_reads


@dataclass
class RmwCost:
    """The library's reads beneath a file's MPI-IO writes."""
    path: str
    file: int
    reads: int
    read_bytes: int
    read_seconds: float          # summed over the ranks that made them
    posix_seconds: float         # POSIX data seconds of those ranks on the file
    busiest_seconds: float       # the rank that spent the most in them
    ranks: int                   # ranks that made them (0: unknown)
    zero_reads: int = -1         # of them returning 0 bytes (-1: unknown)
    small_reads: int = -1        # of them under 100 bytes (Darshan's first size bin)
    source: str = ""

    @property
    def share(self) -> float:
        return self.read_seconds / self.posix_seconds if self.posix_seconds > 0 else 0.0


def rmw_cost(job: Job, index: int) -> RmwCost | None:
    """None when the file's POSIX reads are not the library's."""
    pr = posix_reads(job, index)
    if pr is None or not pr.read_modify_write:
        return None
    if pr.inside_writes >= 0:
        return _cost_from_ops(job, index)
    return _cost_from_counters(job.files[index], index)


def _cost_from_ops(job, index):
    f = job.files[index]
    a, p = file_ops(job, index, MPIIO), file_ops(job, index, POSIX)
    reads = p[p["kind"] == READ]
    reads = reads[containing(a[a["kind"] == WRITE], reads) >= 0]
    dur = reads["t_end"] - reads["t_start"]
    ranks, inv = np.unique(reads["rank"], return_inverse=True)
    per_rank = np.bincount(inv, weights=dur) if len(reads) else np.zeros(0)
    mine = np.isin(p["rank"], ranks)
    return RmwCost(f.path, index, len(reads), int(reads["length"].sum()), float(dur.sum()),
                   float((p["t_end"] - p["t_start"])[mine].sum()),
                   float(per_rank.max()) if len(per_rank) else 0.0, len(ranks),
                   zero_reads=int((reads["length"] == 0).sum()),
                   small_reads=int((reads["length"] < 100).sum()),
                   source="per-operation data: POSIX reads inside MPI-IO writes")


def _cost_from_counters(f, index):
    st = f.layers[POSIX]
    data = st.read_time + st.write_time
    share = st.read_time / data if data > 0 else 0.0
    busiest, ranks, source = _busiest(st)
    return RmwCost(f.path, index, st.reads, st.bytes_read, st.read_time, data,
                   share * busiest, ranks, small_reads=int(st.hist_read[0]),
                   source="counters: every POSIX read of a file the program only wrote "
                          "through MPI-IO; the busiest rank's part estimated as the "
                          f"file's read share of {source}")


def _busiest(st) -> tuple[float, int, str]:
    """(seconds, ranks with POSIX data calls (0: unknown), what the seconds
    are) for the rank with the most POSIX data time on a file."""
    if st.per_rank and st.rank_time:
        ranks = sum(1 for r, n in st.rank_ops.items() if n > 0) or len(st.rank_time)
        return float(max(st.rank_time.values())), ranks, "the busiest rank's time"
    if st.slowest:
        return float(st.slowest[2]), 0, "the slowest rank's time (summary record)"
    return st.read_time + st.write_time, 0, "the summed time (no per-rank figure)"


@dataclass
class WriteAmplification:
    """POSIX bytes written against the MPI-IO bytes the program wrote."""
    path: str
    file: int
    mpiio_bytes: int
    posix_bytes: int
    busiest_write_seconds: float
    source: str

    @property
    def ratio(self) -> float:
        return self.posix_bytes / self.mpiio_bytes if self.mpiio_bytes else 0.0

    @property
    def extra(self) -> int:
        return max(self.posix_bytes - self.mpiio_bytes, 0)

    @property
    def cost_seconds(self) -> float:
        """The busiest writer's time spent on the extra bytes, at its own pace."""
        return self.busiest_write_seconds * self.extra / self.posix_bytes \
            if self.posix_bytes else 0.0


def write_amplification(job: Job, index: int) -> WriteAmplification | None:
    f = job.files[index]
    api, posix = f.layers.get(MPIIO), f.layers.get(POSIX)
    if api is None or posix is None or not api.bytes_written or not posix.bytes_written:
        return None
    p = file_ops(job, index, POSIX) if job.has_ops else None
    if p is not None and len(p):
        w = p[p["kind"] == WRITE]
        _, inv = np.unique(w["rank"], return_inverse=True)
        seconds = float(np.bincount(inv, weights=w["t_end"] - w["t_start"]).max()) \
            if len(w) else 0.0
        source = "per-operation data: the busiest writer's POSIX write time"
    else:
        busiest, _, what = _busiest(posix)
        data = posix.read_time + posix.write_time
        seconds = busiest * (posix.write_time / data if data > 0 else 1.0)
        source = f"counters: the file's write share of {what}"
    return WriteAmplification(f.path, index, api.bytes_written, posix.bytes_written,
                              seconds, source)


@dataclass
class CallReads:
    """One collective write call and the POSIX reads it caused."""
    number: int
    start: float
    end: float
    bytes: int                   # what the ranks wrote through MPI-IO in it
    reads: int
    read_bytes: int
    read_seconds: float
    written: int                 # what the aggregators wrote through POSIX in it
    first: int                   # the byte range the aggregators touched
    last: int
    aggregators: int

    @property
    def seconds(self) -> float:
        return self.end - self.start


def rmw_calls(job: Job, index: int) -> list[CallReads]:
    """Collective write calls of a file that caused POSIX reads, longest
    first (per-operation data only; [] without it).  Vectorised: one pass
    over the file's operations."""
    if not job.has_ops:
        return []
    api, k, posix, pk = _collective_parts(job, index)
    if not len(api) or not len(posix):
        return []
    n = int(k.max()) + 1
    start, end = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(start, k, api["t_start"])
    np.maximum.at(end, k, api["t_end"])
    writes = np.bincount(k, weights=(api["kind"] == WRITE).astype(np.float64), minlength=n)
    nbytes = np.bincount(k, weights=api["length"].astype(np.float64), minlength=n)
    own = pk >= 0
    p, c = posix[own], pk[own]
    rd = p["kind"] == READ
    sums = {name: np.bincount(c, weights=w, minlength=n) for name, w in (
        ("reads", rd.astype(np.float64)),
        ("read_bytes", np.where(rd, p["length"], 0).astype(np.float64)),
        ("read_seconds", np.where(rd, p["t_end"] - p["t_start"], 0.0)),
        ("written", np.where(~rd, p["length"], 0).astype(np.float64)))}
    first, last = np.full(n, np.iinfo(np.int64).max), np.full(n, -1)
    np.minimum.at(first, c, p["offset"])
    np.maximum.at(last, c, p["offset"] + p["length"])
    span = int(p["rank"].max()) + 1
    pairs = np.unique(c.astype(np.int64) * span + p["rank"])     # (call, rank) once each
    aggregators = np.bincount(pairs // span, minlength=n)
    out = []
    for i in np.flatnonzero((sums["reads"] > 0) & (writes > 0)):
        out.append(CallReads(int(i), float(start[i]), float(end[i]), int(nbytes[i]),
                             int(sums["reads"][i]), int(sums["read_bytes"][i]),
                             float(sums["read_seconds"][i]), int(sums["written"][i]),
                             int(first[i]), int(last[i]), int(aggregators[i])))
    out.sort(key=lambda x: x.seconds, reverse=True)
    return out
