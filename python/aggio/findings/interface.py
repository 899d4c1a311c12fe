"""Findings about the interfaces used: independent vs collective MPI-IO, no
MPI-IO at all, blocking calls, STDIO."""
from __future__ import annotations

from ..model import MPIIO, POSIX, STDIO, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, pct

DIRECTIONS = ("read", "write")


@check("AGG-INDEP-MPIIO", "Independent MPI-IO where collective calls would help")
def independent_mpiio(job: Job, th) -> list[Finding]:
    out = []
    if job.nprocs == 1:
        return out   # one process: a collective call has no other rank to gather from
    total = job.layer_total(MPIIO)
    for d in DIRECTIONS:
        indep = getattr(total, f"indep_{d}s")
        coll = getattr(total, f"coll_{d}s")
        n = indep + coll
        small_shared = _small_shared_indep(job, d, th)
        many = indep > th["collective_min"] and indep / max(n, 1) > th["collective_fraction"]
        if coll == 0 and (many or small_shared >= th["collective_small_min"]):
            out.append(_indep_finding(d, indep, n, small_shared))
    return out


def _small_shared_indep(job, direction, th) -> int:
    """Independent calls on shared files whose MPI-IO requests are small."""
    count = 0
    for f in job.files:
        st = f.layers.get(MPIIO)
        if st is None or not f.shared:
            continue
        indep = getattr(st, f"indep_{direction}s")
        small = st.small(direction, int(th["small_request_bytes"]))
        count += min(indep, small)
    return count


def _indep_finding(d, indep, n, small_shared):
    evidence = {"direction": d, "independent_calls": indep, "mpiio_calls": n,
                "percent": pct(indep, n), "small_independent_on_shared_files": small_shared}
    msg = (f"{indep} of {n} MPI-IO {d}s ({pct(indep, n)}%) are independent and none "
           "is collective" + (f"; {small_shared} are small requests on shared files"
                              if small_shared else ""))
    fixes = [Fix("code", f"/* replace MPI_File_{d}_at(...) by its collective twin, called by all ranks */\n"
                 f"MPI_File_{d}_at_all(fh, offset, buf, count, datatype, MPI_STATUS_IGNORE);"),
             Fix("code", "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);  /* HDF5 */",
                 needs=frozenset({"hdf5"})),
             Fix("code", "ncmpi_put_vara_all(...);  /* PnetCDF: the _all variants */",
                 needs=frozenset({"pnetcdf"}))]
    fixes += hint_fixes({f"romio_cb_{d}": "enable"})
    return Finding("AGG-INDEP-MPIIO", "high" if small_shared else "warn",
                   f"Independent MPI-IO {d}s", msg, evidence, fixes)


@check("AGG-NO-MPIIO", "No MPI-IO at all")
def no_mpiio(job: Job, th) -> list[Finding]:
    if job.kind != "darshan" or "MPI-IO" in job.modules:
        return []
    posix, stdio = job.layer_total(POSIX), job.layer_total(STDIO)
    nbytes = posix.bytes + stdio.bytes
    if not nbytes:
        return []
    shared = [f for f in job.files if f.shared and (POSIX in f.layers or STDIO in f.layers)]
    parallel = job.nprocs > 1
    evidence = {"posix_bytes": posix.bytes, "stdio_bytes": stdio.bytes,
                "nprocs": job.nprocs, "shared_files": len(shared)}
    msg = (f"{fmt_bytes(nbytes)} moved through POSIX/STDIO by {job.nprocs} process(es) "
           "without MPI-IO" + (f"; {len(shared)} files are shared by several ranks"
                               if shared else ""))
    fixes = _mpiio_open_fixes(posix.bytes_read + stdio.bytes_read,
                              posix.bytes_written + stdio.bytes_written)
    fixes.append(Fix("code", "H5Pset_fapl_mpio(fapl, comm, info);   /* HDF5: the MPI-IO driver */\n"
                             "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);",
                     needs=frozenset({"hdf5"})))
    severity = "warn" if parallel and shared else "info"
    return [Finding("AGG-NO-MPIIO", severity, "No MPI-IO", msg, evidence, fixes)]


_OPEN = {"read": ("MPI_MODE_RDONLY", "MPI_File_read_at_all"),
         "write": ("MPI_MODE_CREATE | MPI_MODE_WRONLY", "MPI_File_write_at_all")}


def _mpiio_open_fixes(read_bytes: int, written_bytes: int) -> list[Fix]:
    """The MPI-IO calls for the directions the program moved bytes in, the
    larger first: a job that mostly reads is not told how to write."""
    moved = sorted(((read_bytes, "read"), (written_bytes, "write")), reverse=True)
    return [Fix("code", f"MPI_File_open(comm, path, {_OPEN[d][0]}, info, &fh);\n"
                        f"{_OPEN[d][1]}(fh, offset, buf, count, MPI_BYTE, MPI_STATUS_IGNORE);")
            for n, d in moved if n]


@check("AGG-BLOCKING", "Blocking I/O where computation could overlap it")
def blocking(job: Job, th) -> list[Finding]:
    # aggio's own API has no non-blocking calls: only Darshan's MPI-IO applies.
    if job.kind != "darshan" or "MPI-IO" not in job.modules:
        return []
    total = job.layer_total(MPIIO)
    out = []
    for d in DIRECTIONS:
        calls = getattr(total, f"{d}s")
        nb = getattr(total, f"nb_{d}s")
        if nb == 0 and calls >= th["blocking_min_ops"]:
            seconds = total.read_time if d == "read" else total.write_time
            evidence = {"direction": d, "blocking_calls": calls,
                        "seconds_in_calls": round(seconds, 4)}
            hdf5 = bool(job.modules & {"H5F", "H5D"})
            coll = getattr(total, f"coll_{d}s") > 0
            call = f"MPI_File_i{d}_at_all" if coll else f"MPI_File_i{d}_at"
            code = (f"MPI_Request req;\n{call}(fh, offset, buf, count, type, &req);\n"
                    "compute();                 /* overlaps the I/O */\n"
                    "MPI_Wait(&req, MPI_STATUS_IGNORE);")
            fixes = [Fix("code", code)]
            if hdf5:
                fixes.append(Fix("env", 'export HDF5_VOL_CONNECTOR="async under_vol=0;under_info={}"'
                                        "   # HDF5 async VOL (github.com/hpc-io/vol-async)"))
            out.append(Finding("AGG-BLOCKING", "info", f"Blocking MPI-IO {d}s",
                               f"all {calls} MPI-IO {d}s are blocking ({seconds:.3f} s of "
                               "rank time inside them)", evidence, fixes))
    return out


@check("AGG-STDIO", "STDIO carries a large share of the data")
def stdio_heavy(job: Job, th) -> list[Finding]:
    stdio = job.layer_total(STDIO).bytes
    posix, mpiio = job.layer_total(POSIX).bytes, job.layer_total(MPIIO).bytes
    total = stdio + max(posix - mpiio, 0) + mpiio   # POSIX under MPI-IO counted once
    if not total or stdio / total <= th["stdio_fraction"]:
        return []
    files = [f.path for f in job.files if STDIO in f.layers and f.layers[STDIO].bytes]
    evidence = {"stdio_bytes": stdio, "total_bytes": total, "percent": pct(stdio, total),
                "files": files[:5]}
    fixes = [Fix("code", "setvbuf(fp, NULL, _IOFBF, 4 << 20);  /* at least: large buffers */\n"
                         "/* better: MPI_File_write_at_all, HDF5 or PnetCDF for data files */")]
    return [Finding("AGG-STDIO", "high", "STDIO-heavy I/O",
                    f"{fmt_bytes(stdio)} of {fmt_bytes(total)} ({pct(stdio, total)}%) go "
                    "through STDIO (fread/fwrite/fprintf)", evidence, fixes)]
