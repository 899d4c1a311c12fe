"""The cross-layer analysis: MPI-IO collective calls mapped to the POSIX calls
they caused, aggregators per node, the straggling aggregator; and the report
views built on it (per aggregator, one call's translation, filters)."""
import numpy as np
import pytest
from builders import TraceBuilder, collective_write, posix_writes, two_phase_write
from paths import DXT_LOG, requires_shared

from aggio import cli, crosslayer as xl
from aggio.findings import run_all
from aggio.model import OPS
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

MiB = 1 << 20


def _job(path):
    return load_jobs([path])[0]


def test_containing_matches_rank_and_time():
    outer = np.zeros(3, OPS)
    outer["rank"], outer["t_start"], outer["t_end"] = [0, 0, 1], [0.0, 2.0, 0.0], [1.0, 3.0, 5.0]
    inner = np.zeros(5, OPS)
    inner["rank"] = [0, 0, 0, 1, 2]
    inner["t_start"], inner["t_end"] = [0.2, 2.5, 1.2, 4.0, 0.5], [0.4, 2.6, 1.8, 4.5, 0.6]
    assert xl.containing(outer, inner).tolist() == [0, 1, -1, 2, -1]


def test_collective_calls_and_what_each_aggregator_wrote(tmp_path):
    path = two_phase_write(8, [0, 4], calls=3, rounds=2, buffer=MiB, rmw=True).write(
        tmp_path / "t", aggregators=[0, 4], per_node=4)
    job = _job(path)
    calls = xl.collective_calls(job, 0)
    assert [c.number for c in calls] == [0, 1, 2]
    c = calls[1]
    assert sorted(c.senders) == list(range(8)) and c.bytes == 4 * MiB
    assert sorted(c.writers) == [0, 4]
    w0, w4 = c.writers[0], c.writers[4]
    assert w0["bytes"] == w4["bytes"] == 2 * MiB and w0["read_bytes"] == 2 * MiB
    assert w0["calls"] == 4                                   # 2 reads + 2 writes
    assert (w0["first"], w0["last"]) == (4 * MiB, 6 * MiB)
    assert (w4["first"], w4["last"]) == (6 * MiB, 8 * MiB)
    api, posix = xl.call_ops(job, 0, 1)
    assert len(api) == 8 and len(posix) == 8


def test_aggregators_per_node_from_the_trace(tmp_path):
    path = two_phase_write(16, [0, 1, 8, 9], calls=2).write(
        tmp_path / "t", aggregators=[0, 1, 8, 9], per_node=8)
    agg = xl.aggregators(_job(path), 0)
    assert agg.ranks == [0, 1, 8, 9] and agg.per_node == {"n0": 2, "n1": 2}
    assert agg.placement == "2 per node on 2 of 2 nodes" and agg.source == "aggio trace"
    assert agg.calls == {0: 4, 1: 4, 8: 4, 9: 4} and agg.buffer_size == MiB


def test_straggling_aggregator_fires(tmp_path):
    path = two_phase_write(16, [0, 4, 8, 12], calls=4, round_dur=0.02, slow=8).write(
        tmp_path / "t", aggregators=[0, 4, 8, 12], per_node=4)
    (f,) = [x for x in run_all(_job(path), Thresholds()) if x.code == "AGG-SLOW-AGGREGATOR"]
    assert f.evidence["rank"] == 8 and f.evidence["node"] == "n2"
    assert f.evidence["x_median"] == 5.0 and f.evidence["last_to_finish_in_calls"] == 4
    assert "as many bytes as the others" in f.message


def test_straggling_aggregator_quiet(tmp_path):
    path = two_phase_write(16, [0, 4, 8, 12], calls=4, round_dur=0.02).write(
        tmp_path / "t", aggregators=[0, 4, 8, 12], per_node=4)
    assert not [x for x in run_all(_job(path), Thresholds()) if x.code == "AGG-SLOW-AGGREGATOR"]


def test_overhead_compares_independent_ranks_with_their_own_posix(tmp_path):
    """Independent I/O: each rank against its own POSIX calls, not the busiest."""
    b = TraceBuilder(2).open_all()
    for r, extra in ((0, 0.0), (1, 0.5)):
        for i in range(4):
            b.op(r, "write_at", (r * 4 + i) * MiB, MiB, 1, dur=0.01 + extra)
            b.op(r, "pwrite", (r * 4 + i) * MiB, MiB, dur=0.01, start=b.t[r] - 0.01)
    ov = xl.mpiio_overhead(_job(b.close_all().write(tmp_path / "t")), 0)
    assert not ov.collective
    assert ov.per_rank_beyond() == pytest.approx({0: 0.0, 1: 2.0})


@requires_shared
def test_dxt_log_reads_are_the_programs():
    """mpi-io-test: independent MPI-IO reads and writes; each POSIX read runs
    inside an MPI-IO read of the same rank, none inside a write."""
    job = _job(DXT_LOG)
    index = [i for i, f in enumerate(job.files) if f.path.endswith("test.out")][0]
    pr = xl.posix_reads(job, index)
    assert pr.mpiio_reads == 128 and pr.inside_writes == 0 and not pr.read_modify_write
    ov = xl.mpiio_overhead(job, index)
    assert len(ov.mpiio_seconds) == 32 and ov.source == "per-operation data"
    assert xl.aggregators(job, index) is None              # no collective calls


# ------------------------------------------------------------ report views

def _report(tmp_path, path, *extra):
    out = tmp_path / "r.html"
    assert cli.main(["report", path, "-o", str(out), *extra]) == 0
    return out.read_text()


def test_report_shows_aggregators_and_the_slowest_call(tmp_path):
    b = two_phase_write(8, [0, 4], calls=3, buffer=MiB)
    # make call 1 the slowest: its ranks wait longer
    path = b.write(tmp_path / "t", aggregators=[0, 4], per_node=4)
    page = _report(tmp_path, path)
    assert "id='aggregators-table-0-0'" in page and "1 per node on 2 of 2 nodes" in page
    assert "id='translation-0'" in page and "the slowest of 3" in page
    assert "id='translation-writers-0'" in page and "id='translation-senders-0'" in page
    page = _report(tmp_path, path, "--call", "2")
    assert "Call 2 on /scratch/out.dat (chosen with --call)" in page
    page = _report(tmp_path, path, "--call", "7")
    assert "has collective calls 0 to 2" in page


def test_translation_says_which_aggregators_wrote_what(tmp_path):
    path = two_phase_write(8, [0, 4], calls=1, rounds=2, buffer=MiB).write(
        tmp_path / "t", aggregators=[0, 4])
    page = _report(tmp_path, path, "--call", "0")
    table = page.split("id='translation-writers-0'")[1].split("</table>")[0]
    assert "<td>0</td><td>2.0 MiB</td>" in table and "<td>0 - 2,097,152</td>" in table
    assert "<td>4</td><td>2.0 MiB</td>" in table and "<td>2,097,152 - 4,194,304</td>" in table


def test_no_collective_views_for_independent_io(tmp_path):
    page = _report(tmp_path, posix_writes(2, {0: [0], 1: [MiB]}, MiB).write(tmp_path / "t"))
    assert "id='translation-0'" not in page and "aggregators-table" not in page


def test_time_and_rank_filters(tmp_path):
    path = collective_write(8, MiB, 20, [0, 4]).write(tmp_path / "t", aggregators=[0, 4])
    job = _job(path)
    t_mid = float(job.ops["t_end"].max()) / 2
    page = _report(tmp_path, path, "--time", f":{t_mid}", "--ranks", "2:5")
    from aggio.report import filtered
    view = filtered(job, (None, t_mid), (2, 5))
    assert set(np.unique(view.ops["rank"])) <= {2, 3, 4, 5}
    assert (view.ops["t_start"] <= t_mid).all() and 0 < len(view.ops) < len(job.ops)
    assert f"Filtered views: time the start to {t_mid:g}s and " in page
    assert f"ranks 2 to 5 ({len(view.ops):,} of {len(job.ops):,} operations)" in page
    assert "Findings and the files table use the whole input" in page
    assert "id='controls-0'" in page


@pytest.mark.parametrize("bad", ["5", "a:b", "3:1", "-1:2"])
def test_bad_rank_ranges_are_usage_errors(tmp_path, bad):
    path = posix_writes(1, {0: [0]}, MiB).write(tmp_path / "t")
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", path, "--ranks", bad, "-o", str(tmp_path / "r.html")])
    assert exc.value.code == 2
