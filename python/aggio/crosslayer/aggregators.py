"""The collective-buffering aggregators of a file: the ranks that did its
POSIX I/O under collective MPI-IO, per node, with their buffer size, bytes,
seconds and rounds; from operations, per-rank records or a summary record."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import POSIX, WRITE, Job
from .common import collective, file_ops, mpiio_callers, posix_missing

# A rank whose POSIX bytes are below this fraction of the busiest rank's is
# not counted as an aggregator (a stray small write is not aggregation).
MIN_SHARE_OF_BUSIEST = 0.01
# A summary record's fastest/slowest rank holding this much of the file's
# POSIX bytes did (almost) all of them.
SINGLE_RANK_SHARE = 0.99


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
    collective MPI-IO or the log cannot tell who did its POSIX I/O (among
    them: POSIX records missing, common.posix_missing)."""
    f = job.files[index]
    posix = f.layers.get(POSIX)
    if not collective(f) or posix is None or not posix.bytes or posix_missing(job, index):
        return None
    callers = mpiio_callers(job, index)
    if job.ops_complete(POSIX) and len(file_ops(job, index, POSIX)):
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
