"""A little-endian Darshan 3.41 log rewritten as a big-endian machine writes
it, for the tests: no big-endian log is at hand.  Header of 3.41: version
text[8], magic int64, comp_type (one byte), partial flag uint64 at 24, the
name map at 32, 64 module maps (offset, length: uint64), 64 module versions
(uint32).

Faithful only for what it accepts: format 3.41, zlib, and modules whose
records are 8-byte numbers throughout (POSIX, MPI-IO, STDIO, HEATMAP,
LUSTRE before 3.5's components).  The others (DXT and APMPI, whose records
hold host names) are left out of the result: their slots are emptied.  Every number
is swapped where darshan-log-format.h puts it: the header's fields, the
job record's seven int64s (its metadata and the exe and mount text are
bytes), each name record's 64-bit id (the name is bytes), and every 8-byte
word of the module records.  What libdarshan-util reads back from the
result is compared with the original by the tests, so a field swapped
wrongly shows.
"""
from __future__ import annotations

import struct
import zlib

SLOTS, HEADER_END = 64, 32 + 16 + 64 * 16 + 64 * 4
SWAPPABLE = {"POSIX", "MPI-IO", "STDIO", "LUSTRE", "HEATMAP"}


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
    words = struct.unpack_from(f"<{n}q", data)
    return struct.pack(f">{n}q", *words) + data[8 * n:]


def _swap_names(data: bytes) -> bytes:
    out, at = bytearray(), 0
    while at < len(data):
        end = data.index(b"\0", at + 8) + 1
        out += _swap_words(data[at:at + 8]) + data[at + 8:end]
        at = end
    return bytes(out)


def to_big_endian(data: bytes, modules: list[str]) -> bytes:
    """The big-endian log; modules: the names of the log's non-empty module
    slots, in slot order (those not in SWAPPABLE are left out)."""
    if data[:4] != b"3.41" or data[16] != 0:           # comp_type 0: zlib
        raise ValueError("only zlib-compressed format 3.41 logs")
    name_off, name_len = struct.unpack_from("<QQ", data, 32)
    regions = [("job", HEADER_END, name_off - HEADER_END), ("names", name_off, name_len)]
    slots = [(s, *struct.unpack_from("<QQ", data, 48 + 16 * s)) for s in range(SLOTS)]
    used_slots = [(s, off, ln) for s, off, ln in slots if ln]
    if len(used_slots) != len(modules):
        raise ValueError("module names do not match the log's slots")
    keep = {s for (s, _, _), mod in zip(used_slots, modules) if mod in SWAPPABLE}
    regions += [("module", off, ln) for s, off, ln in used_slots if s in keep]
    body, offsets = b"", []
    for kind, off, ln in regions:
        raw = _inflate_all(data[off:off + ln])
        raw = (_swap_words(raw, 7) if kind == "job" else
               _swap_names(raw) if kind == "names" else _swap_words(raw))
        offsets.append((HEADER_END + len(body), len(zlib.compress(raw))))
        body += zlib.compress(raw)
    header = bytearray(data[:HEADER_END])
    struct.pack_into(">q", header, 8, struct.unpack_from("<q", data, 8)[0])
    struct.pack_into(">Q", header, 24, struct.unpack_from("<Q", data, 24)[0])
    struct.pack_into(">QQ", header, 32, *offsets[1])
    used = iter(offsets[2:])
    for s in range(SLOTS):
        struct.pack_into(">QQ", header, 48 + 16 * s, *(next(used) if s in keep else (0, 0)))
    for s in range(SLOTS):
        at = 48 + 16 * SLOTS + 4 * s
        struct.pack_into(">I", header, at, struct.unpack_from("<I", data, at)[0])
    return bytes(header) + body
