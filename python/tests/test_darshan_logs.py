"""Every Darshan log is read or refused with a message, never the end of
the tool: each real log (every Darshan 3.x format at hand), logs written on
big-endian machines, single-byte corruptions, and libdarshan-util crashing
or hanging (darshan_isolated reads each log in a child process)."""
import os
import signal
import struct
import sys
import time

import numpy as np
import pytest

from aggio import cli
from aggio.model import MPIIO, POSIX
from aggio.sources import InputError, load_jobs
from aggio.sources import darshan_isolated
from aggio.sources.darshan_layout import names_damage, read_layout
from paths import DXT_LOG, LOGS, SHARED, pydarshan_logs, requires_shared

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "..", "tests", "fuzz", "corpus", "darshan")
MPI_IO_TEST = os.path.join(CORPUS, "mpi-io-test-3.41.darshan")   # POSIX, MPI-IO, STDIO
requires_corpus = pytest.mark.skipif(
    not os.path.isdir(CORPUS), reason=f"no Darshan fuzz corpus at {os.path.normpath(CORPUS)} "
                                      "(python/ without the rest of the repository)")


_pydarshan_logs = pydarshan_logs


def _all_logs():
    params = [pytest.param(p, id=os.path.relpath(p, SHARED)) for p in LOGS]
    params += [pytest.param(p, id="pydarshan/" + "/".join(p.split(os.sep)[-2:]))
               for p in _pydarshan_logs()]
    if not LOGS:
        params.append(pytest.param(None, marks=pytest.mark.skip(
            reason=f"no shared Darshan logs at {SHARED} (a bare clone): only PyDarshan's "
                   "own logs are read")))
    return params


@pytest.mark.parametrize("log", _all_logs())
def test_every_real_log_reads_whole(log):
    pytest.importorskip("darshan")
    job = load_jobs([log])[0]
    layout = read_layout(log)
    assert job.kind == "darshan" and job.damaged == []
    assert layout.version[:2] == "3." and layout.checked and not layout.truncated
    assert layout.map_damage == "" and names_damage(log, layout) == ""
    assert job.empty or job.nprocs > 0


def test_the_logs_cover_each_darshan_3_format():
    """Formats 3.10 (PyDarshan's logs), 3.21 and 3.41 are read above; the
    header layouts this reader knows are those and 3.0x, 3.5x."""
    versions = {read_layout(p).version for p in LOGS + _pydarshan_logs()}
    if not LOGS:
        pytest.skip(f"no shared Darshan logs at {SHARED} (a bare clone)")
    assert {"3.10", "3.21", "3.41"} <= versions


def _byte_swapped_header(data: bytes) -> bytes:
    """The log's header as a big-endian machine writes it (3.41 layout)."""
    out = bytearray(data)
    struct.pack_into(">q", out, 8, struct.unpack_from("<q", data, 8)[0])
    struct.pack_into(">Q", out, 24, struct.unpack_from("<Q", data, 24)[0])
    for i in range(2 + 2 * 64):
        struct.pack_into(">Q", out, 32 + 8 * i, struct.unpack_from("<Q", data, 32 + 8 * i)[0])
    for i in range(64):
        at = 32 + 16 + 64 * 16 + 4 * i
        struct.pack_into(">I", out, at, struct.unpack_from("<I", data, at)[0])
    return bytes(out)


@requires_corpus
def test_big_endian_header_is_recognised(tmp_path):
    data = open(MPI_IO_TEST, "rb").read()
    swapped = tmp_path / "big-endian.darshan"
    swapped.write_bytes(_byte_swapped_header(data))
    little, big = read_layout(MPI_IO_TEST), read_layout(str(swapped))
    assert big is not None and big.byte_order == ">" and little.byte_order == "<"
    assert (big.expected, big.module_ends) == (little.expected, little.module_ends)


@requires_corpus
def test_big_endian_log_is_not_refused_as_foreign(tmp_path):
    """Past the header it is refused or read by libdarshan-util (which
    swaps), never called "not a Darshan log"."""
    pytest.importorskip("darshan")
    swapped = tmp_path / "big-endian.darshan"
    swapped.write_bytes(_byte_swapped_header(open(MPI_IO_TEST, "rb").read()))
    try:
        load_jobs([str(swapped)])
    except InputError as exc:
        assert "not a Darshan log" not in str(exc)


def _facts(job) -> list:
    """What aggio read from a log, comparable between two reads."""
    def plain(value):
        return value.tolist() if hasattr(value, "tolist") else value
    files = sorted((f.path, f.nranks, f.stripe_size, f.stripe_count,
                    sorted((layer, {k: plain(v) for k, v in st.__dict__.items()})
                           for layer, st in f.layers.items()))
                   for f in job.files)
    return [job.nprocs, job.runtime, job.exe, sorted(job.notes), job.damaged, files]


def _reads_as_its_original_big_endian(tmp_path, original):
    """libdarshan-util swaps what a big-endian machine wrote: the same log
    rewritten big-endian (darshan_rewrite.py) gives aggio the same job,
    DXT operations included.  Returns the job."""
    darshan = pytest.importorskip("darshan")
    from darshan_rewrite import SWAPPABLE, to_big_endian
    report = darshan.DarshanReport(original, read_all=False)
    modules = sorted(report.modules, key=lambda m: report.modules[m]["idx"])
    swapped = tmp_path / os.path.basename(original).replace(".darshan", "-big-endian.darshan")
    swapped.write_bytes(to_big_endian(open(original, "rb").read(), modules))
    assert read_layout(str(swapped)).byte_order == ">"
    little, big = load_jobs([original])[0], load_jobs([str(swapped)])[0]
    assert big.modules == little.modules & SWAPPABLE
    assert _facts(big) == _facts(little)
    assert big.ops.tobytes() == little.ops.tobytes()
    return big


@pytest.mark.parametrize("name", ["mpi-io-test-3.41.darshan", "ior-hdf5-3.41.darshan",
                                  "empty-3.41.darshan", "dxt-simple-3.21.darshan",
                                  "stdio_only-3.21.darshan", "noposixopens-3.10.darshan"])
@requires_corpus
def test_big_endian_log_reads_as_its_little_endian_original(tmp_path, name):
    _reads_as_its_original_big_endian(tmp_path, os.path.join(CORPUS, name))


@pytest.mark.parametrize("name", ["mpi-io-test-3.41", "dxt-simple-3.21"])
@requires_corpus
def test_big_endian_fuzz_seeds_are_the_rewrites(name):
    """The big-endian seeds are what darshan_rewrite makes of their
    originals (so the rewrite tests above vouch for them)."""
    darshan = pytest.importorskip("darshan")
    from darshan_rewrite import to_big_endian
    original = os.path.join(CORPUS, name + ".darshan")
    report = darshan.DarshanReport(original, read_all=False)
    modules = sorted(report.modules, key=lambda m: report.modules[m]["idx"])
    seed = os.path.join(CORPUS, name.replace("-3.", "-big-endian-3.") + ".darshan")
    assert open(seed, "rb").read() == to_big_endian(open(original, "rb").read(), modules)


@requires_corpus
def test_big_endian_pre_3_2_posix_times_are_swapped_back(tmp_path):
    """libdarshan-util leaves POSIX_F_META_TIME (and the two max times) of
    a big-endian log with POSIX records older than version 4 unswapped
    (2e-317 s for this log's meta time); aggio swaps them back."""
    original = os.path.join(CORPUS, "noposixopens-3.10.darshan")
    job = _reads_as_its_original_big_endian(tmp_path, original)
    assert job.layer_total(POSIX).meta_time > 1e-6


@pytest.mark.parametrize("folder, name", [
    ("mpi_io_test_with_dxt", os.path.basename(DXT_LOG)),
    ("hdf5_diagonal_write_only", "hdf5_diagonal_write_1_byte_dxt.darshan")])
@requires_shared
def test_big_endian_dxt_log_reads_as_its_original(tmp_path, folder, name):
    """Real DXT logs (format 3.21: POSIX and MPI-IO traces of 32 ranks; an
    HDF5 program's POSIX trace) as a big-endian machine writes them: every
    segment read back, the host names left as bytes."""
    job = _reads_as_its_original_big_endian(tmp_path, os.path.join(SHARED, folder, name))
    assert job.has_ops and len(job.ops) > 0


@pytest.mark.parametrize("name", ["dxt-simple-3.21.darshan", "noposixopens-3.10.darshan",
                                  "mpi-io-test-3.41.darshan"])
@requires_corpus
def test_uncompressed_log_reads_as_its_original(tmp_path, name):
    """Darshan's comp_type 2 (no compression), the form of the fuzz seeds
    whose records the fuzzer mutates directly."""
    darshan = pytest.importorskip("darshan")
    from darshan_rewrite import uncompressed
    original = os.path.join(CORPUS, name)
    report = darshan.DarshanReport(original, read_all=False)
    modules = sorted(report.modules, key=lambda m: report.modules[m]["idx"])
    plain = tmp_path / name
    plain.write_bytes(uncompressed(open(original, "rb").read(), modules))
    little, other = load_jobs([original])[0], load_jobs([str(plain)])[0]
    assert _facts(other) == _facts(little)
    assert other.ops.tobytes() == little.ops.tobytes()


@requires_corpus
def test_file_name_that_is_not_utf8_is_read(tmp_path):
    """Linux file names are bytes: a Latin-1 name (PyDarshan alone fails
    on it and loses every module) is kept, its byte escaped."""
    pytest.importorskip("darshan")
    plain = open(os.path.join(CORPUS, "mpi-io-test-3.41-uncompressed.darshan"), "rb").read()
    names_at = struct.unpack_from("<Q", plain, 32)[0]       # also in the command line
    at = plain.index(b"mpi-io-test.tmp.dat", names_at)
    latin = tmp_path / "latin1-name.darshan"
    latin.write_bytes(plain[:at] + b"mpi-io-t\xe9st" + plain[at + 11:])
    job = load_jobs([str(latin)])[0]
    assert job.damaged == []
    assert sorted(f.path.rsplit("/", 1)[-1] for f in job.files) == [
        "<STDOUT>", "mpi-io-t\\xe9st.tmp.dat"]
    assert {POSIX, MPIIO} <= set(next(f for f in job.files if "t\\xe9st" in f.path).layers)


def test_dxt_checks():
    from aggio.sources.darshan import SEGMENT
    from aggio.sources.dxt_checks import record_problem, valid_segments
    assert record_problem(3, 1, 0, 4) == "" and record_problem(0, 0, 0, 0) == ""
    assert record_problem(4, 1, 0, 4) and record_problem(-1, 1, 0, 4)
    assert record_problem(0, -1, 2, 4)
    segs = np.array([(0, 10, 1.0, 2.0), (-1, 10, 1.0, 1.0), (0, 10, np.nan, 2.0),
                     (0, 10, 2.0, 1.0), (0, -1, 1.0, 2.0), (-2, 10, 1.0, 2.0)], SEGMENT)
    kept, dropped = valid_segments(segs)
    assert dropped == 4 and kept.tolist() == segs[:2].tolist()


@requires_corpus
def test_impossible_dxt_records_and_segments_are_left_out(tmp_path):
    """A DXT record of rank 1000 in a 16-process job and a segment ending at
    NaN (fuzzed): left out and counted, the rest of the trace kept."""
    pytest.importorskip("darshan")
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "fuzz"))
    try:
        import fuzz_trace
    finally:
        sys.path.pop(0)
    data = bytearray(open(os.path.join(CORPUS, "dxt-simple-3.21-uncompressed.darshan"),
                          "rb").read())
    # format 3.21: module maps from byte 40; DXT_POSIX is slot 9, DXT_MPIIO 10.
    # A DXT record: id, rank, shared flag, host[64], write and read counts
    # (104 bytes), then segments of offset, length, start, end (32 bytes).
    posix_at = struct.unpack_from("<Q", data, 40 + 16 * 9)[0]
    mpiio_at = struct.unpack_from("<Q", data, 40 + 16 * 10)[0]
    struct.pack_into("<q", data, posix_at + 8, 1000)
    struct.pack_into("<d", data, mpiio_at + 104 + 24, float("nan"))
    bad = tmp_path / "bad-dxt.darshan"
    bad.write_bytes(bytes(data))
    good = load_jobs([os.path.join(CORPUS, "dxt-simple-3.21.darshan")])[0]
    job = load_jobs([str(bad)])[0]
    assert job.damaged == [
        "the DXT_POSIX trace has 1 record with an impossible rank or count; left out "
        "of the timeline",
        "the DXT_MPIIO trace has 1 segment with impossible times, lengths or offsets; "
        "left out of the timeline"]
    assert len(job.ops) == len(good.ops) - 2
    fuzz_trace.check_job(job)


@requires_corpus
def test_library_abort_on_a_damaged_map_names_the_damage():
    """Found by the fuzz pass: a 3.21 log whose header maps a module at
    byte 0 with a length of 2**47; libdarshan-util aborts opening it."""
    pytest.importorskip("darshan")
    log = os.path.join(CORPUS, "header-map-into-the-header.darshan")
    with pytest.raises(InputError) as info:
        load_jobs([log])
    assert str(info.value) == (
        f"{log}: damaged Darshan log: its header is damaged (module slot 5 is mapped at "
        "byte 0, where the records before it end at byte 2090); libdarshan-util crashed "
        "(SIGABRT) reading its header, job or file-name records")


@requires_corpus
def test_damaged_map_is_not_called_truncation(tmp_path):
    """A module mapped far past the end of the file: the header is damaged
    (the regions lie back to back in a whole log), not the log cut short."""
    pytest.importorskip("darshan")
    data = bytearray(open(MPI_IO_TEST, "rb").read())
    struct.pack_into("<Q", data, 32 + 16 + 16 * 1, 2**60)      # slot 1: POSIX
    bad = tmp_path / "bad-map.darshan"
    bad.write_bytes(bytes(data))
    layout = read_layout(str(bad))
    assert not layout.truncated and "module slot 1 is mapped at byte" in layout.map_damage
    job = load_jobs([str(bad)])[0]
    assert job.damaged == [f"the log's header is damaged ({layout.map_damage}): the POSIX "
                           "records lie past the end of the file and were not read"]
    assert job.files and all(POSIX not in f.layers for f in job.files)


@requires_corpus
@pytest.mark.parametrize("seed", range(3))
def test_single_byte_corruptions_never_end_the_tool(tmp_path, seed):
    """The issue's experiment: bytes of one log changed one at a time; each
    copy is read in part or refused, in this process."""
    pytest.importorskip("darshan")
    data = open(MPI_IO_TEST, "rb").read()
    rng = __import__("random").Random(seed)
    outcomes = set()
    for i in range(20):
        bad = bytearray(data)
        bad[rng.randrange(len(data))] ^= rng.randrange(1, 256)
        path = tmp_path / f"c{i}.darshan"
        path.write_bytes(bytes(bad))
        try:
            job = load_jobs([str(path)])[0]
            outcomes.add("damaged" if job.damaged else "read")
        except InputError as exc:
            assert not isinstance(exc.__cause__, darshan_isolated.ReaderBug), exc
            outcomes.add("refused")
    assert outcomes


def _failing_step(monkeypatch, at, action):
    """Makes the child do action() when it reaches step `at`."""
    real = darshan_isolated.load_darshan

    def load(path, skip=frozenset(), stage=None):
        def step(name):
            stage(name)
            if name == at:
                action()
        return real(path, skip, step)
    monkeypatch.setattr(darshan_isolated, "load_darshan", load)


def _segfault():
    os.kill(os.getpid(), signal.SIGSEGV)


@requires_corpus
def test_library_crash_in_a_module_loses_that_module_only(monkeypatch):
    pytest.importorskip("darshan")
    _failing_step(monkeypatch, "POSIX", _segfault)
    job = load_jobs([MPI_IO_TEST])[0]
    assert job.files and "POSIX" in job.modules
    assert len(job.damaged) == 1
    assert "POSIX records crashed (SIGSEGV)" in job.damaged[0]
    assert all(POSIX not in f.layers for f in job.files)
    assert any(f.layers for f in job.files)                    # MPI-IO, STDIO read


@requires_corpus
def test_name_record_without_end_is_refused_before_the_library(capfd):
    """A fuzzed log whose last file name lost its NUL byte: libdarshan-util
    aborts on it in every module; the name check says why first, and the
    tool goes on with the next log."""
    pytest.importorskip("darshan")
    log = os.path.join(CORPUS, "name-record-without-end.darshan")
    assert cli.main(["advise", log, os.path.join(CORPUS, "stdio_only-3.21.darshan")]) == 1
    out, err = capfd.readouterr()
    assert "stdio_only-3.21.darshan (darshan, 1 processes, 1 files)" in out
    assert err == (f"aggio advise: {log}: damaged Darshan log: the file-name record at "
                   "byte 164 of 231 has no end, so no record can be named\n")


@requires_corpus
def test_library_hang_in_a_module_is_given_up(monkeypatch):
    pytest.importorskip("darshan")
    monkeypatch.setenv("AGGIO_DARSHAN_TIMEOUT", "1")
    _failing_step(monkeypatch, "MPI-IO", lambda: time.sleep(60))
    t0 = time.monotonic()
    job = load_jobs([MPI_IO_TEST])[0]
    assert time.monotonic() - t0 < 10
    assert "MPI-IO records hung (no progress in 1 s)" in job.damaged[0]


@requires_corpus
def test_library_crash_in_the_header_is_the_inputs_error(monkeypatch, capfd):
    pytest.importorskip("darshan")
    _failing_step(monkeypatch, "header", lambda: os.abort())
    assert cli.main(["advise", MPI_IO_TEST]) == 1
    err = capfd.readouterr().err
    assert err.count("\n") == 1
    assert "libdarshan-util crashed (SIGABRT) reading its header" in err


@requires_corpus
def test_unexpected_exception_is_an_input_error_marked_internal(monkeypatch):
    pytest.importorskip("darshan")
    _failing_step(monkeypatch, "STDIO", lambda: {}["missing"])
    with pytest.raises(InputError, match="internal error.*KeyError") as info:
        load_jobs([MPI_IO_TEST])
    assert isinstance(info.value.__cause__, darshan_isolated.ReaderBug)


@requires_corpus
def test_fuzz_corpus_replays():
    """tests/fuzz/fuzz_darshan.py's corpus, as ctest's fuzz.replay.darshan runs it."""
    pytest.importorskip("darshan")
    sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "fuzz"))
    try:
        import fuzz_darshan
        assert fuzz_darshan.main(["fuzz_darshan", "--replay", CORPUS]) == 0
    finally:
        sys.path.pop(0)


@requires_corpus
def test_other_inputs_are_still_reported(tmp_path, monkeypatch, capsys):
    """One log that crashes libdarshan-util in its header: the command says
    so for that log, reports the others and exits 1."""
    pytest.importorskip("darshan")
    pytest.importorskip("plotly")
    bad = tmp_path / "crashes.darshan"
    bad.write_bytes(open(MPI_IO_TEST, "rb").read())
    real = darshan_isolated.load_darshan

    def load(path, skip=frozenset(), stage=None):
        if path == str(bad):
            os.abort()
        return real(path, skip, stage)
    monkeypatch.setattr(darshan_isolated, "load_darshan", load)
    good = os.path.join(CORPUS, "ior-hdf5-3.41.darshan")
    assert cli.main(["advise", str(bad), good]) == 1
    out, err = capsys.readouterr()
    assert f"== {good}" in out and str(bad) not in out
    assert err.splitlines() == [f"aggio advise: {bad}: damaged Darshan log: libdarshan-util "
                                "crashed (SIGABRT) reading its header, job or file-name "
                                "records"]
    page = tmp_path / "r.html"
    assert cli.main(["report", str(bad), good, "-o", str(page)]) == 1
    assert page.exists() and f"aggio report: {bad}: damaged" in capsys.readouterr().err
    assert cli.main(["report", str(bad), "-o", str(tmp_path / "none.html")]) == 1
    assert not (tmp_path / "none.html").exists()
