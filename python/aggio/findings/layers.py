"""Findings that join the layers (the crosslayer package): who the
collective-buffering aggregators are and whether they fit the file system, a
single aggregator,
a straggling aggregator, and MPI-IO time far beyond its POSIX time (the
library's read-modify-write beneath MPI-IO writes: rmw.py)."""
from __future__ import annotations

import numpy as np

from .. import crosslayer as xl
from ..model import MPIIO, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, lfs_fix, pct

MAX_LISTED = 16
PLACEMENT_ENV = (
    Fix("env", "export MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY=1 MPICH_MPIIO_HINTS_DISPLAY=1"
        "   # Cray MPICH: print aggregators and hints at open", needs=frozenset({"mpiio"})),
    Fix("env", "export AGGIO_AGGREGATOR_PLACEMENT_DISPLAY=1 AGGIO_HINTS_DISPLAY=1"
        "   # aggio: print aggregators and hints", needs=frozenset({"aggio"})))


def wanted_stripes(nprocs: int) -> int:
    """Stripe count (and aggregator count) the findings propose for a shared
    file written by `nprocs` ranks: one per writer up to 16 (a common OST
    count per file system group); every finding uses this one rule."""
    return max(2, min(nprocs or 2, 16))


def fit_aggregators(f, want: int, limit: int = 0) -> int:
    """An aggregator count near `want` (at most `limit`) that fits the file's
    stripes: a multiple of the stripe count, or a divisor of it (every
    finding that proposes cb_nodes for a striped file goes through this, so
    that their proposals agree with AGG-AGGREGATORS)."""
    s = f.stripe_count
    want = max(1, min(want, limit) if limit else want)
    if not s or want % s == 0 or s % want == 0:
        return want
    if want > s:
        return want - want % s
    return max(d for d in range(1, want + 1) if s % d == 0)


def _listed(ranks) -> list:
    return list(ranks[:MAX_LISTED]) + (["..."] if len(ranks) > MAX_LISTED else [])


def _all_aggregators(job):
    for index in range(len(job.files)):
        agg = xl.aggregators(job, index)
        if agg is not None and agg.callers >= 2:
            yield job.files[index], agg


# ------------------------------------------------------------ aggregators

@check("AGG-AGGREGATORS", "Collective-buffering aggregators, and whether they fit the file system")
def aggregators(job: Job, th) -> list[Finding]:
    out = []
    for f, agg in _all_aggregators(job):
        if 2 <= len(agg.ranks) < agg.callers:
            out.append(_aggregators_finding(f, agg))
    return out


def _fit(f, agg) -> list[str]:
    """Reasons the aggregators do not fit the stripes ([] when they fit)."""
    a, b = len(agg.ranks), agg.buffer_size
    s, u = f.stripe_count, f.stripe_size
    problems = []
    if s and a % s and s % a:
        problems.append(f"{a} aggregators over {s} stripes: some OSTs serve more aggregators "
                        "than others (use a multiple or a divisor of the stripe count)")
    if u and b and b % u and u % b:
        problems.append(f"buffer {fmt_bytes(b)} does not divide into {fmt_bytes(u)} stripes: "
                        "rounds end inside stripes that the next round's writer also locks")
    return problems


def _aggregators_finding(f, agg):
    a, b = len(agg.ranks), agg.buffer_size
    per = list(agg.bytes.values())
    evidence = {"aggregators": a, "aggregator_ranks": _listed(agg.ranks),
                "mpiio_ranks": agg.callers, "source": agg.source,
                "placement": agg.placement or "unknown (the log does not record hosts)",
                "buffer_bytes": b, "buffer_source": agg.buffer_source,
                "bytes_in_flight_per_round": a * b if b else None,
                "share_of_posix_bytes": pct(agg.share, 1),
                "bytes_per_aggregator_min_median_max": [min(per), int(np.median(per)), max(per)],
                "rounds_per_aggregator_median": int(np.median(list(agg.calls.values())))
                if agg.calls else None,
                "stripe_count": f.stripe_count or None, "stripe_size": f.stripe_size or None}
    problems = _fit(f, agg)
    evidence["fits_stripes"] = (not problems) if f.stripe_count else None
    msg = (f"{a} of {agg.callers} ranks did {pct(agg.share, 1)}% of the POSIX I/O of {f.path} "
           f"under collective MPI-IO: these are the collective-buffering aggregators"
           + (f" ({agg.placement})" if agg.placement else "")
           + (f", writing {fmt_bytes(b)} at a time ({fmt_bytes(a * b)} in flight per round)"
              if b else ""))
    if problems:
        msg += "; they do not fit the file's stripes: " + "; ".join(problems)
    elif f.stripe_count:
        msg += f"; they fit its {f.stripe_count} stripes of {fmt_bytes(f.stripe_size)}"
    else:
        msg += ("; the log has no stripe layout, so whether they fit the file system is "
                "unknown (on Lustre: aggregators a multiple or divisor of the stripe count, "
                "buffer a multiple of the stripe size)")
    return Finding("AGG-AGGREGATORS", "warn" if problems else "info",
                   "Collective-buffering aggregators", msg, evidence,
                   _aggregator_fixes(f, agg, problems), subject=f.path)


def _aggregator_fixes(f, agg, problems):
    fixes = list(PLACEMENT_ENV)
    a, b, s, u = len(agg.ranks), agg.buffer_size, f.stripe_count, f.stripe_size
    hints = {}
    if s and a % s and s % a:
        hints["cb_nodes"] = fit_aggregators(f, a, agg.callers)
    if u and b and b % u and u % b:
        hints["cb_buffer_size"] = -(-b // u) * u
    return hint_fixes(hints, f.path) + fixes if hints else fixes


@check("AGG-SINGLE-AGGREGATOR", "All POSIX I/O of a collectively accessed file goes through one rank")
def single_aggregator(job: Job, th) -> list[Finding]:
    out = []
    for f, agg in _all_aggregators(job):
        if len(agg.ranks) == 1:
            out.append(_single_finding(job, f, agg))
    return out


def _single_finding(job, f, agg):
    rank = agg.ranks[0]
    want = wanted_stripes(job.nprocs or agg.callers)
    api = f.layers[MPIIO]
    evidence = {"mpiio_ranks": agg.callers, "posix_ranks": [rank], "source": agg.source,
                "share_of_posix_bytes": round(100 * agg.share, 3),
                "stripe_count": f.stripe_count,
                "collective_calls": api.coll_reads + api.coll_writes}
    msg = (f"{agg.callers} ranks call collective MPI-IO on {f.path} but rank {rank} alone "
           f"does {round(100 * agg.share, 3)}% of its POSIX I/O ({agg.source})")
    cb_nodes = job.hints.get("cb_nodes") if job.kind == "aggio-trace" else None
    if f.stripe_count == 1:
        msg += ("; the file has one Lustre stripe, and ROMIO's Lustre driver sets the "
                "number of aggregators (cb_nodes) to the stripe count: one stripe, one "
                "aggregator")
        evidence["cause"] = "one stripe -> one aggregator"
    elif cb_nodes == "1":
        msg += "; the hint cb_nodes=1 asked for one aggregator"
        evidence["cause"] = "cb_nodes=1"
    fixes = [lfs_fix(f.path, want, f.stripe_size or (4 << 20))]
    fixes += hint_fixes({"cb_nodes": want}, f.path)
    return Finding("AGG-SINGLE-AGGREGATOR", "high", "A single aggregator", msg, evidence,
                   fixes, subject=f.path)


@check("AGG-SLOW-AGGREGATOR", "One collective-buffering aggregator is much slower than the others")
def slow_aggregator(job: Job, th) -> list[Finding]:
    out = []
    for f, agg in _all_aggregators(job):
        if len(agg.seconds) < 2 or len(agg.ranks) >= agg.callers:
            continue
        times = agg.seconds
        median = float(np.median(list(times.values())))
        rank = max(times, key=times.get)
        if times[rank] > th["straggler_ratio"] * median and \
                times[rank] - median > th["straggler_min_seconds"]:
            out.append(_slow_agg_finding(job, f, agg, rank, median))
    return out


def _slow_agg_finding(job, f, agg, rank, median):
    seconds = agg.seconds[rank]
    evidence = {"rank": rank, "seconds": round(seconds, 4),
                "median_aggregator_seconds": round(median, 4),
                "x_median": round(seconds / median, 2) if median else None,
                "bytes": agg.bytes.get(rank), "median_aggregator_bytes":
                int(np.median(list(agg.bytes.values()))), "aggregators": len(agg.ranks)}
    node = job.rank_node.get(rank)
    if node is not None:
        evidence["node"] = job.node_names[node] if node < len(job.node_names) else node
    msg = (f"aggregator rank {rank}" + (f" (node {evidence['node']})" if "node" in evidence else "")
           + f" spent {seconds:.3f} s in POSIX I/O on {f.path}, {seconds / max(median, 1e-12):.1f}x "
           f"the median aggregator ({median:.3f} s)")
    if job.has_ops:
        last, calls = xl.last_finishers(job, job.files.index(f))
        if last.get(rank):
            evidence["last_to_finish_in_calls"] = last[rank]
            evidence["collective_calls"] = calls
            msg += (f"; it finished last in {last[rank]} of {calls} collective calls, which all "
                    "waited for it")
    if abs(evidence["bytes"] - evidence["median_aggregator_bytes"]) <= 0.1 * max(evidence["bytes"], 1):
        msg += "; it moved as many bytes as the others, so its node, network link or OST is slow"
    fixes = [Fix("env", f"lfs getstripe {f.path}   # which OSTs; then lfs df -h: a full or slow OST?",
                 needs=frozenset({"lustre"}))]
    fixes += list(PLACEMENT_ENV)
    fixes.append(Fix("code", "/* move aggregators off a busy node: list the good hosts */\n"
                             "MPI_Info_set(info, \"cb_config_list\", \"nid0001:1,nid0002:1\");",
                     needs=frozenset({"mpiio"})))
    return Finding("AGG-SLOW-AGGREGATOR", "warn", "Straggling aggregator", msg, evidence, fixes,
                   subject=f.path)


# --------------------------------------------------- MPI-IO beyond POSIX

@check("AGG-MPIIO-OVERHEAD", "Ranks spend much longer in MPI-IO than the POSIX I/O beneath it takes")
def mpiio_overhead(job: Job, th) -> list[Finding]:
    out = []
    for index, f in enumerate(job.files):
        ov = xl.mpiio_overhead(job, index)
        if ov is None or ov.median_mpiio <= 0:
            continue
        if ov.beyond > th["overhead_min_seconds"] and \
                ov.beyond / ov.median_mpiio > th["overhead_fraction"]:
            out.append(_overhead_finding(job, f, ov))
    return out


def _overhead_finding(job, f, ov):
    coll = ov.collective
    beyond = ov.per_rank_beyond()
    evidence = {"median_mpiio_seconds_per_rank": round(ov.median_mpiio, 4),
                "median_beyond_posix_seconds": round(ov.beyond, 4),
                "percent_of_mpiio_time": pct(ov.beyond, ov.median_mpiio),
                "compared_with": "the busiest POSIX rank" if coll or ov.from_summary
                else "each rank's own POSIX calls",
                "busiest_posix_rank": ov.busiest_rank,
                "busiest_posix_seconds": round(ov.busiest_posix, 4),
                "source": ov.source, "collective": coll}
    if not ov.from_summary:
        worst = sorted(beyond, key=beyond.get, reverse=True)[:5]
        evidence["ranks_most_beyond"] = [
            {"rank": r, "mpiio_seconds": round(ov.mpiio_seconds[r], 4),
             "posix_seconds": round(ov.posix_seconds.get(r, 0.0), 4)} for r in worst]
    who = "every rank" if ov.from_summary else "the median rank"
    if coll or ov.from_summary:
        base = (f"while the busiest POSIX rank ({ov.busiest_rank}) spent {ov.busiest_posix:.2f} s "
                "in POSIX calls")
    else:
        base = "beyond its own POSIX calls"
    msg = (f"{who} spent {ov.median_mpiio:.2f} s inside MPI-IO calls on {f.path}"
           + (" (mean: the MPI-IO record is a summary)" if ov.from_summary else "")
           + f", {base}: {ov.beyond:.2f} s per rank ({pct(ov.beyond, ov.median_mpiio)}%) went to "
           + ("data exchange and synchronisation between ranks - the signature of "
              "collective-buffering overhead or load imbalance" if coll else
              "work outside POSIX calls inside the MPI-IO library: file locks, data sieving, "
              "atomic mode or waiting"))
    pr = xl.posix_reads(job, job.files.index(f))
    sieving = pr is not None and pr.read_modify_write
    fixes = []
    if coll:
        agg = xl.aggregators(job, job.files.index(f))
        want = 2 * len(agg.ranks) if agg else wanted_stripes(job.nprocs)
        fixes += hint_fixes({"romio_cb_write": "enable",
                             "cb_nodes": fit_aggregators(f, want, xl.mpiio_callers(
                                 job, job.files.index(f)))}, f.path)
    elif sieving:
        fixes += hint_fixes({"romio_ds_write": "disable"}, f.path)
    fixes += [Fix("code", "MPI_File_set_atomicity(fh, 0);   /* no per-call locks */\n"
                          "/* or let aggregators do the I/O: */\n"
                          "MPI_File_write_at_all(fh, offset, buf, count, type, MPI_STATUS_IGNORE);",
                  needs=frozenset({"independent"})),
              Fix("env", "export MPICH_MPIIO_TIMERS=1 MPICH_MPIIO_STATS=1   # Cray MPICH: "
                         "where the time goes, per call", needs=frozenset({"mpiio"})),
              Fix("env", "export AGGIO_TIMERS=1 AGGIO_STATS=1   # aggio: phase timers",
                  needs=frozenset({"aggio"})),
              Fix("code", "/* a collective call lasts as long as its slowest rank: give ranks\n"
                          "   equal shares and enter the call when all are ready */",
                  needs=frozenset({"collective"}))]
    return Finding("AGG-MPIIO-OVERHEAD", "high" if ov.beyond / ov.median_mpiio > 0.8 else "warn",
                   "MPI-IO time far beyond its POSIX time", msg, evidence, fixes, subject=f.path)

