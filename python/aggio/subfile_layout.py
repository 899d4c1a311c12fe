"""The subfiled layout, format 1 (docs/subfiling.md): its text, and the
mapping between logical offsets and the M subfiles'.  Pure functions, no
I/O, so that the C library's contract can be tested on its own.

Logical stripe i (bytes [i*S, (i+1)*S)) is stripe i // M of subfile i % M.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

FORMAT_VERSION = 1
MAGIC = "aggio subfiled file, format "
# Lines 2-4, for a person who opens the layout with another tool.  A reader
# skips them (they are prose); a writer writes exactly these.
NOTE = ("This is the layout of one logical file that aggio stored as several subfiles.\n"
        "Read it through aggio (aggio-run PROGRAM, or libaggio), or make the single\n"
        "file with: aggio subfile join THIS_FILE [OUT]\n")
# Offsets are MPI_Offset (int64) in the C library.
MAX_VALUE = (1 << 63) - 1
_NUMBER = re.compile(r"0|[1-9][0-9]*")
_KEYS = ("stripe_size", "subfiles", "subfile", "end")


class LayoutError(ValueError):
    """The layout is malformed (or of a format this reader does not know)."""


class NotALayout(LayoutError):
    """The file does not start like a layout: an ordinary file."""


@dataclass(frozen=True)
class Layout:
    stripe_size: int
    names: tuple[str, ...]

    @property
    def count(self) -> int:
        return len(self.names)


# --- the mapping -------------------------------------------------------------

def locate(offset: int, stripe: int, count: int) -> tuple[int, int]:
    """Logical offset -> (subfile K, offset in subfile K)."""
    i, within = divmod(offset, stripe)
    j, k = divmod(i, count)
    return k, j * stripe + within


def logical_offset(k: int, offset: int, stripe: int, count: int) -> int:
    """Offset in subfile K -> logical offset (the inverse of locate)."""
    j, within = divmod(offset, stripe)
    return (j * count + k) * stripe + within


def subfile_end(k: int, size: int, stripe: int, count: int) -> int:
    """One past the last logical byte that subfile K of `size` bytes holds
    (0 when empty)."""
    return logical_offset(k, size - 1, stripe, count) + 1 if size > 0 else 0


def logical_size(sizes: list[int], stripe: int) -> int:
    """The logical size, derived from the subfiles' sizes: it is not stored,
    so that no crash can leave the layout disagreeing with the data."""
    return max((subfile_end(k, z, stripe, len(sizes)) for k, z in enumerate(sizes)),
               default=0)


def share(length: int, k: int, stripe: int, count: int) -> int:
    """Subfile K's share of the logical bytes [0, length)."""
    rounds, rest = divmod(length, stripe * count)
    return rounds * stripe + min(stripe, max(0, rest - k * stripe))


def shares(length: int, stripe: int, count: int) -> list[int]:
    return [share(length, k, stripe, count) for k in range(count)]


def runs(sizes: list[int], stripe: int):
    """(K, subfile offset, logical offset, length) of every stripe the
    subfiles hold, in logical order; stripes contiguous on both sides (one
    subfile) are merged, so that a copy moves large pieces.  What no run
    covers below the logical size is a hole."""
    count = len(sizes)
    pending = None
    for i in range(-(-logical_size(sizes, stripe) // stripe)):
        j, k = divmod(i, count)
        length = min(stripe, sizes[k] - j * stripe)
        if length <= 0:
            continue                    # a hole: subfile K is short
        run = (k, j * stripe, i * stripe, length)
        if pending and pending[0] == k and pending[1] + pending[3] == run[1] \
                and pending[2] + pending[3] == run[2]:
            pending = (k, pending[1], pending[2], pending[3] + length)
            continue
        if pending:
            yield pending
        pending = run
    if pending:
        yield pending


# --- names -------------------------------------------------------------------

def subfile_name(base: str, k: int, count: int) -> str:
    """The name the tool and the C library give subfile K of a file `base`."""
    return f"{base}.subfile.{k}.of.{count}"


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a subfile's name, or None.  Names are relative
    to the layout's directory and sit on one ASCII line."""
    if not name:
        return "an empty name"
    if "/" in name:
        return f"{name!r} has a '/' (names are relative to the layout's directory)"
    if name in (".", ".."):
        return f"{name!r} is a directory"
    if not all(" " <= c <= "~" for c in name):
        return f"{name!r} is not printable ASCII"
    return None


# --- the text ----------------------------------------------------------------

def format_layout(layout: Layout) -> str:
    for name in layout.names:
        problem = name_problem(name)
        if problem:
            raise LayoutError(f"cannot write a subfile named {problem}")
    body = "".join(f"subfile {k} {name}\n" for k, name in enumerate(layout.names))
    return (f"{MAGIC}{FORMAT_VERSION}\n{NOTE}stripe_size {layout.stripe_size}\n"
            f"subfiles {layout.count}\n{body}end\n")


def starts_like_layout(head: bytes) -> bool:
    """Whether a file beginning with `head` claims to be a layout (of any
    format)."""
    return head.startswith(MAGIC.encode())


def parse_layout(data: bytes) -> Layout:
    """The layout in `data` (raises NotALayout, LayoutError)."""
    if not starts_like_layout(data):
        raise NotALayout("an ordinary file, not a subfiled layout")
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise LayoutError(f"byte {exc.start} is not ASCII") from None
    if not text.endswith("\n"):
        raise LayoutError("the last line does not end in a newline (truncated?)")
    lines = text[:-1].split("\n")
    _check_version(lines[0])
    stripe = _number(lines, 4, "stripe_size")
    count = _number(lines, 5, "subfiles")
    names = [_subfile_line(lines, 6 + k, k, count) for k in range(count)]
    _check_end(lines, 6 + count, count)
    seen = set()
    for name in names:
        if name in seen:
            raise LayoutError(f"two subfiles are named {name!r}")
        seen.add(name)
    return Layout(stripe, tuple(names))


def _check_version(first: str) -> None:
    version = first[len(MAGIC):]
    if not _NUMBER.fullmatch(version):
        raise LayoutError(f"line 1: {first!r} does not give a format version")
    if int(version) != FORMAT_VERSION:
        raise LayoutError(f"format {version}, which this aggio does not know "
                          f"(it reads format {FORMAT_VERSION})")


def _line(lines: list[str], index: int, want: str, count: int) -> list[str]:
    """Line `index` (0-based) split at its first two spaces, its key checked
    against the one format 1 puts there."""
    if index >= len(lines):
        raise LayoutError(f"no {want!r} line after line {len(lines)} (truncated?)")
    words = lines[index].split(" ", 2)
    if words[0] == want:
        return words
    where = f"line {index + 1}: "
    if want == "subfile" and words[0] == "end":
        raise LayoutError(f"{where}{index - 6} subfile lines, but 'subfiles {count}'")
    if want == "end" and words[0] == "subfile":
        raise LayoutError(f"{where}more subfile lines than 'subfiles {count}'")
    if words[0] in _KEYS:
        raise LayoutError(f"{where}{words[0]!r} where format 1 has {want!r} "
                          "(keys out of order?)")
    raise LayoutError(f"{where}unknown key {_short(lines[index])} (format 1 wants {want!r})")


def _parse_number(text: str, where: str, what: str) -> int:
    if not _NUMBER.fullmatch(text):
        raise LayoutError(f"{where}{what} {_short(text)} is not a whole number")
    value = int(text)
    if not 1 <= value <= MAX_VALUE:
        raise LayoutError(f"{where}{what} {value} is out of range (1 to 2^63-1)")
    return value


def _number(lines: list[str], index: int, key: str) -> int:
    words = _line(lines, index, key, 0)
    if len(words) != 2:
        raise LayoutError(f"line {index + 1}: {_short(lines[index])} is not '{key} N'")
    return _parse_number(words[1], f"line {index + 1}: ", key)


def _subfile_line(lines: list[str], index: int, k: int, count: int) -> str:
    words = _line(lines, index, "subfile", count)
    where = f"line {index + 1}: "
    if len(words) != 3 or words[1] != str(k):
        raise LayoutError(f"{where}{_short(lines[index])} is not 'subfile {k} NAME'")
    problem = name_problem(words[2])
    if problem:
        raise LayoutError(f"{where}subfile {k} is {problem}")
    return words[2]


def _check_end(lines: list[str], index: int, count: int) -> None:
    _line(lines, index, "end", count)
    if lines[index] != "end":
        raise LayoutError(f"line {index + 1}: {_short(lines[index])} is not 'end'")
    if index + 1 < len(lines):
        raise LayoutError(f"line {index + 2}: text after 'end'")


def _short(text: str, width: int = 60) -> str:
    return repr(text if len(text) <= width else text[:width] + "...")
