"""aggio stage drain|status on stage directories built here by the spec's
writer (docs/staging.md, format 2), independent of the reader under test:
records packed with struct and zlib.crc32 in this file."""
import errno
import fcntl
import io
import itertools
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import threading
import time
import zlib

import pytest

from aggio import cli, stage
from paths import ROOT, _built

# The format as docs/staging.md states it, written out again here.
MAGIC = 0x49534741
MAGIC_NOCRC = 0x52534741    # "AGSR": the record's own CRC only (aggio_stage_checksum=record)
# magic, epoch, seq, offset, length, data_off, calls, time, data_crc
HEAD = "<IIQQQQQQI"
DRAINED = "<QQdd"
# Format 1, which drain no longer reads: 48-byte records without calls and time.
HEAD_1 = "<IIQQQQI"


def record(*, epoch, seq, offset, length, data_off, calls, time_ns, data_crc, magic=MAGIC,
           rec_crc=None):
    head = struct.pack(HEAD, magic, epoch, seq, offset, length, data_off, calls, time_ns,
                       data_crc)
    return head + struct.pack("<I", zlib.crc32(head) if rec_crc is None else rec_crc)


def record_1(*, epoch, seq, offset, length, data_off, data_crc, magic=MAGIC):
    head = struct.pack(HEAD_1, magic, epoch, seq, offset, length, data_off, data_crc)
    return head + struct.pack("<I", zlib.crc32(head))


# CLOCK_REALTIME in ns, as the writers read it: one clock for every writer
# of every test, so that a write made later in a test has the larger time.
CLOCK = itertools.count(1_700_000_000 * 10 ** 9, 1000)


def fnv1a64(data: bytes) -> int:
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def make_stage(root, final, comments=("# written by test_stage",)):
    """A per-file stage directory for `final` under `root`, with its manifest."""
    final = os.path.abspath(final)
    directory = root / f"{os.path.basename(final)}.{fnv1a64(final.encode()):016x}"
    directory.mkdir(parents=True)
    text = f"aggio stage 2\nfinal {final}\n" + "".join(c + "\n" for c in comments)
    (directory / "manifest").write_text(text)
    return directory


class Writer:
    """One rank of one session, appending as the library does: the bytes to
    .data, then their record to .index."""

    def __init__(self, directory, session, rank):
        self.base = directory / f"{session:016x}.{rank}"
        self.data = self.path("data")
        self.index = self.path("index")
        self.data.write_bytes(b"")
        self.index.write_bytes(b"")
        self.seq = 0

    def path(self, kind):
        return self.base.parent / f"{self.base.name}.{kind}"

    def write(self, offset, data, epoch=0, calls=0, time_ns=None, **spoil):
        """Stages `data` for `offset`, at time_ns or now by CLOCK; spoil
        overrides record fields to make an invalid record (its bytes are
        appended all the same)."""
        data_off = self.data.stat().st_size
        with open(self.data, "ab") as f:
            f.write(data)
        fields = dict(epoch=epoch, seq=self.seq, offset=offset, length=len(data),
                      data_off=data_off, calls=calls,
                      time_ns=next(CLOCK) if time_ns is None else time_ns,
                      data_crc=zlib.crc32(data))
        fields.update(spoil)
        self.append(record(**fields))

    def append(self, raw):
        with open(self.index, "ab") as f:
            f.write(raw)
        self.seq += 1

    def drained(self, records, nbytes, start, last, raw=None):
        self.path("drained").write_bytes(
            raw if raw is not None else struct.pack(DRAINED, records, nbytes, start, last))


def applied(writes, base=b""):
    """The file that results from writing (offset, data) in this order."""
    out = bytearray(base)
    for offset, data in writes:
        end = offset + len(data)
        if end > len(out):
            out.extend(bytes(end - len(out)))
        out[offset:end] = data
    return bytes(out)


def pattern(n, seed):
    return bytes((seed * 31 + i * 7) % 251 for i in range(n))


def run(*argv):
    return cli.main(["stage", *map(str, argv)])


def snapshot(directory):
    """{name: (mtime_ns, bytes)} of a stage directory, and its own mtime."""
    files = {p.name: (p.stat().st_mtime_ns, p.read_bytes()) for p in directory.iterdir()}
    return directory.stat().st_mtime_ns, files


# --- the format's pure parts -----------------------------------------------------

def test_constants_are_the_format():
    assert stage.RECORD_SIZE == struct.calcsize(HEAD + "I") == 64
    assert stage.CRC_COVERS == 60
    assert stage.DRAINED_SIZE == struct.calcsize(DRAINED) == 32
    assert struct.pack("<I", stage.MAGIC) == b"AGSI"
    assert struct.pack("<I", stage.MAGIC_NOCRC) == b"AGSR"
    assert stage.FORMAT_VERSION == 2 and stage.MANIFEST_HEAD == "aggio stage 2"


def test_the_docs_state_the_format():
    doc = open(os.path.join(ROOT, "docs", "staging.md")).read()
    assert f"`0x{stage.MAGIC:08X}`" in doc and "aggio stage 2\n" in doc
    assert "64-byte records" in doc


def test_a_record_holds_calls_and_time():
    raw = record(epoch=1, seq=2, offset=3, length=4, data_off=5, calls=6, time_ns=7,
                 data_crc=8)
    assert stage.unpack_record(raw)[:9] == (MAGIC, 1, 2, 3, 4, 5, 6, 7, 8)
    assert raw[40:48] == (6).to_bytes(8, "little") and raw[48:56] == (7).to_bytes(8, "little")
    assert raw[60:] == zlib.crc32(raw[:60]).to_bytes(4, "little")


def good_raw(**spoil):
    fields = dict(epoch=2, seq=3, offset=100, length=10, data_off=20, calls=4,
                  time_ns=1_700_000_000 * 10 ** 9, data_crc=zlib.crc32(b"x" * 10))
    fields.update(spoil)
    return record(**fields)


@pytest.mark.parametrize("raw,place,words", [
    (good_raw(), 3, None),
    (good_raw(magic=MAGIC_NOCRC, data_crc=0), 3, None),
    (good_raw(magic=0x41475349), 3, "magic"),
    (bytes(64), 3, "magic"),
    (good_raw(rec_crc=1), 3, "record CRC"),
    (good_raw()[:63], 3, "partial"),
    (good_raw()[:48], 3, "partial"),
    (record_1(epoch=2, seq=3, offset=100, length=10, data_off=20, data_crc=0), 3, "partial"),
    (good_raw(), 4, "seq 3 at place 4"),
    (good_raw(length=0), 3, "zero length"),
    (good_raw(data_off=21), 3, "beyond .data"),
    (good_raw(offset=(1 << 63) - 5), 3, "largest file offset"),
])
def test_record_problem(raw, place, words):
    problem = stage.record_problem(raw, place, 30)
    assert problem is None if words is None else words in problem


def test_a_flipped_bit_anywhere_in_a_record_makes_it_invalid():
    raw = good_raw()
    for bit in range(64 * 8):
        spoiled = bytearray(raw)
        spoiled[bit // 8] ^= 1 << (bit % 8)
        assert stage.record_problem(bytes(spoiled), 3, 1000) is not None, bit


def test_scan_index_counts_every_bad_slot_and_a_partial_tail():
    good = [good_raw(seq=k) for k in range(3)]
    data = good[0] + bytes(64) + good[2] + good[2][:20]
    records, bad = stage.scan_index(data, 30)
    assert [r.seq for r in records] == [0, 2] and bad == 2
    records, bad = stage.scan_index(good[2], 30, first=2)     # a later chunk
    assert [r.seq for r in records] == [2] and bad == 0


def test_manifest_with_comments():
    text = b"aggio stage 2\n# made by rank 0\nfinal /scratch/a b.h5\n# more\n"
    assert stage.parse_manifest(text) == "/scratch/a b.h5"


@pytest.mark.parametrize("text,words", [
    (b"aggio stage 1\nfinal /x\n", "not 'aggio stage 2'"),       # format 1
    (b"aggio stage 3\nfinal /x\n", "not 'aggio stage 2'"),
    (b"aggio stage 2 \nfinal /x\n", "not 'aggio stage 2'"),
    (b"aggio stage 2\n", "no 'final"),
    (b"aggio stage 2\nfinal x/y\n", "absolute"),
    (b"aggio stage 2\nfinal /x\nfinal /y\n", "second"),
    (b"aggio stage 2\nfinal /x\nsize 5\n", "line 3"),
    (b"aggio stage 2\n\nfinal /x\n", "line 2"),
    (b"aggio stage 2\nfinal /scratch/ckp", "newline"),
    (b"", "newline"),
])
def test_bad_manifests_are_refused(text, words):
    with pytest.raises(stage.ManifestError) as exc:
        stage.parse_manifest(text)
    assert words in str(exc.value)


@pytest.mark.parametrize("name,parsed", [
    ("0123456789abcdef.0.index", ("0123456789abcdef", 0, "index")),
    ("0123456789abcdef.17.data", ("0123456789abcdef", 17, "data")),
    ("0123456789abcdef.3.drained", ("0123456789abcdef", 3, "drained")),
    ("0123456789ABCDEF.3.data", None),
    ("0123456789abcde.3.data", None),
    ("0123456789abcdef.03.data", None),
    ("0123456789abcdef.3.data.tmp", None),
    ("manifest", None),
    ("lock", None),
])
def test_writer_file_names(name, parsed):
    assert stage.writer_file(name) == parsed


def test_drained_progress_and_rate():
    d = stage.parse_drained(struct.pack(DRAINED, 4, 1000, 10.0, 12.0) + b"extra")
    assert d == (4, 1000, 10.0, 12.0) and stage.writer_rate(d) == 500.0
    assert stage.parse_drained(struct.pack(DRAINED, 4, 1000, 10.0, 12.0)[:31]) == (0, 0, 0, 0)
    assert stage.writer_rate(stage.parse_drained(b"")) is None
    assert stage.writer_rate(stage.Drained(1, 5, 10.0, 10.0)) is None


# --- drain: the order of replay ----------------------------------------------------

def test_within_a_writer_the_newest_write_wins(tmp_path, capsys):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    w.write(0, b"A" * 100)
    w.write(50, b"B" * 100)
    w.write(0, b"C" * 10)
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(0, b"A" * 100), (50, b"B" * 100), (0, b"C" * 10)])
    assert "3 records, 210 bytes" in capsys.readouterr().out


def test_a_writer_whose_files_are_open_is_left_alone(tmp_path):
    """The library holds a shared flock on a live writer's index (another
    group of ranks may have the file open with a session of its own): a
    drain replays the other writers and leaves that one's files, and takes
    them once the lock is gone (the process closed them, or died)."""
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    done, live = Writer(d, 1, 0), Writer(d, 2, 1)
    done.write(0, b"done")
    live.write(4, b"live")
    fd = os.open(live.index, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        assert run("drain", d) == 0
        assert final.read_bytes() == b"done"
        assert live.index.exists() and live.data.exists() and not done.index.exists()
    finally:
        os.close(fd)
    assert run("drain", d) == 0
    assert final.read_bytes() == b"donelive"
    assert not d.exists()


def test_the_older_session_is_replayed_first(tmp_path):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    new = Writer(d, 0x5000, 0)              # made first; its record has the smaller seq
    new.write(0, b"new!")
    old = Writer(d, 0x4fff, 1)
    for k in range(3):
        old.write(100 + k, b"x")
    old.write(0, b"old.")
    assert run("drain", d) == 0
    assert final.read_bytes()[:4] == b"new!"


def test_epochs_order_writes_of_different_ranks(tmp_path):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    after_sync = Writer(d, 7, 0)
    after_sync.write(0, b"synced", epoch=1)     # seq 0, but after the sync
    before = Writer(d, 7, 1)
    for k in range(4):
        before.write(1000 + k, b"y")
    before.write(0, b"before", epoch=0)          # seq 4, before the sync
    assert run("drain", d) == 0
    assert final.read_bytes()[:6] == b"synced"


def test_many_writers_with_few_open_files(tmp_path, monkeypatch):
    monkeypatch.setattr(stage, "MAX_OPEN", 2)
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    writers = [Writer(d, 9, r) for r in range(5)]
    writes = []
    for k in range(4):                          # replay interleaves the writers
        for r, w in enumerate(writers):
            data = pattern(30, r * 10 + k)
            w.write((k * 5 + r) * 30, data)
            writes.append(((k * 5 + r) * 30, data))
    assert run("drain", d) == 0
    assert final.read_bytes() == applied(writes)


def two_ranks_overlapping(tmp_path, calls, times, padding):
    """Ranks 0 and 1 of one session and epoch each stage one write over the
    same bytes (rank r's with calls[r] and times[r]); the rank named by
    `padding` first stages three writes elsewhere, so that its overlapping
    record has the larger seq.  The final file after a drain."""
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    writers = [Writer(d, 3, 0), Writer(d, 3, 1)]
    for k in range(3):
        writers[padding].write(1000 + k, b"p", calls=0, time_ns=1 + k)
    writers[0].write(0, b"0" * 100, calls=calls[0], time_ns=times[0])
    writers[1].write(50, b"1" * 100, calls=calls[1], time_ns=times[1])
    assert run("drain", "--quiet", d) == 0
    return final.read_bytes()[:150]


RANK_0_WINS = b"0" * 100 + b"1" * 50
RANK_1_WINS = b"0" * 50 + b"1" * 100


@pytest.mark.parametrize("calls,times,winner", [
    ((1, 1), (100, 200), 1),        # the same calls: the later write wins
    ((1, 1), (200, 100), 0),
    ((1, 2), (200, 100), 1),        # more calls win over an older time
    ((3, 2), (100, 200), 0),        # calls dominate time, whichever rank
    ((2, 3), (200, 100), 1),
    ((5, 5), (100, 100), 1),        # a tie: rank only makes the order repeatable
])
def test_of_two_ranks_overlapping_writes_the_newer_wins(tmp_path, calls, times, winner):
    """HDF5 writes fill values from one rank, then MPI_Barrier, then the data
    from another over the same bytes, with no MPI_File_sync between: drain
    must leave the bytes the later write left had the ranks written directly,
    whichever of the two records has the smaller seq."""
    want = RANK_1_WINS if winner == 1 else RANK_0_WINS
    assert two_ranks_overlapping(tmp_path / "a", calls, times, padding=winner) == want
    assert two_ranks_overlapping(tmp_path / "b", calls, times, padding=1 - winner) == want


def test_fill_values_then_data_from_another_rank(tmp_path):
    """The HDF5 pattern as calls go: rank 0 fills a dataset with zeros, the
    ranks meet at a barrier, rank 1 writes its part and rank 0 its own."""
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    r0, r1 = Writer(d, 8, 0), Writer(d, 8, 1)
    r0.write(0, b"H" * 64, calls=0)                 # the file's header
    r0.write(64, bytes(400), calls=1)               # fill values, seq 1
    r1.write(264, pattern(200, 1), calls=1)         # after the barrier, seq 0
    r0.write(64, pattern(200, 2), calls=1)
    r0.write(200, b"h" * 8, calls=2)                # a later collective call
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(0, b"H" * 64), (64, bytes(400)),
                                          (264, pattern(200, 1)), (64, pattern(200, 2)),
                                          (200, b"h" * 8)])


def random_stage(d, seed, n, span):
    """n random overlapping writes of four ranks between the same syncs,
    made one after the other by one clock, some after a collective call:
    [(offset, bytes)] in the order they were made."""
    rng = random.Random(seed)
    writers = [Writer(d, 4, r) for r in range(4)]
    writes, calls = [], 0
    for k in range(n):
        calls += rng.random() < 0.1
        offset, data = rng.randrange(span), pattern(rng.randrange(1, 300), k)
        rng.choice(writers).write(offset, data, calls=calls)
        writes.append((offset, data))
    return writes


def test_writes_of_many_ranks_replay_in_the_order_they_were_made(tmp_path):
    """The drained file of a random four-rank stage is the file its writes
    make in the order they were made, whatever each writer's seq."""
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    writes = random_stage(d, 28, 200, 4000)
    assert run("drain", d) == 0
    assert final.read_bytes() == applied(writes)


C_DRAINER = os.environ.get("AGGIO_STAGE_DRAINER") or _built("aggio-stage-drain", "")


@pytest.mark.skipif(not C_DRAINER, reason="aggio-stage-drain (C) is not built "
                                          "(scripts/build openmpi)")
def test_the_c_drainer_replays_as_the_tool_does(tmp_path):
    """The same random stage drained by `aggio stage drain` and by the
    library's drainer, aggio-stage-drain: the same file, both in the
    writes' order."""
    finals = []
    for who in ("python", "c"):
        final = tmp_path / ("out." + who)
        d = make_stage(tmp_path / ("stage." + who), final)
        writes = random_stage(d, 2028, 150, 6000)
        if who == "python":
            assert run("drain", d) == 0
        else:
            p = subprocess.run([C_DRAINER, str(d)], capture_output=True, text=True,
                               timeout=60)
            assert p.returncode == 0, p.stdout + p.stderr
            assert ": drained" in p.stdout
            assert not os.path.exists(d)
        finals.append(final.read_bytes())
    assert finals[0] == finals[1] == applied(writes)


def test_within_a_writer_ties_of_calls_and_time_go_by_seq(tmp_path):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    for k in range(4):
        w.write(k * 10, pattern(40, k), calls=7, time_ns=500)
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(k * 10, pattern(40, k)) for k in range(4)])


# --- drain: invalid records -----------------------------------------------------------

def test_invalid_records_are_skipped_and_later_ones_written(tmp_path, capsys):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    good = [(0, pattern(64, 1)), (640, pattern(64, 2)), (1280, pattern(64, 3))]
    w.write(*good[0])
    w.write(100, b"bad magic", magic=0x12345678)
    w.write(200, b"bad rec_crc", rec_crc=7)
    w.write(300, b"bad data_crc", data_crc=zlib.crc32(b"something else"))
    w.write(400, b"past .data", length=10 ** 6)
    w.write(500, b"wrong seq", seq=99)
    w.write(600, b"")                                   # length 0
    w.write(*good[1])
    w.append(bytes(64))                                 # a hole of zeros
    w.write(*good[2])
    w.write(2000, b"torn at the end")
    with open(w.index, "r+b") as f:                     # the last record torn
        f.truncate(w.index.stat().st_size - 20)
    assert run("drain", d) == 0
    assert final.read_bytes() == applied(good)
    assert "3 records, 192 bytes" in capsys.readouterr().out
    assert not d.exists()


def test_records_without_a_data_crc_are_replayed_unchecked(tmp_path, capsys):
    """AGSR records (the library's default on /dev/shm) carry no CRC of their
    bytes: they are written as they are, and counted by status."""
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    w.write(0, b"checked")
    w.write(100, b"unchecked", magic=MAGIC_NOCRC, data_crc=0)
    w.write(7, b"!", magic=MAGIC_NOCRC, data_crc=0, rec_crc=5)   # still a torn record
    report = json.loads(subprocess.run(
        [sys.executable, "-m", "aggio", "stage", "status", str(d), "--json"],
        capture_output=True, text=True, check=True).stdout)
    assert report[0]["records"] == 2 and report[0]["staged_bytes"] == 16
    assert report[0]["invalid_records"] == 1
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(0, b"checked"), (100, b"unchecked")])
    assert "2 records, 16 bytes" in capsys.readouterr().out


def test_summary_counts_skipped_records(tmp_path, capsys):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    w = Writer(d, 1, 0)
    w.write(0, b"ok")
    w.write(10, b"bad", data_crc=0)
    w.append(bytes(64))
    w.append(b"\0" * 7)
    assert run("drain", d) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{tmp_path / 'out'}: 1 records, 2 bytes in ")
    assert "MB/s" in line and line.endswith("3 invalid records skipped")


def test_long_records_are_copied_in_pieces(tmp_path, monkeypatch):
    monkeypatch.setattr(stage, "BUFFER", 16)
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    big = pattern(1000, 5)
    w.write(3, big)
    w.write(5000, pattern(100, 6), data_crc=zlib.crc32(pattern(100, 7)))   # writes nothing
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(3, big)])


# --- drain: what it leaves ------------------------------------------------------------

def test_the_final_file_is_not_truncated(tmp_path):
    final = tmp_path / "out"
    before = pattern(10000, 9)
    final.write_bytes(before)
    d = make_stage(tmp_path / "stage", final)
    Writer(d, 1, 0).write(100, b"Z" * 100)
    assert run("drain", d) == 0
    assert final.read_bytes() == applied([(100, b"Z" * 100)], before)


def test_a_new_final_file_has_mode_644(tmp_path):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    Writer(d, 1, 0).write(0, b"x")
    old = os.umask(0o022)
    try:
        assert run("drain", d) == 0
    finally:
        os.umask(old)
    assert final.stat().st_mode & 0o777 == 0o644


def test_drain_removes_the_stage_but_not_the_root(tmp_path):
    root = tmp_path / "stage"
    d = make_stage(root, tmp_path / "out")
    w = Writer(d, 1, 0)
    w.write(0, b"x")
    w.drained(1, 1, 1.0, 2.0)
    Writer(d, 2, 3)                             # a writer that staged nothing
    (d / "0000000000000002.4.data").write_bytes(b"orphan")   # its index never made
    assert run("drain", root) == 0
    assert not d.exists() and root.is_dir() and os.listdir(root) == []


def test_the_directory_stays_while_an_index_remains(tmp_path):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    (d / "lock").write_bytes(b"")
    (d / "unknown.index").write_bytes(b"")
    assert stage.remove_if_done(str(d)) is False
    assert sorted(os.listdir(d)) == ["lock", "manifest", "unknown.index"]
    (d / "unknown.index").unlink()
    assert stage.remove_if_done(str(d)) is True and not d.exists()


def test_the_final_file_is_synced_before_the_stage_goes(tmp_path, monkeypatch):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    w = Writer(d, 1, 0)
    w.write(0, b"x")
    real, synced = os.fsync, []

    def fsync(fd):
        synced.append((os.readlink(f"/proc/self/fd/{fd}"), w.index.exists()))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    assert run("drain", d) == 0
    assert (str(final), True) in synced and not w.index.exists()


def test_a_stage_root_with_two_files(tmp_path, capsys):
    root = tmp_path / "stage"
    a, b = tmp_path / "a", tmp_path / "b"
    Writer(make_stage(root, a), 1, 0).write(0, b"aaaa")
    Writer(make_stage(root, b), 1, 0).write(2, b"bb")
    assert run("drain", root) == 0
    assert a.read_bytes() == b"aaaa" and b.read_bytes() == b"\0\0bb"
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and {line.split(":")[0] for line in out} == {str(a), str(b)}
    assert os.listdir(root) == []


def test_an_empty_root_has_nothing_staged(tmp_path, capsys):
    assert run("drain", tmp_path) == 0
    assert "nothing staged" in capsys.readouterr().out
    assert run("drain", "--quiet", tmp_path) == 0
    assert capsys.readouterr().out == ""


def test_quiet_prints_nothing(tmp_path, capsys):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    Writer(d, 1, 0).write(0, b"x")
    assert run("drain", "--quiet", d) == 0
    assert capsys.readouterr() == ("", "")
    assert (tmp_path / "out").read_bytes() == b"x"


# --- drain: twice, and after an interruption ------------------------------------------

def staged_example(tmp_path, final):
    root = tmp_path / "stage"
    d = make_stage(root, final)
    for session, rank in ((1, 0), (1, 1), (2, 0)):
        w = Writer(d, session, rank)
        for k in range(6):
            w.write((k * 3 + rank) * 100 + session, pattern(150, session * 100 + rank * 10 + k),
                    epoch=k // 3)
    return root, d


def test_draining_twice_gives_the_same_file(tmp_path):
    root, d = staged_example(tmp_path, tmp_path / "out")
    keep = tmp_path / "copy"
    shutil.copytree(d, keep)
    assert run("drain", root) == 0
    first = (tmp_path / "out").read_bytes()
    assert run("drain", root) == 0                     # finds nothing
    assert (tmp_path / "out").read_bytes() == first
    shutil.copytree(keep, d)                           # the same stage again
    assert run("drain", root) == 0
    assert (tmp_path / "out").read_bytes() == first


def reference(tmp_path):
    """The final file of staged_example, drained without interruption."""
    ref = tmp_path / "ref"
    ref.mkdir()
    _, d = staged_example(ref, ref / "out")
    assert run("drain", "--quiet", d) == 0
    return (ref / "out").read_bytes()


def test_an_interrupted_drain_is_finished_by_the_next(tmp_path, monkeypatch, capsys):
    want = reference(tmp_path)
    root, d = staged_example(tmp_path, tmp_path / "out")
    names = sorted(os.listdir(d))
    real, calls = os.pwrite, []

    def failing(fd, data, offset):
        calls.append(offset)
        if len(calls) > 7:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", failing)
    assert run("drain", root) == 1
    monkeypatch.setattr(os, "pwrite", real)
    err = capsys.readouterr().err
    assert "No space left" in err and str(tmp_path / "out") in err and "kept" in err
    assert sorted(os.listdir(d)) == sorted(names + ["lock"])   # the stage files kept
    partial = (tmp_path / "out").read_bytes()
    assert partial != want and 0 < len(partial)
    assert run("drain", root) == 0
    assert (tmp_path / "out").read_bytes() == want


def test_a_final_file_that_has_part_of_the_data_already(tmp_path):
    want = reference(tmp_path)
    (tmp_path / "out").write_bytes(want[:len(want) // 2])
    root, _ = staged_example(tmp_path, tmp_path / "out")
    assert run("drain", root) == 0
    assert (tmp_path / "out").read_bytes() == want


# --- drain: errors ------------------------------------------------------------------

@pytest.mark.parametrize("text", [
    "aggio stage 1\nfinal {final}\n",             # format 1
    "aggio stage 3\nfinal {final}\n",
    "final {final}\n",
    "aggio stage 2\n# no final line\n",
    "aggio stage 2\nfinal out\n",
    "aggio stage 2\nfinal {final}",
    None,                                           # no manifest at all
])
def test_a_bad_manifest_writes_nothing(tmp_path, capsys, text):
    final = tmp_path / "out"
    final.write_bytes(b"untouched")
    root = tmp_path / "stage"
    d = make_stage(root, final)
    Writer(d, 1, 0).write(0, b"staged")
    if text is None:
        (d / "manifest").unlink()
    else:
        (d / "manifest").write_text(text.format(final=final))
    other = tmp_path / "other"
    Writer(make_stage(root, other), 1, 0).write(0, b"fine")
    names = sorted(os.listdir(d))
    assert run("drain", root) == 2
    assert str(d / "manifest") in capsys.readouterr().err
    assert final.read_bytes() == b"untouched"
    assert sorted(n for n in os.listdir(d) if n != "lock") == names
    assert other.read_bytes() == b"fine"            # the other directory still drained


def format_1_writer(directory, writes):
    """A writer's files as format 1 wrote them: 48-byte records, valid by
    that format's rules (its CRC of bytes 0-43)."""
    data, index = b"", b""
    for seq, (offset, payload) in enumerate(writes):
        index += record_1(epoch=0, seq=seq, offset=offset, length=len(payload),
                          data_off=len(data), data_crc=zlib.crc32(payload))
        data += payload
    (directory / "0000000000000001.0.data").write_bytes(data)
    (directory / "0000000000000001.0.index").write_bytes(index)


def test_a_format_1_stage_is_refused(tmp_path, capsys):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    (d / "manifest").write_text(f"aggio stage 1\nfinal {final}\n")
    format_1_writer(d, [(0, b"old format"), (100, b"more")])
    before = snapshot(d)
    assert run("drain", d) == 2
    err = capsys.readouterr().err
    assert str(d / "manifest") in err and "'aggio stage 2'" in err and "nothing written" in err
    assert not final.exists()
    after = snapshot(d)
    del after[1]["lock"]                            # the drain's lock, made empty
    assert after[1] == before[1]
    assert run("status", d) == 2 and run("status", "--json", d) == 2
    assert "'aggio stage 1'" in capsys.readouterr().err
    proc = aggio("drain", d)
    assert proc.returncode == 2 and "format 2" in proc.stderr and not final.exists()


def test_an_index_of_48_byte_records_holds_no_records(tmp_path, capsys):
    """Format 1 records under a format 2 manifest: four of them are three
    64-byte slots, none of them a record; nothing is written."""
    writes = [(0, b"a" * 16), (16, b"b" * 16), (32, b"c" * 16), (48, b"d" * 16)]
    index = b"".join(record_1(epoch=0, seq=k, offset=o, length=len(p), data_off=o,
                              data_crc=zlib.crc32(p)) for k, (o, p) in enumerate(writes))
    assert len(index) == 4 * 48
    assert stage.scan_index(index, 64) == ([], 3)
    assert stage.record_problem(index[:48], 0, 64) == "partial record"
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    format_1_writer(d, writes)
    assert run("status", "--json", d) == 0
    [s] = json.loads(capsys.readouterr().out)
    assert (s["writers"], s["records"], s["staged_bytes"], s["invalid_records"]) == (1, 0, 0, 3)
    assert run("drain", d) == 0
    assert capsys.readouterr().out.strip().endswith(": 0 records, 0 bytes in 0.00 s "
                                                    "(0.0 MB/s), 3 invalid records skipped")
    assert not final.exists()


def test_a_final_file_that_cannot_be_written_keeps_the_stage(tmp_path, capsys):
    final = tmp_path / "out"
    final.mkdir()                                   # a directory: open fails
    d = make_stage(tmp_path / "stage", final)
    Writer(d, 1, 0).write(0, b"x")
    assert run("drain", d) == 1
    assert f"cannot write {final}" in capsys.readouterr().err
    assert (d / "0000000000000001.0.data").read_bytes() == b"x"


def test_a_dir_that_does_not_exist(tmp_path, capsys):
    for action in ("drain", "status"):
        assert run(action, tmp_path / "missing") == 2
        assert "does not exist" in capsys.readouterr().err
    (tmp_path / "file").write_bytes(b"")
    assert run("status", tmp_path / "file") == 2


def test_drain_waits_for_the_lock(tmp_path):
    final = tmp_path / "out"
    d = make_stage(tmp_path / "stage", final)
    Writer(d, 1, 0).write(0, b"x")
    fd = os.open(d / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    done = []
    t = threading.Thread(target=lambda: done.append(stage.drain(str(d))))
    t.start()
    t.join(0.5)
    assert t.is_alive() and not final.exists()
    fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)
    t.join(10)
    assert done[0].records == 1 and final.read_bytes() == b"x"


# --- status ---------------------------------------------------------------------------

def staged_for_status(tmp_path, now):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    w0, w1, w2 = Writer(d, 1, 0), Writer(d, 1, 1), Writer(d, 1, 2)
    w0.write(0, pattern(1500, 1))
    w1.write(1500, pattern(600, 2))
    w1.write(2100, pattern(400, 3))
    w2.write(2500, pattern(500, 4))
    w2.write(3000, pattern(50, 5), data_crc=0)      # invalid
    w2.append(bytes(64))                            # invalid
    w0.drained(1, 1000, now - 20.0, now - 18.0)     # 500 B/s
    w1.drained(1, 600, now - 40.0, now - 37.0)      # 200 B/s
    w2.drained(0, 999, 0, 0, raw=b"short")          # counts as nothing
    return d


def test_status_json(tmp_path, capsys):
    now = time.time()
    d = staged_for_status(tmp_path, now)
    assert run("status", "--json", tmp_path / "stage") == 0
    [s] = json.loads(capsys.readouterr().out)
    age = s.pop("update_age_s")
    assert s == {"dir": str(d), "final": str(tmp_path / "out"), "writers": 3, "records": 4,
                 "staged_bytes": 3000, "drained_bytes": 1600, "remaining_bytes": 1400,
                 "rate_bytes_per_s": pytest.approx(700.0), "invalid_records": 2}
    assert 18.0 <= age < 60.0


def test_status_table(tmp_path, capsys):
    d = staged_for_status(tmp_path, time.time())
    assert run("status", d) == 0
    head, row = capsys.readouterr().out.splitlines()
    assert head.split() == ["WRITERS", "RECORDS", "STAGED", "DRAINED", "REMAINING", "RATE",
                            "UPDATED", "INVALID", "FINAL"]
    assert row.split() == ["3", "4", "3.0", "kB", "1.6", "kB", "1.4", "kB", "700", "B/s",
                           "18", "s", "ago", "2", str(tmp_path / "out")]


def test_status_before_any_mover(tmp_path, capsys):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    Writer(d, 1, 0).write(0, b"12345")
    assert run("status", "--json", d) == 0
    [s] = json.loads(capsys.readouterr().out)
    assert (s["staged_bytes"], s["drained_bytes"], s["remaining_bytes"]) == (5, 0, 5)
    assert s["rate_bytes_per_s"] is None and s["update_age_s"] is None
    assert run("status", d) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row == ["1", "1", "5", "B", "0", "B", "5", "B", "-", "-", "0", str(tmp_path / "out")]


def test_remaining_is_never_below_zero(tmp_path, capsys):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    w = Writer(d, 1, 0)
    w.write(0, b"12345")
    w.drained(3, 5000, 1.0, 2.0)
    assert run("status", "--json", d) == 0
    [s] = json.loads(capsys.readouterr().out)
    assert s["drained_bytes"] == 5000 and s["remaining_bytes"] == 0


def test_status_changes_nothing_and_takes_no_lock(tmp_path, capsys):
    d = staged_for_status(tmp_path, time.time())
    before = snapshot(d)                            # no lock file yet: none is made
    assert run("status", d) == 0 and run("status", "--json", d) == 0
    assert snapshot(d) == before
    fd = os.open(d / "lock", os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)                  # as a drain in progress holds it
    try:
        before = snapshot(d)
        codes = []
        t = threading.Thread(target=lambda: codes.append(run("status", "--json", d)),
                             daemon=True)
        t.start()
        t.join(10)
        assert codes == [0]                         # it did not wait for the lock
        assert snapshot(d) == before
    finally:
        os.close(fd)
    assert (tmp_path / "out").exists() is False


def test_status_of_an_empty_root(tmp_path, capsys):
    assert run("status", tmp_path) == 0
    assert "nothing staged" in capsys.readouterr().out
    assert run("status", "--json", tmp_path) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_status_of_a_bad_manifest(tmp_path, capsys):
    d = make_stage(tmp_path / "stage", tmp_path / "out")
    Writer(d, 1, 0).write(0, b"x")
    (d / "manifest").write_text("aggio stage 9\nfinal /x\n")
    assert run("status", d) == 2
    assert str(d / "manifest") in capsys.readouterr().err


# --- the progress bar -------------------------------------------------------------------

class Clock:
    def __init__(self):
        self.t = 1000.0

    def __call__(self):
        return self.t


def test_the_bar_redraws_at_most_ten_times_a_second_and_is_erased():
    clock, out = Clock(), io.StringIO()
    bar = stage.Progress(out, "ckpt", 2_000_000, clock)
    for _ in range(100):                            # 100 records in one second
        clock.t += 0.01
        bar.advance(10_000)
    draws = out.getvalue().count("\r")
    assert 5 <= draws <= 10
    clock.t = 1002.0                                # 1 MB of 2 in two seconds
    bar.advance(0)
    last = out.getvalue().rsplit("\r", 1)[1]
    assert last.startswith("ckpt [############............]  50% 1.0 MB/2.0 MB")
    assert last.rstrip().endswith("500.0 kB/s 2 s left")
    narrow = stage.Progress(io.StringIO(), "ckpt", 10, clock, columns=20)
    narrow.draw(clock())
    assert len(narrow.stream.getvalue()) == 1 + 19         # never wraps
    bar.close()
    assert out.getvalue().endswith("\r" + " " * len(last.rstrip()) + "\r")


def test_the_bar_shows_on_a_terminal_only(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(stage, "REDRAW", 0.0)       # a redraw per record
    for tty in (False, True):
        d = make_stage(tmp_path / f"stage{tty}", tmp_path / f"out{tty}")
        w = Writer(d, 1, 0)
        for k in range(5):
            w.write(k * 10, b"x" * 10)
        monkeypatch.setattr(sys.stdout, "isatty", lambda: tty)
        monkeypatch.setattr(sys.stderr, "isatty", lambda: tty)
        assert run("drain", d) == 0
        out, err = capsys.readouterr()
        assert ("\r" in err) is tty and ("[#" in err) is tty
        assert "\r" not in out and "5 records, 50 bytes" in out


# --- the command line, as a separate process ------------------------------------------

def aggio(*argv):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run([sys.executable, "-m", "aggio", "stage", *map(str, argv)],
                          capture_output=True, text=True, env=env, timeout=120)


def test_the_command_line(tmp_path):
    root, d = staged_example(tmp_path, tmp_path / "out")
    proc = aggio("status", "--json", root)
    assert proc.returncode == 0 and json.loads(proc.stdout)[0]["records"] == 18
    proc = aggio("drain", root)
    assert proc.returncode == 0 and proc.stderr == ""      # no bar: not a terminal
    assert proc.stdout.startswith(f"{tmp_path / 'out'}: 18 records, 2700 bytes")
    assert not d.exists()
    assert aggio("drain", tmp_path / "missing").returncode == 2
    assert aggio("status", tmp_path / "missing").returncode == 2
    assert aggio("nonsense", root).returncode == 2
    assert aggio("drain").returncode == 2
    bad = make_stage(root, tmp_path / "bad")
    Writer(bad, 1, 0).write(0, b"x")
    (bad / "manifest").write_text("aggio stage 2\n")
    proc = aggio("drain", root)
    assert proc.returncode == 2 and "manifest" in proc.stderr
    (bad / "manifest").write_text(f"aggio stage 2\nfinal {tmp_path}\n")    # a directory
    proc = aggio("drain", root)
    assert proc.returncode == 1 and f"cannot write {tmp_path}" in proc.stderr
