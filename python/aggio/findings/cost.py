"""What each finding costs the job, and the severity that follows (issue 26).

A finding's cost is the time, in seconds per rank (rank-seconds divided by
the ranks, Darshan's summed times made comparable with one rank's), that
the thing it names took: the share of a layer's time its requests are, the
wait for a straggler, the MPI-IO time beyond POSIX.  It is an upper bound on
what the fix can save, never a promise.  COSTS holds one small function per
code (job, finding) -> (seconds, basis) or None when the finding is a
description (no cost); grade() turns seconds into a severity with the
cost_* thresholds, so that a tiny job gets no HIGH finding.
"""
from __future__ import annotations

from ..model import MPIIO, POSIX, STDIO, Job
from .base import SEVERITIES


def _ranks(job: Job) -> int:
    return max(job.nprocs, 1)


def io_seconds(job: Job) -> float:
    """The job's I/O time per rank: each file's time at the layer the
    program called (MPI-IO, else STDIO, else POSIX), summed, over the ranks."""
    total = 0.0
    for f in job.files:
        st = f.layers.get(MPIIO) or f.layers.get(STDIO) or f.layers.get(POSIX)
        if st is not None:
            total += st.io_time
    return total / _ranks(job)


def io_bytes(job: Job) -> int:
    """Bytes the job moved: per file, the most any layer moved (a collective
    call of 1.5 MiB whose aggregators read GiBs beneath it is not tiny)."""
    return sum(max((st.bytes for st in f.layers.values()), default=0) for f in job.files)


def _layer_time(job, layer, direction=None, path=None) -> float:
    """Seconds per rank in `layer` data calls (one direction, one file)."""
    total = 0.0
    for f in job.files:
        st = f.layers.get(layer)
        if st is None or (path and f.path != path):
            continue
        total += {"read": st.read_time, "write": st.write_time}.get(
            direction, st.read_time + st.write_time)
    return total / _ranks(job)


def _share(ev, part, whole):
    return ev[part] / ev[whole] if ev.get(whole) else 0.0


def _of_all_requests(ev, part):
    """part's share of every POSIX request of the direction: the layer's
    time also holds the requests the finding left out (the library's
    read-modify-write reads, the same bytes again)."""
    left_out = ev.get("library_reads_left_out", 0) + ev.get("one_span_requests_left_out", 0)
    whole = ev.get("requests", 0) + left_out
    return ev[part] / whole if whole else 0.0


def _small(job, f):
    return _layer_time(job, POSIX, f.evidence["direction"]) * \
        _of_all_requests(f.evidence, "small_requests"), \
        f"POSIX {f.evidence['direction']} time x the share of small requests"


def _misaligned(job, f):
    key = "misaligned_requests" if "misaligned_requests" in f.evidence else "misaligned_buffers"
    return _layer_time(job, POSIX) * _share(f.evidence, key, "requests"), \
        "POSIX data time x the share of misaligned requests"


def _random(job, f):
    return _layer_time(job, POSIX, f.evidence["direction"]) * \
        _of_all_requests(f.evidence, "random_requests"), \
        "POSIX time x the share of non-sequential requests"


def _redundant(job, f):
    ev = f.evidence
    extra = 1 - ev["distinct_bytes"] / ev["bytes_moved"] if ev["bytes_moved"] else 0.0
    return _layer_time(job, POSIX, ev["direction"], f.subject) * extra, \
        "the file's POSIX time x the share of bytes moved more than once"


def _file_time(job, f, what):
    st = None
    for x in job.files:
        if x.path == f.subject:
            st = x.layers.get(MPIIO) or x.layers.get(POSIX)
    return (st.read_time + st.write_time) / _ranks(job) if st else 0.0, what


def _dominant(job, f):
    t, _ = _file_time(job, f, "")
    return t * f.evidence["percent"] / 100, "the file's I/O time x the dominant rank's share"


def _imbalance(job, f):
    t, _ = _file_time(job, f, "")
    return t * f.evidence["percent_of_max"] / 100, \
        "the file's I/O time x the spread between ranks (of the largest)"


def _straggler(job, f):
    ev = f.evidence
    if "stragglers" in ev:
        return ev["stragglers"][0]["seconds"] - ev["median_seconds"], \
            "the slowest rank's I/O time beyond the median rank's"
    base = ev.get("median_seconds", ev.get("mean_seconds_per_rank", 0.0))
    return ev["slowest_seconds"] - base, "the slowest rank's I/O time beyond the median/mean"


def _layer_cost(layer, what):
    return lambda job, f: (_layer_time(job, layer, f.evidence.get("direction")), what)


def _metadata(job, f):
    return f.evidence["max_rank_metadata_seconds"], "the metadata time of the busiest rank"


def _stdio(job, f):
    return sum(x.layers[STDIO].io_time for x in job.files if STDIO in x.layers) / _ranks(job), \
        "STDIO time"


def _stripe(job, f):
    return _file_time(job, f, "the file's I/O time (all of it goes through the stripes)")


def _aggregators(job, f):
    if f.severity == "info":
        return None                      # a description: they fit
    return _file_time(job, f, "the file's I/O time (the aggregators carry all of it)")


def _single(job, f):
    # one rank did all the file's POSIX calls: their sum is its own time,
    # which every rank of the collective calls waits for
    return _layer_time(job, POSIX, None, f.subject) * _ranks(job), \
        "the one aggregator's POSIX time (every caller waits for it)"


def _slow_agg(job, f):
    ev = f.evidence
    return ev["seconds"] - ev["median_aggregator_seconds"], \
        "the aggregator's POSIX time beyond the median aggregator's"


def _overhead(job, f):
    return f.evidence["median_beyond_posix_seconds"], "MPI-IO time per rank beyond POSIX"


def _rmw(job, f):
    return _layer_time(job, POSIX, "read", f.subject), "the file's POSIX read time"


COSTS = {
    "AGG-SMALL-REQ": _small, "AGG-MISALIGNED": _misaligned, "AGG-RANDOM": _random,
    "AGG-REDUNDANT": _redundant, "AGG-DOMINANT-RANK": _dominant, "AGG-IMBALANCE": _imbalance,
    "AGG-STRAGGLER": _straggler,
    "AGG-INDEP-MPIIO": _layer_cost(MPIIO, "MPI-IO time of the independent calls"),
    "AGG-NO-MPIIO": _layer_cost(POSIX, "POSIX time (all of it without MPI-IO)"),
    "AGG-BLOCKING": _layer_cost(MPIIO, "time inside blocking MPI-IO calls"),
    "AGG-STDIO": _stdio, "AGG-METADATA": _metadata, "AGG-STRIPE": _stripe,
    "AGG-AGGREGATORS": _aggregators, "AGG-SINGLE-AGGREGATOR": _single,
    "AGG-SLOW-AGGREGATOR": _slow_agg, "AGG-MPIIO-OVERHEAD": _overhead, "AGG-RMW": _rmw,
}


def attach(job: Job, findings, th) -> None:
    """Sets finding.cost (where the check did not) and grades severity."""
    io_s, nbytes = io_seconds(job), io_bytes(job)
    for f in findings:
        if f.cost is None and f.code in COSTS:
            got = COSTS[f.code](job, f)
            if got is not None:
                seconds, basis = got
                seconds = max(0.0, float(seconds))
                f.cost = {"seconds": round(seconds, 4),
                          "share_of_io": round(seconds / io_s, 4) if io_s else None,
                          "share_of_run": round(seconds / job.runtime, 4) if job.runtime else None,
                          "basis": basis}
        f.severity = grade(f, th, io_s, nbytes)
        if f.cost is not None:
            f.message += _cost_text(f.cost)


# Findings about time spent outside data transfers: a job with few bytes can
# still lose much time to them, so min_io_bytes does not cap them.
NOT_ABOUT_BYTES = {"AGG-METADATA", "AGG-STRAGGLER"}


def grade(f, th, io_s: float, nbytes: int) -> str:
    """Severity from cost.  The cost grades HIGH (cost_high_seconds and
    cost_high_share), WARN (cost_warn_*) or INFO; the check's own severity is
    a ceiling (the cost is an upper bound, so it only lowers); no HIGH on a
    job with under min_io_seconds of I/O per rank or min_io_bytes."""
    sev = f.severity
    if f.cost is not None:
        seconds, share = f.cost["seconds"], f.cost["share_of_io"] or 0.0
        cost_sev = ("high" if seconds >= th["cost_high_seconds"] and share >= th["cost_high_share"]
                    else "warn" if seconds >= th["cost_warn_seconds"] and
                    share >= th["cost_warn_share"] else "info")
        sev = max(sev, cost_sev, key=SEVERITIES.index)
    tiny = io_s < th["min_io_seconds"] or \
        (nbytes < th["min_io_bytes"] and f.code not in NOT_ABOUT_BYTES)
    if sev == "high" and tiny:
        sev = "warn"
    return sev


def _cost_text(cost) -> str:
    share = cost["share_of_io"]
    return (f" [cost: about {cost['seconds']:.3g} s per rank"
            + (f", {100 * share:.0f}% of the I/O time" if share is not None else "") + "]")


def top(findings, n: int) -> list:
    """The n findings that cost the most (those with a cost, not INFO)."""
    costed = [f for f in findings if f.cost and f.cost["seconds"] > 0 and f.severity != "info"]
    return sorted(costed, key=lambda f: -f.cost["seconds"])[:int(n)]


def sort_key(f):
    return (SEVERITIES.index(f.severity), -(f.cost or {}).get("seconds", 0.0), f.code)
