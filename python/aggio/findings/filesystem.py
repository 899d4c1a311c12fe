"""Findings about the file system: metadata time and stripe settings."""
from __future__ import annotations

from ..model import POSIX, STDIO, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, lfs_fix, pct
from .layers import wanted_stripes


@check("AGG-METADATA", "Metadata operations take much of the I/O time")
def metadata(job: Job, th) -> list[Finding]:
    total_meta, total_io, opens = 0.0, 0.0, 0
    per_rank, means = {}, []
    for f in job.files:
        st = f.layers.get(POSIX) or f.layers.get(STDIO)
        if st is None:
            continue
        total_meta += st.meta_time
        total_io += st.io_time
        opens += st.opens
        if st.reduced:
            # a summary record sums every rank's time: per rank it is the mean
            means.append((f.path, st.meta_time / max(f.nranks or job.nprocs, 1)))
        else:
            for rank, seconds in st.rank_meta_time.items():
                per_rank[rank] = per_rank.get(rank, 0.0) + seconds
    # ranks of summary records are all ranks: their mean adds to every rank
    shared = sum(m for _, m in means)
    limit = th["metadata_rank_seconds"]
    ranks = per_rank or ({-1: 0.0} if means else {})
    ranks, overlapped = _within_run(job, {r: s + shared for r, s in ranks.items()})
    over = {r: s for r, s in ranks.items() if s > limit}
    heavy = total_io and total_meta / total_io > th["metadata_fraction"] \
        and total_meta > th["metadata_min_seconds"]
    if not over and not heavy:
        return []
    evidence = {"metadata_seconds_all_ranks": round(total_meta, 3),
                "io_seconds_all_ranks": round(total_io, 3),
                "percent": pct(total_meta, total_io), "opens": opens,
                "files": len(job.files), "ranks_over_limit": len(over),
                "rank_limit_seconds": limit,
                "max_rank_metadata_seconds": round(max(over.values()), 3) if over else
                round(max(ranks.values(), default=0.0), 3),
                "per_rank_source": "per-rank records" if per_rank else
                "summary records: summed time / ranks",
                "ranks_with_overlapping_calls": overlapped}
    worst = evidence["max_rank_metadata_seconds"]
    msg = (f"{total_meta:.2f} s of {total_io:.2f} s of I/O time summed over all ranks "
           f"({pct(total_meta, total_io)}%) is metadata (open/stat/close/sync) over "
           f"{len(job.files)} files and {opens} opens; per rank at most {worst:.2f} s"
           + (f" ({len(over)} rank(s) above {limit:.0f} s)" if over and per_rank else
              f" (above {limit:.0f} s on every rank)" if over else "")
           + (f"; {overlapped} rank(s) summed more than the run's {job.runtime:.0f} s "
              "(calls that overlapped, as threads' do), counted as the run time"
              if overlapped else ""))
    fixes = [Fix("code", "/* one shared file instead of one per rank; open it once, stat less */"),
             Fix("code", "H5Pset_all_coll_metadata_ops(fapl, 1);  /* HDF5 collective metadata */\n"
                         "H5Pset_coll_metadata_write(fapl, 1);", needs=frozenset({"hdf5"}))]
    fixes += hint_fixes({"romio_no_indep_rw": "true"}, needs={"collective"})
    return [Finding("AGG-METADATA", "high" if over else "warn", "Metadata-heavy I/O time",
                    msg, evidence, fixes)]


def _within_run(job: Job, ranks: dict) -> tuple[dict, int]:
    """Each rank's metadata seconds, at most the run time: Darshan sums each
    file's time, and calls that overlapped (threads) can sum past the run
    (PyDarshan's dxt.darshan: one rank, 11,218 s in a 1,469 s run, threads
    blocked opening pipes).  Returns the ranks and how many were capped."""
    if job.runtime <= 0:
        return ranks, 0
    capped = {r: min(s, job.runtime) for r, s in ranks.items()}
    return capped, sum(1 for r in ranks if ranks[r] > job.runtime)


@check("AGG-STRIPE", "Stripe settings do not fit the access pattern")
def stripe(job: Job, th) -> list[Finding]:
    out = []
    for f in job.files:
        if not f.stripe_count:
            continue
        nbytes = f.bytes
        if f.shared and f.stripe_count == 1 and nbytes >= th["stripe_min_bytes"]:
            out.append(_one_stripe(f, nbytes, job.nprocs))
        elif not f.shared and f.stripe_count > 1 and f.stripe_size and \
                0 < nbytes < f.stripe_size * f.stripe_count and _fpp_count(job) > 1:
            out.append(_too_many_stripes(f, nbytes))
    return out


def _fpp_count(job):
    return sum(1 for f in job.files if not f.shared and f.stripe_count)


def _one_stripe(f, nbytes, nprocs):
    want = wanted_stripes(nprocs or f.nranks)
    evidence = {"stripe_count": 1, "stripe_size": f.stripe_size, "bytes": nbytes,
                "ranks": f.nranks}
    fixes = [lfs_fix(f.path, want, f.stripe_size or (4 << 20))]
    fixes += hint_fixes({"cb_nodes": want}, f.path)
    return Finding("AGG-STRIPE", "high", "Shared file on a single stripe",
                   f"{f.path} ({fmt_bytes(nbytes)}, {f.nranks} ranks) lives on one OST: "
                   "all ranks contend for one server", evidence, fixes, subject=f.path)


def _too_many_stripes(f, nbytes):
    evidence = {"stripe_count": f.stripe_count, "stripe_size": f.stripe_size, "bytes": nbytes}
    return Finding("AGG-STRIPE", "info", "Small per-process file over many stripes",
                   f"{f.path} holds {fmt_bytes(nbytes)} but is striped over "
                   f"{f.stripe_count} OSTs: each open touches them all", evidence,
                   [lfs_fix(f.path, 1)], subject=f.path)
