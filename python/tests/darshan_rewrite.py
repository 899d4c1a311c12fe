"""Darshan logs rewritten for the tests and the fuzz seeds: as a big-endian
machine writes them (no big-endian log is at hand), or uncompressed (so
that the fuzzer's mutations reach the records instead of breaking a zlib
stream).

A log is a header, then the job record, the name records and each module's
records, each region compressed (darshan-log-format.h).  Header: version
text[8], magic int64, comp_type (one byte: 0 zlib, 2 none); up to format
3.21 a uint32 partial flag, the name map (offset, length: uint64) at 24 and
16 module maps; from 3.41 a uint64 flag, the name map at 32 and 64 maps;
then one uint32 version per module slot.

to_big_endian is faithful only for what it keeps: every number is swapped
where the format puts it (the header's fields, the job record's int64s:
seven from format 3.41, five before, which had no nanoseconds (its
metadata, exe and mount text are bytes), each name record's 64-bit id,
every 8-byte word of the modules whose records are 8-byte numbers
throughout (POSIX, MPI-IO, STDIO, HEATMAP, LUSTRE before 3.5's components,
the HDF5 file and dataset records), and the DXT records' numbers around
their host name, then their segments' four words each).  The others' slots
are emptied (APMPI holds host names in another layout).  The tests compare
what libdarshan-util reads back with the original, so a field swapped
wrongly shows.
"""
from __future__ import annotations

import struct
import zlib

WORDS_ONLY = {"POSIX", "MPI-IO", "STDIO", "LUSTRE", "HEATMAP", "H5F", "H5D"}
DXT = {"DXT_POSIX", "DXT_MPIIO"}
SWAPPABLE = WORDS_ONLY | DXT
ZLIB, NO_COMP = 0, 2
# A DXT record (darshan-dxt-log-format.h): id, rank, shared flag (int64s),
# the host name (64 bytes), write and read counts (int64s); then its
# segments: offset, length, start and end time (8 bytes each).
DXT_HEAD, DXT_HOST_AT, DXT_HOST_LEN, DXT_SEGMENT = 104, 24, 64, 32


def _geometry(data: bytes) -> tuple[int, int]:
    """(offset of the name map, module slots) of the log's format."""
    if data[:4] in (b"3.41", b"3.50"):
        return 32, 64
    if data[:3] in (b"3.0", b"3.1", b"3.2"):
        return 24, 16
    raise ValueError(f"unknown format {data[:8]!r}")


def _inflate_all(region: bytes) -> bytes:
    """Concatenated zlib streams (one per rank that wrote) -> their data."""
    out = b""
    while region:
        d = zlib.decompressobj()
        out += d.decompress(region)
        region = d.unused_data
    return out


def _swap_words(data: bytes, count: int | None = None) -> bytes:
    n = len(data) // 8 if count is None else count
    return struct.pack(f">{n}q", *struct.unpack_from(f"<{n}q", data)) + data[8 * n:]


def _swap_names(data: bytes) -> bytes:
    out, at = bytearray(), 0
    while at < len(data):
        end = data.index(b"\0", at + 8) + 1
        out += _swap_words(data[at:at + 8]) + data[at + 8:end]
        at = end
    return bytes(out)


def _swap_dxt(data: bytes) -> bytes:
    """DXT records swapped field by field: the host name stays bytes."""
    out, at = bytearray(), 0
    while at < len(data):
        writes, reads = struct.unpack_from("<qq", data, at + DXT_HOST_AT + DXT_HOST_LEN)
        end = at + DXT_HEAD + DXT_SEGMENT * (writes + reads)
        out += _swap_words(data[at:at + DXT_HOST_AT])
        out += data[at + DXT_HOST_AT:at + DXT_HOST_AT + DXT_HOST_LEN]
        out += _swap_words(data[at + DXT_HOST_AT + DXT_HOST_LEN:end])
        at = end
    return bytes(out)


def _rewrite(data, modules, keep, transform, comp, order):
    """The log with each kept region passed through transform(kind, raw) (kind:
    "job", "names" or the module's name) and
    stored with compression comp, the header's numbers in byte order order."""
    if data[16] != ZLIB:
        raise ValueError("only zlib-compressed logs")
    name_at, slots = _geometry(data)
    header_end = name_at + 16 + slots * 20
    name_off, name_len = struct.unpack_from("<QQ", data, name_at)
    maps = [struct.unpack_from("<QQ", data, name_at + 16 + 16 * s) for s in range(slots)]
    used = [s for s in range(slots) if maps[s][1]]
    if len(used) != len(modules):
        raise ValueError("module names do not match the log's slots")
    named = dict(zip(used, modules))
    kept = {s for s in used if keep(named[s])}
    regions = [("job", header_end, name_off - header_end), ("names", name_off, name_len)]
    regions += [(named[s], *maps[s]) for s in sorted(kept)]
    body, placed = b"", []
    for kind, off, ln in regions:
        raw = transform(kind, _inflate_all(data[off:off + ln]))
        stored = zlib.compress(raw) if comp == ZLIB else raw
        placed.append((header_end + len(body), len(stored)))
        body += stored
    header = bytearray(data[:header_end])
    header[16] = comp
    struct.pack_into(order + "q", header, 8, struct.unpack_from("<q", data, 8)[0])
    flag = "Q" if slots == 64 else "I"
    flag_at = 24 if slots == 64 else 20
    struct.pack_into(order + flag, header, flag_at, struct.unpack_from("<" + flag, data, flag_at)[0])
    struct.pack_into(order + "QQ", header, name_at, *placed[1])
    modules_placed = iter(placed[2:])
    for s in range(slots):
        struct.pack_into(order + "QQ", header, name_at + 16 + 16 * s,
                         *(next(modules_placed) if s in kept else (0, 0)))
        at = name_at + 16 + 16 * slots + 4 * s
        struct.pack_into(order + "I", header, at, struct.unpack_from("<I", data, at)[0])
    return bytes(header) + body


def to_big_endian(data: bytes, modules: list[str]) -> bytes:
    """The log (format 3.10 to 3.41) as a big-endian machine writes it;
    modules: the names of the log's non-empty module slots, in slot order
    (those not in SWAPPABLE are left out)."""
    if data[:4] not in (b"3.10", b"3.21", b"3.41"):
        raise ValueError(f"format {data[:4]!r}: only 3.10, 3.21 and 3.41 logs")
    job_words = 7 if data[:4] == b"3.41" else 5

    def swap(kind, raw):
        return (_swap_words(raw, job_words) if kind == "job" else
                _swap_names(raw) if kind == "names" else
                _swap_dxt(raw) if kind in DXT else _swap_words(raw))
    return _rewrite(data, modules, lambda mod: mod in SWAPPABLE, swap, ZLIB, ">")


def uncompressed(data: bytes, modules: list[str]) -> bytes:
    """The same log with its regions stored uncompressed (comp_type 2)."""
    return _rewrite(data, modules, lambda mod: True, lambda kind, raw: raw, NO_COMP, "<")
