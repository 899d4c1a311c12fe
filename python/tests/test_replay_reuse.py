"""aggio replay reproduces rewrites and read-modify-write, and says what it
cannot place when the log has no offsets (issue 26, item 7)."""
import json
import os

import numpy as np
from builders import TraceBuilder, two_phase_write
from paths import BENCH, SHARED, requires_bench, requires_shared

from aggio import cli, replay, reuse
from aggio.model import OPS
from aggio.pattern import detect
from aggio.sources import load_jobs

KiB = 1 << 10


def ops(rows):
    """(t_start, offset, length) rows as the reader's op records."""
    out = np.zeros(len(rows), OPS)
    for i, (t, off, n) in enumerate(rows):
        out[i]["t_start"], out[i]["t_end"], out[i]["offset"], out[i]["length"] = t, t + 1, off, n
    return out


def test_merge_and_overlap_on_fixed_ranges():
    starts, ends = reuse.merge(np.array([0, 50, 100, 300]), np.array([60, 20, 100, 10]))
    assert starts.tolist() == [0, 100, 300] and ends.tolist() == [70, 200, 310]
    got = reuse.overlap(np.array([60, 0, 250, 305]), np.array([50, 400, 10, 100]), starts, ends)
    assert got.tolist() == [10 + 10, 70 + 100 + 10, 0, 5]


def test_measure_rewrites_read_before_write_and_unknown_offsets():
    writes = ops([(0, 0, 100), (1, 100, 100), (5, 0, 100), (6, -1, 100)])
    reads = ops([(3, 0, 50), (9, 100, 100), (2, -1, 8)])
    use = reuse.measure(writes, reads)
    assert (use.written, use.unique_written, use.rewritten) == (300, 200, 100)
    assert use.read_before_write == 50          # the read at t=9 is a read-back
    assert use.unknown == 2 and use.rewrite_fraction == 0.5 and use.rmw_fraction == 0.25


def _segmented(tmp_path, name, passes=1, read_first=False, read_back=False, nranks=2,
               block=64 * KiB, offset=None):
    """Each rank writes its block in 4 KiB pwrites, `passes` times; with
    read_first each piece is read just before it is written."""
    b = TraceBuilder(nranks).open_all()
    for _ in range(passes):
        for r in range(nranks):
            for i in range(block // (4 * KiB)):
                off = r * block + i * 4 * KiB if offset is None else offset
                if read_first:
                    b.op(r, "pread", off, 4 * KiB)
                b.op(r, "pwrite", off, 4 * KiB)
    if read_back:
        for r in range(nranks):
            b.op(r, "pread", r * block, block)
    return b.close_all().write(tmp_path / name)


def test_a_rewrite_is_replayed_over_the_file(tmp_path, capsys):
    pat = detect(load_jobs([_segmented(tmp_path, "rw", passes=2)])[0])
    assert pat.rewrite == 1.0 and pat.rmw == 0.0 and pat.fit == 1.0
    assert any("written before (100% of" in n for n in pat.notes)
    rp = replay.build(pat, nranks=2)
    runs = rp.runs(path="f")
    assert [ph.name for ph, _ in runs] == ["write", "rewrite"]
    first, second = (a for _, a in runs)
    assert "-k" in first and "--overwrite" not in first
    assert "--overwrite" in second and "-k" not in second     # the last run removes the file
    assert cli.main(["replay", str(tmp_path / "rw"), "--bench", "/bin/true"]) == 0
    out = capsys.readouterr().out
    assert "# 2. rewrite" in out and "--overwrite" in out


def test_part_of_the_file_rewritten_is_that_share_of_the_layout(tmp_path):
    b = TraceBuilder(1).open_all()
    for i in range(16):
        b.op(0, "pwrite", i * 4 * KiB, 4 * KiB)
    for i in range(4):
        b.op(0, "pwrite", i * 4 * KiB, 4 * KiB)
    pat = detect(load_jobs([b.close_all().write(tmp_path / "part")])[0])
    assert pat.rewrite == 0.25
    rp = replay.build(pat, nranks=1)
    rewrite = dict((ph.name, a) for ph, a in rp.runs())["rewrite"]
    b_, s_ = rp.sized(0.25)
    assert b_ * s_ == rp.block * rp.segments // 4
    assert rewrite[rewrite.index("-b") + 1] == str(b_)


def test_read_modify_write_is_read_then_written_over(tmp_path, capsys):
    pat = detect(load_jobs([_segmented(tmp_path, "rmw", read_first=True)])[0])
    assert pat.rmw == 1.0 and pat.rewrite == 0.0 and pat.write and pat.read
    assert any("read-modify-write" in n for n in pat.notes)
    runs = replay.build(pat, nranks=2).runs(path="f")
    assert [ph.name for ph, _ in runs] == ["fill (untimed)", "read before write", "write"]
    fill, read, write = (a for _, a in runs)
    assert "-w" in fill and "-k" in fill and not runs[0][0].timed
    assert "-r" in read and "-w" not in read and "-k" in read
    assert "--overwrite" in write and "-r" not in write
    assert cli.main(["replay", str(tmp_path / "rmw"), "--json", "--bench", "/bin/true"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [r["phase"] for r in data["runs"]] == ["fill (untimed)", "read before write", "write"]
    assert "--overwrite" in data["command"]


def test_a_read_back_stays_one_run(tmp_path):
    pat = detect(load_jobs([_segmented(tmp_path, "rb", read_back=True)])[0])
    assert pat.rmw == 0.0 and pat.rewrite == 0.0
    (ph, args), = replay.build(pat, nranks=2).runs()
    assert "-w" in args and "-r" in args and "--overwrite" not in args


def test_library_rmw_beneath_mpiio_is_said(tmp_path):
    path = two_phase_write(4, [0, 2], calls=2, rounds=2, buffer=64 * KiB, rmw=True).write(
        tmp_path / "lib", aggregators=[0, 2])
    pat = detect(load_jobs([path])[0])
    assert pat.rmw == 0.0                          # the program itself never reads
    assert any("beneath MPI-IO" in n and "no holes" in n for n in pat.notes)


def test_offsets_of_minus_one_are_unknown_not_overlapping(tmp_path, capsys):
    """Old Darshan wrote -1 for calls through the file pointer: every
    request 'at -1' looked like all ranks writing the same bytes."""
    b = TraceBuilder(4).open_all()
    for r in range(4):
        for _ in range(8):
            b.op(r, "write_at", -1, 16 * KiB, 1)
    path = b.close_all().write(tmp_path / "old")
    pat = detect(load_jobs([path])[0])
    assert pat.unknown_offsets == 32 and np.isnan(pat.fit)
    assert pat.rewrite == 0.0 and pat.block == 8 * 16 * KiB
    assert not any("overlap" in n for n in pat.notes)
    assert cli.main(["replay", path, "--bench", "/bin/true"]) == 0
    out = capsys.readouterr().out
    assert "0.0%" not in out and "overlap" not in out
    assert "no request has an offset in the log: the share reproduced is unknown" in out
    assert "-1: Darshan before 3.2" in out
    assert cli.main(["replay", path, "--json", "--bench", "/bin/true"]) == 0
    data = json.loads(capsys.readouterr().out)        # strict JSON: no NaN
    assert data["pattern"]["fit"] is None and data["pattern"]["unknown_offsets"] == 32


def test_some_offsets_unknown_the_rest_placed(tmp_path, capsys):
    b = TraceBuilder(2).open_all()
    for j in range(8):
        for r in range(2):
            b.op(r, "write_at", (j * 2 + r) * 4 * KiB, 4 * KiB, 1)
    b.op(0, "write_at", -1, 4 * KiB, 1)
    path = b.close_all().write(tmp_path / "some")
    pat = detect(load_jobs([path])[0])
    assert pat.unknown_offsets == 1 and pat.fit == 1.0 and pat.layout == "strided"
    assert cli.main(["replay", path, "--bench", "/bin/true"]) == 0
    assert "reproduces 100.0% of the requests exactly (of the 16 with an offset)" in \
        capsys.readouterr().out


@requires_bench
def test_a_rewrite_and_a_read_modify_write_run(tmp_path, capsys):
    """Real runs at 2 ranks: every run of the sequence succeeds, on one file."""
    for name, kw in (("rw", {"passes": 2}), ("rmw", {"read_first": True})):
        trace = _segmented(tmp_path, name, **kw)
        out = tmp_path / f"{name}.dat"
        assert cli.main(["replay", trace, "--run", "--json", "-o", str(out),
                         "--bench", BENCH]) == 0
        runs = json.loads(capsys.readouterr().out)["runs"]
        assert all(r["result"] for r in runs) and not out.exists()
        read = [r for r in runs if r["phase"] == "read before write"]
        assert not read or read[0]["result"]["read"]["bytes"] > 0


@requires_shared
def test_hdf5s_rewritten_metadata_in_a_real_log(capsys):
    """HDF5 writes its superblock and object headers again at close: 192
    bytes of the 1-byte diagonal test file are written twice."""
    log = os.path.join(SHARED, "hdf5_diagonal_write_only",
                       "hdf5_diagonal_write_1_byte_dxt.darshan")
    pat = detect(load_jobs([log])[0])
    assert 0.1 < pat.rewrite < 0.2 and pat.rmw == 0.0
    assert [ph.name for ph in replay.build(pat).phases] == ["write", "rewrite"]
    assert cli.main(["replay", log, "--bench", "/bin/true"]) == 0
    assert "192 B of the writes go to bytes written before" in capsys.readouterr().out


@requires_shared
def test_a_partial_trace_says_what_the_replay_rests_on():
    log = os.path.join(SHARED, "partial_data_dxt", "partial_data_dxt.darshan")
    pat = detect(load_jobs([log])[0])
    assert any("trace is partial" in n for n in pat.notes)
    assert pat.bytes_per_rank == pat.bytes          # re-reads are kept, not folded
