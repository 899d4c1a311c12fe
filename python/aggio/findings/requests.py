"""Findings about the requests themselves: size, alignment, order, redundancy."""
from __future__ import annotations

import numpy as np

from .. import crosslayer as xl
from ..model import MPIIO, POSIX, READ, STDIO, WRITE, Job
from .base import Finding, Fix, check, fmt_bytes, hint_fixes, pct, top

DIRECTIONS = (("read", "reads"), ("write", "writes"))


def transfer_size_fix(job: Job, size: int, what: str) -> Fix:
    """For programs that call POSIX themselves: the request size is theirs."""
    ior = "ior" in job.exe.rsplit("/", 1)[-1].lower()
    text = (f"ior ... -t {size} -b <multiple of {size}>   # IOR: transfer size (-t) {what}"
            if ior else
            f"/* issue requests of {size} bytes or a multiple ({what}):\n"
            "   buffer small writes and flush them in one call */")
    return Fix("code", text, needs=frozenset({"posix-only"}))


@check("AGG-SMALL-REQ", "Many small requests reach the file system")
def small_requests(job: Job, th) -> list[Finding]:
    out = []
    limit = int(th["small_request_bytes"])
    for direction, plural in DIRECTIONS:
        total, small, at_most, left_out, per_file = 0, 0, 0, 0, {}
        for index, f in enumerate(job.files):
            st = f.layers.get(POSIX)
            if st is None:
                continue
            library = library_reads(job, index) if direction == "read" else 0
            n, most = small_count(job, index, st, direction, limit, library)
            total += getattr(st, plural) - library
            small, at_most, left_out = small + n, at_most + most, left_out + library
            if n:
                per_file[f.path] = n
        if small and small / max(total, 1) > th["small_request_fraction"] \
                and small > th["small_request_min"]:
            out.append(_small_finding(job, direction, small, total, per_file, limit))
            out[-1].evidence["small_requests_at_most"] = at_most
            _say_left_out(out[-1], left_out)
    return out


def library_reads(job: Job, index: int) -> int:
    """How many of a file's POSIX reads are the MPI-IO library's
    read-modify-write beneath the program's writes (what AGG-RMW costs),
    not requests the program made: the reads inside MPI-IO writes where
    operations show them, else all of them when the program read nothing
    through MPI-IO.  ROMIO's two-phase reads each hole of a collective
    write, often 0 bytes; counted here they would make a small-read alarm
    of the library's own work and double AGG-RMW's."""
    pr = xl.posix_reads(job, index)
    if pr is None or not pr.read_modify_write:
        return 0
    return pr.inside_writes if pr.inside_writes >= 0 else pr.posix_reads


def _say_left_out(finding: Finding, left_out: int) -> None:
    finding.evidence["library_reads_left_out"] = left_out
    finding.message += _left_out_words(left_out)


def _left_out_words(left_out: int) -> str:
    return (f" ({left_out} POSIX reads that the MPI-IO library made beneath MPI-IO "
            "writes are left out: see AGG-RMW)") if left_out else ""


def small_count(job: Job, index: int, st, direction: str, limit: int,
                library: int = 0) -> tuple[int, int]:
    """(at least, at most) POSIX requests of one file below `limit` bytes,
    `library` of its requests (library_reads) left out: exact from
    operations when the log has all of them (a DXT module that is not
    partial, or an aggio trace), else from the size bins split by the
    most-common-size counters (LayerStats.small_range)."""
    if job.ops_complete(POSIX):
        kind = READ if direction == "read" else WRITE
        ops = job.ops
        sel = (ops["file"] == index) & (ops["layer"] == POSIX) & (ops["kind"] == kind)
        if sel.any() and int(sel.sum()) == getattr(st, direction + "s"):
            mine = ops[sel]
            if library:
                mine = mine[~_inside_mpiio_writes(job, index, mine)]
            n = int((mine["length"] < limit).sum())
            return n, n
    least, most = st.small_range(direction, limit)
    # the bins do not say which requests were the library's: any could be small
    return max(least - library, 0), max(min(most, getattr(st, direction + "s") - library), 0)


def _inside_mpiio_writes(job: Job, index: int, posix: np.ndarray) -> np.ndarray:
    """Which of these POSIX operations ran inside an MPI-IO write of the same
    rank (as crosslayer.posix_reads finds them)."""
    api = xl.file_ops(job, index, MPIIO)
    return xl.containing(api[api["kind"] == WRITE], posix) >= 0


def _small_finding(job, direction, small, total, per_file, limit):
    shared = [f.path for f in job.files if f.shared and f.path in per_file]
    evidence = {"direction": direction, "small_requests": small, "requests": total,
                "percent": pct(small, total), "limit_bytes": limit,
                "top_files": [{"path": p, "small_requests": n} for p, n in top(per_file)],
                "shared_files_with_small_requests": len(shared)}
    msg = (f"{small} of {total} POSIX {direction}s ({pct(small, total)}%) are smaller "
           f"than {fmt_bytes(limit)}" + (f"; {len(shared)} of these files are shared "
                                          "by several ranks" if shared else ""))
    fixes = _gathering_fixes(job, direction)
    fixes.append(transfer_size_fix(job, 1 << 20, "at least 1 MiB"))
    if any(STDIO in f.layers for f in job.files if f.path in per_file):
        # only where the small requests are a STDIO stream's (not the job's stdout)
        fixes.append(Fix("code", "setvbuf(fp, NULL, _IOFBF, 4 << 20);  /* STDIO: large buffers */",
                         needs=frozenset({"stdio"})))
    return Finding("AGG-SMALL-REQ", "high", f"Small {direction} requests", msg, evidence,
                   fixes)


def _gathering_fixes(job, direction) -> list[Fix]:
    """Small requests gathered into large ones: by collective buffering
    across ranks, or, for one process (which collective buffering has no
    other rank to gather from), by one call that carries them all."""
    if job.nprocs == 1:
        return [Fix("code", f"/* one call for many small {direction}s: an indexed filetype of "
                    "their offsets and lengths */\n"
                    "MPI_Type_create_hindexed(n, lengths, offsets, MPI_BYTE, &ft);\n"
                    "MPI_File_set_view(fh, 0, MPI_BYTE, ft, \"native\", info);\n"
                    f"MPI_File_{direction}(fh, buf, total, MPI_BYTE, MPI_STATUS_IGNORE);",
                    needs=frozenset({"mpiio"}))]
    key = "romio_cb_write" if direction == "write" else "romio_cb_read"
    fixes = hint_fixes({key: "enable", "cb_buffer_size": 16777216})
    fixes.append(Fix("code", f"/* one collective call per rank instead of many small {direction}s */\n"
                     f"MPI_File_{direction}_at_all(fh, offset, buf, count, filetype, MPI_STATUS_IGNORE);",
                     needs=frozenset({"independent"})))
    return fixes


@check("AGG-MISALIGNED", "Requests not aligned to the file-system block or stripe")
def misaligned(job: Job, th) -> list[Finding]:
    total = job.layer_total(POSIX)
    ops = total.ops
    out = []
    if ops and total.file_not_aligned / ops > th["misaligned_fraction"]:
        align = total.file_alignment or 0
        striped = [f for f in job.files if f.stripe_size]
        stripe = striped[0].stripe_size if striped else (align or 1 << 20)
        evidence = {"misaligned_requests": total.file_not_aligned, "requests": ops,
                    "percent": pct(total.file_not_aligned, ops), "alignment_bytes": align,
                    "stripe_size": stripe if striped else None}
        msg = (f"{total.file_not_aligned} of {ops} POSIX requests "
               f"({pct(total.file_not_aligned, ops)}%) do not start at a multiple of "
               f"{fmt_bytes(align) if align else 'the file-system block'}")
        fixes = hint_fixes({"striping_unit": stripe, "romio_cb_write": "enable"})
        unit = "stripe" if striped else "file-system block"
        fixes.append(Fix("code", f"H5Pset_alignment(fapl, 0, {stripe});  /* HDF5: align objects to the {unit} */",
                         needs=frozenset({"hdf5"})))
        fixes.append(transfer_size_fix(job, stripe, "at offsets that are multiples of it"))
        out.append(Finding("AGG-MISALIGNED", "high", "Misaligned file requests", msg,
                           evidence, fixes))
    if ops and total.mem_not_aligned / ops > th["misaligned_fraction"]:
        evidence = {"misaligned_buffers": total.mem_not_aligned, "requests": ops,
                    "percent": pct(total.mem_not_aligned, ops)}
        out.append(Finding(
            "AGG-MISALIGNED", "warn", "Misaligned memory buffers",
            f"{total.mem_not_aligned} of {ops} POSIX requests "
            f"({pct(total.mem_not_aligned, ops)}%) use buffers not aligned in memory",
            evidence,
            [Fix("code", "posix_memalign(&buf, 4096, nbytes);  /* instead of malloc */")],
            subject="memory"))
    return out


@check("AGG-RANDOM", "Random (non-sequential) access")
def random_access(job: Job, th) -> list[Finding]:
    out = []
    total = job.layer_total(POSIX)
    for direction, plural in DIRECTIONS:
        n = getattr(total, plural)
        seq = total.seq_reads if direction == "read" else total.seq_writes
        library = _all_library_reads(job) if direction == "read" else 0
        again, again_out_of_order = _one_span_requests(job, direction)
        # which of the library's reads were out of order the counters do not
        # say: the program's certainly random ones are what is left if all were
        n = n - library - again
        rnd = max(getattr(total, plural) - seq - library - again_out_of_order, 0)
        if n > 0 and rnd / n > th["random_fraction"] and rnd > th["random_min"]:
            evidence = {"direction": direction, "random_requests": rnd, "requests": n,
                        "percent": pct(rnd, n), "library_reads_left_out": library,
                        "one_span_requests_left_out": again}
            key = "romio_ds_read" if direction == "read" else "romio_cb_write"
            fixes = hint_fixes({key: "enable"})
            fixes.append(Fix("code", f"/* sort each rank's {direction}s by offset and issue them as one\n"
                             "   collective call with an indexed filetype */\n"
                             "MPI_Type_create_hindexed(n, lengths, offsets, MPI_BYTE, &ft);\n"
                             "MPI_File_set_view(fh, 0, MPI_BYTE, ft, \"native\", info);\n"
                             f"MPI_File_{direction}_all(fh, buf, total, MPI_BYTE, MPI_STATUS_IGNORE);",
                             needs=frozenset({"mpiio"})))
            fixes.append(Fix("code", f"/* sort the {direction}s by offset before issuing them */",
                             needs=frozenset({"posix-only"})))
            out.append(Finding("AGG-RANDOM", "warn", f"Random {direction} access",
                               f"{rnd} of {n} POSIX {direction}s ({pct(rnd, n)}%) do not "
                               "follow the previous request of their rank"
                               + _left_out_words(library), evidence, fixes))
    return out


def _one_span_requests(job: Job, direction: str) -> tuple[int, int]:
    """(requests, of them not sequential) on files where every request of
    the direction starts within one mean request of byte 0: the same bytes
    again and again (partial_data_dxt reads byte 0 a million times), which
    no sorting by offset changes; AGG-REDUNDANT's matter, not random access."""
    count = out_of_order = 0
    for f in job.files:
        st = f.layers.get(POSIX)
        if st is None:
            continue
        n = getattr(st, direction + "s")
        top = st.max_byte_read if direction == "read" else st.max_byte_written
        moved = st.bytes_read if direction == "read" else st.bytes_written
        if n > 1 and top >= 0 and (top + 1) * n <= moved:
            seq = st.seq_reads if direction == "read" else st.seq_writes
            count, out_of_order = count + n, out_of_order + n - seq
    return count, out_of_order


def _all_library_reads(job: Job) -> int:
    """The job's POSIX reads that are the MPI-IO library's (library_reads)."""
    return sum(library_reads(job, index) for index, f in enumerate(job.files)
               if POSIX in f.layers)


@check("AGG-REDUNDANT", "The same bytes are read or written more than once")
def redundant(job: Job, th) -> list[Finding]:
    out = []
    for index, f in enumerate(job.files):
        st = f.layers.get(POSIX)
        if st is None:
            continue
        for direction, kind in (("read", READ), ("write", WRITE)):
            moved = st.bytes_read if direction == "read" else st.bytes_written
            if moved <= th["redundant_min_bytes"]:
                continue
            if direction == "read" and _library_reads(job, index):
                continue   # read-modify-write of MPI-IO's (AGG-RMW), not the program's
            distinct = _distinct_bytes(job, index, kind, st, direction)
            if direction == "write" and _library_writes(f, distinct, th):
                continue   # the library writes back what it read (AGG-WRITE-AMP)
            extra = moved - distinct
            if distinct >= 0 and extra > th["redundant_min_bytes"] \
                    and moved > distinct * (1 + th["redundant_fraction"]):
                out.append(_redundant_finding(f, direction, moved, distinct, job.has_ops))
    return out


def _library_reads(job, index) -> bool:
    pr = xl.posix_reads(job, index)
    return pr is not None and pr.read_modify_write


def _library_writes(f, distinct, th) -> bool:
    """The program wrote each byte once through MPI-IO: the POSIX bytes
    beyond are the library's (two-phase or data sieving writing back whole
    spans), not the program's."""
    api = f.layers.get(MPIIO)
    return api is not None and api.bytes_written > 0 and distinct >= 0 and \
        api.bytes_written <= distinct * (1 + th["redundant_fraction"])


def _distinct_bytes(job, index, kind, st, direction) -> int:
    """Distinct bytes touched: exact from operations, else the highest byte
    accessed + 1 (an upper bound, so redundancy is never overstated)."""
    if job.ops_complete(POSIX):
        sel = (job.ops["file"] == index) & (job.ops["layer"] == POSIX) & (job.ops["kind"] == kind)
        if sel.any():
            return union_length(job.ops["offset"][sel], job.ops["length"][sel])
    top_byte = st.max_byte_read if direction == "read" else st.max_byte_written
    return top_byte + 1


def union_length(offsets: np.ndarray, lengths: np.ndarray) -> int:
    """Total length of the union of [offset, offset + length) intervals."""
    keep = lengths > 0
    if not keep.any():
        return 0
    order = np.argsort(offsets[keep], kind="stable")
    start = offsets[keep][order]
    end = start + lengths[keep][order]
    reach = np.maximum.accumulate(end)
    # a new run starts where an interval begins past everything before it
    new = np.empty(len(start), bool)
    new[0] = True
    new[1:] = start[1:] > reach[:-1]
    run_id = np.cumsum(new) - 1
    run_start = start[new]
    run_end = np.zeros(run_id[-1] + 1, np.int64)
    np.maximum.at(run_end, run_id, end)
    return int((run_end - run_start).sum())


def _redundant_finding(f, direction, moved, distinct, exact):
    evidence = {"direction": direction, "bytes_moved": moved, "distinct_bytes": distinct,
                "ratio": round(moved / max(distinct, 1), 2), "exact": exact}
    msg = (f"{fmt_bytes(moved)} {'read from' if direction == 'read' else 'written to'} "
           f"{f.path} but only {fmt_bytes(distinct)} distinct bytes "
           f"({evidence['ratio']}x)" + ("" if exact else " (from counters: highest offset)"))
    if direction == "read":
        fixes = [Fix("code", "/* read once on one rank and broadcast */\n"
                             "if (rank == 0) MPI_File_read_at(fh, 0, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);\n"
                             "MPI_Bcast(buf, n, MPI_BYTE, 0, comm);")]
    else:
        fixes = [Fix("code", "/* write each region once (one owner per block) */"),
                 Fix("code", "H5Pset_coll_metadata_write(fapl, 1);  /* HDF5: one rank writes metadata */",
                     needs=frozenset({"hdf5"}))]
    return Finding("AGG-REDUNDANT", "warn", f"Redundant {direction} traffic", msg, evidence,
                   fixes, subject=f.path)
