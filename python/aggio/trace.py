"""Reader and writer for the aggio trace format, version 1.

The format is specified in docs/trace-format.md (that document is
authoritative; this module follows it field by field).  Reading uses NumPy
only and maps the file instead of copying it, so a trace of millions of
records costs little more memory than its records.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np

MAGIC = b"AGGIOTRC"
VERSION = 1
HEADER_SIZE = 64
RANK_ENTRY_SIZE = 32

HEADER = np.dtype([("magic", "S8"), ("version", "<u4"), ("nranks", "<u4"),
                   ("record_size", "<u4"), ("flags", "<u4"),
                   ("total_records", "<u8"), ("total_dropped", "<u8"),
                   ("meta_len", "<u8"), ("records_offset", "<u8"),
                   ("clock_base", "<f8")])
RANK_ENTRY = np.dtype([("first", "<u8"), ("count", "<u8"), ("dropped", "<u8"),
                       ("node", "<i4"), ("aggregator", "<i4")])
RECORD = np.dtype([("t_start", "<f8"), ("t_end", "<f8"), ("offset", "<i8"),
                   ("length", "<i8"), ("type_size", "<i8"), ("op", "<u2"),
                   ("flags", "<u2"), ("rank", "<i4")])
assert HEADER.itemsize == HEADER_SIZE and RANK_ENTRY.itemsize == RANK_ENTRY_SIZE
assert RECORD.itemsize == 48

# Operation codes (trace-format.md, "Operation codes").
OP_NAMES = {1: "write_at", 2: "read_at", 3: "write_at_all", 4: "read_at_all",
            5: "open", 6: "close", 7: "sync", 8: "set_view", 9: "set_size",
            10: "iwrite_at", 11: "iread_at", 12: "iwrite_at_all", 13: "iread_at_all",
            14: "wait", 15: "write_shared", 16: "read_shared", 17: "iwrite_shared",
            18: "iread_shared", 19: "write_ordered", 20: "read_ordered",
            21: "seek_shared", 22: "preallocate",
            32: "open", 33: "pread", 34: "pwrite", 35: "fsync", 36: "close",
            37: "ftruncate", 38: "fallocate"}
OP = {"write_at": 1, "read_at": 2, "write_at_all": 3, "read_at_all": 4,
      "open": 5, "close": 6, "sync": 7, "set_view": 8, "set_size": 9,
      "iwrite_at": 10, "iread_at": 11, "iwrite_at_all": 12, "iread_at_all": 13,
      "wait": 14, "write_shared": 15, "read_shared": 16, "iwrite_shared": 17,
      "iread_shared": 18, "write_ordered": 19, "read_ordered": 20,
      "seek_shared": 21, "preallocate": 22,
      "posix_open": 32, "pread": 33, "pwrite": 34, "fsync": 35,
      "posix_close": 36, "ftruncate": 37, "fallocate": 38}
POSIX_FIRST_OP = 32
FLAG_API_COLLECTIVE = 2
FLAG_POSIX_AGGREGATOR = 1
FLAG_POSIX_BEHIND = 2      # an I/O thread, after the API call returned
FLAG_VIEW_CONTIGUOUS = 4   # set_view: the filetype is contiguous


class TraceError(ValueError):
    """The file is not a readable aggio trace."""


@dataclass
class Trace:
    """One trace file: header fields, rank table, metadata and records."""
    path: str
    nranks: int
    clock_base: float
    ranks: np.ndarray            # RANK_ENTRY array
    meta: dict
    records: np.ndarray          # RECORD array (read-only view of the file)
    total_dropped: int = 0
    warnings: list[str] = field(default_factory=list)


def is_trace(path: str) -> bool:
    """True when the file starts with the trace magic."""
    try:
        with open(path, "rb") as f:
            return f.read(8) == MAGIC
    except OSError:
        return False


def read_trace(path: str) -> Trace:
    """Reads and validates a trace; raises TraceError if it cannot be read."""
    size = os.path.getsize(path)
    if size < HEADER_SIZE:
        raise TraceError(f"{path}: {size} bytes, shorter than the 64-byte header")
    raw = np.memmap(path, dtype=np.uint8, mode="r")
    hdr = raw[:HEADER_SIZE].view(HEADER)[0]
    _check_header(path, hdr, size)
    nranks = int(hdr["nranks"])
    ranks = np.array(raw[HEADER_SIZE:HEADER_SIZE + RANK_ENTRY_SIZE * nranks]
                     .view(RANK_ENTRY))
    meta = _read_meta(path, raw, nranks, int(hdr["meta_len"]))
    nrec = int(hdr["total_records"])
    start = int(hdr["records_offset"])
    records = raw[start:start + 48 * nrec].view(RECORD)
    trace = Trace(path, nranks, float(hdr["clock_base"]), ranks, meta, records,
                  int(hdr["total_dropped"]))
    trace.warnings = _rank_table_warnings(trace)
    return trace


def _check_header(path, hdr, size):
    if bytes(hdr["magic"]) != MAGIC:
        raise TraceError(f"{path}: not an aggio trace (bad magic)")
    if int(hdr["version"]) != VERSION:
        raise TraceError(f"{path}: trace version {int(hdr['version'])}, "
                         f"this reader knows version {VERSION}")
    if int(hdr["record_size"]) != 48:
        raise TraceError(f"{path}: record size {int(hdr['record_size'])}, expected 48")
    nranks, meta_len = int(hdr["nranks"]), int(hdr["meta_len"])
    records_offset = int(hdr["records_offset"])
    if records_offset % 8 or records_offset < HEADER_SIZE + 32 * nranks + meta_len:
        raise TraceError(f"{path}: records_offset {records_offset} is invalid")
    need = records_offset + 48 * int(hdr["total_records"])
    if size < need:
        raise TraceError(f"{path}: truncated: {size} bytes, header promises {need}")


def _read_meta(path, raw, nranks, meta_len):
    start = HEADER_SIZE + RANK_ENTRY_SIZE * nranks
    text = bytes(raw[start:start + meta_len]).decode("utf-8", errors="replace")
    if not text.strip():
        return {}
    try:
        meta = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:  # nesting too deep
        raise TraceError(f"{path}: metadata is not JSON ({exc})") from exc
    return meta if isinstance(meta, dict) else {}


def _rank_table_warnings(trace: Trace) -> list[str]:
    out = []
    counted = int(trace.ranks["count"].sum()) if trace.nranks else 0
    if counted != len(trace.records):
        out.append(f"rank table counts {counted} records, header says "
                   f"{len(trace.records)}")
    dropped = trace.ranks["dropped"]
    if trace.nranks and dropped.any():
        worst = np.argsort(dropped)[::-1][:5]
        who = ", ".join(f"rank {int(r)}: {int(dropped[r])}" for r in worst if dropped[r])
        out.append(f"{int(dropped.sum())} records were dropped (trace buffer full; "
                   f"{who}); the trace is partial - raise aggio_trace_memory")
    return out


def write_trace(path: str, records: np.ndarray, nranks: int, meta: dict | None = None,
                clock_base: float = 0.0, nodes: np.ndarray | None = None,
                aggregators: np.ndarray | None = None,
                dropped: np.ndarray | None = None) -> None:
    """Writes `records` (RECORD dtype, any order) as a version-1 trace.

    Records are stored grouped by rank as the format requires (stable order
    within a rank).  `nodes`, `aggregators` and `dropped` are per-rank arrays.
    """
    records = np.asarray(records, dtype=RECORD)
    order = np.argsort(records["rank"], kind="stable")
    records = records[order]
    counts = np.bincount(records["rank"], minlength=nranks)[:nranks]
    table = np.zeros(nranks, RANK_ENTRY)
    table["count"] = counts
    table["first"] = np.concatenate(([0], np.cumsum(counts)[:-1])) if nranks else []
    if dropped is not None:
        table["dropped"] = dropped
    if nodes is not None:
        table["node"] = nodes
    if aggregators is not None:
        table["aggregator"] = aggregators
    meta_bytes = json.dumps(meta or {}).encode()
    records_offset = _round8(HEADER_SIZE + RANK_ENTRY_SIZE * nranks + len(meta_bytes))
    hdr = np.zeros(1, HEADER)
    hdr[0] = (MAGIC, VERSION, nranks, 48, 0, len(records), int(table["dropped"].sum()),
              len(meta_bytes), records_offset, clock_base)
    with open(path, "wb") as f:
        f.write(hdr.tobytes())
        f.write(table.tobytes())
        f.write(meta_bytes)
        f.write(b"\0" * (records_offset - f.tell()))
        f.write(records.tobytes())


def _round8(n: int) -> int:
    return (n + 7) // 8 * 8


def make_records(n: int) -> np.ndarray:
    """An all-zero record array of length n, to fill in before write_trace."""
    return np.zeros(n, RECORD)
