"""The access pattern of a log, in aggio-bench's terms (docs/bench.md).

From the per-operation data of one file (by default the one with the most
bytes written, else read; Darshan DXT or an aggio trace) at
the layer the program called, this finds which of aggio-bench's layouts
reproduces the requests, and with which parameters:

* strided (IO-500 ior-hard): records of t bytes dealt round-robin over the
  ranks, record j of rank r at (j * n + r) * t;
* segmented (IOR): rank r's block of b bytes at (s * n + r) * b, moved in
  transfers of t bytes.

It says how many of the requests the chosen layout reproduces exactly (fit),
and what it cannot see: a file view hides the layout of collective calls
(the offsets in the log are then view-relative), and compute time, other
files, the node count and the file system are not part of a pattern.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .model import LAYER_NAMES, MPIIO, POSIX, READ, SYNC, WRITE, F_COLLECTIVE, Job

GOOD_FIT = 0.9


class PatternError(ValueError):
    """The log has nothing a replay can be built from."""


@dataclass
class Pattern:
    path: str                 # the file replayed
    layer: int                # MPIIO or POSIX: the layer the program called
    write: bool
    read: bool
    collective: bool
    ranks: int                # ranks that accessed the file in the log
    layout: str               # "strided" or "segmented"
    transfer: int             # -t
    block: int                # -b: bytes per rank per segment
    segments: int             # -s
    fsync: bool
    fit: float                # fraction of requests the layout reproduces
    bytes: int                # bytes per direction in the log (largest)
    requests: int             # requests per direction in the log (largest)
    notes: list = field(default_factory=list)

    @property
    def bytes_per_rank(self) -> int:
        return self.block * self.segments


def detect(job: Job, path: str | None = None, record: int | None = None) -> Pattern:
    """The pattern of `path` (default: the file with the most bytes at the
    program's layer that has per-operation data).  `record` forces the
    strided layout with that record size (for a file view the log hides)."""
    if not job.has_ops:
        raise PatternError(f"{job.source}: no per-operation data (Darshan without DXT): a "
                           "replay needs DXT (DXT_ENABLE_IO_TRACE=1) or an aggio trace")
    index = _choose_file(job, path)
    f = job.files[index]
    ops = job.ops[job.ops["file"] == index]
    layer = MPIIO if ((ops["layer"] == MPIIO) & _data(ops)).any() else POSIX
    app = ops[(ops["layer"] == layer) & _data(ops) & (ops["length"] > 0)]
    writes, reads = app[app["kind"] == WRITE], app[app["kind"] == READ]
    main = writes if len(writes) else reads
    if not len(main):
        raise PatternError(f"{f.path}: only empty requests at the {LAYER_NAMES[layer]} layer")
    coll = bool(((main["flags"] & F_COLLECTIVE) != 0).any())
    fsync = bool((ops["kind"] == SYNC).any()) or _counted_syncs(f)
    pat = _fit(main, record)
    pat.path, pat.layer, pat.collective, pat.fsync = f.path, layer, coll, fsync
    pat.write, pat.read = bool(len(writes)), bool(len(reads))
    pat.bytes, pat.requests = int(main["length"].sum()), len(main)
    if len(writes) and len(reads):
        pat.notes.append("the file was written and read: the replay writes, then reads, the "
                         "written layout")
    return pat


def _data(ops):
    return (ops["kind"] == READ) | (ops["kind"] == WRITE)


def _counted_syncs(f) -> bool:
    return any(st.syncs for st in f.layers.values())


def _choose_file(job, path):
    data = job.ops[_data(job.ops) & (job.ops["length"] > 0)]
    if path is not None:
        for i, f in enumerate(job.files):
            if f.path == path:
                if not (data["file"] == i).any():
                    raise PatternError(f"{path}: no per-operation data for this file")
                return i
        raise PatternError(f"{path}: not a file of this log (see the report's Files table)")
    if not len(data):
        raise PatternError(f"{job.source}: no read or write operations to replay")
    written = data[data["kind"] == WRITE]
    pick = written if len(written) else data     # a written file first
    nbytes = np.bincount(pick["file"], weights=pick["length"].astype(np.float64))
    return int(np.argmax(nbytes))


def _fit(ops: np.ndarray, record: int | None) -> Pattern:
    ranks = np.unique(ops["rank"])
    n = len(ranks)
    pos = np.searchsorted(ranks, ops["rank"])
    per_rank = int(np.bincount(pos, weights=ops["length"].astype(np.float64)).max())
    if record:
        return _strided(ops, pos, n, record, per_rank, forced=True)
    sizes, counts = np.unique(ops["length"], return_counts=True)
    t = int(sizes[np.argmax(counts)])
    strided = _strided(ops, pos, n, t, per_rank)
    segmented = _segmented(ops, pos, n, t, per_rank)
    best = max((strided, segmented), key=lambda p: p.fit)
    if best.fit < GOOD_FIT:
        best = _one_block(ops, n, t, per_rank)
        if _overlapping(ops, pos):
            best.notes.append("ranks' requests overlap at this layer: several ranks access "
                              "the same bytes, or the calls go through a file view whose "
                              "layout the log does not record; each rank's data is replayed "
                              "as one block of its own (give --record SIZE if a view deals "
                              "records of SIZE bytes over the ranks, as ior-hard does)")
    return best


def _pattern(layout, t, block, segments, n, fit) -> Pattern:
    return Pattern(path="", layer=0, write=False, read=False, collective=False, ranks=n,
                   layout=layout, transfer=int(t), block=int(block), segments=int(segments),
                   fsync=False, fit=float(fit), bytes=0, requests=0)


def _strided(ops, pos, n, t, per_rank, forced=False) -> Pattern:
    """Records of t bytes at (j * n + r) * t."""
    ok = (ops["length"] == t) & (ops["offset"] % t == 0) & ((ops["offset"] // t) % n == pos)
    k = max(1, per_rank // t)
    pat = _pattern("strided", t, k * t, 1, n, ok.mean() if len(ops) else 0.0)
    if forced:
        pat.notes.append(f"layout given with --record {t}: records of {t} bytes dealt "
                         "round-robin over the ranks")
        pat.fit = 1.0 if not len(ops) else pat.fit
    return pat


def _segmented(ops, pos, n, t, per_rank) -> Pattern:
    """Each rank's contiguous blocks of b bytes at (s * n + r) * b."""
    order = np.lexsort((ops["offset"], pos))
    o, ln, p = ops["offset"][order], ops["length"][order], pos[order]
    new_run = np.r_[True, (p[1:] != p[:-1]) | (o[1:] != o[:-1] + ln[:-1])]
    run_id = np.cumsum(new_run) - 1
    starts, owners = o[new_run], p[new_run]
    lengths = np.bincount(run_id, weights=ln.astype(np.float64)).astype(np.int64)
    b = int(np.median(lengths))
    b = max(t, b - b % t) if t else b
    ok_run = (lengths == b) & (starts % b == 0) & ((starts // b) % n == owners)
    fit = float(lengths[ok_run].sum() / max(lengths.sum(), 1))
    segments = max(1, per_rank // b) if b else 1
    return _pattern("segmented", t, b, segments, n, fit)


def _one_block(ops, n, t, per_rank) -> Pattern:
    t = max(1, min(t, per_rank)) if per_rank else max(t, 1)
    block = max(t, per_rank - per_rank % t)
    return _pattern("segmented", t, block, 1, n, 0.0)


def _overlapping(ops, pos) -> bool:
    """Do different ranks' requests cover the same bytes?"""
    order = np.argsort(ops["offset"], kind="stable")
    o, e, p = ops["offset"][order], (ops["offset"] + ops["length"])[order], pos[order]
    reach = np.maximum.accumulate(e)
    return bool(((o[1:] < reach[:-1]) & (p[1:] != p[:-1])).any())
