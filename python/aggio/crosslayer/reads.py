"""What a file's POSIX reads were for: the MPI-IO library's
read-modify-write beneath writes (data sieving, or collective buffering
filling holes), or the program's own reads."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import MPIIO, POSIX, READ, WRITE, Job
from .common import containing, file_ops

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
