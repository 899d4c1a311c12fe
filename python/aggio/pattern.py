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

from . import reuse
from .findings.base import fmt_bytes
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
    rewrite: float = 0.0      # bytes written again, as a share of the distinct written bytes
    rmw: float = 0.0          # bytes read before being written again, same share
    unknown_offsets: int = 0  # requests of the replayed direction with offset -1

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
    known = main[main["offset"] >= 0]
    if len(writes):
        known = _distinct(known)
    pat = _fit(known, record) if len(known) else _unplaced(main)
    pat.path, pat.layer, pat.collective, pat.fsync = f.path, layer, coll, fsync
    pat.write, pat.read = bool(len(writes)), bool(len(reads))
    pat.bytes, pat.requests = int(main["length"].sum()), len(main)
    pat.unknown_offsets = int((main["offset"] < 0).sum())
    if pat.unknown_offsets and len(known):
        pat.notes.append(_unknown_note(pat.unknown_offsets, len(main)) + "; the layout and "
                         "the share reproduced are those of the others")
    _reuse(pat, writes, reads, ops[(ops["layer"] == POSIX) & _data(ops) & (ops["length"] > 0)])
    if not job.ops_complete(layer):
        pat.notes.append(f"the log's {LAYER_NAMES[layer]} trace is partial (DXT kept the first "
                         "calls only): the layout, rewrites and read-modify-write are those "
                         "of the calls kept")
    return pat


def _distinct(ops):
    """One write per (rank, offset, length): the layout is the first
    pass's; a rewrite of the same range is replayed as a run of its own
    (replay.phases), not as more bytes per rank.  Reads keep every request:
    no run repeats a re-read."""
    if not len(ops):
        return ops
    _, first = np.unique(np.c_[ops["rank"], ops["offset"], ops["length"]], axis=0,
                         return_index=True)
    return ops[np.sort(first)]


def _unknown_note(unknown: int, total: int) -> str:
    return (f"{unknown:,} of the {total:,} requests have no offset in the log (-1: Darshan "
            "before 3.2 wrote that for calls through the file pointer)")


def _unplaced(main) -> Pattern:
    """No request has an offset: sizes and counts per rank are known, where
    they went is not.  Each rank's bytes become one block of its own, and
    the share reproduced is unknown, not 0%."""
    ranks, pos = np.unique(main["rank"], return_inverse=True)
    per_rank = int(np.bincount(pos, weights=main["length"].astype(np.float64)).max())
    sizes, counts = np.unique(main["length"], return_counts=True)
    pat = _one_block(main, len(ranks), int(sizes[np.argmax(counts)]), per_rank)
    pat.fit = float("nan")
    pat.notes.append(_unknown_note(len(main), len(main)) + ": where the requests went is not "
                     "recorded, so the layout is not reproduced; the replay keeps the request "
                     "size, the bytes per rank and the call mode, and writes each rank's bytes "
                     "as one block of its own.  Rewrites and read-modify-write cannot be seen "
                     "either.")
    return pat


def _reuse(pat: Pattern, writes, reads, posix) -> None:
    """Rewrites and read-modify-write at the program's layer (the replay
    repeats them), and beneath MPI-IO (the MPI library's own, which the
    replay leaves to the library it runs on)."""
    use = reuse.measure(writes, reads)
    pat.rewrite, pat.rmw = use.rewrite_fraction, use.rmw_fraction
    if use.rewritten:
        pat.notes.append(f"{fmt_bytes(use.rewritten)} of the writes go to bytes written before "
                         f"({100 * pat.rewrite:.0f}% of the {fmt_bytes(use.unique_written)} "
                         "written): the replay writes that share of its layout again, over "
                         "the file (which bytes were rewritten is not kept)")
    if use.read_before_write:
        pat.notes.append(f"{fmt_bytes(use.read_before_write)} are read from written ranges "
                         "before the last write (read-modify-write): the replay writes the "
                         "file, reads that share of it, then writes over it, phase by phase "
                         "(the log interleaves them request by request)")
    elif pat.write and pat.read:
        pat.notes.append("the file was written and read: the replay writes, then reads, the "
                         "written layout")
    if pat.layer == MPIIO and not use.read_before_write:
        _library_rmw(pat, posix)


def _library_rmw(pat: Pattern, posix) -> None:
    below = reuse.measure(posix[posix["kind"] == WRITE], posix[posix["kind"] == READ])
    if below.read_before_write:
        pat.notes.append(f"beneath MPI-IO the log reads {fmt_bytes(below.read_before_write)} "
                         "of the ranges the MPI library then writes (its read-modify-write: "
                         "data sieving or collective buffering's hole reads); the replay "
                         "issues the program's MPI-IO calls, so whether the library here reads "
                         "too depends on it and on the replayed layout, which has no holes")


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
