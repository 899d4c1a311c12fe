"""Drain staged writes into their final files, or show what is staged (docs/staging.md).

With the hint aggio_stage_dir, each rank writes its bytes to a stage
directory on a fast tier and movers copy them to the final file later.
`drain` replays every valid record of a stage directory (or of each one
under a stage root) into its final file, as the library does at open;
`status` shows what is staged and how far the movers got, changing nothing.

Exit status: 0 when done (or nothing is staged), 1 when a final file could
not be written or a stage file could not be read (the stage files are kept:
run drain again), 2 for bad arguments, a DIR that does not exist or a
malformed manifest (nothing is written for that directory).
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import fcntl
import json
import os
import re
import shutil
import struct
import sys
import time
import zlib
from typing import NamedTuple

# --- format 2 (docs/staging.md, "Files in the stage directory") --------------

FORMAT_VERSION = 2
MANIFEST_HEAD = f"aggio stage {FORMAT_VERSION}"
MAGIC = 0x49534741                      # the bytes "AGSI": the data's CRC in the record
MAGIC_NOCRC = 0x52534741                # "AGSR": the record's own CRC only
                                        # (aggio_stage_checksum=record; data_crc 0)
# magic, epoch, seq, offset, length, data_off, calls, time, data_crc, rec_crc
RECORD = struct.Struct("<IIQQQQQQII")
RECORD_SIZE = RECORD.size               # 64
CRC_COVERS = RECORD_SIZE - 4            # rec_crc is of bytes 0-59
# records moved, bytes moved, movers' start time, time of this update
DRAINED = struct.Struct("<QQdd")
DRAINED_SIZE = DRAINED.size             # 32
# Offsets are MPI_Offset (int64) in the library, and pwrite takes no more.
MAX_OFFSET = (1 << 63) - 1
# <session>.<rank>.<kind>: 16 lowercase hex digits (the open's time in
# microseconds, so that names sort by age) and the decimal rank.
WRITER_FILE = re.compile(r"([0-9a-f]{16})\.(0|[1-9][0-9]*)\.(data|index|drained)")
WRITER_KINDS = ("index", "data", "drained")   # the order drain removes them in

BUFFER = 8 << 20            # one read at most; a longer record is copied in pieces
INDEX_CHUNK = RECORD_SIZE * 65536
MAX_OPEN = 128              # .data files held open at once while replaying
REDRAW = 0.1                # seconds between redraws of the progress bar


class StageError(Exception):
    """A stage that could not be drained or read, said in one line (exit 1)."""


class ManifestError(ValueError):
    """A manifest that is missing or malformed (exit 2)."""


class UsageError(ValueError):
    """A DIR that is not there (exit 2)."""


class Record(NamedTuple):
    """One 64-byte index record, as stored."""
    magic: int
    epoch: int      # the writer's syncs before this write
    seq: int
    offset: int
    length: int
    data_off: int
    calls: int      # the file's collective calls the writer had begun (alike on every rank)
    time: int       # CLOCK_REALTIME in ns when staged, never below the writer's last record's
    data_crc: int
    rec_crc: int


class Staged(NamedTuple):
    """A structurally valid record and its writer.  The fields are in
    replay order, so sorting a list of them gives the order the bytes are
    written in: session (by age), epoch (syncs), calls, time, rank, seq.
    Of two ranks' overlapping writes the one begun after more collective
    calls, then the later one, goes last and wins, as it would have had
    the ranks written directly (HDF5 orders ranks' writes with MPI_Barrier,
    without the sync MPI asks for); rank only makes ties repeatable.
    Within one writer this is seq order: its calls and time never decrease."""
    session: str
    epoch: int
    calls: int
    time: int
    rank: int
    seq: int
    offset: int
    length: int
    data_off: int
    data_crc: int | None    # None: the record carries no CRC of its bytes (AGSR)


class Drained(NamedTuple):
    records: int = 0
    bytes: int = 0
    start: float = 0.0
    last: float = 0.0


# --- pure parsing ---------------------------------------------------------------

def parse_manifest(data: bytes) -> str:
    """The final file's absolute path.  Every line must end in a newline:
    a manifest torn by a crash must not send the bytes to a shortened path."""
    text = os.fsdecode(data)
    if not text.endswith("\n"):
        raise ManifestError("does not end with a newline (torn?)")
    lines = text[:-1].split("\n")
    if lines[0] != MANIFEST_HEAD:
        raise ManifestError(f"first line is {lines[0][:40]!r}, not {MANIFEST_HEAD!r}")
    final = None
    for number, line in enumerate(lines[1:], start=2):
        if line.startswith("#"):
            continue
        if not line.startswith("final "):
            raise ManifestError(f"line {number}: {line[:40]!r} is neither 'final PATH' "
                                "nor a '#' comment")
        if final is not None:
            raise ManifestError(f"line {number}: a second 'final' line")
        final = line[len("final "):]
        if not os.path.isabs(final):
            raise ManifestError(f"line {number}: {final!r} is not an absolute path")
    if final is None:
        raise ManifestError("no 'final PATH' line")
    return final


def writer_file(name: str) -> tuple[str, int, str] | None:
    """(session, rank, kind) of a writer's file name, None for any other
    name (manifest, lock, or a file this format does not know)."""
    m = WRITER_FILE.fullmatch(name)
    return (m.group(1), int(m.group(2)), m.group(3)) if m else None


def is_stage_dir(names) -> bool:
    """A directory with a manifest or a writer's files is one file's stage
    directory (one with writers' files and no manifest is a broken one,
    which must not pass for an empty stage root)."""
    return any(n == "manifest" or writer_file(n) for n in names)


def unpack_record(raw: bytes) -> Record:
    return Record._make(RECORD.unpack(raw))


def record_problem(raw: bytes, position: int, data_size: int) -> str | None:
    """Why these bytes, at record place `position` of an index whose .data
    has data_size bytes, do not count; None when they do.  The data's own
    CRC needs the data, so it is checked where the data is read."""
    if len(raw) != RECORD_SIZE:
        return "partial record"
    rec = unpack_record(raw)
    if rec.magic not in (MAGIC, MAGIC_NOCRC):
        return "bad magic"
    if zlib.crc32(raw[:CRC_COVERS]) != rec.rec_crc:
        return "bad record CRC"
    if rec.seq != position:
        return f"seq {rec.seq} at place {position}"
    if rec.length < 1:
        return "zero length"
    if rec.data_off + rec.length > data_size:
        return "bytes beyond .data"
    if rec.offset + rec.length > MAX_OFFSET:
        return "beyond the largest file offset"
    return None


def scan_index(data: bytes, data_size: int, first: int = 0) -> tuple[list[Record], int]:
    """The records of `data` (index bytes from record place `first` on)
    that count, and how many 64-byte slots (and a trailing partial one)
    do not."""
    good, bad = [], 0
    for at in range(0, len(data), RECORD_SIZE):
        raw = data[at:at + RECORD_SIZE]
        if record_problem(raw, first + at // RECORD_SIZE, data_size) is None:
            good.append(unpack_record(raw))
        else:
            bad += 1
    return good, bad


def parse_drained(data: bytes) -> Drained:
    """A writer's progress; a missing or short file (not written yet, or
    being rewritten) counts as nothing moved."""
    if len(data) < DRAINED_SIZE:
        return Drained()
    return Drained._make(DRAINED.unpack(data[:DRAINED_SIZE]))


def writer_rate(d: Drained) -> float | None:
    """Bytes per second of one writer's movers, None when unknown."""
    span = d.last - d.start
    if not (d.start > 0 and span > 0 and span != float("inf")):
        return None
    return d.bytes / span


# --- the stage directory on disk ------------------------------------------------

def find_stage_dirs(path: str) -> list[str]:
    """PATH itself when it is one file's stage directory, else its
    subdirectories that are, sorted; empty for an empty stage root."""
    if not os.path.exists(path):
        raise UsageError(f"{path} does not exist")
    if not os.path.isdir(path):
        raise UsageError(f"{path} is not a directory")
    if is_stage_dir(os.listdir(path)):
        return [path]
    found = []
    for entry in sorted(os.scandir(path), key=lambda e: e.name):
        with contextlib.suppress(OSError):      # gone: another drainer finished it
            if entry.is_dir() and is_stage_dir(os.listdir(entry.path)):
                found.append(entry.path)
    return found


def read_manifest(directory: str) -> str:
    path = os.path.join(directory, "manifest")
    try:
        with open(path, "rb") as f:
            return parse_manifest(f.read())
    except FileNotFoundError:
        raise ManifestError(f"{path}: missing (the stage directory has writers' files)") \
            from None
    except ManifestError as exc:
        raise ManifestError(f"{path}: not a format {FORMAT_VERSION} manifest: {exc}") from None


def list_writers(directory: str) -> dict[tuple[str, int], set[str]]:
    """{(session, rank): the kinds of file present}, sorted by session (age), then rank."""
    writers = collections.defaultdict(set)
    for name in os.listdir(directory):
        parsed = writer_file(name)
        if parsed:
            writers[parsed[:2]].add(parsed[2])
    return dict(sorted(writers.items()))


def writer_is_live(directory: str, session: str, rank: int) -> bool:
    """Whether a process has the writer's files open: the library holds a
    shared flock on a writer's index while it writes (src/storage/
    stage_dir.h, aggio__stage_hold_live); such a writer's records are not
    left behind, and a drain leaves them alone."""
    try:
        fd = os.open(writer_path(directory, session, rank, "index"), os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def writer_path(directory: str, session: str, rank: int, kind: str) -> str:
    return os.path.join(directory, f"{session}.{rank}.{kind}")


def file_size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except FileNotFoundError:
        return 0


def writer_records(directory: str, session: str, rank: int) -> tuple[list[Staged], int]:
    """The writer's structurally valid records and the count of the others;
    nothing when it has no index."""
    data_size = file_size(writer_path(directory, session, rank, "data"))
    good, bad, first = [], 0, 0
    try:
        f = open(writer_path(directory, session, rank, "index"), "rb")
    except FileNotFoundError:
        return [], 0
    with f:
        while chunk := f.read(INDEX_CHUNK):     # whole records but for the last
            records, invalid = scan_index(chunk, data_size, first)
            good += [Staged(session, r.epoch, r.calls, r.time, rank, r.seq, r.offset,
                            r.length, r.data_off, r.data_crc if r.magic == MAGIC else None)
                     for r in records]
            bad += invalid
            first += len(chunk) // RECORD_SIZE
    return good, bad


def collect(directory: str, writers) -> tuple[list[Staged], int]:
    """Every writer's structurally valid records, in replay order, and the
    count of the others."""
    records, invalid = [], 0
    for session, rank in writers:
        good, bad = writer_records(directory, session, rank)
        records += good
        invalid += bad
    records.sort()
    return records, invalid


def read_exactly(fd: int, offset: int, length: int) -> bytes | None:
    """length bytes at offset, None when the file ends first."""
    parts = []
    while length > 0:
        chunk = os.pread(fd, length, offset)
        if not chunk:
            return None
        parts.append(chunk)
        offset, length = offset + len(chunk), length - len(chunk)
    return b"".join(parts)


def data_crc(fd: int, offset: int, length: int) -> int | None:
    """CRC-32 of the bytes, read BUFFER at a time; None when the file ends first."""
    crc = 0
    while length > 0:
        chunk = read_exactly(fd, offset, min(length, BUFFER))
        if chunk is None:
            return None
        crc = zlib.crc32(chunk, crc)
        offset, length = offset + len(chunk), length - len(chunk)
    return crc


class DataFiles:
    """The writers' .data files, opened as replay reaches them.  At most
    MAX_OPEN stay open: replay interleaves writers, and a stage directory
    on a shared file system can hold more writers than a process may open."""

    def __init__(self, directory: str):
        self.directory = directory
        self.fds: collections.OrderedDict[tuple[str, int], int] = collections.OrderedDict()

    def fd(self, session: str, rank: int) -> int:
        key = (session, rank)
        if key in self.fds:
            self.fds.move_to_end(key)
            return self.fds[key]
        if len(self.fds) >= MAX_OPEN:
            os.close(self.fds.popitem(last=False)[1])
        fd = os.open(writer_path(self.directory, session, rank, "data"),
                     os.O_RDONLY | os.O_CLOEXEC)
        self.fds[key] = fd
        return fd

    def close(self) -> None:
        while self.fds:
            os.close(self.fds.popitem()[1])


class FinalFile:
    """The final file, opened without truncation (bytes nobody staged stay
    as they are); every failure is a StageError that names it."""

    def __init__(self, path: str):
        self.path = path
        self.fd = self._do(os.open, path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def _do(self, call, *args):
        try:
            return call(*args)
        except OSError as exc:
            raise StageError(f"cannot write {self.path}: {exc.strerror}") from None

    def write_at(self, data: bytes, offset: int) -> None:
        view = memoryview(data)
        while view:
            n = self._do(os.pwrite, self.fd, view, offset)
            view, offset = view[n:], offset + n

    def sync(self) -> None:
        self._do(os.fsync, self.fd)

    def close(self) -> None:
        os.close(self.fd)


# --- drain --------------------------------------------------------------------

def take_lock(directory: str) -> int | None:
    """The lock file's descriptor, with the exclusive flock held; None when
    the directory is gone.  The lock file is made if missing.  A drainer
    that finishes removes the lock file, so a lock won on a file that is no
    longer the directory's `lock` is no lock: try again."""
    path = os.path.join(directory, "lock")
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            now = os.stat(path)
            if (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino):
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def replay_one(src: int, final: FinalFile, rec: Staged) -> bool:
    """Writes one record's bytes at its offset; False (nothing written)
    when they do not match its data_crc.  A record longer than BUFFER is
    checked first and copied after, so that memory stays bounded and a bad
    record writes nothing."""
    if rec.length <= BUFFER:
        data = read_exactly(src, rec.data_off, rec.length)
        if data is None or (rec.data_crc is not None and zlib.crc32(data) != rec.data_crc):
            return False
        final.write_at(data, rec.offset)
        return True
    if rec.data_crc is not None and data_crc(src, rec.data_off, rec.length) != rec.data_crc:
        return False
    done = 0
    while done < rec.length:
        data = read_exactly(src, rec.data_off + done, min(rec.length - done, BUFFER))
        if data is None:
            raise StageError(f"a .data file shrank during the drain (record {rec.seq} of "
                             f"{rec.session}.{rec.rank})")
        final.write_at(data, rec.offset + done)
        done += len(data)
    return True


@dataclasses.dataclass
class DrainResult:
    dir: str
    final: str
    records: int = 0
    bytes: int = 0
    invalid: int = 0
    seconds: float = 0.0
    removed: bool = False


def replay(directory: str, path: str, records: list[Staged], result: DrainResult,
           progress) -> None:
    """Writes the records, in order, into the final file at `path`, then
    syncs it: only then may the stage files go."""
    final = FinalFile(path)
    files = DataFiles(directory)
    try:
        for rec in records:
            if replay_one(files.fd(rec.session, rec.rank), final, rec):
                result.records += 1
                result.bytes += rec.length
            else:
                result.invalid += 1
            if progress:
                progress.advance(rec.length)
        final.sync()
    finally:
        files.close()
        final.close()


def remove_writers(directory: str, writers) -> None:
    # The index first: a drain interrupted here leaves .data files without
    # records, which hold nothing to replay and the next drain removes.
    for session, rank in writers:
        for kind in WRITER_KINDS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(writer_path(directory, session, rank, kind))


def remove_if_done(directory: str) -> bool:
    """The last one out removes manifest, lock and the directory; not while
    an index remains (a writer that started since).  True when it is gone."""
    try:
        if any(n.endswith(".index") for n in os.listdir(directory)):
            return False
    except FileNotFoundError:
        return True
    for name in ("manifest", "lock"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(directory, name))
    try:
        os.rmdir(directory)
    except OSError:             # a file this tool does not know, or a new writer
        return False
    return True


def drain(directory: str, bar=None) -> DrainResult | None:
    """Replays one stage directory into its final file and removes it;
    None when another drainer removed it first.  bar(label, total) makes
    a progress bar, or is None."""
    lock = take_lock(directory)
    if lock is None:
        return None
    try:
        start = time.monotonic()
        final = read_manifest(directory)
        writers = {w: kinds for w, kinds in list_writers(directory).items()
                   if not writer_is_live(directory, *w)}
        records, invalid = collect(directory, writers)
        result = DrainResult(directory, final, invalid=invalid)
        progress = bar(os.path.basename(final), sum(r.length for r in records)) if bar else None
        try:
            if records:         # with none, not even an empty final file is made
                replay(directory, final, records, result, progress)
        finally:
            if progress:
                progress.close()
        result.seconds = time.monotonic() - start
        remove_writers(directory, writers)
        result.removed = remove_if_done(directory)
        return result
    finally:
        os.close(lock)


# --- the progress bar -------------------------------------------------------------

class Progress:
    """One line on a terminal: bytes done of total, rate and time left.
    Redrawn at most every REDRAW seconds (a drain of small records would
    spend more on drawing than copying), erased by close()."""

    WIDTH = 24

    def __init__(self, stream, label: str, total: int, clock=time.monotonic,
                 columns: int = 80):
        self.stream, self.label, self.total, self.clock = stream, label, total, clock
        self.columns = columns  # a line that wraps cannot be redrawn in place
        self.done = 0
        self.start = self.drawn = clock()
        self.shown = 0          # characters on the line now

    def advance(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.drawn >= REDRAW:
            self.draw(now)

    def line(self, now: float) -> str:
        fraction = self.done / self.total if self.total else 1.0
        filled = int(fraction * self.WIDTH)
        rate = self.done / (now - self.start) if now > self.start else 0.0
        eta = f"{(self.total - self.done) / rate:.0f} s left" if rate > 0 else "-"
        return (f"{self.label} [{'#' * filled}{'.' * (self.WIDTH - filled)}] "
                f"{fraction:4.0%} {human_bytes(self.done)}/{human_bytes(self.total)} "
                f"{human_bytes(rate)}/s {eta}")

    def draw(self, now: float) -> None:
        text = self.line(now)[:self.columns - 1]
        self.stream.write("\r" + text.ljust(self.shown))
        self.stream.flush()
        self.shown, self.drawn = len(text), now

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r" + " " * self.shown + "\r")
            self.stream.flush()
            self.shown = 0


def terminal_bar(quiet: bool):
    """bar(label, total) for drain when a person watches; None when output
    goes to a file or a pipe (a bar there is noise in a log) or --quiet."""
    if quiet or not (sys.stdout.isatty() and sys.stderr.isatty()):
        return None
    columns = shutil.get_terminal_size().columns
    return lambda label, total: Progress(sys.stderr, label, total, columns=columns)


def human_bytes(n: float) -> str:
    """Decimal units, as MB/s is counted in aggio's benchmarks."""
    units = ("B", "kB", "MB", "GB", "TB")
    k = 0
    while abs(n) >= 1000 and k < len(units) - 1:
        n, k = n / 1000, k + 1
    return f"{n:.0f} B" if k == 0 else f"{n:.1f} {units[k]}"


def drain_summary(r: DrainResult) -> str:
    rate = r.bytes / r.seconds / 1e6 if r.seconds > 0 else 0.0
    skipped = f"{r.invalid} invalid record{'' if r.invalid == 1 else 's'} skipped"
    return (f"{r.final}: {r.records} records, {r.bytes} bytes in {r.seconds:.2f} s "
            f"({rate:.1f} MB/s), {skipped}")


def run_drain(args) -> int:
    dirs = find_stage_dirs(args.dir)
    if not dirs and not args.quiet:
        print(f"{args.dir}: nothing staged")
    worst = 0
    for directory in dirs:      # each on its own: one bad manifest keeps no other back
        try:
            result = drain(directory, terminal_bar(args.quiet))
        except ManifestError as exc:
            print(f"aggio stage drain: {exc}; nothing written", file=sys.stderr)
            worst = max(worst, 2)
            continue
        except (StageError, OSError) as exc:
            print(f"aggio stage drain: {directory}: {describe(exc)}; the stage files are "
                  "kept", file=sys.stderr)
            worst = max(worst, 1)
            continue
        if not args.quiet:
            print(drain_summary(result) if result else f"{directory}: drained by another "
                                                       "process meanwhile")
    return worst


# --- status ---------------------------------------------------------------------

@dataclasses.dataclass
class DirStatus:
    dir: str
    final: str
    writers: int = 0
    records: int = 0
    staged_bytes: int = 0
    drained_bytes: int = 0
    remaining_bytes: int = 0
    rate_bytes_per_s: float | None = None
    invalid_records: int = 0
    update_age_s: float | None = None


def count_valid(directory: str, session: str, rank: int, status: DirStatus) -> None:
    """Adds one writer's valid records (data CRC included) to status."""
    records, invalid = writer_records(directory, session, rank)
    status.invalid_records += invalid
    if not records:
        return
    with open(writer_path(directory, session, rank, "data"), "rb") as f:
        for rec in records:
            if rec.data_crc is None or \
                    data_crc(f.fileno(), rec.data_off, rec.length) == rec.data_crc:
                status.records += 1
                status.staged_bytes += rec.length
            else:
                status.invalid_records += 1


def drained_away(directory: str) -> bool:
    """A drain removes the writers' files before the manifest: a directory
    without a manifest and without writers is one that a drain finished."""
    try:
        return (not os.path.exists(os.path.join(directory, "manifest"))
                and not list_writers(directory))
    except FileNotFoundError:
        return True


def read_drained(path: str) -> Drained:
    try:
        with open(path, "rb") as f:
            return parse_drained(f.read(DRAINED_SIZE))
    except FileNotFoundError:
        return Drained()


def add_progress(status: DirStatus, progress: list[Drained], now: float) -> None:
    """The movers' side: bytes moved, the summed rate, the newest update."""
    status.drained_bytes = sum(d.bytes for d in progress)
    status.remaining_bytes = max(status.staged_bytes - status.drained_bytes, 0)
    rates = [r for r in map(writer_rate, progress) if r is not None]
    status.rate_bytes_per_s = sum(rates) if rates else None
    last = max((d.last for d in progress if d.last > 0), default=None)
    status.update_age_s = max(now - last, 0.0) if last is not None else None


def dir_status(directory: str, now: float) -> DirStatus | None:
    """What one stage directory holds; None when it went away meanwhile.
    No lock: a drain holds it for as long as it copies, and status is what
    one runs to watch a drain.  Files that vanish mid-read were drained."""
    try:
        status = DirStatus(directory, read_manifest(directory))
        writers = list_writers(directory)
    except ManifestError:
        if drained_away(directory):
            return None
        raise
    except FileNotFoundError:
        return None
    progress = []
    for (session, rank), kinds in writers.items():
        if "index" in kinds:
            status.writers += 1
            with contextlib.suppress(FileNotFoundError):
                count_valid(directory, session, rank, status)
        progress.append(read_drained(writer_path(directory, session, rank, "drained")))
    add_progress(status, progress, now)
    return status


def age_text(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s ago"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min ago"
    return f"{seconds / 3600:.1f} h ago"


STATUS_COLUMNS = ("WRITERS", "RECORDS", "STAGED", "DRAINED", "REMAINING", "RATE", "UPDATED",
                  "INVALID", "FINAL")


def status_row(s: DirStatus) -> tuple[str, ...]:
    rate = "-" if s.rate_bytes_per_s is None else f"{human_bytes(s.rate_bytes_per_s)}/s"
    return (str(s.writers), str(s.records), human_bytes(s.staged_bytes),
            human_bytes(s.drained_bytes), human_bytes(s.remaining_bytes), rate,
            age_text(s.update_age_s), str(s.invalid_records), s.final)


def render_status(statuses: list[DirStatus]) -> str:
    rows = [STATUS_COLUMNS] + [status_row(s) for s in statuses]
    widths = [max(len(r[k]) for r in rows) for k in range(len(STATUS_COLUMNS) - 1)]
    # numbers right-aligned; the path last, unpadded, however long it is
    return "\n".join("  ".join([c.rjust(w) for c, w in zip(r, widths)] + [r[-1]])
                     for r in rows)


def run_status(args) -> int:
    dirs = find_stage_dirs(args.dir)
    now = time.time()
    statuses, worst = [], 0
    for directory in dirs:
        try:
            s = dir_status(directory, now)
        except ManifestError as exc:
            print(f"aggio stage status: {exc}", file=sys.stderr)
            worst = 2
            continue
        if s is not None:
            statuses.append(s)
    if args.json:
        print(json.dumps([dataclasses.asdict(s) for s in statuses], indent=1))
    elif statuses:
        print(render_status(statuses))
    elif worst == 0:
        print(f"{args.dir}: nothing staged")
    return worst


# --- the command line ----------------------------------------------------------

ACTIONS = {"drain": run_drain, "status": run_status}
DIR_HELP = ("one file's stage directory (it holds a manifest), or the aggio_stage_dir "
            "root: every stage directory in it")


def setup_parser(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    p = actions.add_parser(
        "drain", help="write the staged bytes into their final files and remove the stage",
        description="Under the directory's lock, write every valid record's bytes at its "
                    "offset in the final file (never truncated), oldest session first, "
                    "then by syncs, collective calls and time, so the newest write wins; "
                    "fsync it, then remove the writers' files and, once no writer is "
                    "left, the directory.  Invalid records (torn by a crash) are skipped "
                    "and counted.  Safe to run again: a rerun writes the same bytes.")
    p.add_argument("dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--quiet", action="store_true",
                   help="no summary line and no progress bar (errors still go to stderr)")
    p = actions.add_parser(
        "status", help="what is staged, how much the movers drained, and how fast",
        description="Per stage directory: the final file, the writers, the valid records "
                    "and their bytes, the bytes the movers report drained, what remains, "
                    "their rate and the age of their last update.  Changes nothing and "
                    "takes no lock, so it can watch a drain.")
    p.add_argument("dir", metavar="DIR", help=DIR_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    return parser


def describe(exc: Exception) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.filename}: {exc.strerror}" if exc.filename else exc.strerror
    return str(exc)


def main(argv: list[str] | None = None) -> int:
    args = setup_parser(argparse.ArgumentParser(
        prog="aggio stage",
        description=__doc__.split("\n\n")[1].replace("\n", " "))).parse_args(argv)
    try:
        return ACTIONS[args.action](args)
    except (UsageError, ManifestError) as exc:
        print(f"aggio stage {args.action}: {exc}", file=sys.stderr)
        return 2
    except (StageError, OSError) as exc:
        print(f"aggio stage {args.action}: {describe(exc)}", file=sys.stderr)
        return 1
