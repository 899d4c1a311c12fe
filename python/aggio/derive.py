"""Counters derived from per-operation data.

aggio traces carry no counters, and Darshan's counters say nothing about
per-rank time within a shared record; both are computed here from the OPS
array with vectorised NumPy (one pass of sorting per file and layer).
"""
from __future__ import annotations

import numpy as np

from .model import (OPS, READ, WRITE, OPEN, CLOSE, SYNC, META, F_COLLECTIVE,
                    F_NONBLOCKING, LayerStats, size_histogram)


def layer_stats(ops: np.ndarray, alignment: int) -> LayerStats:
    """Counters of one file at one layer from its operations."""
    st = LayerStats()
    kind = ops["kind"]
    dur = ops["t_end"] - ops["t_start"]
    rd, wr = kind == READ, kind == WRITE
    meta = (kind == OPEN) | (kind == CLOSE) | (kind == SYNC) | (kind == META)
    st.reads, st.writes = int(rd.sum()), int(wr.sum())
    st.bytes_read = int(ops["length"][rd].sum())
    st.bytes_written = int(ops["length"][wr].sum())
    st.read_time, st.write_time = float(dur[rd].sum()), float(dur[wr].sum())
    st.meta_time = float(dur[meta].sum())
    st.opens, st.syncs = int((kind == OPEN).sum()), int((kind == SYNC).sum())
    coll = (ops["flags"] & F_COLLECTIVE) != 0
    st.coll_reads, st.coll_writes = int((rd & coll).sum()), int((wr & coll).sum())
    st.indep_reads, st.indep_writes = st.reads - st.coll_reads, st.writes - st.coll_writes
    nb = (ops["flags"] & F_NONBLOCKING) != 0
    st.nb_reads, st.nb_writes = int((rd & nb).sum()), int((wr & nb).sum())
    st.hist_read = size_histogram(ops["length"][rd])
    st.hist_write = size_histogram(ops["length"][wr])
    _fill_max_bytes(st, ops, rd, wr)
    _fill_sequentiality(st, ops[rd | wr])
    _fill_alignment(st, ops[rd | wr], alignment)
    _fill_per_rank(st, ops, dur, rd | wr, meta)
    _fill_access_sizes(st, ops["length"][rd | wr])
    return st


def _fill_access_sizes(st, lengths, keep=4):
    """The `keep` most common request sizes, as Darshan's ACCESS1..4."""
    if not len(lengths):
        return
    sizes, counts = np.unique(lengths, return_counts=True)
    top = np.argsort(-counts, kind="stable")[:keep]
    st.access_sizes = {int(sizes[i]): int(counts[i]) for i in top}


def _fill_max_bytes(st, ops, rd, wr):
    ends = ops["offset"] + ops["length"] - 1
    if rd.any():
        st.max_byte_read = int(ends[rd].max())
    if wr.any():
        st.max_byte_written = int(ends[wr].max())


def _fill_sequentiality(st, data):
    """Darshan's definitions: consecutive if a request starts right after the
    previous one of the same rank and direction ends, sequential if it starts
    at or after that end."""
    if len(data) < 2:
        return
    order = np.lexsort((data["t_start"], data["kind"], data["rank"]))
    d = data[order]
    same = (d["rank"][1:] == d["rank"][:-1]) & (d["kind"][1:] == d["kind"][:-1])
    prev_end = d["offset"][:-1] + d["length"][:-1]
    start = d["offset"][1:]
    consec, seq = same & (start == prev_end), same & (start >= prev_end)
    is_read = d["kind"][1:] == READ
    st.consec_reads, st.consec_writes = int((consec & is_read).sum()), int((consec & ~is_read).sum())
    st.seq_reads, st.seq_writes = int((seq & is_read).sum()), int((seq & ~is_read).sum())


def _fill_alignment(st, data, alignment):
    st.file_alignment = alignment
    if alignment > 0 and len(data):
        st.file_not_aligned = int(((data["offset"] % alignment) != 0).sum())


def _fill_per_rank(st, ops, dur, data, meta):
    ranks = ops["rank"]
    if not len(ranks):
        return
    n = int(ranks.max()) + 1
    nbytes = np.bincount(ranks[data], weights=ops["length"][data], minlength=n)
    ntime = np.bincount(ranks[data], weights=dur[data], minlength=n)
    mtime = np.bincount(ranks[meta], weights=dur[meta], minlength=n)
    nops = np.bincount(ranks[data], minlength=n)
    present = np.unique(ranks)
    st.rank_ops = {int(r): int(nops[r]) for r in present}
    st.rank_bytes = {int(r): int(nbytes[r]) for r in present}
    st.rank_time = {int(r): float(ntime[r]) for r in present}
    st.rank_meta_time = {int(r): float(mtime[r]) for r in present}


def group_by_file_layer(ops: np.ndarray):
    """Yields (file, layer, ops of that file and layer)."""
    if not len(ops):
        return
    order = np.lexsort((ops["layer"], ops["file"]))
    s = ops[order]
    key = s["file"].astype(np.int64) * 256 + s["layer"]
    cuts = np.flatnonzero(np.diff(key)) + 1
    for part in np.split(s, cuts):
        yield int(part["file"][0]), int(part["layer"][0]), part


def data_ranks(ops: np.ndarray) -> list[int]:
    """Ranks that issued reads or writes."""
    data = (ops["kind"] == READ) | (ops["kind"] == WRITE)
    return [int(r) for r in np.unique(ops["rank"][data])]


def empty_ops() -> np.ndarray:
    return np.zeros(0, OPS)
