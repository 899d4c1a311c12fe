"""Collective MPI-IO calls matched across ranks (the k-th collective call of
every rank on a file is the same call) and the POSIX calls each caused."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import F_COLLECTIVE, MPIIO, POSIX, READ, WRITE, Job
from .common import containing, file_ops

@dataclass
class CollectiveCall:
    """One collective MPI-IO call on a file, and the POSIX calls it caused."""
    file: int
    number: int                  # 0-based order among the file's collective calls
    kind: int                    # READ or WRITE
    start: float
    end: float
    senders: dict = field(default_factory=dict)    # rank -> (bytes, start, end)
    writers: dict = field(default_factory=dict)    # rank -> dict(bytes, calls, seconds, first, last, reads)

    @property
    def seconds(self) -> float:
        return self.end - self.start

    @property
    def bytes(self) -> int:
        return int(sum(b for b, _, _ in self.senders.values()))


def collective_ordinals(api: np.ndarray) -> np.ndarray:
    """The k of each collective op: its order among its rank's collective ops."""
    order = np.lexsort((api["t_start"], api["rank"]))
    ranks = api["rank"][order]
    first = np.r_[0, np.flatnonzero(np.diff(ranks)) + 1]
    starts = np.repeat(first, np.diff(np.r_[first, len(ranks)]))
    k = np.empty(len(api), np.int64)
    k[order] = np.arange(len(api)) - starts
    return k


def _collective_parts(job: Job, index: int):
    """(collective MPI-IO ops, their ordinals, POSIX ops, ordinal each POSIX op
    belongs to (-1: none))."""
    api = file_ops(job, index, MPIIO)
    api = api[(api["flags"] & F_COLLECTIVE) != 0]
    posix = file_ops(job, index, POSIX)
    if not len(api):
        return api, np.zeros(0, np.int64), posix, np.full(len(posix), -1, np.int64)
    k = collective_ordinals(api)
    owner = containing(api, posix)
    return api, k, posix, np.where(owner >= 0, k[np.maximum(owner, 0)], -1)


@dataclass
class CallTable:
    """Every collective call of a file, one entry per call (arrays)."""
    start: np.ndarray
    end: np.ndarray
    bytes: np.ndarray
    calls_with_posix: int

    def __len__(self) -> int:
        return len(self.start)

    @property
    def seconds(self) -> np.ndarray:
        return self.end - self.start

    def slowest(self) -> int:
        return int(np.argmax(self.seconds)) if len(self) else -1


def call_table(job: Job, index: int) -> CallTable:
    """Start, end and bytes of each collective call (vectorised: one pass)."""
    api, k, _, pk = _collective_parts(job, index)
    n = int(k.max()) + 1 if len(k) else 0
    start, end = np.full(n, np.inf), np.full(n, -np.inf)
    np.minimum.at(start, k, api["t_start"])
    np.maximum.at(end, k, api["t_end"])
    nbytes = np.bincount(k, weights=api["length"].astype(np.float64), minlength=n)
    return CallTable(start, end, nbytes.astype(np.int64), len(np.unique(pk[pk >= 0])))


def collective_call(job: Job, index: int, number: int) -> CollectiveCall:
    """Collective call `number` of a file with what it caused at POSIX."""
    api, posix = call_ops(job, index, number)
    return make_call(index, number, api, posix)


def collective_calls(job: Job, index: int) -> list[CollectiveCall]:
    """Every collective call in detail (one pass per call: for small inputs;
    call_table() summarises any number of calls)."""
    return [collective_call(job, index, n) for n in range(len(call_table(job, index)))]


def call_ops(job: Job, index: int, number: int) -> tuple[np.ndarray, np.ndarray]:
    """The MPI-IO operations of collective call `number` of a file, and the
    POSIX operations they caused."""
    api, k, posix, pk = _collective_parts(job, index)
    return api[k == number], posix[pk == number]


def make_call(index, n, part, posix) -> CollectiveCall:
    call = CollectiveCall(index, n, int(np.bincount(part["kind"]).argmax()),
                          float(part["t_start"].min()), float(part["t_end"].max()))
    for r, b, t0, t1 in zip(part["rank"].tolist(), part["length"].tolist(),
                            part["t_start"].tolist(), part["t_end"].tolist()):
        call.senders[r] = (b, t0, t1)
    if len(posix):
        _add_writers(call, posix)
    return call


def _add_writers(call, p):
    for r in np.unique(p["rank"]):
        q = p[p["rank"] == r]
        call.writers[int(r)] = {
            "bytes": int(q["length"][q["kind"] == WRITE].sum()),
            "read_bytes": int(q["length"][q["kind"] == READ].sum()),
            "calls": len(q), "seconds": float((q["t_end"] - q["t_start"]).sum()),
            "first": int(q["offset"].min()), "last": int((q["offset"] + q["length"]).max()),
            "end": float(q["t_end"].max())}


def last_finishers(job: Job, index: int) -> tuple[dict, int]:
    """({aggregator rank: calls in which its POSIX I/O ended last}, calls with
    at least two aggregators), over all collective calls (vectorised)."""
    _, _, posix, pk = _collective_parts(job, index)
    p, k = posix[pk >= 0], pk[pk >= 0]
    if not len(p):
        return {}, 0
    order = np.lexsort((p["t_end"], k))
    p, k = p[order], k[order]
    last = np.r_[k[1:] != k[:-1], True]                 # the last op of each call
    writers = np.unique(np.stack([k, p["rank"]]), axis=1)
    per_call = np.bincount(writers[0])
    several = per_call[k[last]] >= 2
    ranks, counts = np.unique(p["rank"][last][several], return_counts=True)
    return {int(r): int(c) for r, c in zip(ranks, counts)}, int(several.sum())
