"""Findings about who does the I/O: one dominant rank, a single aggregator,
imbalance of bytes between ranks, and stragglers in time."""
from __future__ import annotations

import numpy as np

from ..model import MPIIO, POSIX, READ, WRITE, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, lfs_fix, pct

FILL_EXTENSIONS = (".nc", ".nc4", ".cdf", ".h5", ".hdf5", ".he5")


def _app_layer(f):
    """The layer the application called: MPI-IO when present, else POSIX."""
    return f.layers.get(MPIIO) or f.layers.get(POSIX)


@check("AGG-DOMINANT-RANK", "One rank does most of the I/O of a shared file")
def dominant_rank(job: Job, th) -> list[Finding]:
    out = []
    for f in job.files:
        st = _app_layer(f)
        if st is None or not f.shared or f.nranks < th["dominant_min_ranks"] or not st.bytes:
            continue
        rank, nbytes = _top_rank(st)
        if rank is not None and nbytes / st.bytes > th["dominant_rank_fraction"]:
            out.append(_dominant_finding(job, f, st, rank, nbytes))
    return out


def _top_rank(st):
    if st.rank_bytes:
        rank = max(st.rank_bytes, key=st.rank_bytes.get)
        return rank, st.rank_bytes[rank]
    if st.slowest:  # Darshan's reduced record: only the slowest rank is known
        return int(st.slowest[0]), int(st.slowest[1])
    return None, 0


def _dominant_finding(job, f, st, rank, nbytes):
    fill = rank == 0 and (f.path.endswith(FILL_EXTENSIONS) or
                          job.modules & {"PNETCDF_FILE", "H5F", "H5D"})
    evidence = {"rank": rank, "bytes": nbytes, "file_bytes": st.bytes,
                "percent": pct(nbytes, st.bytes), "ranks_sharing": f.nranks}
    msg = (f"rank {rank} moved {fmt_bytes(nbytes)} of {fmt_bytes(st.bytes)} "
           f"({pct(nbytes, st.bytes)}%) of {f.path}, shared by {f.nranks} ranks")
    if fill:
        msg += "; rank 0 writing most of a netCDF/HDF5 file is the signature of fill values"
        fixes = [Fix("code", "nc_set_fill(ncid, NC_NOFILL, &old_mode);      /* netCDF, after create */\n"
                             "ncmpi_set_fill(ncid, NC_NOFILL, &old_mode);   /* PnetCDF */\n"
                             "H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);  /* HDF5 datasets */")]
    else:
        fixes = [Fix("code", "/* every rank writes its own part, in one collective call */\n"
                             "MPI_File_write_at_all(fh, my_offset, my_buf, my_count, type, MPI_STATUS_IGNORE);")]
        fixes += hint_fixes({"romio_cb_write": "enable"}, f.path)
    return Finding("AGG-DOMINANT-RANK", "high", "One rank does most of the I/O", msg,
                   evidence, fixes, subject=f.path)


@check("AGG-SINGLE-AGGREGATOR", "All POSIX I/O of a collectively accessed file goes through one rank")
def single_aggregator(job: Job, th) -> list[Finding]:
    out = []
    for f in job.files:
        api = f.layers.get(MPIIO)
        if api is None or f.nranks < 2 or not (api.coll_reads + api.coll_writes):
            continue
        writers = f.posix_ranks
        if writers is None and f.aggregators is not None:
            writers = f.aggregators
        if writers is not None and len(writers) == 1:
            out.append(_single_agg_finding(f, writers[0], job.nprocs or f.nranks))
    return out


def _single_agg_finding(f, rank, nprocs):
    want = max(2, min(nprocs, 8))
    one_stripe = f.stripe_count == 1
    evidence = {"mpiio_ranks": f.nranks, "posix_ranks": [rank], "stripe_count": f.stripe_count,
                "collective_calls": f.layers[MPIIO].coll_reads + f.layers[MPIIO].coll_writes}
    msg = (f"{f.nranks} ranks call collective MPI-IO on {f.path} but only rank {rank} "
           "issues POSIX I/O")
    if one_stripe:
        msg += ("; the file has one Lustre stripe, and ROMIO sets cb_nodes to the "
                "stripe count on Lustre")
    fixes = [lfs_fix(f.path, want, f.stripe_size or (4 << 20))]
    fixes += hint_fixes({"cb_nodes": want, "striping_factor": want}, f.path)
    return Finding("AGG-SINGLE-AGGREGATOR", "high", "A single aggregator", msg, evidence,
                   fixes, subject=f.path)


@check("AGG-IMBALANCE", "Ranks move very different amounts of data")
def imbalance(job: Job, th) -> list[Finding]:
    out = []
    for f in job.files:
        api = f.layers.get(MPIIO)
        collective = api is not None and (api.coll_reads + api.coll_writes) > 0
        # under collective I/O only aggregators touch POSIX: compare callers
        st = api if collective else f.layers.get(POSIX)
        if st is None:
            continue
        if len(st.rank_bytes) >= 2:
            hi, lo = max(st.rank_bytes.values()), min(st.rank_bytes.values())
            if hi and (hi - lo) / hi > th["imbalance_fraction"]:
                out.append(_imbalance_finding(f, hi, lo, hi, "per-rank maximum"))
        elif st.slowest and st.fastest and st.bytes:
            hi, lo = st.slowest[1], st.fastest[1]
            if abs(hi - lo) / st.bytes > th["straggler_fraction"]:
                out.append(_imbalance_finding(f, hi, lo, st.bytes, "file total"))
    return out


def _imbalance_finding(f, hi, lo, base, base_name):
    evidence = {"max_rank_bytes": int(hi), "min_rank_bytes": int(lo),
                "percent_of_" + base_name.replace(" ", "_").replace("-", "_"): pct(abs(hi - lo), base)}
    msg = (f"ranks moved between {fmt_bytes(lo)} and {fmt_bytes(hi)} of {f.path} "
           f"(difference {pct(abs(hi - lo), base)}% of the {base_name})")
    fixes = [Fix("code", "/* give each rank an equal share: offset = rank * (total / nprocs) */")]
    fixes += hint_fixes({"romio_cb_write": "enable", "romio_cb_read": "enable"}, f.path)
    return Finding("AGG-IMBALANCE", "warn", "Load imbalance between ranks", msg, evidence,
                   fixes, subject=f.path)


@check("AGG-STRAGGLER", "Some ranks spend much longer in I/O than the others")
def stragglers(job: Job, th) -> list[Finding]:
    out = []
    if job.has_ops:
        found = _straggler_from_ops(job, th)
        out += [found] if found else []
    for f in job.files:
        st = f.layers.get(POSIX)
        if st is None or not (st.slowest and st.fastest):
            continue
        total = st.io_time
        gap = abs(st.slowest[2] - st.fastest[2])
        if total and gap / total > th["straggler_fraction"]:
            evidence = {"slowest_rank": int(st.slowest[0]), "slowest_seconds": round(st.slowest[2], 4),
                        "fastest_rank": int(st.fastest[0]), "fastest_seconds": round(st.fastest[2], 4),
                        "percent_of_io_time": pct(gap, total)}
            out.append(Finding("AGG-STRAGGLER", "warn", "Straggler rank",
                               f"rank {evidence['slowest_rank']} spent {st.slowest[2]:.3f} s on "
                               f"{f.path}, rank {evidence['fastest_rank']} {st.fastest[2]:.3f} s",
                               evidence, _straggler_fixes(f.path), subject=f.path))
    return out


def rank_io_time(ops: np.ndarray) -> np.ndarray:
    """Seconds each rank spent in read/write calls (top layer present)."""
    data = (ops["kind"] == READ) | (ops["kind"] == WRITE)
    layer = MPIIO if (ops["layer"][data] == MPIIO).any() else POSIX
    sel = data & (ops["layer"] == layer)
    n = int(ops["rank"].max()) + 1 if len(ops) else 0
    return np.bincount(ops["rank"][sel], weights=(ops["t_end"] - ops["t_start"])[sel],
                       minlength=n)


def _straggler_from_ops(job, th):
    t = rank_io_time(job.ops)
    active = t[t > 0]
    if len(active) < 2:
        return None
    median = float(np.median(active))
    slow = np.flatnonzero(t > max(median * th["straggler_ratio"], median + th["straggler_min_seconds"]))
    if not len(slow):
        return None
    slow = slow[np.argsort(t[slow])[::-1]]
    evidence = {"median_seconds": round(median, 4),
                "stragglers": [{"rank": int(r), "seconds": round(float(t[r]), 4),
                                "x_median": round(float(t[r]) / median, 2) if median else None}
                               for r in slow[:8]],
                "straggler_count": int(len(slow))}
    worst = evidence["stragglers"][0]
    msg = (f"{len(slow)} rank(s) spend over {th['straggler_ratio']}x the median I/O time "
           f"({median:.3f} s); the slowest, rank {worst['rank']}, {worst['seconds']} s")
    return Finding("AGG-STRAGGLER", "warn", "Straggler ranks", msg, evidence,
                   _straggler_fixes(job.files[0].path if job.files else ""))


def _straggler_fixes(path):
    fixes = [Fix("env", "lfs getstripe " + (path or "<file>") +
                 "   # which OSTs; compare with: lfs df -h  (a slow or full OST?)")]
    fixes += hint_fixes({"cb_config_list": "*:1", "romio_cb_write": "enable"}, path)
    return fixes
