"""Findings about the file system: metadata time and stripe settings."""
from __future__ import annotations

from ..model import MPIIO, POSIX, STDIO, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, lfs_fix, pct


@check("AGG-METADATA", "Metadata operations take much of the I/O time")
def metadata(job: Job, th) -> list[Finding]:
    total_meta, total_io, slow_ranks, opens = 0.0, 0.0, {}, 0
    for f in job.files:
        st = f.layers.get(POSIX) or f.layers.get(STDIO)
        if st is None:
            continue
        total_meta += st.meta_time
        total_io += st.io_time
        opens += st.opens
        for rank, seconds in st.rank_meta_time.items():
            slow_ranks[rank] = slow_ranks.get(rank, 0.0) + seconds
        if not st.rank_meta_time and st.meta_time > th["metadata_rank_seconds"]:
            slow_ranks[-1] = slow_ranks.get(-1, 0.0) + st.meta_time  # reduced record
    over = {r: s for r, s in slow_ranks.items() if s > th["metadata_rank_seconds"]}
    heavy = total_io and total_meta / total_io > th["metadata_fraction"] \
        and total_meta > th["metadata_min_seconds"]
    if not over and not heavy:
        return []
    evidence = {"metadata_seconds": round(total_meta, 3), "io_seconds": round(total_io, 3),
                "percent": pct(total_meta, total_io), "opens": opens,
                "files": len(job.files), "ranks_over_limit": len(over),
                "rank_limit_seconds": th["metadata_rank_seconds"]}
    msg = (f"{total_meta:.2f} s of {total_io:.2f} s of I/O time ({pct(total_meta, total_io)}%) "
           f"is metadata (open/stat/close/sync) over {len(job.files)} files and {opens} opens"
           + (f"; {len(over)} rank(s) above {th['metadata_rank_seconds']:.0f} s" if over else ""))
    fixes = [Fix("code", "/* one shared file instead of one per rank; open it once */\n"
                         "H5Pset_all_coll_metadata_ops(fapl, 1);  /* HDF5 collective metadata */\n"
                         "H5Pset_coll_metadata_write(fapl, 1);")]
    fixes += hint_fixes({"romio_no_indep_rw": "true"})
    return [Finding("AGG-METADATA", "high" if over else "warn", "Metadata-heavy I/O time",
                    msg, evidence, fixes)]


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
    want = max(2, min(nprocs or f.nranks, 16))
    evidence = {"stripe_count": 1, "stripe_size": f.stripe_size, "bytes": nbytes,
                "ranks": f.nranks}
    fixes = [lfs_fix(f.path, want, f.stripe_size or (4 << 20))]
    fixes += hint_fixes({"striping_factor": want, "striping_unit": f.stripe_size or (4 << 20),
                         "cb_nodes": want}, f.path)
    return Finding("AGG-STRIPE", "high", "Shared file on a single stripe",
                   f"{f.path} ({fmt_bytes(nbytes)}, {f.nranks} ranks) lives on one OST: "
                   "all ranks contend for one server", evidence, fixes, subject=f.path)


def _too_many_stripes(f, nbytes):
    evidence = {"stripe_count": f.stripe_count, "stripe_size": f.stripe_size, "bytes": nbytes}
    return Finding("AGG-STRIPE", "info", "Small per-process file over many stripes",
                   f"{f.path} holds {fmt_bytes(nbytes)} but is striped over "
                   f"{f.stripe_count} OSTs: each open touches them all", evidence,
                   [lfs_fix(f.path, 1)], subject=f.path)
