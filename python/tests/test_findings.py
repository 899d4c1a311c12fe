"""Each finding: one synthetic input where it must fire (with the right
evidence) and one where it must not."""
import numpy as np

from builders import (LayerStats, TraceBuilder, collective_write, darshan_job, file_with,
                      posix_writes)

from aggio.findings import REGISTRY, run_all
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

KiB, MiB = 1024, 1 << 20


def findings(source, code, **overrides):
    job = load_jobs([source])[0] if isinstance(source, str) else source
    return [f for f in run_all(job, Thresholds(overrides)) if f.code == code]


def test_every_code_has_fire_and_quiet_tests():
    """Each code is named in at least two tests (one where it fires, one where
    it must not) here or in test_defects.py / test_crosslayer.py."""
    import glob
    import os
    import re
    tests = {}
    for path in glob.glob(os.path.join(os.path.dirname(__file__), "test_*.py")):
        for name, body in re.findall(r"\ndef (test_\w+)\(.*?\):\n(.*?)(?=\n(?:def |@|\Z))",
                                     open(path).read() + "\n", re.S):
            tests[name] = body
    for code in REGISTRY:
        using = [n for n, body in tests.items() if f'"{code}"' in body]
        assert len(using) >= 2, (code, using)


# ---------------------------------------------------------------- requests

def test_small_requests_fire(tmp_path):
    path = posix_writes(2, {0: np.arange(1500) * 4096, 1: (np.arange(1500) + 1500) * 4096},
                        4096).write(tmp_path / "t")
    (f,) = findings(path, "AGG-SMALL-REQ")
    assert f.evidence["small_requests"] == 3000 and f.evidence["requests"] == 3000
    assert f.evidence["direction"] == "write" and f.evidence["percent"] == 100.0
    assert any("romio_cb_write=enable" in x.text for x in f.fixes)


def test_small_requests_quiet_on_large(tmp_path):
    path = posix_writes(2, {0: np.arange(50) * 4 * MiB, 1: (np.arange(50) + 50) * 4 * MiB},
                        4 * MiB).write(tmp_path / "t")
    assert findings(path, "AGG-SMALL-REQ") == []


def test_small_requests_threshold_override(tmp_path):
    path = posix_writes(1, {0: np.arange(200) * 4096}, 4096).write(tmp_path / "t")
    assert findings(path, "AGG-SMALL-REQ") == []            # 200 < 1000 by default
    assert len(findings(path, "AGG-SMALL-REQ", small_request_min=100)) == 1


def test_misaligned_fire(tmp_path):
    path = posix_writes(1, {0: 100 + np.arange(300) * 5000}, 5000).write(tmp_path / "t")
    (f,) = findings(path, "AGG-MISALIGNED")
    assert f.evidence["misaligned_requests"] == 300 and f.evidence["alignment_bytes"] == 4096


def test_misaligned_quiet(tmp_path):
    path = posix_writes(1, {0: np.arange(300) * 8192}, 8192).write(tmp_path / "t")
    assert findings(path, "AGG-MISALIGNED") == []


def test_random_fire(tmp_path):
    offsets = np.random.default_rng(1).permutation(3000) * 4096
    path = posix_writes(1, {0: offsets}, 4096).write(tmp_path / "t")
    (f,) = findings(path, "AGG-RANDOM")
    # every backwards jump is random: count them the way the checker should
    backwards = int((np.diff(offsets) < 4096).sum()) + 1   # + the first request
    assert f.evidence["random_requests"] == backwards


def test_random_quiet_on_sequential(tmp_path):
    path = posix_writes(1, {0: np.arange(3000) * 4096}, 4096).write(tmp_path / "t")
    assert findings(path, "AGG-RANDOM") == []


def test_small_requests_of_one_process():
    """partial_data_dxt: one process's million 1-byte MPI-IO reads: no
    collective buffering (no other rank to gather from) but one call with
    an indexed filetype; no setvbuf, which only its stdout used."""
    api = LayerStats(reads=5000, indep_reads=5000, bytes_read=5000)
    posix = LayerStats(reads=5000, bytes_read=5000)
    posix.hist_read[0] = 5000
    out = LayerStats(writes=3, bytes_written=300)
    job = darshan_job(nprocs=1, modules=("POSIX", "MPI-IO", "STDIO"), files=[
        file_with("/f", shared=False, nranks=1, mpiio=api, posix=posix),
        file_with("<STDOUT>", shared=False, nranks=1, stdio=out)])
    (f,) = findings(job, "AGG-SMALL-REQ")
    texts = [x.text for x in f.fixes]
    assert any("MPI_Type_create_hindexed" in t for t in texts)
    assert not any("romio_cb_read" in t or "_at_all" in t or "setvbuf" in t for t in texts)


def test_random_quiet_on_the_same_bytes_again(tmp_path):
    """partial_data_dxt: a million 1-byte reads of byte 0 follow no earlier
    request, yet are not random: sorting them by offset changes nothing."""
    path = posix_writes(1, {0: np.zeros(3000, np.int64)}, 1).write(tmp_path / "t")
    assert findings(path, "AGG-RANDOM") == []
    shifted = posix_writes(1, {0: np.tile([0, 8192], 1500)}, 1).write(tmp_path / "u")
    assert len(findings(shifted, "AGG-RANDOM")) == 1


def test_redundant_fire(tmp_path):
    path = posix_writes(1, {0: np.tile(np.arange(4) * MiB, 4)}, MiB).write(tmp_path / "t")
    (f,) = findings(path, "AGG-REDUNDANT")
    assert f.evidence["bytes_moved"] == 16 * MiB and f.evidence["distinct_bytes"] == 4 * MiB
    assert f.evidence["ratio"] == 4.0 and f.evidence["exact"]


def test_redundant_quiet(tmp_path):
    path = posix_writes(1, {0: np.arange(16) * MiB}, MiB).write(tmp_path / "t")
    assert findings(path, "AGG-REDUNDANT") == []


# ---------------------------------------------------------------- balance

def test_dominant_rank_fill_values(tmp_path):
    b = posix_writes(4, {0: np.arange(60) * MiB, 1: [60 * MiB], 2: [61 * MiB], 3: [62 * MiB]}, MiB)
    path = b.write(tmp_path / "t", meta={"path": "/scratch/climate.nc"})
    (f,) = findings(path, "AGG-DOMINANT-RANK")
    assert f.evidence["rank"] == 0 and f.evidence["percent"] == round(6000 / 63, 1)
    assert "NC_NOFILL" in f.fixes[0].text


def test_dominant_rank_quiet(tmp_path):
    path = posix_writes(4, {r: [r * MiB] for r in range(4)}, MiB).write(tmp_path / "t")
    assert findings(path, "AGG-DOMINANT-RANK") == []


def test_single_aggregator_fire(tmp_path):
    path = collective_write(8, MiB, 4, [0]).write(
        tmp_path / "t", meta={"hints": {"striping_factor": "1"}}, aggregators=[0])
    (f,) = findings(path, "AGG-SINGLE-AGGREGATOR")
    assert f.evidence["posix_ranks"] == [0] and f.evidence["mpiio_ranks"] == 8
    assert f.evidence["stripe_count"] == 1
    assert any(x.kind == "lustre" and x.text.startswith("lfs setstripe -c 8") for x in f.fixes)
    assert any("cb_nodes=8" in x.text for x in f.fixes if x.kind == "cray-hints")


def test_single_aggregator_quiet(tmp_path):
    path = collective_write(8, MiB, 4, [0, 2, 4, 6]).write(tmp_path / "t", aggregators=[0, 2, 4, 6])
    assert findings(path, "AGG-SINGLE-AGGREGATOR") == []


def test_imbalance_fire(tmp_path):
    sizes = {0: 4, 1: 4, 2: 4, 3: 1}
    start = np.cumsum([0, 4, 4, 4])
    b = posix_writes(4, {r: (start[r] + np.arange(n)) * MiB for r, n in sizes.items()}, MiB)
    (f,) = findings(b.write(tmp_path / "t"), "AGG-IMBALANCE")
    assert f.evidence["max_rank_bytes"] == 4 * MiB and f.evidence["min_rank_bytes"] == MiB


def test_imbalance_quiet(tmp_path):
    b = posix_writes(4, {r: (r * 4 + np.arange(4)) * MiB for r in range(4)}, MiB)
    assert findings(b.write(tmp_path / "t"), "AGG-IMBALANCE") == []


def test_straggler_fire(tmp_path):
    b = TraceBuilder(4).open_all()
    for r in range(4):
        for i in range(10):
            b.op(r, "write_at", (r * 10 + i) * MiB, MiB, 1, dur=0.5 if r == 3 else 0.05)
    (f,) = findings(b.close_all().write(tmp_path / "t"), "AGG-STRAGGLER")
    assert f.evidence["stragglers"][0]["rank"] == 3
    assert f.evidence["stragglers"][0]["seconds"] == 5.0 and f.evidence["straggler_count"] == 1


def test_straggler_quiet(tmp_path):
    b = posix_writes(4, {r: (r * 10 + np.arange(10)) * MiB for r in range(4)}, MiB, dur=0.05)
    assert findings(b.write(tmp_path / "t"), "AGG-STRAGGLER") == []


def test_straggler_from_darshan_counters():
    st = LayerStats(writes=10, bytes_written=10 * MiB, write_time=10.0)
    st.fastest, st.slowest = (1, MiB, 1.0), (7, MiB, 6.0)
    job = darshan_job(files=[file_with("/f", posix=st)])
    (f,) = findings(job, "AGG-STRAGGLER")
    # a summary record: its 10 s are summed over 4 ranks, 2.5 s each on average
    assert f.evidence["slowest_rank"] == 7 and f.evidence["mean_seconds_per_rank"] == 2.5
    assert f.evidence["x_mean"] == 2.4


# ---------------------------------------------------------------- interfaces

def test_independent_mpiio_fire(tmp_path):
    offsets = {r: (np.arange(20) * 8 + r) * 4096 for r in range(8)}
    path = posix_writes(8, offsets, 4096).write(tmp_path / "t")
    (f,) = findings(path, "AGG-INDEP-MPIIO")
    assert f.evidence["independent_calls"] == 160 and f.evidence["direction"] == "write"
    assert f.evidence["small_independent_on_shared_files"] == 160
    assert "MPI_File_write_at_all" in f.fixes[0].text


def test_independent_mpiio_quiet_when_collective(tmp_path):
    path = collective_write(8, 4096, 20, [0, 4]).write(tmp_path / "t", aggregators=[0, 4])
    assert findings(path, "AGG-INDEP-MPIIO") == []


def test_no_mpiio_fire():
    st = LayerStats(writes=100, bytes_written=100 * MiB, write_time=40.0)
    job = darshan_job(files=[file_with("/f", posix=st)])
    (f,) = findings(job, "AGG-NO-MPIIO")
    assert f.evidence["posix_bytes"] == 100 * MiB and f.evidence["nprocs"] == 4
    assert f.severity == "warn"


def test_independent_mpiio_quiet_for_one_process():
    """partial_data_dxt: one process made 1,000,000 independent reads; a
    collective call would have no other rank to gather from."""
    api = LayerStats(reads=5000, indep_reads=5000, bytes_read=5000)
    job = darshan_job(nprocs=1, modules=("POSIX", "MPI-IO"),
                      files=[file_with("/f", shared=False, nranks=1, mpiio=api)])
    assert findings(job, "AGG-INDEP-MPIIO") == []
    job.nprocs = 2
    assert len(findings(job, "AGG-INDEP-MPIIO")) == 1


def test_no_mpiio_fix_follows_the_direction():
    """hdf5_diagonal_write_only's programs read 2.6 MB (their libraries) and
    write 16 KB: MPI-IO reads first, never only a write."""
    st = LayerStats(reads=100, bytes_read=100 * MiB, writes=10, bytes_written=MiB)
    (f,) = findings(darshan_job(files=[file_with("/f", posix=st)]), "AGG-NO-MPIIO")
    codes = [x.text for x in f.fixes if "MPI_File_open" in x.text]
    assert "MPI_MODE_RDONLY" in codes[0] and "MPI_File_read_at_all" in codes[0]
    assert "MPI_File_write_at_all" in codes[1]
    st = LayerStats(reads=100, bytes_read=100 * MiB)
    (f,) = findings(darshan_job(files=[file_with("/f", posix=st)]), "AGG-NO-MPIIO")
    assert not any("write" in x.text for x in f.fixes if "MPI_File_open" in x.text)


def test_no_mpiio_quiet_with_mpiio():
    st = LayerStats(writes=100, bytes_written=100 * MiB)
    job = darshan_job(modules=("POSIX", "MPI-IO"),
                      files=[file_with("/f", posix=st, mpiio=LayerStats(writes=100, coll_writes=100))])
    assert findings(job, "AGG-NO-MPIIO") == []


def test_blocking_fire():
    api = LayerStats(writes=50, coll_writes=50, bytes_written=50 * MiB, write_time=3.0)
    job = darshan_job(modules=("POSIX", "MPI-IO", "H5F"), files=[file_with("/f.h5", mpiio=api)])
    (f,) = findings(job, "AGG-BLOCKING")
    assert f.evidence == {"direction": "write", "blocking_calls": 50, "seconds_in_calls": 3.0}
    assert any("MPI_File_iwrite_at_all" in x.text for x in f.fixes)
    assert any("async" in x.text for x in f.fixes)


def test_blocking_quiet_with_nonblocking():
    api = LayerStats(writes=50, nb_writes=50, bytes_written=50 * MiB)
    job = darshan_job(modules=("POSIX", "MPI-IO"), files=[file_with("/f", mpiio=api)])
    assert findings(job, "AGG-BLOCKING") == []


def test_stdio_fire():
    job = darshan_job(modules=("STDIO", "POSIX"), files=[
        file_with("/log.txt", stdio=LayerStats(writes=10, bytes_written=90 * MiB)),
        file_with("/data", posix=LayerStats(writes=10, bytes_written=10 * MiB))])
    (f,) = findings(job, "AGG-STDIO")
    assert f.evidence["percent"] == 90.0 and f.evidence["files"] == ["/log.txt"]


def test_stdio_quiet():
    job = darshan_job(modules=("STDIO", "POSIX"), files=[
        file_with("/log.txt", stdio=LayerStats(writes=10, bytes_written=MiB)),
        file_with("/data", posix=LayerStats(writes=10, bytes_written=99 * MiB))])
    assert findings(job, "AGG-STDIO") == []


# ---------------------------------------------------------------- file system

def test_metadata_fire(tmp_path):
    b = TraceBuilder(2)
    for r in range(2):
        b.op(r, "open", dur=0.01).op(r, "posix_open", dur=2.0)
        b.op(r, "write_at", r * MiB, MiB, 1, dur=0.1).op(r, "pwrite", r * MiB, MiB, dur=0.1)
        b.op(r, "posix_close", dur=0.5).op(r, "close", dur=0.01)
    (f,) = findings(b.write(tmp_path / "t"), "AGG-METADATA")
    assert f.evidence["metadata_seconds_all_ranks"] == 5.0
    assert f.evidence["io_seconds_all_ranks"] == 5.2


def test_metadata_quiet(tmp_path):
    b = posix_writes(2, {r: [r * MiB] for r in range(2)}, MiB, dur=1.0)
    assert findings(b.write(tmp_path / "t"), "AGG-METADATA") == []


def test_stripe_fire(tmp_path):
    path = collective_write(8, 64 * MiB, 4, [0, 4]).write(
        tmp_path / "t", meta={"hints": {"striping_factor": "1", "striping_unit": str(MiB)}},
        aggregators=[0, 4])
    (f,) = findings(path, "AGG-STRIPE")
    assert f.evidence["bytes"] == 2048 * MiB and f.evidence["stripe_count"] == 1
    # /scratch is a file system's root on most machines: the file, not it (issue 26)
    assert any(x.text == "lfs setstripe -c 8 -S 1M /scratch/out.dat" for x in f.fixes)


def test_stripe_quiet(tmp_path):
    path = collective_write(8, 64 * MiB, 4, [0, 4]).write(
        tmp_path / "t", meta={"hints": {"striping_factor": "8", "striping_unit": str(MiB)}},
        aggregators=[0, 4])
    assert findings(path, "AGG-STRIPE") == []
