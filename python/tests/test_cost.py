"""Issue 26, item 5: each finding states what it costs the job, severity
follows from that cost, and the report's top lists the costliest."""
import json
import os

import numpy as np
import pytest

from builders import darshan_job, file_with, layer, per_rank
from paths import SHARED, requires_shared

from aggio import advise
from aggio.findings import run_all
from aggio.thresholds import DEFAULTS, Thresholds

KiB, MiB, GiB = 1024, 1 << 20, 1 << 30
PARTIAL_DXT = os.path.join(SHARED, "partial_data_dxt", "partial_data_dxt.darshan")


def small_job(write_time, nbytes_each=4 * KiB, n=5000, runtime=1000.0):
    hist = np.zeros(10, np.int64)
    hist[2] = n
    st = per_rank(layer(writes=n, bytes_written=n * nbytes_each, write_time=write_time,
                        hist_write=hist, seq_writes=n, consec_writes=n,
                        max_byte_written=n * nbytes_each - 1),
                  {0: n * nbytes_each}, {0: write_time})
    st.access_sizes = {nbytes_each: n}
    job = darshan_job(nprocs=1, files=[file_with("/scratch/a", shared=False, nranks=1, posix=st)])
    job.runtime = runtime
    return job


def only(job, code, **th):
    return [f for f in run_all(job, Thresholds(th)) if f.code == code]


def test_every_finding_states_its_cost():
    (f,) = only(small_job(write_time=100.0, nbytes_each=64 * KiB), "AGG-SMALL-REQ")
    assert f.cost["seconds"] == pytest.approx(100.0) and f.cost["share_of_io"] == 1.0
    assert f.cost["share_of_run"] == pytest.approx(0.1) and f.cost["basis"]
    assert "cost: about 100 s per rank" in f.message
    assert f.severity == "high"


def test_no_high_on_tiny_work():
    """Under 1 s of I/O, or under 16 MiB moved: never HIGH."""
    (f,) = only(small_job(write_time=0.5), "AGG-SMALL-REQ")
    assert f.severity != "high"
    (g,) = only(small_job(write_time=100.0, nbytes_each=1 * KiB), "AGG-SMALL-REQ")
    assert g.cost["seconds"] >= 1 and g.severity != "high"      # 5 MiB in all


@requires_shared
def test_partial_dxt_log_has_no_high():
    """1,000,000 one-byte reads in 0.54 s: small requests, but not HIGH."""
    out = json.loads(_advise_json(PARTIAL_DXT))[0]
    small = [f for f in out["findings"] if f["code"] == "AGG-SMALL-REQ"]
    assert small and all(f["severity"] != "high" for f in out["findings"])
    assert out["partial_modules"] == ["DXT_MPIIO", "DXT_POSIX"]


def _advise_json(path, capsys=None):
    import contextlib
    import io
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert advise.main([path, "--json"]) == 0
    return buf.getvalue()


def test_straggler_of_hundredths_of_a_second_is_not_a_finding():
    times = {0: 0.03, 1: 0.03, 2: 0.03, 3: 0.06}
    st = per_rank(layer(writes=4, bytes_written=4 * MiB, write_time=0.15),
                  {r: MiB for r in times}, times)
    job = darshan_job(nprocs=4, files=[file_with("/scratch/s", posix=st)])
    assert only(job, "AGG-STRAGGLER") == []
    slow = {**times, 3: 6.0}       # seconds, not hundredths: a finding
    st2 = per_rank(layer(writes=4, bytes_written=4 * MiB, write_time=6.09),
                   {r: MiB for r in slow}, slow)
    (f,) = only(darshan_job(nprocs=4, files=[file_with("/scratch/s", posix=st2)]),
                "AGG-STRAGGLER")
    assert f.cost["seconds"] == pytest.approx(5.97)


def test_metadata_of_half_a_second_per_rank_is_not_high():
    meta = {r: 0.5 for r in range(4)}
    st = per_rank(layer(opens=400, writes=4, bytes_written=64 * MiB, write_time=0.4,
                        meta_time=2.0), {r: 16 * MiB for r in meta}, {r: 0.1 for r in meta},
                  meta)
    job = darshan_job(nprocs=4, files=[file_with("/scratch/m", posix=st)])
    (f,) = only(job, "AGG-METADATA", metadata_rank_seconds=0.4)
    assert f.cost["seconds"] == 0.5 and f.severity != "high"


def test_costliest_first_and_at_the_top():
    job = small_job(write_time=100.0, nbytes_each=64 * KiB)
    job.files[0].layers[2].file_not_aligned = 1000      # 20%: a cheaper finding
    found = run_all(job, Thresholds())
    text = advise.render_text(job, found)
    head = text.split("\n[")[0]
    assert "costliest findings" in head
    assert head.index("AGG-SMALL-REQ") < head.index("AGG-MISALIGNED")


def test_cost_thresholds_listed_and_overridable(capsys):
    for name in ("cost_high_seconds", "cost_high_share", "min_io_seconds", "min_io_bytes"):
        assert name in DEFAULTS
    advise.main(["--list-thresholds"])
    assert "cost_high_seconds" in capsys.readouterr().out
    (f,) = only(small_job(write_time=100.0, nbytes_each=64 * KiB), "AGG-SMALL-REQ",
                cost_high_seconds=1000)
    assert f.severity == "warn"


def test_single_aggregator_costs_its_own_posix_time():
    api = per_rank(layer(writes=16, coll_writes=16, bytes_written=GiB, write_time=16 * 9.0),
                   {r: GiB // 16 for r in range(16)}, {r: 9.0 for r in range(16)})
    posix = per_rank(layer(writes=1024, bytes_written=GiB, write_time=8.0), {0: GiB}, {0: 8.0})
    f = file_with("/lus/one.dat", nranks=16, mpiio=api, posix=posix)
    job = darshan_job(nprocs=16, modules=("POSIX", "MPI-IO"), files=[f])
    (g,) = only(job, "AGG-SINGLE-AGGREGATOR")
    assert g.cost["seconds"] == pytest.approx(8.0) and g.severity == "high"
