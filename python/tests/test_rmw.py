"""Read-modify-write found by what it costs (issue 26, item 3): the
library's reads beneath MPI-IO writes by time and count (E3SM-IO: reads of
holes that return 0 bytes dominate the aggregators' POSIX time), write
amplification by bytes (POSIX writes 3.9x what MPI-IO wrote), and the one
collective call that takes much of the run (openPMD: 1.5 MiB in the call,
GiBs read); and fixes that work on the path the log shows."""
import pytest
from builders import TraceBuilder, darshan_job, file_with, layer, per_rank

from aggio import trace as fmt
from aggio.findings import run_all
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
AGGS = list(range(0, 64, 8))


def found(source, code):
    job = load_jobs([source])[0] if isinstance(source, str) else source
    return [f for f in run_all(job, Thresholds()) if f.code == code]


def texts(findings):
    return [x.text for f in findings for x in f.fixes]


def e3sm_counters(summary=False, read_seconds=78.0, write_seconds=22.0, amplification=3.9):
    """64 ranks write 1 GiB collectively through PnetCDF on Lustre; the 8
    aggregators make 300,000 POSIX reads that return nothing, and write
    `amplification` x the MPI-IO bytes."""
    api = layer(reduced=summary, writes=64 * 40, coll_writes=64 * 40, bytes_written=GiB,
                write_time=64 * 100.0)
    posix = layer(reduced=summary, writes=8 * 500, bytes_written=int(amplification * GiB),
                  reads=300_000, bytes_read=0, read_time=read_seconds,
                  write_time=write_seconds)
    posix.hist_read[0] = 300_000
    per_agg = (read_seconds + write_seconds) / 8
    if summary:
        posix.slowest, posix.fastest = (8, int(amplification * GiB) // 8, per_agg), (63, 0, 0.0)
    else:
        per_rank(api, {r: GiB // 64 for r in range(64)}, {r: 100.0 for r in range(64)})
        per_rank(posix, {r: int(amplification * GiB) // 8 for r in AGGS},
                 {r: per_agg for r in AGGS})
    f = file_with("/lus/e3sm/f_case_h0.nc", nranks=64, mpiio=api, posix=posix)
    f.stripe_count, f.stripe_size = 8, MiB
    job = darshan_job(nprocs=64, modules=("POSIX", "MPI-IO", "LUSTRE", "PNETCDF_FILE"),
                      files=[f])
    job.runtime = 150.0
    return job


@pytest.mark.parametrize("summary", [False, True])
def test_e3sm_zero_byte_reads_are_read_modify_write_by_time(summary):
    (f,) = found(e3sm_counters(summary), "AGG-RMW")
    ev = f.evidence
    assert ev["posix_read_bytes"] == 0 and ev["rmw_reads"] == 300_000
    assert ev["percent_of_posix_time"] == 78.0 and ev["reads_under_100_bytes"] == 300_000
    assert ev["cost_seconds"] == pytest.approx(0.78 * 12.5)
    assert ev["percent_of_run"] == pytest.approx(6.5)
    assert "300000 of them returned under 100 bytes" in f.message


def test_e3sm_reads_that_cost_little_are_no_finding():
    assert found(e3sm_counters(read_seconds=5.0, write_seconds=95.0), "AGG-RMW") == []


@pytest.mark.parametrize("summary", [False, True])
def test_e3sm_write_amplification(summary):
    (f,) = found(e3sm_counters(summary), "AGG-WRITE-AMP")
    ev = f.evidence
    assert ev["ratio"] == 3.9 and ev["extra_bytes"] == int(3.9 * GiB) - GiB
    assert ev["read_modify_write_reads"] == 300_000 and ev["collective"]
    # the busiest aggregator's write time (22 % of its 12.5 s) on 2.9 of 3.9 parts
    assert ev["cost_seconds"] == pytest.approx(0.22 * 12.5 * 2.9 / 3.9, rel=1e-3)
    assert "3.9x" in f.message and "two-phase writes back whole spans" in f.message


def test_no_write_amplification_when_posix_writes_what_mpiio_wrote():
    assert found(e3sm_counters(amplification=1.0), "AGG-WRITE-AMP") == []


def test_collective_rmw_fixes_follow_romios_path():
    """romio_ds_write does not stop two-phase's read of the holes: under the
    MPI library's MPI-IO the fixes are the Lustre driver's own hint, the
    file domains, PnetCDF's one call, and aggio's two-phase (which honours
    romio_ds_write) through aggio-run; never romio_ds_write for ROMIO."""
    out = run_all(e3sm_counters(), Thresholds())
    rmw = [f for f in out if f.code in ("AGG-RMW", "AGG-WRITE-AMP")]
    assert len(rmw) == 2
    for f in rmw:
        kinds = {x.kind: x.text for x in f.fixes}
        assert not any("romio_ds_write" in x.text for x in f.fixes
                       if x.kind in ("cray-hints", "romio-hints"))
        assert kinds["aggio-hints"] == ('export AGGIO_HINTS="/lus/e3sm/f_case_h0.nc:'
                                        'aggio_strategy=two_phase:romio_ds_write=disable"')
        all_text = "\n".join(x.text for x in f.fixes)
        assert '"romio_lustre_ds_in_coll", "disable"' in all_text
        assert "ncmpi_wait_all" in all_text and "file domains cover what it writes" in all_text


def test_independent_sieving_keeps_romio_ds_write():
    api = layer(writes=100, indep_writes=100, bytes_written=100 * MiB)
    posix = layer(writes=100, bytes_written=100 * MiB, reads=100, bytes_read=400 * MiB)
    job = darshan_job(modules=("POSIX", "MPI-IO"), files=[file_with("/g.dat", mpiio=api,
                                                                    posix=posix)])
    (f,) = found(job, "AGG-RMW")
    assert any("romio_ds_write=disable" in t for t in texts([f]) if "MPICH_MPIIO" in t)
    assert not any("romio_lustre_ds_in_coll" in t for t in texts([f]))


def _zero_byte_trace(tmp_path, read_share, own_reads=0):
    """E3SM-like from per-operation data: ten collective writes; in each the
    two aggregators make 200 reads of 0 bytes, then write their domain; then
    each rank makes `own_reads` POSIX reads of 4 KiB of its own."""
    b = TraceBuilder(8).open_all()
    t = 0.01
    for c in range(10):
        for r in range(8):
            b.op(r, "write_at_all", c * 8 * MiB + r * MiB, MiB, 1, dur=1.0,
                 flags=fmt.FLAG_API_COLLECTIVE, start=t)
        for k, a in enumerate((0, 4)):
            at = t + 0.001
            for _ in range(200):
                b.op(a, "pread", c * 8 * MiB + k * 4 * MiB, 0, dur=0.9 * read_share / 200,
                     flags=fmt.FLAG_POSIX_AGGREGATOR, start=at)
                at += 0.9 * read_share / 200
            b.op(a, "pwrite", c * 8 * MiB + k * 4 * MiB, 4 * MiB, dur=0.9 * (1 - read_share),
                 flags=fmt.FLAG_POSIX_AGGREGATOR, start=at)
        t += 1.0
    for r in range(8):
        for k in range(own_reads):
            b.op(r, "pread", (r * own_reads + k) * 4 * KiB, 4 * KiB, dur=1e-5,
                 start=t + k * 1e-5)
    b.t = {r: t + own_reads * 1e-5 for r in range(8)}
    return b.close_all().write(tmp_path / f"z{read_share}-{own_reads}", aggregators=[0, 4])


def test_zero_byte_reads_from_operations(tmp_path):
    (f,) = found(_zero_byte_trace(tmp_path, 0.78), "AGG-RMW")
    ev = f.evidence
    assert ev["reads_returning_0_bytes"] == 4000 and ev["read_bytes_inside_mpiio_writes"] == 0
    assert ev["percent_of_posix_time"] == pytest.approx(78.0)
    assert ev["cost_seconds"] == pytest.approx(10 * 0.9 * 0.78)
    assert "4000 of them returned 0 bytes" in f.message
    # aggio itself honours romio_ds_write: an aggio trace gets it as a hint
    assert any("romio_ds_write=disable" in t for t in texts([f]) if "AGGIO_HINTS" in t)
    assert found(_zero_byte_trace(tmp_path, 0.05), "AGG-RMW") == []


def openpmd_trace(tmp_path, costly_seconds):
    """8 ranks, aggregators 0 and 4, nine collective writes of 1.5 MiB each;
    call 1 scatters its pieces 256 MiB apart, and its aggregators read and
    write back 1 GiB each."""
    b = TraceBuilder(8).open_all()
    t = 0.01
    for c in range(9):
        dur = costly_seconds if c == 1 else 0.7
        for r in range(8):
            off = r * 256 * MiB if c == 1 else 2 * GiB + c * 12 * MiB + r * 192 * KiB
            b.op(r, "write_at_all", off, 192 * KiB, 1, dur=dur, flags=fmt.FLAG_API_COLLECTIVE,
                 start=t)
        for k, a in enumerate((0, 4)):
            at = t + 0.001
            if c == 1:
                step = 0.9 * dur / 32
                for j in range(16):
                    off = (k * 16 + j) * 64 * MiB
                    b.op(a, "pread", off, 64 * MiB, dur=step, flags=fmt.FLAG_POSIX_AGGREGATOR,
                         start=at)
                    b.op(a, "pwrite", off, 64 * MiB, dur=step, flags=fmt.FLAG_POSIX_AGGREGATOR,
                         start=at + step)
                    at += 2 * step
            else:
                b.op(a, "pwrite", 2 * GiB + c * 12 * MiB + k * 768 * KiB, 768 * KiB, dur=0.5,
                     flags=fmt.FLAG_POSIX_AGGREGATOR, start=at)
        t += dur
    b.t = {r: t for r in range(8)}
    return b.close_all().write(tmp_path / f"o{costly_seconds}", aggregators=[0, 4])


def test_openpmd_one_collective_call_dominated_by_rmw(tmp_path):
    (f,) = found(openpmd_trace(tmp_path, 4.4), "AGG-RMW-CALL")
    ev = f.evidence
    assert ev["call"] == 1 and ev["mpiio_bytes"] == 1536 * KiB
    assert ev["percent_of_run"] == pytest.approx(44.0, abs=0.2)
    assert ev["posix_read_bytes"] == 2 * GiB and ev["posix_reads"] == 32
    assert ev["aggregators"] == 2 and ev["file_domain_span_bytes"] == 2 * GiB
    assert ev["calls_like_it"] == 1 and f.severity == "high"
    assert "call 1" in f.message and "1.5 MiB" in f.message
    assert any("file domains cover what it writes" in t for t in texts([f]))


def test_a_short_rmw_call_is_no_call_finding(tmp_path):
    path = openpmd_trace(tmp_path, 0.1)
    assert found(path, "AGG-RMW-CALL") == []
    assert len(found(path, "AGG-RMW")) == 1        # the reads are still the library's


def test_library_rewrites_are_not_the_programs_redundant_writes():
    """The program wrote each byte once through MPI-IO; POSIX wrote 3.9x:
    AGG-WRITE-AMP names it, and no 'write each region once' is given."""
    job = e3sm_counters()
    job.files[0].layers[2].max_byte_written = GiB - 1          # POSIX: the file is 1 GiB
    out = run_all(job, Thresholds())
    assert [f.code for f in out if f.code in ("AGG-WRITE-AMP", "AGG-REDUNDANT")] == \
        ["AGG-WRITE-AMP"]
    # the program's own MPI-IO writes going over the same bytes still are redundant
    job = e3sm_counters()
    job.files[0].layers[2].max_byte_written = GiB // 4 - 1
    job.files[0].layers[1].bytes_written = GiB
    (f,) = [x for x in run_all(job, Thresholds()) if x.code == "AGG-REDUNDANT"]
    assert f.evidence["direction"] == "write"


def _small_reads(source, **overrides):
    job = load_jobs([source])[0] if isinstance(source, str) else source
    return [f for f in run_all(job, Thresholds(overrides))
            if f.code == "AGG-SMALL-REQ" and f.evidence["direction"] == "read"]


@pytest.mark.parametrize("summary", [False, True])
def test_library_reads_are_not_the_programs_small_reads(summary):
    """E3SM's 300,000 reads of holes are the library's (AGG-RMW): not a
    second alarm about the program's small reads, with romio_cb_read."""
    assert len(found(e3sm_counters(summary), "AGG-RMW")) == 1
    assert _small_reads(e3sm_counters(summary)) == []


def test_small_reads_from_operations_leave_the_library_out(tmp_path):
    """From operations the reads inside MPI-IO writes are left out one by
    one: the program's own 4 KiB reads are still counted, and said apart."""
    assert _small_reads(_zero_byte_trace(tmp_path, 0.78)) == []
    (f,) = _small_reads(_zero_byte_trace(tmp_path, 0.78, own_reads=200))
    ev = f.evidence
    assert (ev["small_requests"], ev["requests"]) == (1600, 1600)
    assert ev["library_reads_left_out"] == 4000
    assert "4000 POSIX reads that the MPI-IO library made" in f.message
    # its cost: the POSIX read time x the share of those 1600 among all 5600 reads
    from aggio.findings.cost import _layer_time
    from aggio.model import POSIX
    job = load_jobs([_zero_byte_trace(tmp_path, 0.78, own_reads=200)])[0]
    assert f.cost["seconds"] == pytest.approx(_layer_time(job, POSIX, "read") * 1600 / 5600,
                                              rel=1e-3)


def test_real_log_library_reads_are_no_small_read_finding():
    """PyDarshan's MACSio log: the 6 POSIX reads of macsio_hdf5_000.h5 are
    beneath MPI-IO writes (the program read nothing through MPI-IO); with
    every threshold at 0 they were "3 of 6 POSIX reads are smaller than
    1 MiB" and a romio_cb_read fix for reads the program never made."""
    darshan = pytest.importorskip("darshan")
    import glob
    import os
    logs = glob.glob(os.path.join(os.path.dirname(darshan.__file__), "examples",
                                  "example_logs", "shane_macsio_*.darshan"))
    if not logs:
        pytest.skip("PyDarshan without its example logs")
    assert len(found(logs[0], "AGG-RMW")) == 1
    assert _small_reads(logs[0], small_request_min=0, small_request_fraction=0) == []


@pytest.mark.parametrize("summary", [False, True])
def test_library_reads_are_not_the_programs_random_reads(summary):
    """Darshan counts none of the 300,000 hole reads as sequential: they are
    still the library's, not 'Random read access' of the program."""
    job = e3sm_counters(summary)
    assert [f for f in run_all(job, Thresholds()) if f.code == "AGG-RANDOM"
            and f.evidence["direction"] == "read"] == []
