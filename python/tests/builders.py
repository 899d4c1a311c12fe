"""Small synthetic aggio traces and Darshan-like jobs for the tests."""
from __future__ import annotations

import numpy as np

from aggio import trace as fmt
from aggio.model import MPIIO, POSIX, STDIO, FileInfo, Job, LayerStats


class TraceBuilder:
    """Appends records in trace-format terms, then writes the file."""

    def __init__(self, nranks: int):
        self.nranks = nranks
        self.rows = []
        self.t = {r: 0.0 for r in range(nranks)}

    def op(self, rank, name, offset=-1, length=0, type_size=0, dur=0.001, flags=0,
           start=None):
        t0 = self.t[rank] if start is None else start
        self.rows.append((t0, t0 + dur, offset, length, type_size, fmt.OP[name], flags, rank))
        self.t[rank] = t0 + dur
        return self

    def open_all(self, dur=0.001):
        for r in range(self.nranks):
            self.op(r, "open", dur=dur).op(r, "posix_open", dur=dur)
        return self

    def close_all(self, dur=0.001):
        for r in range(self.nranks):
            self.op(r, "posix_close", dur=dur).op(r, "close", dur=dur)
        return self

    def write(self, path, meta=None, aggregators=None, per_node=None):
        rec = np.array(self.rows, dtype=fmt.RECORD) if self.rows else fmt.make_records(0)
        agg = np.zeros(self.nranks, np.int32)
        for r in aggregators or []:
            agg[r] = 1
        nodes = np.arange(self.nranks) // per_node if per_node else np.zeros(self.nranks, int)
        m = {"path": "/scratch/out.dat", "nodes": [f"n{i}" for i in range(int(nodes.max()) + 1)],
             "aggregators": list(aggregators or []), "strategy": "auto", "hints": {}}
        m.update(meta or {})
        fmt.write_trace(str(path), rec, self.nranks, m, aggregators=agg, nodes=nodes)
        return str(path)


def collective_write(nranks, block, blocks, aggregators, dur=0.01):
    """Every rank calls write_at_all for `blocks` blocks; aggregators write
    the POSIX pieces (each aggregator writes nranks/len(aggregators) blocks)."""
    b = TraceBuilder(nranks).open_all()
    for i in range(blocks):
        for r in range(nranks):
            off = (i * nranks + r) * block
            b.op(r, "write_at_all", off, block, 1, dur=dur, flags=fmt.FLAG_API_COLLECTIVE)
        per = nranks // len(aggregators)
        for k, a in enumerate(aggregators):
            off = (i * nranks + k * per) * block
            b.op(a, "pwrite", off, per * block, dur=dur / 2, flags=fmt.FLAG_POSIX_AGGREGATOR,
                 start=b.t[a] - dur / 2)
    return b.close_all()


def two_phase_write(nranks, aggregators, calls=4, rounds=2, buffer=1 << 20, round_dur=0.01,
                    exchange=0.002, rmw=False, slow=None, slow_factor=5.0):
    """Collective buffering as ROMIO/aggio do it: every rank calls
    write_at_all; inside each call every aggregator writes `rounds` buffers of
    its domain (reading each first with `rmw`); the call ends on every rank
    when the last aggregator is done.  `slow` names an aggregator that takes
    `slow_factor` times longer per round."""
    b = TraceBuilder(nranks).open_all()
    nagg = len(aggregators)
    per_call = nagg * rounds * buffer
    t = max(b.t.values())
    for c in range(calls):
        ends = []
        for k, a in enumerate(aggregators):
            dur = round_dur * (slow_factor if a == slow else 1.0)
            at = t + exchange
            for j in range(rounds):
                off = c * per_call + (k * rounds + j) * buffer
                if rmw:
                    b.op(a, "pread", off, buffer, dur=dur / 2, flags=fmt.FLAG_POSIX_AGGREGATOR,
                         start=at)
                    at += dur / 2
                b.op(a, "pwrite", off, buffer, dur=dur, flags=fmt.FLAG_POSIX_AGGREGATOR, start=at)
                at += dur
            ends.append(at)
        end = max(ends) + exchange
        for r in range(nranks):
            b.op(r, "write_at_all", c * per_call + r * (per_call // nranks), per_call // nranks, 1,
                 dur=end - t, flags=fmt.FLAG_API_COLLECTIVE, start=t)
        t = end
    for r in range(nranks):
        b.t[r] = t
    return b.close_all()


def posix_writes(nranks, offsets_by_rank, length, dur=0.001):
    """Independent API writes with one POSIX pwrite each."""
    b = TraceBuilder(nranks).open_all()
    for r, offsets in offsets_by_rank.items():
        for off in offsets:
            b.op(r, "write_at", int(off), length, 1, dur=dur)
            b.op(r, "pwrite", int(off), length, dur=dur, start=b.t[r] - dur)
    return b.close_all()


def darshan_job(nprocs=4, modules=("POSIX",), files=None) -> Job:
    """A Job as the Darshan reader would build it, for counter-only checks."""
    job = Job(source="synthetic.darshan", kind="darshan", nprocs=nprocs, modules=set(modules))
    job.files = files or []
    return job


def file_with(path, shared=True, nranks=4, **layers) -> FileInfo:
    f = FileInfo(path=path, nranks=nranks, shared=shared)
    names = {"posix": POSIX, "mpiio": MPIIO, "stdio": STDIO}
    for key, st in layers.items():
        f.layers[names[key]] = st
    return f


def layer(reduced=False, **counters) -> LayerStats:
    """LayerStats with the given counters; `reduced` marks a Darshan summary
    record (rank -1)."""
    st = LayerStats(**counters)
    st.reduced = reduced
    return st


def per_rank(st: LayerStats, rank_bytes: dict, rank_time: dict | None = None,
             rank_meta: dict | None = None) -> LayerStats:
    """Fills per-rank figures as Darshan per-rank records would."""
    st.rank_bytes = dict(rank_bytes)
    st.rank_time = dict(rank_time or {r: 0.0 for r in rank_bytes})
    st.rank_meta_time = dict(rank_meta or {r: 0.0 for r in rank_bytes})
    st.rank_ops = {r: 1 for r in rank_bytes}
    return st


__all__ = ["TraceBuilder", "collective_write", "two_phase_write", "posix_writes", "darshan_job",
           "file_with", "LayerStats", "layer", "per_rank"]
