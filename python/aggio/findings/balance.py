"""Findings about who does the I/O: one dominant rank, imbalance of bytes
between ranks, and stragglers in time.  Per-rank figures come from per-rank
records or operations; a Darshan summary record (rank -1) offers only its
fastest and slowest rank, and its summed times are divided by the rank count
before any comparison with a per-rank figure."""
from __future__ import annotations

import numpy as np

from ..model import MPIIO, POSIX, READ, WRITE, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, pct

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
        fixes = _fill_fixes(job, f)
    else:
        fixes = [Fix("code", "/* every rank writes its own part, in one collective call */\n"
                             "MPI_File_write_at_all(fh, my_offset, my_buf, my_count, type, MPI_STATUS_IGNORE);",
                     needs=frozenset({"mpiio"})),
                 Fix("code", "/* every rank writes its own part: pwrite(fd, buf, n, rank * n) */",
                     needs=frozenset({"posix-only"}))]
        fixes += hint_fixes({"romio_cb_write": "enable"}, f.path, needs={"collective"})
    return Finding("AGG-DOMINANT-RANK", "high", "One rank does most of the I/O", msg,
                   evidence, fixes, subject=f.path)


def _fill_fixes(job, f):
    """Turning fill values off, for the library the file was written with."""
    out = []
    if f.path.endswith((".nc", ".nc4", ".cdf")) and not job.modules & {"PNETCDF_FILE", "PNETCDF"}:
        out.append(Fix("code", "nc_set_fill(ncid, NC_NOFILL, &old_mode);      /* netCDF, after create */"))
    if job.modules & {"PNETCDF_FILE", "PNETCDF"}:
        out.append(Fix("code", "ncmpi_set_fill(ncid, NC_NOFILL, &old_mode);   /* PnetCDF */"))
    if job.modules & {"H5F", "H5D"} or f.path.endswith((".h5", ".hdf5", ".he5", ".nc4")):
        out.append(Fix("code", "H5Pset_fill_time(dcpl, H5D_FILL_TIME_NEVER);  /* HDF5 datasets */"))
    return out


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
        if st.per_rank and len(st.rank_bytes) >= 2:
            hi, lo = max(st.rank_bytes.values()), min(st.rank_bytes.values())
            source = "per-rank figures"
        elif st.slowest and st.fastest:
            # the two ranks a summary record names: both per-rank figures
            hi, lo = max(st.slowest[1], st.fastest[1]), min(st.slowest[1], st.fastest[1])
            source = "the summary record's fastest and slowest rank"
        else:
            continue
        if hi and (hi - lo) / hi > th["imbalance_fraction"]:
            out.append(_imbalance_finding(f, hi, lo, source))
    return out


def _imbalance_finding(f, hi, lo, source):
    evidence = {"max_rank_bytes": int(hi), "min_rank_bytes": int(lo),
                "percent_of_max": pct(hi - lo, hi), "source": source}
    msg = (f"ranks moved between {fmt_bytes(lo)} and {fmt_bytes(hi)} of {f.path} "
           f"(difference {pct(hi - lo, hi)}% of the largest; {source})")
    fixes = [Fix("code", "/* give each rank an equal share: offset = rank * (total / nprocs) */")]
    fixes += hint_fixes({"romio_cb_write": "enable", "romio_cb_read": "enable"}, f.path,
                        needs={"independent"})
    return Finding("AGG-IMBALANCE", "warn", "Load imbalance between ranks", msg, evidence,
                   fixes, subject=f.path)


@check("AGG-STRAGGLER", "Some ranks spend much longer in I/O than the others")
def stragglers(job: Job, th) -> list[Finding]:
    if job.ops_complete(MPIIO) and job.ops_complete(POSIX):
        found = _straggler_from_ops(job, th)
        return [found] if found else []
    out = []
    for f in job.files:
        st = _app_layer(f)
        if st is None:
            continue
        if st.per_rank and len(st.rank_time) >= 2:
            found = _straggler_from_times(f, st.rank_time, th)
        elif st.slowest and st.fastest:
            found = _straggler_from_summary(job, f, st, th)
        else:
            found = None
        out += [found] if found else []
    return out


def _straggler_from_times(f, times, th):
    t = np.array(list(times.values()), float)
    median = float(np.median(t))
    rank = max(times, key=times.get)
    if times[rank] > max(median * th["straggler_ratio"], median + th["straggler_min_seconds"]):
        evidence = {"slowest_rank": int(rank), "slowest_seconds": round(times[rank], 4),
                    "median_seconds": round(median, 4), "source": "per-rank records"}
        return Finding("AGG-STRAGGLER", "warn", "Straggler rank",
                       f"rank {rank} spent {times[rank]:.3f} s in I/O calls on {f.path}, "
                       f"the median rank {median:.3f} s", evidence, _straggler_fixes(f.path),
                       subject=f.path)
    return None


def _straggler_from_summary(job, f, st, th):
    """Darshan's summary record: the slowest rank's own time against the mean
    per rank (the record's summed time over the ranks that share the file)."""
    n = f.nranks or job.nprocs or 1
    mean = (st.read_time + st.write_time + st.meta_time) / n
    slow = float(st.slowest[2])
    if slow > max(mean * th["straggler_ratio"], mean + th["straggler_min_seconds"]):
        evidence = {"slowest_rank": int(st.slowest[0]), "slowest_seconds": round(slow, 4),
                    "fastest_rank": int(st.fastest[0]), "fastest_seconds": round(st.fastest[2], 4),
                    "mean_seconds_per_rank": round(mean, 4), "ranks": n,
                    "x_mean": round(slow / mean, 2) if mean else None,
                    "source": "summary record (mean = summed time / ranks)"}
        return Finding("AGG-STRAGGLER", "warn", "Straggler rank",
                       f"rank {evidence['slowest_rank']} spent {slow:.3f} s on {f.path}; the "
                       f"mean over its {n} ranks is {mean:.3f} s and the fastest rank, "
                       f"{evidence['fastest_rank']}, took {st.fastest[2]:.3f} s",
                       evidence, _straggler_fixes(f.path), subject=f.path)
    return None


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
    fixes = [Fix("env", f"lfs getstripe {path}   # which OSTs; compare with: lfs df -h "
                        "(a slow or full OST?)", needs=frozenset({"lustre"})),
             Fix("code", "/* the slow ranks wait on their node, link or OST, or carry more data:\n"
                         "   compare their bytes with the others' (AGG-IMBALANCE) */")]
    fixes += hint_fixes({"romio_cb_write": "enable"}, path, needs={"independent"})
    return fixes
