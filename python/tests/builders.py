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

    def write(self, path, meta=None, aggregators=None):
        rec = np.array(self.rows, dtype=fmt.RECORD) if self.rows else fmt.make_records(0)
        agg = np.zeros(self.nranks, np.int32)
        for r in aggregators or []:
            agg[r] = 1
        m = {"path": "/scratch/out.dat", "nodes": ["n0"], "aggregators": list(aggregators or []),
             "strategy": "auto", "hints": {}}
        m.update(meta or {})
        fmt.write_trace(str(path), rec, self.nranks, m, aggregators=agg)
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


__all__ = ["TraceBuilder", "collective_write", "posix_writes", "darshan_job", "file_with",
           "LayerStats"]
