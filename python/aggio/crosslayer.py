"""Cross-layer analysis: what a file's MPI-IO calls caused at the POSIX layer.

Under collective buffering (ROMIO's two-phase I/O, aggio's two_phase) the
ranks that call MPI-IO are not the ranks that call POSIX: a few aggregators
gather the data and write it in rounds of cb_buffer_size bytes, and may read
first to fill holes (read-modify-write).  This module recovers that from the
evidence a log has, best first:

* per-operation data (aggio traces; Darshan DXT): each POSIX call is
  attributed to the MPI-IO call of the same rank that was running when it
  ran; collective calls are matched across ranks by their order (the k-th
  collective call of every rank on a file is the same call);
* per-rank counter records (Darshan without DXT, unreduced files);
* a summary record (Darshan's rank -1 record of a shared file, which sums
  every rank): only what the fastest/slowest rank fields allow.  Its times
  are sums over ranks, so they are divided by the rank count before they are
  compared with anything per rank.

Nothing here decides what is a problem: findings/layers.py does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import F_COLLECTIVE, MPIIO, POSIX, READ, WRITE, Job

# A rank whose POSIX bytes are below this fraction of the busiest rank's is
# not counted as an aggregator (a stray small write is not aggregation).
MIN_SHARE_OF_BUSIEST = 0.01
# A summary record's fastest/slowest rank holding this much of the file's
# POSIX bytes did (almost) all of them.
SINGLE_RANK_SHARE = 0.99


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


def collective(f) -> bool:
    api = f.layers.get(MPIIO)
    return api is not None and (api.coll_reads + api.coll_writes) > 0


# ------------------------------------------------------------- aggregators

@dataclass
class Aggregators:
    """The ranks that did a collectively accessed file's POSIX I/O."""
    path: str
    file: int
    ranks: list                  # aggregator ranks, ascending
    callers: int                 # ranks calling MPI-IO on the file
    source: str                  # where the evidence comes from
    share: float = 1.0           # their part of the file's POSIX bytes
    bytes: dict = field(default_factory=dict)     # rank -> POSIX bytes
    seconds: dict = field(default_factory=dict)   # rank -> seconds in POSIX data calls
    calls: dict = field(default_factory=dict)     # rank -> POSIX data calls (rounds)
    per_node: dict | None = None  # node name -> aggregators there (known placement)
    placement: str = ""          # placement in words (known or inferred)
    buffer_size: int = 0         # bytes per aggregator write (cb_buffer_size seen)
    buffer_source: str = ""


def aggregators(job: Job, index: int) -> Aggregators | None:
    """The aggregators of file `index`, or None when the file has no
    collective MPI-IO or the log cannot tell who did its POSIX I/O."""
    f = job.files[index]
    posix = f.layers.get(POSIX)
    if not collective(f) or posix is None or not posix.bytes:
        return None
    callers = mpiio_callers(job, index)
    if job.has_ops and len(file_ops(job, index, POSIX)):
        agg = _from_ops(job, index, callers)
    elif posix.per_rank:
        agg = _from_rank_records(f, index, callers)
    else:
        agg = _from_summary(f, index, callers)
    if agg is None:
        return None
    agg.per_node, agg.placement = _placement(job, agg.ranks, callers)
    agg.buffer_size, agg.buffer_source = _buffer_size(job, index, agg)
    return agg


def _busy_ranks(nbytes: dict) -> list:
    if not nbytes:
        return []
    top = max(nbytes.values())
    return sorted(r for r, b in nbytes.items() if b > 0 and b >= MIN_SHARE_OF_BUSIEST * top)


def _from_ops(job, index, callers):
    f = job.files[index]
    p = file_ops(job, index, POSIX)
    ranks, inv = np.unique(p["rank"], return_inverse=True)
    nbytes_a = np.bincount(inv, weights=p["length"].astype(np.float64))
    seconds = np.bincount(inv, weights=p["t_end"] - p["t_start"])
    calls = np.bincount(inv)
    nbytes = {int(r): int(b) for r, b in zip(ranks, nbytes_a)}
    chosen = _busy_ranks(nbytes)
    if job.kind == "aggio-trace" and f.aggregators:
        chosen = sorted(set(chosen) | (set(f.aggregators) & set(nbytes)))
    total = sum(nbytes.values())
    agg = Aggregators(f.path, index, chosen, callers,
                      "aggio trace" if job.kind == "aggio-trace" else "Darshan DXT",
                      share=sum(nbytes[r] for r in chosen) / total if total else 0.0)
    at = {int(r): i for i, r in enumerate(ranks)}
    for r in chosen:
        agg.bytes[r] = nbytes[r]
        agg.seconds[r] = float(seconds[at[r]])
        agg.calls[r] = int(calls[at[r]])
    return agg


def _from_rank_records(f, index, callers):
    posix = f.layers[POSIX]
    chosen = _busy_ranks(posix.rank_bytes)
    total = sum(posix.rank_bytes.values())
    agg = Aggregators(f.path, index, chosen, callers, "Darshan per-rank records",
                      share=sum(posix.rank_bytes[r] for r in chosen) / total if total else 0.0)
    for r in chosen:
        agg.bytes[r] = posix.rank_bytes[r]
        agg.seconds[r] = posix.rank_time.get(r, 0.0)
        agg.calls[r] = posix.rank_ops.get(r, 0)
    return agg


def _from_summary(f, index, callers):
    """A summary record names only its fastest and slowest rank; when one of
    them holds (nearly) all the POSIX bytes, that rank was the only writer."""
    posix = f.layers[POSIX]
    for who in (posix.slowest, posix.fastest):
        if who and posix.bytes and who[1] >= SINGLE_RANK_SHARE * posix.bytes:
            rank = int(who[0])
            agg = Aggregators(f.path, index, [rank], callers,
                              "Darshan summary record (rank -1): its slowest/fastest "
                              "rank fields", share=who[1] / posix.bytes)
            agg.bytes[rank], agg.seconds[rank] = int(who[1]), float(who[2])
            return agg
    return None


def _placement(job, ranks, callers):
    """Aggregators per node: known for aggio traces (rank table), inferred
    from rank spacing for Darshan logs (which do not record hosts)."""
    if job.rank_node:
        per = {}
        for r in ranks:
            node = job.rank_node.get(r)
            name = job.node_names[node] if node is not None and node < len(job.node_names) \
                else f"node {node}"
            per[name] = per.get(name, 0) + 1
        nodes = len(set(job.rank_node.values()))
        counts = sorted(set(per.values()))
        text = (f"{counts[0]} per node on {len(per)} of {nodes} nodes" if len(counts) == 1
                else f"{min(counts)} to {max(counts)} per node on {len(per)} of {nodes} nodes")
        return per, text
    if len(ranks) >= 2 and callers > len(ranks):
        steps = set(np.diff(ranks).tolist())
        if len(steps) == 1:
            step = steps.pop()
            if callers % step == 0 and callers // step == len(ranks):
                return None, (f"every {step}th rank (inferred: one per node if the job "
                              f"ran {step} ranks per node, ROMIO's default cb_config_list=*:1)")
            return None, f"every {step}th rank"
    return None, ""


def _buffer_size(job, index, agg):
    """The size aggregators write most often: cb_buffer_size when their file
    domains are larger than one buffer."""
    hint = job.hints.get("cb_buffer_size") if job.kind == "aggio-trace" else None
    if job.has_ops:
        p = file_ops(job, index, POSIX)
        w = p[(p["kind"] == WRITE) & np.isin(p["rank"], agg.ranks)]
        if len(w):
            sizes, counts = np.unique(w["length"], return_counts=True)
            size = int(sizes[np.argmax(counts)])
            source = "most common aggregator write"
            if hint:
                source += f" (hint cb_buffer_size={hint})"
            return size, source
    common = job.files[index].layers[POSIX].common_size()
    if common:
        return common, "most common POSIX request size (Darshan ACCESS counters)"
    return 0, ""


# ----------------------------------------------------- MPI-IO beyond POSIX

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
    if api is None or posix is None or not api.ops:
        return None
    coll = collective(f)
    if job.has_ops and len(file_ops(job, index, MPIIO)) and len(file_ops(job, index, POSIX)):
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


# ------------------------------------------- read-modify-write, data sieving

@dataclass
class PosixReads:
    """What a file's POSIX reads were for."""
    path: str
    file: int
    posix_reads: int
    posix_read_bytes: int
    mpiio_reads: int
    mpiio_read_bytes: int
    mpiio_writes: int
    collective_writes: int
    inside_writes: int = -1      # POSIX reads made inside MPI-IO write calls (-1: unknown)
    inside_write_bytes: int = -1
    rewritten: int = -1          # of those, reads the same rank wrote back over

    @property
    def read_modify_write(self) -> bool:
        """The application read nothing through MPI-IO, yet POSIX reads
        happened beneath its writes: they are the library's."""
        if self.mpiio_writes == 0 or self.posix_reads == 0:
            return False
        if self.inside_writes >= 0:
            return self.inside_writes > 0
        return self.mpiio_reads == 0

    @property
    def rmw_bytes(self) -> int:
        return self.inside_write_bytes if self.inside_write_bytes >= 0 else self.posix_read_bytes


def posix_reads(job: Job, index: int) -> PosixReads | None:
    f = job.files[index]
    api, posix = f.layers.get(MPIIO), f.layers.get(POSIX)
    if api is None or posix is None or not posix.reads:
        return None
    out = PosixReads(f.path, index, posix.reads, posix.bytes_read, api.reads, api.bytes_read,
                     api.writes, api.coll_writes)
    if job.has_ops:
        a, p = file_ops(job, index, MPIIO), file_ops(job, index, POSIX)
        if len(a) and len(p):
            reads = p[p["kind"] == READ]
            inside = containing(a[a["kind"] == WRITE], reads) >= 0
            out.inside_writes = int(inside.sum())
            out.inside_write_bytes = int(reads["length"][inside].sum())
            out.rewritten = _rewritten(p, reads[inside])
    return out


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


def _rewritten(posix, reads) -> int:
    """Reads that a later write of the same rank covered (read, patch, write)."""
    writes = posix[posix["kind"] == WRITE]
    if not len(reads) or not len(writes):
        return 0
    count = 0
    for r in np.unique(reads["rank"]):
        w = writes[writes["rank"] == r]
        rd = reads[reads["rank"] == r]
        order = np.argsort(w["t_start"], kind="stable")
        w = w[order]
        nxt = np.searchsorted(w["t_start"], rd["t_end"], side="left")
        ok = nxt < len(w)
        idx = np.where(ok, nxt, 0)
        cover = ok & (w["offset"][idx] <= rd["offset"]) & \
            (w["offset"][idx] + w["length"][idx] >= rd["offset"] + rd["length"])
        count += int(cover.sum())
    return count


# --------------------------------------------------- collective calls

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
