"""Issue 26, item 2: a request of exactly 1 MiB is not small.  Darshan's
100K_1M bin includes 1 MiB; the most-common-size counters (ACCESS1..4) and
DXT segments tell the two apart, and the verdict does not depend on DXT."""
import numpy as np

from builders import darshan_job, file_with, layer, posix_writes

from aggio.findings import run_all
from aggio.model import SIZE_BIN_LABELS, size_histogram
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

KiB, MiB = 1024, 1 << 20


def small_findings(job):
    return [f for f in run_all(job, Thresholds()) if f.code == "AGG-SMALL-REQ"]


def darshan_bins(lengths) -> np.ndarray:
    """Darshan's own binning (darshan-common.h DARSHAN_BUCKET_INC): a size
    counts in the first bin whose upper bound is not below it."""
    edges = [100, 1024, 10 * KiB, 100 * KiB, MiB, 4 * MiB, 10 * MiB, 100 * MiB, 1 << 30]
    hist = np.zeros(10, np.int64)
    for n in lengths:
        hist[next((i for i, e in enumerate(edges) if n <= e), 9)] += 1
    return hist


def counters_job(sizes: dict, direction="write"):
    """A counter-only Darshan job: one shared file, POSIX requests of the
    given sizes (size -> count), binned as Darshan bins them."""
    lengths = np.repeat(np.array(list(sizes), np.int64), list(sizes.values()))
    hist = darshan_bins(lengths)
    moved = "bytes_read" if direction == "read" else "bytes_written"
    st = layer(**{f"{direction}s": len(lengths), moved: int(lengths.sum()),
                  f"hist_{direction}": hist, f"{direction}_time": 2.0})
    st.access_sizes = dict(sizes)
    return darshan_job(files=[file_with("/scratch/out", posix=st)])


def test_one_mib_is_in_darshans_100k_1m_bin():
    sizes = np.array([MiB, MiB + 1, 100, 101, 0, 1 << 30, (1 << 30) + 1])
    assert size_histogram(sizes).tolist() == darshan_bins(sizes).tolist()
    hist = size_histogram(np.array([MiB, MiB + 1, 100, 101]))
    assert hist[SIZE_BIN_LABELS.index("100K-1M")] == 1
    assert hist[SIZE_BIN_LABELS.index("1M-4M")] == 1
    assert hist[SIZE_BIN_LABELS.index("0-100")] == 1


def test_all_one_mib_counters_no_small_requests():
    assert small_findings(counters_job({MiB: 5000})) == []


def test_all_one_mib_trace_no_small_requests(tmp_path):
    path = posix_writes(2, {0: np.arange(1500) * MiB, 1: (np.arange(1500) + 1500) * MiB},
                        MiB).write(tmp_path / "t")
    assert small_findings(load_jobs([path])[0]) == []


def test_mix_gives_the_right_share():
    (f,) = small_findings(counters_job({MiB: 8500, 4 * KiB: 700, 512 * KiB: 800}))
    assert f.evidence["small_requests"] == 1500 and f.evidence["requests"] == 10000
    assert f.evidence["percent"] == 15.0


def test_same_verdict_with_and_without_dxt(tmp_path):
    offsets = {0: np.arange(1200) * MiB, 1: (np.arange(1200) + 1200) * MiB}
    big = posix_writes(2, offsets, MiB).write(tmp_path / "big")
    small = posix_writes(2, offsets, 256 * KiB).write(tmp_path / "small")
    for path in (big, small):
        traced = load_jobs([path])[0]
        counters = load_jobs([path])[0]
        counters.has_ops = False     # as if the log had no DXT
        a, b = small_findings(traced), small_findings(counters)
        assert [x.evidence["small_requests"] for x in a] == \
               [x.evidence["small_requests"] for x in b]


def test_unknown_split_counts_only_certain_small():
    """1 MiB not among the four most common sizes: the bin's share of 1 MiB
    requests is unknown; only what is certainly small is counted."""
    sizes = {200 * KiB: 400, 300 * KiB: 300, 400 * KiB: 200, 500 * KiB: 100}
    job = counters_job(sizes)
    st = job.files[0].layers[2]
    st.hist_write[SIZE_BIN_LABELS.index("100K-1M")] += 50     # 50 requests of unknown size
    st.writes += 50
    assert st.small_range("write", MiB) == (1000, 1050)
