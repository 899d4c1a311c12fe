"""Choosing a reader, damaged inputs, and the optional dependencies: a file
that is not a log gets aggio's message alone; damaged trace records are
rejected and counted; without Plotly or PyDarshan the tool says what to
install."""
import os
import sys

import numpy as np
import pytest
from builders import TraceBuilder, collective_write

from aggio import cli
from aggio import trace as fmt
from aggio.model import MPIIO, WRITE
from aggio.sources import InputError, load_jobs
from paths import SHARED

EMPTY_LOG = os.path.join(SHARED, "empty_log", "empty_log.darshan")


def test_not_a_log_is_refused_without_pydarshan_noise(tmp_path, capfd):
    bad = tmp_path / "notes.txt"
    bad.write_text("this is not a log\n" * 10)
    assert cli.main(["advise", str(bad)]) == 1
    err = capfd.readouterr().err
    assert "not a Darshan log" in err
    assert "Error:" not in err


@pytest.mark.skipif(not os.path.isfile(EMPTY_LOG),
                    reason=f"no Darshan log {os.path.normpath(EMPTY_LOG)} (a bare clone has "
                           "no shared/ beside it)")
def test_damaged_darshan_log_message_has_pydarshan_reason_once(tmp_path, capfd):
    pytest.importorskip("darshan")
    head = open(EMPTY_LOG, "rb").read(40)
    bad = tmp_path / "damaged.darshan"
    bad.write_bytes(head + b"\xff" * 200)
    assert cli.main(["advise", str(bad)]) == 1
    err = capfd.readouterr().err
    assert err.count("\n") == 1 and err.startswith("aggio advise: ")
    assert "Darshan log" in err and "Error:" not in err


def test_report_without_plotly_says_what_to_install(tmp_path, monkeypatch, capsys):
    path = collective_write(2, 1024, 2, [0]).write(tmp_path / "t")
    monkeypatch.setitem(sys.modules, "plotly", None)
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    assert cli.main(["report", path, "-o", str(tmp_path / "r.html")]) == 1
    assert "aggio[report]" in capsys.readouterr().err
    assert cli.main(["advise", path]) == 0          # advise needs no Plotly


@pytest.mark.skipif(not os.path.isfile(EMPTY_LOG),
                    reason=f"no Darshan log {os.path.normpath(EMPTY_LOG)} (a bare clone has "
                           "no shared/ beside it)")
def test_darshan_log_without_pydarshan_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "darshan", None)
    assert cli.main(["advise", EMPTY_LOG]) == 1
    assert "aggio[darshan]" in capsys.readouterr().err


def _damaged_trace(tmp_path):
    """A trace of 2 ranks, 5 records each, then damage to 5 records."""
    b = TraceBuilder(2).open_all()
    b.op(0, "write_at", 0, 10, 1).op(1, "write_at", 10, 10, 1)
    path = b.close_all().write(tmp_path / "t")
    tr = fmt.read_trace(path)
    rec = np.array(tr.records)
    rec[1]["op"] = 200                      # unknown operation
    rec[2]["t_end"] = 1e30                  # absurd time
    rec[5]["length"] = -1                   # negative length
    rec[6]["offset"] = 2**62
    rec[6]["length"] = 2**62                # range past 2^63
    rec[7]["t_start"] = float("nan")
    return path, rec, tr


def _rewrite(path, rec, tr):
    """Writes rec back over the records of the trace at path."""
    raw = bytearray(open(path, "rb").read())
    start = int(np.frombuffer(raw[48:56], "<u8")[0])
    raw[start:start + rec.nbytes] = rec.tobytes()
    open(path, "wb").write(bytes(raw))


def test_damaged_records_are_rejected_and_counted(tmp_path):
    path, rec, tr = _damaged_trace(tmp_path)
    _rewrite(path, rec, tr)
    job = load_jobs([path])[0]
    note = next(n for n in job.notes if "rejected" in n)
    assert "5 of 10 records rejected" in note
    for reason in ("unknown operation code: 1", "time not finite or beyond 1e7 s: 2",
                   "negative length or type size: 1", "byte range past 2^63: 1"):
        assert reason in note
    assert len(job.ops) > 0 and np.isfinite(job.ops["t_end"]).all()
    assert job.ops["t_end"].max() < 1e7 and (job.ops["length"] >= 0).all()


def test_records_outside_the_ranks_or_their_slot_are_rejected(tmp_path):
    path, rec, tr = _damaged_trace(tmp_path)
    rec = np.array(tr.records)               # undamaged copy
    rec[0]["rank"] = 7                       # no rank 7 in a 2-rank job
    rec[9]["rank"] = 0                       # a rank-1 slot claiming rank 0
    _rewrite(path, rec, tr)
    note = next(n for n in load_jobs([path])[0].notes if "rejected" in n)
    assert "2 of 10 records rejected" in note
    assert "rank outside the header's nranks: 1" in note
    assert "rank differs from its rank-table slot: 2" in note


def test_metadata_of_the_wrong_type_is_ignored(tmp_path):
    path = collective_write(2, 1024, 2, [0]).write(
        tmp_path / "t", meta={"hints": ["not", "a", "dict"], "aggregators": [0, 9],
                              "path": 17}, aggregators=[0])
    job = load_jobs([path])[0]
    assert any("metadata ignored" in n and "hints" in n and "aggregators" in n
               and "path" in n for n in job.notes)
    assert job.files[0].aggregators == [0]   # from the rank table instead


def test_truncated_header_is_an_input_error(tmp_path):
    path = collective_write(2, 1024, 2, [0]).write(tmp_path / "t")
    open(path, "wb").write(open(path, "rb").read()[:70])
    with pytest.raises(InputError):
        load_jobs([path])


def _with_header(path, field, value):
    """Rewrites one header field of the trace at path."""
    raw = bytearray(open(path, "rb").read())
    off, dtype = fmt.HEADER.fields[field][1], fmt.HEADER.fields[field][0]
    raw[off:off + dtype.itemsize] = np.array([value], dtype).tobytes()
    open(path, "wb").write(bytes(raw))


def test_clock_base_must_be_a_time(tmp_path):
    path = collective_write(2, 1024, 2, [0]).write(tmp_path / "t")
    _with_header(path, "clock_base", float("nan"))
    with pytest.raises(InputError, match="clock_base"):
        load_jobs([path])


def test_traces_far_apart_are_not_one_job(tmp_path):
    a = collective_write(2, 1024, 2, [0]).write(tmp_path / "a")
    b = collective_write(2, 1024, 2, [0]).write(tmp_path / "b")
    _with_header(b, "clock_base", 1e300)
    with pytest.raises(InputError, match="not traces of one job"):
        load_jobs([a, b])


def test_deeply_nested_metadata_is_an_input_error(tmp_path):
    path = str(tmp_path / "t")
    fmt.write_trace(path, fmt.make_records(0), 1)
    raw = bytearray(open(path, "rb").read())
    meta = b"[" * 5000 + b"]" * 5000
    raw = raw[:64 + 32] + meta
    raw += bytes(-len(raw) % 8)
    open(path, "wb").write(bytes(raw))
    _with_header(path, "meta_len", len(meta))
    _with_header(path, "records_offset", len(raw))
    with pytest.raises(InputError, match="not JSON"):
        load_jobs([path])


def test_nonblocking_records_count_as_reads_and_writes_once(tmp_path):
    """Codes 10-13 (the starting calls of non-blocking requests) are reads
    and writes of the MPI-IO layer, collective or not as their flag says,
    and non-blocking; a `wait` record (14) completes one and is not counted
    again; a set_view's byte mapping applies to them as to blocking calls."""
    coll = fmt.FLAG_API_COLLECTIVE
    b = TraceBuilder(2).open_all()
    for r in range(2):
        b.op(r, "set_view", 100, 1, 1, flags=fmt.FLAG_VIEW_CONTIGUOUS | coll)
        b.op(r, "iwrite_at_all", r * 4096, 4096, 1, flags=coll)
        b.op(r, "iwrite_at", 8192 + r * 10, 10, 1)
        b.op(r, "pwrite", 100 + r * 4096, 4096)
        b.op(r, "wait", -1, 10, 1).op(r, "wait", -1, 4096, 1, flags=coll)
        b.op(r, "iread_at_all", r * 4096, 1024, 4, flags=coll)
        b.op(r, "iread_at", 0, 7, 1)
        b.op(r, "wait", -1, 7, 1).op(r, "wait", -1, 4096, 1, flags=coll)
    job = load_jobs([b.close_all().write(tmp_path / "t")])[0]
    api = job.files[0].layers[MPIIO]
    assert (api.writes, api.reads) == (4, 4)
    assert (api.bytes_written, api.bytes_read) == (2 * (4096 + 10), 2 * (4096 + 7))
    assert (api.coll_writes, api.indep_writes, api.coll_reads, api.indep_reads) == (2, 2, 2, 2)
    assert (api.nb_writes, api.nb_reads) == (4, 4)
    assert job.ops["length"][job.ops["layer"] == MPIIO].max() == 4096  # no wait counted
    starts = np.sort(job.ops["offset"][(job.ops["layer"] == MPIIO)
                                       & (job.ops["kind"] == WRITE)])
    assert list(starts) == [100, 100 + 4096, 100 + 8192, 100 + 8202]
    assert fmt.OP_NAMES[14] == "wait" and fmt.OP["iread_at_all"] == 13
