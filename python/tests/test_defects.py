"""The defects of issue 13, each reproduced on a synthetic trace or job: where
the defect is a finding, one input where it must fire and one where it must
not.  (Defects 6 and 7, hint strings and contradictory fixes, are in
test_hints.py.)"""
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
from builders import (TraceBuilder, collective_write, darshan_job, file_with, layer,
                      per_rank, posix_writes, two_phase_write)
from paths import DXT_LOG, HERE, LOGS, requires_shared

from aggio import analysis, cli
from aggio.findings import run_all
from aggio.html import figures
from aggio.model import SIZE_BIN_LABELS
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


def found(source, code=None, **overrides):
    job = load_jobs([source])[0] if isinstance(source, str) else source
    out = run_all(job, Thresholds(overrides))
    return [f for f in out if f.code == code] if code else out


def texts(findings):
    return [x.text for f in findings for x in f.fixes]


# ------------------------------------------- 1. aggregators not recognised

def test_1_aggregators_named_with_placement_and_buffer(tmp_path):
    path = two_phase_write(16, [0, 4, 8, 12], calls=4, rounds=2, buffer=MiB).write(
        tmp_path / "t", aggregators=[0, 4, 8, 12], per_node=4,
        meta={"path": "/lus/run/out.dat", "hints": {"striping_factor": "4",
                                                    "striping_unit": str(MiB)}})
    (f,) = found(path, "AGG-AGGREGATORS")
    ev = f.evidence
    assert ev["aggregators"] == 4 and ev["aggregator_ranks"] == [0, 4, 8, 12]
    assert ev["mpiio_ranks"] == 16 and ev["placement"] == "1 per node on 4 of 4 nodes"
    assert ev["buffer_bytes"] == MiB and ev["bytes_in_flight_per_round"] == 4 * MiB
    assert ev["rounds_per_aggregator_median"] == 8 and ev["fits_stripes"] is True
    assert f.severity == "info"


def test_1_aggregators_that_do_not_fit_the_stripes(tmp_path):
    path = two_phase_write(16, [0, 4, 8, 12], calls=2, buffer=MiB).write(
        tmp_path / "t", aggregators=[0, 4, 8, 12], per_node=4,
        meta={"path": "/lus/run/out.dat", "hints": {"striping_factor": "3",
                                                    "striping_unit": str(768 * KiB)}})
    # a misfit costs the file's I/O time: graded as a job with seconds of it would be
    (f,) = found(path, "AGG-AGGREGATORS", cost_warn_seconds=0.0, cost_warn_share=0.0)
    assert f.severity == "warn" and f.evidence["fits_stripes"] is False
    assert "4 aggregators over 3 stripes" in f.message
    assert any("cb_nodes=3" in t and "cb_buffer_size=1572864" in t for t in texts([f]))


def test_1_aggregators_from_darshan_per_rank_records():
    """The 384-rank run: 64 ranks (every 6th), 16 MiB writes, under collective
    MPI-IO; Darshan kept per-rank records and the ACCESS counters."""
    api = per_rank(layer(writes=384, coll_writes=384, bytes_written=384 * 64 * MiB),
                   {r: 64 * MiB for r in range(384)}, {r: 10.0 for r in range(384)})
    aggs = list(range(0, 384, 6))
    posix = per_rank(layer(writes=64 * 24, bytes_written=384 * 64 * MiB),
                     {r: 384 * MiB for r in aggs}, {r: 8.0 for r in aggs})
    posix.access_sizes = {16 * MiB: 64 * 24}
    job = darshan_job(nprocs=384, modules=("POSIX", "MPI-IO"),
                      files=[file_with("/lus/run/ckpt.dat", nranks=384, mpiio=api, posix=posix)])
    (f,) = found(job, "AGG-AGGREGATORS")
    assert f.evidence["aggregators"] == 64 and f.evidence["buffer_bytes"] == 16 * MiB
    assert "every 6th rank" in f.evidence["placement"]
    assert "one per node if the job ran 6 ranks per node" in f.evidence["placement"]
    assert f.evidence["bytes_in_flight_per_round"] == GiB
    assert f.evidence["fits_stripes"] is None and "stripe layout" in f.message


def test_1_no_aggregators_without_collective_buffering(tmp_path):
    independent = posix_writes(4, {r: [r * MiB] for r in range(4)}, MiB).write(tmp_path / "a")
    assert found(independent, "AGG-AGGREGATORS") == []
    every_rank = collective_write(4, MiB, 2, [0, 1, 2, 3]).write(tmp_path / "b",
                                                                aggregators=[0, 1, 2, 3])
    assert found(every_rank, "AGG-AGGREGATORS") == []


# --------------------------------- 2. single aggregator in summary records

def _one_aggregator_summary(share):
    total = 8 * GiB
    api = layer(reduced=True, writes=1024, coll_writes=1024, bytes_written=total)
    posix = layer(reduced=True, writes=512, bytes_written=total, write_time=900.0)
    posix.slowest = (17, int(total * share), 900.0)
    posix.fastest = (3, 0, 0.0)
    f = file_with("/lus/run/plot.nc", nranks=256, mpiio=api, posix=posix)
    f.stripe_count, f.stripe_size = 1, MiB
    return darshan_job(nprocs=256, modules=("POSIX", "MPI-IO", "LUSTRE"), files=[f])


def test_2_single_aggregator_from_summary_record():
    (f,) = found(_one_aggregator_summary(0.99999), "AGG-SINGLE-AGGREGATOR")
    assert f.evidence["posix_ranks"] == [17] and f.evidence["share_of_posix_bytes"] == 99.999
    assert "summary record" in f.evidence["source"]
    assert f.evidence["cause"] == "one stripe -> one aggregator" and "ROMIO" in f.message
    assert any(t.startswith("lfs setstripe -c 16") for t in texts([f]))
    # the single-stripe finding fires too, and the two agree on the layout
    (s,) = found(_one_aggregator_summary(0.99999), "AGG-STRIPE")
    assert [t for t in texts([s]) if t.startswith("lfs")] == \
        [t for t in texts([f]) if t.startswith("lfs")]


def test_2_no_single_aggregator_when_the_bytes_are_spread():
    assert found(_one_aggregator_summary(0.1), "AGG-SINGLE-AGGREGATOR") == []


# ----------------------------------------- 3. MPI-IO time far above POSIX

def _overhead_job(mpiio_seconds, summary):
    n = 64
    api = layer(reduced=summary, writes=n, coll_writes=n, bytes_written=n * 64 * MiB,
                write_time=mpiio_seconds * n)
    posix = layer(reduced=summary, writes=n, bytes_written=n * 64 * MiB, write_time=264.0)
    if summary:
        posix.slowest, posix.fastest = (0, n * 64 * MiB, 264.0), (1, 0, 0.0)
    else:
        per_rank(api, {r: 64 * MiB for r in range(n)}, {r: float(mpiio_seconds) for r in range(n)})
        per_rank(posix, {0: n * 64 * MiB}, {0: 264.0})
    return darshan_job(nprocs=n, modules=("POSIX", "MPI-IO"),
                       files=[file_with("/lus/run/ckpt.dat", nranks=n, mpiio=api, posix=posix)])


@pytest.mark.parametrize("summary", [False, True])
def test_3_mpiio_time_beyond_posix_time(summary):
    (f,) = found(_overhead_job(753.0, summary), "AGG-MPIIO-OVERHEAD")
    ev = f.evidence
    assert ev["median_mpiio_seconds_per_rank"] == 753.0    # per rank, also from a summary
    assert ev["busiest_posix_seconds"] == 264.0 and ev["median_beyond_posix_seconds"] == 489.0
    assert "exchange and synchronisation" in f.message
    assert ("every rank" in f.message) == summary


@pytest.mark.parametrize("summary", [False, True])
def test_3_no_overhead_when_mpiio_matches_posix(summary):
    assert found(_overhead_job(270.0, summary), "AGG-MPIIO-OVERHEAD") == []


def test_3_overhead_from_a_trace(tmp_path):
    slow = two_phase_write(8, [0, 4], calls=4, exchange=0.6).write(tmp_path / "a",
                                                                    aggregators=[0, 4])
    (f,) = found(slow, "AGG-MPIIO-OVERHEAD")
    assert f.evidence["source"] == "per-operation data"
    assert f.evidence["median_beyond_posix_seconds"] == pytest.approx(4.8, abs=0.01)
    fast = two_phase_write(8, [0, 4], calls=4, exchange=0.0001).write(tmp_path / "b",
                                                                       aggregators=[0, 4])
    assert found(fast, "AGG-MPIIO-OVERHEAD") == []


# ------------------------------------------ 4. metadata from summed records

def _meta_job(summary_meta=None, rank_meta=None):
    if summary_meta is not None:
        st = layer(reduced=True, opens=65536, writes=65536, bytes_written=65536 * MiB,
                   write_time=200_000.0, meta_time=summary_meta)
        st.slowest, st.fastest = (5, MiB, 4.0), (9, MiB, 2.0)
        f = file_with("/lus/run/shared.dat", nranks=65536, posix=st)
    else:
        st = per_rank(layer(opens=4, writes=4, bytes_written=4 * MiB, write_time=400.0,
                            meta_time=sum(rank_meta.values())),
                      {r: MiB for r in rank_meta}, {r: 100.0 for r in rank_meta}, rank_meta)
        f = file_with("/lus/run/shared.dat", nranks=4, posix=st)
    return darshan_job(nprocs=f.nranks, modules=("POSIX",), files=[f])


def test_4_summary_metadata_time_is_divided_by_the_ranks():
    """35,283 s summed over 65,536 ranks is 0.54 s each: not above 30 s."""
    assert found(_meta_job(summary_meta=35283.0), "AGG-METADATA") == []
    # a heavy share of the time is still reported, but not as a per-rank excess
    (f,) = found(_meta_job(summary_meta=150_000.0), "AGG-METADATA")
    assert f.severity == "warn" and f.evidence["ranks_over_limit"] == 0
    assert f.evidence["max_rank_metadata_seconds"] == pytest.approx(150_000 / 65536, abs=1e-3)


def test_4_a_rank_over_the_limit_in_per_rank_records():
    (f,) = found(_meta_job(rank_meta={0: 1.0, 1: 40.0, 2: 1.0, 3: 1.0}), "AGG-METADATA")
    assert f.severity == "high" and f.evidence["ranks_over_limit"] == 1
    assert f.evidence["max_rank_metadata_seconds"] == 40.0


# --------------------------------- 5. read-modify-write, not redundant reads

def _sieving_job(mpiio_reads):
    api = layer(writes=100, indep_writes=100, bytes_written=100 * MiB,
                reads=mpiio_reads, indep_reads=mpiio_reads, bytes_read=mpiio_reads * 4 * MiB)
    posix = layer(writes=100, bytes_written=100 * MiB, reads=100, bytes_read=400 * MiB,
                  max_byte_read=100 * MiB - 1, max_byte_written=100 * MiB - 1)
    return darshan_job(nprocs=4, modules=("POSIX", "MPI-IO"),
                       files=[file_with("/lus/run/grid.dat", mpiio=api, posix=posix)])


def test_5_posix_reads_under_mpiio_writes_are_read_modify_write():
    out = found(_sieving_job(0))
    (f,) = [x for x in out if x.code == "AGG-RMW"]
    assert f.evidence["mpiio_reads"] == 0 and f.evidence["posix_read_bytes"] == 400 * MiB
    assert "data sieving" in f.message and "not reads by the program" in f.message
    assert any("romio_ds_write=disable" in t for t in texts([f]))
    assert not [x for x in out if x.code == "AGG-REDUNDANT"]
    assert not any("MPI_Bcast" in t for t in texts(out))


def test_5_program_reads_stay_reads():
    out = found(_sieving_job(100))
    assert not [x for x in out if x.code == "AGG-RMW"]
    (r,) = [x for x in out if x.code == "AGG-REDUNDANT" and x.evidence["direction"] == "read"]
    assert any("MPI_Bcast" in t for t in texts([r]))


def test_5_read_modify_write_inside_collective_writes(tmp_path):
    path = two_phase_write(8, [0, 4], calls=4, rounds=2, buffer=MiB, rmw=True).write(
        tmp_path / "t", aggregators=[0, 4])
    (f,) = found(path, "AGG-RMW")
    assert f.evidence["reads_inside_mpiio_writes"] == 16
    assert f.evidence["reads_written_back"] == 16 and "collective buffering" in f.message


def test_5_reads_inside_mpiio_reads_are_the_programs(tmp_path):
    b = TraceBuilder(2).open_all()
    for r in range(2):
        for i in range(4):
            b.op(r, "write_at", (r * 4 + i) * MiB, MiB, 1, dur=0.01)
            b.op(r, "pwrite", (r * 4 + i) * MiB, MiB, dur=0.009, start=b.t[r] - 0.0095)
        for i in range(4):
            b.op(r, "read_at", (r * 4 + i) * MiB, MiB, 1, dur=0.01)
            b.op(r, "pread", (r * 4 + i) * MiB, MiB, dur=0.009, start=b.t[r] - 0.0095)
    assert found(b.close_all().write(tmp_path / "t"), "AGG-RMW") == []


# ----------------------------------------- 8. fixes fit the interfaces used

def test_8_posix_only_ior_gets_the_transfer_size_not_hints():
    st = layer(writes=5000, bytes_written=5000 * 47008, file_not_aligned=5000,
               file_alignment=4096)
    st.hist_write = np.zeros(len(SIZE_BIN_LABELS), np.int64)
    st.hist_write[3] = 5000                                   # 10K-100K
    job = darshan_job(nprocs=4, modules=("POSIX",),
                      files=[file_with("/lus/ior/testFile", posix=st)])
    job.exe = "/opt/ior/bin/ior"
    out = found(job)
    codes = {f.code for f in out}
    assert {"AGG-SMALL-REQ", "AGG-MISALIGNED"} <= codes
    kinds = {x.kind for f in out for x in f.fixes}
    assert not kinds & {"aggio-hints", "cray-hints", "romio-hints"}
    assert not any("H5Pset" in t or "MPI_File" in t for t in texts(out)
                   if "MPI_File_open" not in t)
    assert any(t.startswith("ior ... -t 1048576") for t in texts(out))
    assert any(t.startswith("ior ... -t 4096") for t in texts(out))


def test_8_no_collective_advice_for_collective_calls(tmp_path):
    path = collective_write(8, 4096, 200, [0, 4]).write(tmp_path / "t", aggregators=[0, 4])
    out = found(path, small_request_min=100)                # 400 small POSIX writes
    (small,) = [f for f in out if f.code == "AGG-SMALL-REQ"]
    assert not any("instead of many small" in t for t in texts([small]))
    assert any("romio_cb_write=enable" in t for t in texts([small]))


def test_8_hdf5_fixes_only_for_hdf5():
    def job(modules):
        api = layer(writes=500, indep_writes=500, bytes_written=500 * 5000)
        posix = layer(writes=500, bytes_written=500 * 5000, file_not_aligned=500,
                      file_alignment=4096)
        return darshan_job(nprocs=4, modules=modules, files=[
            file_with("/lus/a.h5", mpiio=api, posix=posix)])
    with_h5 = texts(found(job(("POSIX", "MPI-IO", "H5F", "H5D")), "AGG-MISALIGNED"))
    without = texts(found(job(("POSIX", "MPI-IO")), "AGG-MISALIGNED"))
    assert any("H5Pset_alignment" in t for t in with_h5)
    assert not any("H5Pset_alignment" in t for t in without)
    assert any("romio_cb_write=enable" in t for t in without)
    # a 4096-byte stripe is not one Lustre can have (issue 26): left out
    assert not any("striping_unit" in t for t in with_h5 + without)


# ---------------------------------------------------- 9-11. the report page

def test_9_heatmap_spreads_long_operations_over_their_bins():
    ops = np.zeros(3, dtype=[("t_start", "<f8"), ("t_end", "<f8"), ("rank", "<i4")])
    ops["t_start"], ops["t_end"], ops["rank"] = [0.0, 10.0, 40.5], [97.0, 10.5, 40.75], [0, 1, 1]
    busy = figures.busy_fraction(ops, 0.0, 0.25, 400, 2)
    assert busy[0].mean() == pytest.approx(0.97)          # 97% busy, not one bin
    assert busy[0, :388].min() == 1.0 and busy[0, 388:].max() == 0.0
    assert busy[1, 40:42].tolist() == [1.0, 1.0] and busy[1, 162] == 1.0
    assert busy[1].sum() * 0.25 == pytest.approx(0.75)


def test_10_overlay_names_the_slowest_reads_and_writes(tmp_path):
    path = collective_write(8, 4096, 50, [0, 4]).write(tmp_path / "t", aggregators=[0, 4])
    job = load_jobs([path])[0]
    fig, note = figures.timeline(job, max_points=100)
    names = [t["name"] for t in fig["data"] if t["type"] == "scattergl"]
    assert names and all("slowest" in n for n in names)
    assert not any("open/close/sync" in n for n in names)
    assert {"MPI-IO slowest writes", "POSIX slowest writes"} <= set(names)
    assert "slowest reads and writes" in note


def test_11_phase_bytes_counted_once(tmp_path):
    path = two_phase_write(8, [0, 4], calls=3, rounds=2, buffer=MiB).write(
        tmp_path / "t", aggregators=[0, 4])
    job = load_jobs([path])[0]
    (phase,) = analysis.phases(job, 0.5)
    assert phase.bytes == 3 * 2 * 2 * MiB                   # MPI-IO bytes, not twice
    posix_only = posix_writes(2, {0: [0], 1: [MiB]}, MiB).write(tmp_path / "p")
    assert sum(p.bytes for p in analysis.phases(load_jobs([posix_only])[0], 0.5)) == 2 * MiB


# ----------------------------------------------- 12. damaged, partial logs

def _fake_darshan(path, size, name_off=400, mod_end=3000):
    """A Darshan 3.21 header promising a name region and one module region."""
    head = b"3.21".ljust(8, b"\0") + struct.pack("<q", 6567223) + bytes(4)
    head += struct.pack("<I", 0) + struct.pack("<QQ", name_off, 100)
    head += struct.pack("<QQ", 0, 0) + struct.pack("<QQ", 500, mod_end - 500)
    head = head.ljust(360, b"\0")
    path.write_bytes((head + bytes(max(0, size - len(head))))[:size])
    return str(path)


def test_12_truncated_before_the_records_exits_1(tmp_path, capsys):
    log = _fake_darshan(tmp_path / "cut.darshan", 380)
    assert cli.main(["advise", log]) == 1
    err = capsys.readouterr().err
    assert "damaged or truncated" in err and "380 bytes of the 3000" in err
    assert "Traceback" not in err
    assert cli.main(["report", log, "-o", str(tmp_path / "r.html")]) == 1
    assert not (tmp_path / "r.html").exists()


@requires_shared
def test_12_half_a_log_says_what_was_lost(tmp_path, capsys):
    data = open(DXT_LOG, "rb").read()
    half = tmp_path / "half.darshan"
    half.write_bytes(data[:len(data) // 2])
    assert cli.main(["advise", str(half)]) == 0
    out = capsys.readouterr()
    assert "DAMAGED: the log is truncated (16180 of 32360 bytes)" in out.out
    assert "DXT_MPIIO, DXT_POSIX, MPI-IO, STDIO" in out.out
    assert "damaged input, read in part" in out.err and "Error:" not in out.err
    assert cli.main(["report", str(half), "-o", str(tmp_path / "r.html")]) == 0
    page = (tmp_path / "r.html").read_text()
    assert "class='note damaged'" in page and "its DXT records were lost" in page


@requires_shared
def test_12_half_a_small_log_has_nothing_to_read(tmp_path, capsys):
    log = [p for p in LOGS if p.endswith("mpi-io-test-x86_64-3.4.7.darshan")][0]
    data = open(log, "rb").read()
    half = tmp_path / "half.darshan"
    half.write_bytes(data[:len(data) // 2])
    assert cli.main(["advise", str(half)]) == 1
    assert "nothing can be read" in capsys.readouterr().err


# --------------------------------------------------- 13. -o, 14. small ones

def test_13_output_into_a_missing_directory(tmp_path, capsys):
    path = posix_writes(1, {0: [0]}, MiB).write(tmp_path / "t")
    assert cli.main(["report", path, "-o", str(tmp_path / "no" / "such" / "r.html")]) == 1
    err = capsys.readouterr().err
    assert "no such directory" in err and "Traceback" not in err
    assert cli.main(["report", path, "-o", str(tmp_path)]) == 1
    assert "is a directory" in capsys.readouterr().err


def test_14_a_directory_is_not_a_missing_file(tmp_path, capsys):
    assert cli.main(["advise", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "is a directory" in err and "no such file" not in err
    assert cli.main(["advise", str(tmp_path / "gone")]) == 1
    assert "no such file" in capsys.readouterr().err


def test_14_only_refuses_unknown_codes(tmp_path, capsys):
    path = posix_writes(1, {0: [0]}, MiB).write(tmp_path / "t")
    assert cli.main(["advise", "--only", "AGG-NOPE", path]) == 2
    err = capsys.readouterr().err
    assert "unknown finding code(s) AGG-NOPE" in err and "AGG-SMALL-REQ" in err
    assert cli.main(["advise", "--only", "AGG-SMALL-REQ", path]) == 0


@pytest.mark.parametrize("value", ["-5", "0", "many"])
def test_14_max_points_must_be_positive(tmp_path, capsys, value):
    path = posix_writes(1, {0: [0]}, MiB).write(tmp_path / "t")
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", path, "--max-points", value, "-o", str(tmp_path / "r.html")])
    assert exc.value.code == 2 and "--max-points" in capsys.readouterr().err


def test_14_help_is_for_users(capsys):
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "I/O reports and findings with fixes" in out
    assert "setup_parser" not in out and "one module per subcommand" not in out
    for command in ("report", "advise", "replay", "tune"):
        assert command in out
    assert cli.main([]) == 2


def test_14_make_trace_help_writes_no_file(tmp_path):
    script = os.path.join(HERE, "..", "bench", "make_trace.py")
    env = dict(os.environ, PYTHONPATH=os.path.dirname(HERE))
    proc = subprocess.run([sys.executable, script, "--help"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "usage: make_trace.py" in proc.stdout
    assert os.listdir(tmp_path) == []
    proc = subprocess.run([sys.executable, script, "small.trc", "1000"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and len(load_jobs([str(tmp_path / "small.trc")])[0].ops) == 1000


def test_14_bare_clone_skips_with_the_reason(tmp_path):
    """The suite in a copy of python/ with no ../shared: the log tests are
    skipped, saying why, and nothing fails."""
    import shutil
    copy = tmp_path / "clone" / "python"
    shutil.copytree(os.path.dirname(HERE), copy,
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                           "tests/test_cli.py", "-k", "shared or every_shared_log"],
                          cwd=copy, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(copy)))
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert "skipped" in proc.stdout and "a bare clone" in proc.stdout
    assert "failed" not in proc.stdout
