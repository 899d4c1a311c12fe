"""Issue 26, item 1: no conclusion from data the log does not have.  A
module the log marks partial (a rank hit Darshan's record limit, a DXT
buffer overflowed) withholds what rests on it or lowers it with a caveat."""
import re

from builders import darshan_job, file_with, layer, per_rank
from paths import SHARED, requires_shared

from aggio.findings import run_all
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

import os

MiB, GiB = 1 << 20, 1 << 30
PARTIAL_DXT = os.path.join(SHARED, "partial_data_dxt", "partial_data_dxt.darshan")


def codes(job):
    return [f.code for f in run_all(job, Thresholds())]


def missing_posix_job(partial=True):
    """32 ranks write 64 MiB collectively; the log keeps POSIX records of
    only two ranks, each with one 300-byte independent write."""
    api = per_rank(layer(writes=32, coll_writes=32, bytes_written=64 * MiB, write_time=320.0),
                   {r: 2 * MiB for r in range(32)}, {r: 10.0 for r in range(32)})
    posix = per_rank(layer(writes=2, bytes_written=600, write_time=0.002),
                     {3: 300, 5: 300}, {3: 0.001, 5: 0.001})
    job = darshan_job(nprocs=32, modules=("POSIX", "MPI-IO"),
                      files=[file_with("/scratch/out.dat", nranks=32, mpiio=api, posix=posix)])
    if partial:
        job.partial = {"POSIX"}
    return job


def test_missing_posix_records_name_no_aggregators():
    for partial in (True, False):      # flagged by the log, or seen in the bytes
        found = codes(missing_posix_job(partial))
        assert "AGG-AGGREGATORS" not in found and "AGG-SINGLE-AGGREGATOR" not in found
        assert "AGG-MPIIO-OVERHEAD" not in found


def test_withheld_analyses_are_said():
    job = missing_posix_job()
    run_all(job, Thresholds())
    (note,) = [n for n in job.notes if "withheld" in n]
    assert "/scratch/out.dat" in note and "partial" in note


def test_partial_module_caveat_and_lower_severity():
    """A finding resting on a partial module says so and is one step less severe."""
    st = per_rank(layer(writes=5000, bytes_written=5000 * 4096, write_time=400.0,
                        hist_write=__import__("numpy").array([0, 0, 5000, 0, 0, 0, 0, 0, 0, 0])),
                  {0: 5000 * 4096})
    st.access_sizes = {4096: 5000}
    whole = darshan_job(nprocs=1, files=[file_with("/scratch/a", shared=False, nranks=1, posix=st)])
    whole.runtime = 500.0
    (a,) = [f for f in run_all(whole, Thresholds()) if f.code == "AGG-SMALL-REQ"]
    assert "POSIX" in a.rests_on["modules"] and "partial" not in a.message
    cut = darshan_job(nprocs=1, files=[file_with("/scratch/a", shared=False, nranks=1, posix=st)])
    cut.runtime, cut.partial = 500.0, {"POSIX"}
    (b,) = [f for f in run_all(cut, Thresholds()) if f.code == "AGG-SMALL-REQ"]
    order = ("high", "warn", "info")
    assert order.index(b.severity) == min(order.index(a.severity) + 1, 2)
    assert "partial" in b.message and b.evidence["partial_modules"] == ["POSIX"]


def test_cb_nodes_fits_the_stripe_count_the_report_gives():
    """AGG-STRIPE asks for 16 stripes; AGG-MPIIO-OVERHEAD wants 2 x 3
    aggregators: the cb_nodes printed divides or is a multiple of 16."""
    api = per_rank(layer(writes=32, coll_writes=32, bytes_written=3 * GiB, write_time=640.0),
                   {r: 3 * GiB // 32 for r in range(32)}, {r: 20.0 for r in range(32)})
    posix = per_rank(layer(writes=3000, bytes_written=3 * GiB, write_time=3.0),
                     {0: GiB, 8: GiB, 16: GiB}, {0: 1.0, 8: 1.0, 16: 1.0})
    f = file_with("/lus/out.dat", nranks=32, mpiio=api, posix=posix)
    f.stripe_count, f.stripe_size = 1, MiB
    job = darshan_job(nprocs=32, modules=("POSIX", "MPI-IO", "LUSTRE"), files=[f])
    job.runtime = 700.0
    found = run_all(job, Thresholds())
    texts = [x.text for g in found for x in g.fixes]
    stripes = {int(m) for t in texts for m in re.findall(r"lfs setstripe -c (\d+)", t)}
    nodes = {int(m) for t in texts for m in re.findall(r"cb_nodes[=\s](\d+)", t)}
    assert stripes == {16} and nodes
    assert all(16 % n == 0 or n % 16 == 0 for n in nodes), nodes


@requires_shared
def test_partial_dxt_log_uses_counters_not_the_cut_trace():
    job = load_jobs([PARTIAL_DXT])[0]
    assert job.partial == {"DXT_POSIX", "DXT_MPIIO"}
    assert job.has_ops and not job.ops_complete(2)
    found = run_all(job, Thresholds())
    assert found
    for f in found:
        assert f.rests_on["modules"], f.code
        assert not set(f.rests_on["modules"]) & job.partial, (f.code, f.rests_on)
