"""Findings about the MPI-IO library's read-modify-write, found by what it
costs: its reads beneath the program's writes (by bytes, or by time and
count: reads of holes past the end of a file return 0 bytes yet take the
time), the bytes POSIX wrote beyond what MPI-IO wrote, and the collective
call that takes much of the run because its aggregators read far more than
it carries.

The fixes follow the path the log shows.  Independent writes with holes go
through ROMIO's data sieving, which `romio_ds_write=disable` turns off.
Collective writes go through two-phase I/O, whose generic code reads every
hole of an aggregator's buffer whatever romio_ds_write says; ROMIO's Lustre
driver skips that read with `romio_lustre_ds_in_coll=disable`; aggio's
two-phase honours romio_ds_write; and a call whose file domains hold no
holes needs no read at all.
"""
from __future__ import annotations

from .. import crosslayer as xl
from .. import hintforms
from ..model import Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, pct


def _run_seconds(job: Job) -> float:
    if job.runtime > 0:
        return job.runtime
    if len(job.ops):
        return float(job.ops["t_end"].max() - job.ops["t_start"].min())
    return 0.0


def _cost_evidence(job, seconds: float) -> dict:
    run = _run_seconds(job)
    return {"cost_seconds": round(seconds, 4),
            "percent_of_run": pct(seconds, run) if run else None}


def _severity(job, seconds: float, th) -> str:
    """high when it costs the busiest rank a tenth of the run (and at least
    rmw_min_seconds), else warn."""
    run = _run_seconds(job)
    return "high" if seconds >= th["rmw_min_seconds"] and run and seconds >= 0.1 * run \
        else "warn"


# ---------------------------------------------------- read-modify-write

@check("AGG-RMW", "POSIX reads beneath MPI-IO writes: the library's read-modify-write")
def read_modify_write(job: Job, th) -> list[Finding]:
    out = []
    for index, f in enumerate(job.files):
        pr = xl.posix_reads(job, index)
        if pr is None or not pr.read_modify_write:
            continue
        cost = xl.rmw_cost(job, index)
        by_bytes = pr.rmw_bytes > th["rmw_min_bytes"]
        by_time = cost.share > th["rmw_time_fraction"] and (
            cost.reads > th["rmw_min_reads"] or cost.busiest_seconds > th["rmw_min_seconds"])
        if by_bytes or by_time:
            out.append(_rmw_finding(job, f, pr, cost, th))
    return out


def _rmw_finding(job, f, pr, cost, th):
    coll = pr.collective_writes > 0
    evidence = {"posix_reads": pr.posix_reads, "posix_read_bytes": pr.posix_read_bytes,
                "mpiio_reads": pr.mpiio_reads, "mpiio_writes": pr.mpiio_writes,
                "collective_writes": pr.collective_writes,
                "reads_inside_mpiio_writes": pr.inside_writes if pr.inside_writes >= 0 else None,
                "read_bytes_inside_mpiio_writes": pr.rmw_bytes,
                "reads_written_back": pr.rewritten if pr.rewritten >= 0 else None,
                "rmw_reads": cost.reads, "rmw_read_seconds_all_ranks": round(cost.read_seconds, 4),
                "percent_of_posix_time": pct(cost.read_seconds, cost.posix_seconds),
                "reads_returning_0_bytes": cost.zero_reads if cost.zero_reads >= 0 else None,
                "reads_under_100_bytes": cost.small_reads if cost.small_reads >= 0 else None,
                "ranks_reading": cost.ranks or None, "cost_source": cost.source,
                **_cost_evidence(job, cost.busiest_seconds)}
    where = (f"{pr.inside_writes} of them inside MPI-IO write calls" if pr.inside_writes >= 0
             else f"and the program made {pr.mpiio_reads} MPI-IO reads")
    msg = (f"{pr.posix_reads} POSIX reads ({fmt_bytes(pr.posix_read_bytes)}) on {f.path}, "
           f"{where}: these are the MPI-IO library's read-modify-write "
           + ("(collective buffering reads each buffer's span to fill the holes between "
              "the ranks' pieces)" if coll else
              "(data sieving: independent writes with holes read the whole span first)")
           + ", not reads by the program")
    if cost.read_seconds > 0:
        msg += (f"; they took {pct(cost.read_seconds, cost.posix_seconds)}% of the POSIX time "
                f"of the ranks that made them, {cost.busiest_seconds:.2f} s on the busiest")
    empty = cost.zero_reads if cost.zero_reads >= 0 else cost.small_reads
    if empty > 0:
        msg += (f"; {empty} of them returned " + ("0 bytes" if cost.zero_reads >= 0 else
                                                  "under 100 bytes")
                + " (holes past the end of the file being written: each costs a call and "
                  "brings nothing)")
    return Finding("AGG-RMW", _severity(job, cost.busiest_seconds, th),
                   "Read-modify-write beneath MPI-IO writes", msg, evidence,
                   rmw_fixes(job, f, coll), subject=f.path)


# What the collective-write fixes say (code snippets, kept as data).
DOMAINS = ("/* make the call's file domains cover what it writes: two-phase splits\n"
           "   the range from the call's first to its last byte among the aggregators,\n"
           "   and each reads every hole of its buffer first.  Write the pieces that\n"
           "   fill a range in one call (all variables of a record; one contiguous\n"
           "   block per rank), or keep what one call writes close together */")
PNETCDF_ONE_CALL = ("ncmpi_iput_vara_double(ncid, varid[i], start, count, buf[i], &req[i]);\n"
                    "ncmpi_wait_all(ncid, nvars, req, status);   "
                    "/* PnetCDF: one collective write for all */")
HDF5_CHUNKS = "H5Pset_chunk(dcpl, ndims, block_dims);   /* HDF5: a chunk per rank's block */"
LUSTRE_NO_HOLE_READ = (
    'MPI_Info_set(info, "romio_lustre_ds_in_coll", "disable");\n'
    'MPI_Info_set(info, "romio_ds_write", "disable");\n'
    "/* ROMIO's Lustre driver: write the pieces, skip the read of the holes\n"
    "   (the first key for ROMIO 3.x and Open MPI's romio321, the second for\n"
    "   the newest MPICH Lustre driver; ROMIO's generic two-phase code, on\n"
    "   other file systems, reads the holes whatever either says) */")
AGGIO_RUN = ("aggio through aggio-run (mpiexec ... aggio-run ./program, unmodified MPI-IO "
             "programs): its two-phase writes each run and reads no hole")


def rmw_fixes(job, f, collective: bool) -> list[Fix]:
    """Fixes that work on the path the log shows (the module docstring)."""
    if not collective:
        fixes = hint_fixes({"romio_ds_write": "disable"}, f.path)
        fixes.append(Fix("code", "/* or leave no holes: each rank's pieces contiguous and "
                                 "aligned,\n   e.g. pad records to the file-system block */"))
        fixes.append(Fix("code", "H5Pset_alignment(fapl, 0, 1048576);  /* HDF5: align datasets */",
                         needs=frozenset({"hdf5"})))
        return fixes
    fixes = [Fix("code", DOMAINS),
             Fix("code", PNETCDF_ONE_CALL, needs=frozenset({"pnetcdf"})),
             Fix("code", HDF5_CHUNKS, needs=frozenset({"hdf5"}))]
    if job.kind == "aggio-trace":
        # aggio's two-phase writes each run, holes untouched, when told so
        return hint_fixes({"romio_ds_write": "disable"}, f.path) + fixes
    fixes.append(Fix("code", LUSTRE_NO_HOLE_READ, needs=frozenset({"lustre", "mpiio"})))
    spec = hintforms.env_value([(hintforms.pattern_for(f.path),
                                 {"aggio_strategy": "two_phase", "romio_ds_write": "disable"})])
    fixes.append(Fix("aggio-hints", f'export AGGIO_HINTS="{spec}"', label=AGGIO_RUN,
                     needs=frozenset({"mpiio"})))
    return fixes


# ------------------------------------------------ write amplification

@check("AGG-WRITE-AMP", "POSIX writes several times the bytes the program wrote through MPI-IO")
def write_amplification(job: Job, th) -> list[Finding]:
    out = []
    for index, f in enumerate(job.files):
        amp = xl.write_amplification(job, index)
        if amp is not None and amp.ratio > th["write_amp_ratio"] and \
                amp.extra >= th["write_amp_min_bytes"]:
            out.append(_amp_finding(job, f, index, amp, th))
    return out


def _amp_finding(job, f, index, amp, th):
    pr = xl.posix_reads(job, index)
    rmw = pr is not None and pr.read_modify_write
    coll = xl.collective(f)
    evidence = {"mpiio_bytes_written": amp.mpiio_bytes, "posix_bytes_written": amp.posix_bytes,
                "ratio": round(amp.ratio, 2), "extra_bytes": amp.extra,
                "read_modify_write_reads": pr.posix_reads if rmw else 0,
                "collective": coll, "cost_source": amp.source,
                **_cost_evidence(job, amp.cost_seconds)}
    msg = (f"POSIX wrote {fmt_bytes(amp.posix_bytes)} to {f.path}, {amp.ratio:.1f}x the "
           f"{fmt_bytes(amp.mpiio_bytes)} the program wrote through MPI-IO; the "
           f"{fmt_bytes(amp.extra)} beyond cost the busiest writer about "
           f"{amp.cost_seconds:.2f} s")
    if rmw:
        msg += ("; the file also has the library's reads beneath the writes (AGG-RMW): "
                + ("two-phase" if coll else "data sieving")
                + " writes back whole spans, holes included, so bytes the program never "
                  "wrote are written again")
    else:
        msg += ("; no read-modify-write reads are recorded: the library wrote whole spans "
                "(or the program also wrote this file outside MPI-IO)")
    return Finding("AGG-WRITE-AMP", _severity(job, amp.cost_seconds, th),
                   "Write amplification beneath MPI-IO", msg, evidence,
                   rmw_fixes(job, f, coll), subject=f.path)


# ------------------------------------- one costly read-modify-write call

@check("AGG-RMW-CALL", "A collective write takes much of the run: its aggregators read far "
                       "more than it writes")
def rmw_call(job: Job, th) -> list[Finding]:
    out = []
    run = _run_seconds(job)
    if not run:
        return out
    for index, f in enumerate(job.files):
        costly = [c for c in xl.rmw_calls(job, index)
                  if c.seconds > th["rmw_call_fraction"] * run
                  and c.read_bytes > max(th["rmw_call_read_ratio"] * c.bytes, th["rmw_min_bytes"])]
        if costly:
            out.append(_call_finding(job, f, costly, run, th))
    return out


def _call_finding(job, f, costly, run, th):
    c = costly[0]
    span = c.last - c.first
    evidence = {"call": c.number, "seconds": round(c.seconds, 4),
                "percent_of_run": pct(c.seconds, run), "mpiio_bytes": c.bytes,
                "posix_reads": c.reads, "posix_read_bytes": c.read_bytes,
                "posix_read_seconds_all_aggregators": round(c.read_seconds, 4),
                "posix_bytes_written": c.written, "aggregators": c.aggregators,
                "file_domain_span_bytes": span,
                "read_x_written": round(c.read_bytes / c.bytes, 1) if c.bytes else None,
                "calls_like_it": len(costly),
                "seconds_in_calls_like_it": round(sum(x.seconds for x in costly), 4),
                "cost_seconds": round(c.seconds, 4)}
    msg = (f"collective write call {c.number} on {f.path} carried {fmt_bytes(c.bytes)} yet took "
           f"{c.seconds:.2f} s, {pct(c.seconds, run)}% of the run: its {c.aggregators} "
           f"aggregator(s) read {fmt_bytes(c.read_bytes)} in {c.reads} POSIX reads "
           f"(read-modify-write over a span of {fmt_bytes(span)}) to write "
           f"{fmt_bytes(c.written)}")
    if len(costly) > 1:
        msg += (f"; {len(costly)} calls are like it, {evidence['seconds_in_calls_like_it']:.2f} s "
                "in all")
    msg += ("; the call's pieces are spread over a range far larger than they fill, and "
            "two-phase reads the holes of every aggregator's buffer")
    return Finding("AGG-RMW-CALL", "high" if c.seconds >= max(th["rmw_min_seconds"], 0.1 * run)
                   else "warn", "A collective write dominated by read-modify-write", msg,
                   evidence, rmw_fixes(job, f, True), subject=f.path)
