"""The common in-memory model every source fills and every consumer reads.

A Job holds what one log (or one set of aggio traces of one job) says:
per-file, per-layer counters (LayerStats, shaped after Darshan's counters so
that counter-only logs and traces feed the same findings) and, when the
source has per-operation data (Darshan DXT, aggio traces), one NumPy array
of operations (OPS) for all files and layers.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Layers of an operation.
MPIIO, POSIX, STDIO = 1, 2, 3
LAYER_NAMES = {MPIIO: "MPI-IO", POSIX: "POSIX", STDIO: "STDIO"}
# Darshan's counter and DXT module of each layer (as Job.modules/partial name them).
COUNTER_MODULE = {MPIIO: "MPI-IO", POSIX: "POSIX", STDIO: "STDIO"}
DXT_MODULE = {MPIIO: "DXT_MPIIO", POSIX: "DXT_POSIX", STDIO: "DXT_STDIO"}

# Kinds of an operation.
READ, WRITE, OPEN, CLOSE, SYNC, META = 1, 2, 3, 4, 5, 6
KIND_NAMES = {READ: "read", WRITE: "write", OPEN: "open", CLOSE: "close",
              SYNC: "sync", META: "meta"}

# Operation flags.  F_NONBLOCKING: started by a non-blocking call
# (MPI_File_iwrite_at, aggio_file_iwrite_at_all, ...); its record covers the
# starting call, the data moved until the completion call.
F_COLLECTIVE, F_AGGREGATOR, F_NONBLOCKING = 1, 2, 4

OPS = np.dtype([("t_start", "<f8"), ("t_end", "<f8"), ("offset", "<i8"),
                ("length", "<i8"), ("rank", "<i4"), ("file", "<i4"),
                ("kind", "u1"), ("layer", "u1"), ("flags", "u1")])

# Darshan's request-size bins (upper bounds, bytes, each bound inside its bin:
# a request of exactly 1 MiB counts in 100K_1M); the last is open-ended.
SIZE_BIN_EDGES = np.array([100, 1024, 10 * 1024, 100 * 1024, 1 << 20, 4 << 20,
                           10 << 20, 100 << 20, 1 << 30], dtype=np.int64)
SIZE_BIN_LABELS = ["0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M",
                   "4M-10M", "10M-100M", "100M-1G", "1G+"]


def size_histogram(lengths: np.ndarray) -> np.ndarray:
    """Counts of requests per Darshan size bin (as Darshan bins them: a
    request the size of a bin's upper bound counts in that bin)."""
    idx = np.searchsorted(SIZE_BIN_EDGES, lengths, side="left")
    return np.bincount(idx, minlength=len(SIZE_BIN_LABELS)).astype(np.int64)


@dataclass
class LayerStats:
    """Counters of one file at one layer (MPI-IO, POSIX or STDIO)."""
    reads: int = 0
    writes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    read_time: float = 0.0
    write_time: float = 0.0
    meta_time: float = 0.0
    opens: int = 0
    syncs: int = 0
    coll_reads: int = 0
    coll_writes: int = 0
    indep_reads: int = 0
    indep_writes: int = 0
    nb_reads: int = 0
    nb_writes: int = 0
    seq_reads: int = 0
    seq_writes: int = 0
    consec_reads: int = 0
    consec_writes: int = 0
    file_not_aligned: int = 0
    file_alignment: int = 0
    mem_not_aligned: int = 0
    max_byte_read: int = -1
    max_byte_written: int = -1
    hist_read: np.ndarray = field(default_factory=lambda: np.zeros(10, np.int64))
    hist_write: np.ndarray = field(default_factory=lambda: np.zeros(10, np.int64))
    # Per-rank figures when known: rank -> bytes / seconds of I/O.
    rank_bytes: dict = field(default_factory=dict)
    rank_time: dict = field(default_factory=dict)
    rank_meta_time: dict = field(default_factory=dict)
    rank_ops: dict = field(default_factory=dict)    # rank -> reads + writes
    # For Darshan's reduced shared records (rank -1, one record summing every
    # rank): fastest / slowest rank, the variance of per-rank bytes and time.
    # Times of such a record are sums over ranks: never per-rank figures.
    fastest: tuple | None = None   # (rank, bytes, seconds)
    slowest: tuple | None = None
    reduced: bool = False          # built from a summary record
    var_rank_bytes: float = 0.0
    var_rank_time: float = 0.0
    # Most common request sizes (Darshan's ACCESS1..4 counters or derived):
    # size -> count.
    access_sizes: dict = field(default_factory=dict)

    @property
    def ops(self) -> int:
        return self.reads + self.writes

    @property
    def bytes(self) -> int:
        return self.bytes_read + self.bytes_written

    @property
    def io_time(self) -> float:
        return self.read_time + self.write_time + self.meta_time

    def small(self, direction: str, limit: int) -> int:
        """Requests certainly smaller than `limit` bytes (see small_range)."""
        return self.small_range(direction, limit)[0]

    def small_range(self, direction: str, limit: int) -> tuple[int, int]:
        """(at least, at most) requests smaller than `limit` bytes.

        Darshan's size bins include their upper bound (100K_1M holds 1 MiB
        exactly), so the bin that holds `limit` mixes small requests and
        requests of `limit` bytes or more.  That bin is split with the
        most-common-size counters (ACCESS1..4, which count reads and writes
        together: a size's count is this direction's only as far as the
        other direction's requests in that bin cannot take it)."""
        hist = self.hist_read if direction == "read" else self.hist_write
        other = self.hist_write if direction == "read" else self.hist_read
        k = int(np.searchsorted(SIZE_BIN_EDGES, limit, side="left"))
        below = int(hist[:k].sum())
        if k >= len(hist) or (k and SIZE_BIN_EDGES[k - 1] == limit - 1) or not hist[k]:
            return below, below            # `limit` opens bin k: no bin is split
        lo_edge = SIZE_BIN_EDGES[k - 1] if k else -1
        small_known = big_known = 0
        for size, count in self.access_sizes.items():
            if lo_edge < size <= (SIZE_BIN_EDGES[k] if k < len(SIZE_BIN_EDGES) else size):
                mine = max(0, int(count) - int(other[k]))
                if size < limit:
                    small_known += mine
                else:
                    big_known += mine
        n = int(hist[k])
        small_known, big_known = min(n, small_known), min(n - min(n, small_known), big_known)
        return below + small_known, below + n - big_known

    def add(self, other: "LayerStats") -> None:
        """Adds another record's counters (Darshan keeps one per rank)."""
        for name in ("reads", "writes", "bytes_read", "bytes_written", "read_time",
                     "write_time", "meta_time", "opens", "syncs", "coll_reads",
                     "coll_writes", "indep_reads", "indep_writes", "nb_reads",
                     "nb_writes", "seq_reads", "seq_writes", "consec_reads",
                     "consec_writes", "file_not_aligned", "mem_not_aligned"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.file_alignment = max(self.file_alignment, other.file_alignment)
        self.max_byte_read = max(self.max_byte_read, other.max_byte_read)
        self.max_byte_written = max(self.max_byte_written, other.max_byte_written)
        self.hist_read = self.hist_read + other.hist_read
        self.hist_write = self.hist_write + other.hist_write
        for mine, theirs in ((self.rank_bytes, other.rank_bytes),
                             (self.rank_time, other.rank_time),
                             (self.rank_meta_time, other.rank_meta_time),
                             (self.rank_ops, other.rank_ops),
                             (self.access_sizes, other.access_sizes)):
            for r, v in theirs.items():
                mine[r] = mine.get(r, 0) + v
        self.fastest = self.fastest or other.fastest
        self.slowest = self.slowest or other.slowest
        self.reduced = self.reduced or other.reduced
        self.var_rank_bytes = max(self.var_rank_bytes, other.var_rank_bytes)
        self.var_rank_time = max(self.var_rank_time, other.var_rank_time)

    @property
    def per_rank(self) -> bool:
        """True when rank_bytes/rank_time hold every rank's own figures (from
        per-rank records or operations), not a summary record's sums."""
        return bool(self.rank_bytes) and not self.reduced

    def common_size(self) -> int:
        """The most common request size (0 if unknown)."""
        if not self.access_sizes:
            return 0
        return int(max(self.access_sizes, key=lambda k: (self.access_sizes[k], k)))


@dataclass
class FileInfo:
    """One file of the job."""
    path: str
    layers: dict = field(default_factory=dict)   # layer id -> LayerStats
    nranks: int = 0              # ranks that opened it (0: unknown)
    shared: bool = False         # opened by more than one rank
    stripe_size: int = 0         # Lustre stripe size, 0 if unknown
    stripe_count: int = 0
    posix_ranks: list | None = None   # ranks that issued POSIX data calls
    aggregators: list | None = None   # as the trace metadata names them

    def layer(self, layer: int) -> LayerStats | None:
        return self.layers.get(layer)

    @property
    def bytes(self) -> int:
        """Application bytes: the top-most layer that saw the file."""
        for layer in (MPIIO, STDIO, POSIX):
            if layer in self.layers and self.layers[layer].bytes:
                return self.layers[layer].bytes
        return 0


@dataclass
class Job:
    """Everything one input says, in the common model."""
    source: str
    kind: str                       # "darshan" or "aggio-trace"
    nprocs: int = 0
    runtime: float = 0.0
    exe: str = ""
    modules: set = field(default_factory=set)
    files: list = field(default_factory=list)   # FileInfo, index = OPS "file"
    ops: np.ndarray = field(default_factory=lambda: np.zeros(0, OPS))
    has_ops: bool = False            # per-operation data (DXT or trace)
    notes: list = field(default_factory=list)   # partial data, missing DXT, ...
    partial: set = field(default_factory=set)   # modules the log marks partial (Darshan)
    hints: dict = field(default_factory=dict)   # hints in effect (aggio traces)
    rank_node: dict = field(default_factory=dict)   # rank -> node index (traces)
    node_names: list = field(default_factory=list)
    damaged: list = field(default_factory=list)  # parts of the input that could not be read
    fstype: str = ""                 # file system type when the input says it
    mounts: list = field(default_factory=list)   # (mount point, fs type) the log lists

    def layer_total(self, layer: int) -> LayerStats:
        total = LayerStats()
        for f in self.files:
            if layer in f.layers:
                total.add(f.layers[layer])
        return total

    def ops_complete(self, layer: int) -> bool:
        """True when the operations hold every data call of `layer`: an aggio
        trace, or a DXT module the log does not mark partial (a DXT buffer
        that overflowed keeps only the first calls: per-rank sums and
        distinct bytes from it are wrong, the counters are right)."""
        if not self.has_ops:
            return False
        return self.kind != "darshan" or DXT_MODULE[layer] not in self.partial

    @property
    def empty(self) -> bool:
        return not self.files and len(self.ops) == 0
