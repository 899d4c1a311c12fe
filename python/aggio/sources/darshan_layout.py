"""Is a Darshan log whole?  Reads the log's fixed header (no PyDarshan) and
compares the regions it promises with the file's size; names_damage parses
the file-name records, on which libdarshan-util aborts when they are cut.

A Darshan log is a header, the job record, the name records, then each
module's (compressed) records, written in that order; the header holds the
offset and length of the name region and of every module region.  A log cut
short keeps a prefix: the regions past the cut are lost and the one the cut
falls in is damaged.  Asking libdarshan-util to read such a region prints C
errors, returns zeros or aborts the process, so the reader checks first and
reads only whole regions.  The regions lie back to back in a fixed order,
so a map that places them otherwise is damage, not truncation, and is
named so.

Header layouts (darshan-log-format.h): up to format 3.21, 16 module slots and
a 4-byte partial flag; from 3.41 on, 64 slots and an 8-byte flag.  A log
written on a big-endian machine (POWER, Blue Gene) holds every number in
that byte order: darshan-util recognises it by the magic number read
backwards and swaps as it reads, and so does this reader.
"""
from __future__ import annotations

import bz2
import os
import struct
import zlib
from dataclasses import dataclass, field

MAGIC = 6567223
# version prefix -> (offset of the name map, number of module slots)
_LAYOUTS = {"3.0": (24, 16), "3.1": (24, 16), "3.2": (24, 16), "3.4": (32, 64), "3.5": (32, 64)}


@dataclass
class Layout:
    version: str
    size: int                        # bytes in the file
    expected: int = 0                # bytes the header promises (0: not checked)
    job_whole: bool = True
    names_whole: bool = True
    module_ends: dict = field(default_factory=dict)   # module slot -> end offset
    checked: bool = False
    byte_order: str = "<"            # struct's "<" (little-endian) or ">" (big-endian)
    map_damage: str = ""             # why the header's map cannot be the writer's

    @property
    def truncated(self) -> bool:
        return self.checked and self.size < self.expected and not self.map_damage

    def slot_whole(self, slot: int) -> bool:
        end = self.module_ends.get(slot)
        return end is None or end <= self.size


def byte_order(head: bytes) -> str | None:
    """"<" or ">" by the magic number at offset 8, None when it is not there."""
    if len(head) < 16:
        return None
    for order in "<>":
        if struct.unpack_from(order + "q", head, 8)[0] == MAGIC:
            return order
    return None


def looks_like_darshan(path: str) -> bool:
    """True when the file starts as a Darshan 3 log (version text, magic)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    return head[:2] == b"3." and byte_order(head) is not None


def read_layout(path: str) -> Layout | None:
    """The header's promises, or None when the file is not a Darshan 3 log."""
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(48 + 64 * 20)
    order = byte_order(head)
    if order is None:
        return None
    version = head[:8].split(b"\0")[0].decode("ascii", "replace")
    layout = Layout(version=version, size=size, byte_order=order)
    fmt = _LAYOUTS.get(version[:3])
    if fmt is None:
        return layout                # a format this reader does not know: unchecked
    name_at, slots = fmt
    header_end = name_at + 16 + slots * 16 + slots * 4
    if len(head) < header_end:
        layout.checked, layout.expected = True, header_end
        layout.job_whole = layout.names_whole = False
        return layout
    name_off, name_len = struct.unpack_from(order + "QQ", head, name_at)
    for slot in range(slots):
        off, length = struct.unpack_from(order + "QQ", head, name_at + 16 + 16 * slot)
        if length:
            layout.module_ends[slot] = off + length
    layout.checked = True
    layout.map_damage = _map_damage(header_end, name_off, name_len, head, name_at, slots, order)
    layout.expected = max([name_off + name_len, *layout.module_ends.values()])
    layout.job_whole = size >= name_off
    layout.names_whole = size >= name_off + name_len
    return layout


def _map_damage(header_end, name_off, name_len, head, name_at, slots, order) -> str:
    """Darshan writes the job record after the header, then the name records
    and each module's in slot order, back to back: a map that says
    otherwise was damaged after writing (a truncated log keeps its map)."""
    if name_off < header_end:
        return f"the file names are mapped at byte {name_off}, inside the header"
    at = name_off + name_len
    for slot in range(slots):
        off, length = struct.unpack_from(order + "QQ", head, name_at + 16 + 16 * slot)
        if length and off != at:
            return (f"module slot {slot} is mapped at byte {off}, where the records "
                    f"before it end at byte {at}")
        at += length
    return ""


def names_damage(path: str, layout: Layout) -> str:
    """Why the file-name records cannot be parsed ("" when they can, or
    cannot be checked).  They are back to back (64-bit record id, then the
    name up to its NUL byte); libdarshan-util reads past the region's end
    when the last one is cut, and aborts."""
    if not layout.checked or layout.map_damage or not layout.names_whole:
        return ""
    name_at = _LAYOUTS[layout.version[:3]][0]
    with open(path, "rb") as f:
        head = f.read(name_at + 16)
        name_off, name_len = struct.unpack_from(layout.byte_order + "QQ", head, name_at)
        f.seek(name_off)
        region = f.read(name_len)
    try:
        names = _expand(region, head[16])
    except (zlib.error, OSError, ValueError, EOFError) as exc:
        return f"the file-name records cannot be decompressed ({exc})"
    at = 0
    while at < len(names):
        end = names.find(b"\0", at + 8)
        if end < 0:
            return f"the file-name record at byte {at} of {len(names)} has no end"
        at = end + 1
    return ""


def _expand(region: bytes, comp_type: int) -> bytes:
    """The region's data: zlib (0; one stream per writing rank, back to
    back), bzip2 (1) or none (2)."""
    if comp_type == 2:
        return region
    out = []
    while region:
        d = zlib.decompressobj() if comp_type == 0 else bz2.BZ2Decompressor()
        out.append(d.decompress(region))
        if not d.eof:
            raise ValueError("the stream is cut short")
        region = d.unused_data
    return b"".join(out)
