"""Darshan logs -> the common model, through PyDarshan.

Counters come from the POSIX, MPI-IO, STDIO and LUSTRE modules; per-operation
data from DXT_POSIX and DXT_MPIIO.  DXT segments are read straight from the
log buffers into NumPy (PyDarshan's own DXT path builds one Python dict per
segment, which is what makes DXT tools slow and memory-hungry on big logs).

A damaged or truncated log is read as far as it is whole (darshan_layout
checks the regions first); what was lost is said in job.damaged, and a log
with nothing readable is an error.  libdarshan-util's own messages on stderr
are captured and turned into those notes.
"""
from __future__ import annotations

import contextlib
import os
import struct
import sys
import tempfile

import numpy as np

from ..derive import empty_ops
from ..model import (OPS, MPIIO, POSIX, STDIO, READ, WRITE, F_COLLECTIVE,
                     FileInfo, Job, LayerStats)
from .darshan_layout import names_damage, read_layout
from .darshan_names import cache_names
from .dxt_checks import damage_note, record_problem, valid_segments

COUNTER_MODULES = {"POSIX": POSIX, "MPI-IO": MPIIO, "STDIO": STDIO}
DXT_MODULES = {"DXT_POSIX": POSIX, "DXT_MPIIO": MPIIO}
SEGMENT = np.dtype([("offset", "<i8"), ("length", "<i8"), ("start", "<f8"),
                    ("end", "<f8")])
_BINS = ["0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M", "1M_4M", "4M_10M",
         "10M_100M", "100M_1G", "1G_PLUS"]


class DarshanError(ValueError):
    """The file is not a readable Darshan log."""


def load_darshan(path: str, skip=frozenset(), stage=None) -> Job:
    """Reads the log in this process (darshan_isolated runs it in a child).
    stage(name), when given, is called before each step that runs
    libdarshan-util ("header", then each module's name); the modules in skip
    are not read."""
    stage = stage or (lambda name: None)
    layout = checked_layout(path)
    try:
        import darshan  # imported here: the trace-only paths need no PyDarshan
    except ImportError as exc:  # an optional dependency (aggio[darshan])
        raise DarshanError(f"{path}: reading Darshan logs needs PyDarshan "
                           "(pip install 'aggio[darshan]')") from exc
    stage("header")
    with _c_stderr() as messages:
        try:
            report = darshan.DarshanReport(path, read_all=False)
            cache_names(report.log)
        except Exception as exc:  # PyDarshan raises several types
            raise DarshanError(f"{path}: not a readable Darshan log ({exc})") from exc
    whole = _whole_modules(report, layout) - set(skip)
    job = _job_header(path, report)
    job.damaged += _lost_modules(report, layout, whole | set(skip))
    files: dict[int, FileInfo] = {}
    for mod, layer in COUNTER_MODULES.items():
        if mod in whole:
            stage(mod)
            if _read_module(job, report, mod):
                _add_counters(job, report, mod, layer, files,
                              _left_unswapped(report, layout, mod))
    if "LUSTRE" in whole:
        stage("LUSTRE")
        if _read_module(job, report, "LUSTRE"):
            _add_lustre(report, files)
    _finish_files(job, report, files)
    _add_dxt(job, report, path, files, whole, stage)
    _add_notes(job, report, layout)
    job.damaged += _library_errors(messages)
    if job.damaged and not job.files:
        raise DarshanError(f"{path}: damaged or truncated Darshan log, nothing could be "
                           "read: " + "; ".join(job.damaged))
    return job


def checked_layout(path: str):
    """The log's header (darshan_layout), or DarshanError when it is not a
    Darshan log or is cut before its file names: no libdarshan-util needed."""
    layout = read_layout(path)
    if layout is None:
        raise DarshanError(f"{path}: not a Darshan log (no Darshan 3 header)")
    if not (layout.job_whole and layout.names_whole):
        raise DarshanError(
            f"{path}: damaged or truncated Darshan log: {layout.size} bytes of the "
            f"{layout.expected} its header promises; even the job and file-name "
            "records are cut, so nothing can be read"
            + (f" ({layout.map_damage})" if layout.map_damage else ""))
    damage = names_damage(path, layout)
    if damage:
        raise DarshanError(f"{path}: damaged Darshan log: {damage}, so no record can "
                           "be named")
    return layout


@contextlib.contextmanager
def _c_stderr():
    """Collects what C code writes to file descriptor 2 (libdarshan-util's
    error messages) instead of letting it reach the terminal."""
    lines: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        saved = os.dup(2)
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            lines += tmp.read().decode("utf-8", "replace").splitlines()


def _library_errors(lines) -> list[str]:
    return [f"libdarshan-util: {line.strip()}" for line in lines
            if line.strip().lower().startswith("error")][:5]


def _whole_modules(report, layout) -> set:
    """Modules whose region is whole.  PyDarshan numbers modules as the
    current library does, which differs between log formats; the relative
    order is the same, so the log's non-empty slots are matched to the
    modules in order (and checked by their region lengths)."""
    mods = sorted(report.modules, key=lambda m: report.modules[m].get("idx", 0))
    slots = sorted(layout.module_ends)
    if not layout.checked or len(slots) != len(mods):
        return set(mods)
    return {mod for mod, slot in zip(mods, slots) if layout.slot_whole(slot)}


def _lost_modules(report, layout, whole) -> list[str]:
    lost = sorted(set(report.modules) - whole)
    if not lost:
        return []
    if layout.map_damage:
        return [f"the log's header is damaged ({layout.map_damage}): the "
                f"{', '.join(lost)} records lie past the end of the file and were not read"]
    return [f"the log is truncated ({layout.size} of {layout.expected} bytes): the "
            f"{', '.join(lost)} records are cut off and were not read"]


def _read_module(job, report, mod) -> bool:
    with _c_stderr() as messages:
        try:
            if mod == "LUSTRE":
                report.mod_read_all_lustre_records(dtype="numpy", warnings=False)
            else:
                report.mod_read_all_records(mod, dtype="numpy")
            ok = True
        except Exception as exc:  # a damaged region: PyDarshan raises several types
            job.damaged.append(f"the {mod} records could not be read ({exc})")
            ok = False
    errors = _library_errors(messages)
    if errors:
        job.damaged.append(f"the {mod} records are damaged: " + errors[0])
    return ok and not errors


def _job_header(path, report) -> Job:
    meta = report.metadata.get("job", {})
    job = Job(source=path, kind="darshan", nprocs=int(meta.get("nprocs", 0)),
              runtime=float(meta.get("run_time", 0.0)),
              exe=str(report.metadata.get("exe", "")).split(" ")[0],
              modules=set(report.modules))
    # The job metadata's "h" holds the hints Darshan itself used to write the
    # log (DARSHAN_LOGHINTS), not the application's: it is not read here.
    job.mounts = [(str(m[0]), str(m[1])) for m in getattr(report, "mounts", None) or []]
    return job


def _name(report, rec_id) -> str:
    return report.name_records.get(rec_id, f"<record {rec_id}>")


# libdarshan-util (3.4.7, and PyDarshan 3.5.0's) up-converts POSIX records
# older than module version 4 (formats 3.00-3.10, Darshan 3.0 and 3.1: the
# Blue Gene/Q era of big-endian logs) and, on a big-endian log, then skips
# byte-swapping fcounters 10-12: its skip tests the integer counters'
# RENAME_* indices inside the fcounters loop.  Those three come back in the
# file's byte order.  test_darshan_logs reads a 3.10 log rewritten
# big-endian against its original, so a fixed library shows there.
_UNSWAPPED = {"POSIX": (4, ("POSIX_F_META_TIME", "POSIX_F_MAX_READ_TIME",
                            "POSIX_F_MAX_WRITE_TIME"))}


def _left_unswapped(report, layout, mod) -> tuple:
    """The fcounters of `mod` that libdarshan-util left in the log's byte
    order (where that is not this machine's)."""
    swaps = (layout.byte_order == ">") != (sys.byteorder == "big")
    if not swaps or mod not in _UNSWAPPED:
        return ()
    below, names = _UNSWAPPED[mod]
    return names if int(report.modules[mod].get("ver", below)) < below else ()


def _swapped(value: float) -> float:
    return struct.unpack("=d", struct.pack("=d", value)[::-1])[0]


def _add_counters(job, report, mod, layer, files, unswapped=()):
    names_c = report.counters[mod]["counters"]
    names_f = report.counters[mod]["fcounters"]
    for rec in report.records[mod]._records:
        path = _name(report, rec["id"])
        if path.startswith("heatmap:"):
            continue
        c = dict(zip(names_c, rec["counters"].tolist()))
        f = dict(zip(names_f, rec["fcounters"].tolist()))
        for name in unswapped:
            f[name] = _swapped(f[name])
        st = _STATS[mod](c, f)
        rank = int(rec["rank"])
        info = files.setdefault(rec["id"], FileInfo(path=path))
        info.__dict__.setdefault("_ranks", set()).add(rank)
        st.access_sizes = _access_sizes(c, _PREFIX[mod])
        if rank < 0:
            _set_extremes(st, mod, c, f)
        else:
            st.rank_bytes = {rank: st.bytes}
            st.rank_time = {rank: st.read_time + st.write_time}
            st.rank_meta_time = {rank: st.meta_time}
            st.rank_ops = {rank: st.ops}
        if layer in info.layers:
            info.layers[layer].add(st)
        else:
            info.layers[layer] = st


def _hist(c, prefix):
    return np.array([max(0, c.get(prefix + b, 0)) for b in _BINS], np.int64)


def _posix_stats(c, f) -> LayerStats:
    return LayerStats(
        reads=c["POSIX_READS"], writes=c["POSIX_WRITES"],
        bytes_read=c["POSIX_BYTES_READ"], bytes_written=c["POSIX_BYTES_WRITTEN"],
        read_time=f["POSIX_F_READ_TIME"], write_time=f["POSIX_F_WRITE_TIME"],
        meta_time=f["POSIX_F_META_TIME"], opens=c["POSIX_OPENS"],
        syncs=c["POSIX_FSYNCS"] + c["POSIX_FDSYNCS"],
        seq_reads=c["POSIX_SEQ_READS"], seq_writes=c["POSIX_SEQ_WRITES"],
        consec_reads=c["POSIX_CONSEC_READS"], consec_writes=c["POSIX_CONSEC_WRITES"],
        file_not_aligned=c["POSIX_FILE_NOT_ALIGNED"],
        file_alignment=c["POSIX_FILE_ALIGNMENT"],
        mem_not_aligned=c["POSIX_MEM_NOT_ALIGNED"],
        max_byte_read=c["POSIX_MAX_BYTE_READ"], max_byte_written=c["POSIX_MAX_BYTE_WRITTEN"],
        hist_read=_hist(c, "POSIX_SIZE_READ_"), hist_write=_hist(c, "POSIX_SIZE_WRITE_"))


def _mpiio_stats(c, f) -> LayerStats:
    coll_r = c["MPIIO_COLL_READS"] + c["MPIIO_SPLIT_READS"]
    coll_w = c["MPIIO_COLL_WRITES"] + c["MPIIO_SPLIT_WRITES"]
    return LayerStats(
        reads=c["MPIIO_INDEP_READS"] + coll_r + c["MPIIO_NB_READS"],
        writes=c["MPIIO_INDEP_WRITES"] + coll_w + c["MPIIO_NB_WRITES"],
        bytes_read=c["MPIIO_BYTES_READ"], bytes_written=c["MPIIO_BYTES_WRITTEN"],
        read_time=f["MPIIO_F_READ_TIME"], write_time=f["MPIIO_F_WRITE_TIME"],
        meta_time=f["MPIIO_F_META_TIME"],
        opens=c["MPIIO_INDEP_OPENS"] + c["MPIIO_COLL_OPENS"], syncs=c["MPIIO_SYNCS"],
        coll_reads=coll_r, coll_writes=coll_w,
        indep_reads=c["MPIIO_INDEP_READS"], indep_writes=c["MPIIO_INDEP_WRITES"],
        nb_reads=c["MPIIO_NB_READS"], nb_writes=c["MPIIO_NB_WRITES"],
        hist_read=_hist(c, "MPIIO_SIZE_READ_AGG_"),
        hist_write=_hist(c, "MPIIO_SIZE_WRITE_AGG_"))


def _stdio_stats(c, f) -> LayerStats:
    return LayerStats(
        reads=c["STDIO_READS"], writes=c["STDIO_WRITES"],
        bytes_read=c["STDIO_BYTES_READ"], bytes_written=c["STDIO_BYTES_WRITTEN"],
        read_time=f["STDIO_F_READ_TIME"], write_time=f["STDIO_F_WRITE_TIME"],
        meta_time=f["STDIO_F_META_TIME"], opens=c["STDIO_OPENS"] + c["STDIO_FDOPENS"],
        syncs=c["STDIO_FLUSHES"],
        max_byte_read=c["STDIO_MAX_BYTE_READ"],
        max_byte_written=c["STDIO_MAX_BYTE_WRITTEN"])


_STATS = {"POSIX": _posix_stats, "MPI-IO": _mpiio_stats, "STDIO": _stdio_stats}
_PREFIX = {"POSIX": "POSIX", "MPI-IO": "MPIIO", "STDIO": "STDIO"}


def _access_sizes(c, prefix) -> dict:
    out = {}
    for i in range(1, 5):
        size, count = c.get(f"{prefix}_ACCESS{i}_ACCESS", 0), c.get(f"{prefix}_ACCESS{i}_COUNT", 0)
        if size > 0 and count > 0:
            out[int(size)] = out.get(int(size), 0) + int(count)
    return out


def _set_extremes(st, mod, c, f):
    p = _PREFIX[mod]
    st.reduced = True
    st.var_rank_bytes = max(0.0, float(f.get(f"{p}_F_VARIANCE_RANK_BYTES", 0.0)))
    st.var_rank_time = max(0.0, float(f.get(f"{p}_F_VARIANCE_RANK_TIME", 0.0)))
    st.fastest = (c[f"{p}_FASTEST_RANK"], c[f"{p}_FASTEST_RANK_BYTES"],
                  f[f"{p}_F_FASTEST_RANK_TIME"])
    st.slowest = (c[f"{p}_SLOWEST_RANK"], c[f"{p}_SLOWEST_RANK_BYTES"],
                  f[f"{p}_F_SLOWEST_RANK_TIME"])


def _add_lustre(report, files):
    names = report.counters["LUSTRE"]["counters"]
    for rec in report.records["LUSTRE"]._records:
        info = files.get(rec["id"])
        if info is None:
            continue
        if "components" in rec and rec["components"]:
            c = dict(zip(names, rec["components"][0]["counters"].tolist()))
            info.stripe_size = int(c.get("LUSTRE_COMP_STRIPE_SIZE", 0))
            info.stripe_count = int(c.get("LUSTRE_COMP_STRIPE_COUNT", 0))
        elif "counters" in rec:
            c = dict(zip(names, rec["counters"].tolist()))
            info.stripe_size = int(c.get("LUSTRE_STRIPE_SIZE", 0))
            info.stripe_count = int(c.get("LUSTRE_STRIPE_WIDTH", 0))


def _finish_files(job, report, files):
    for info in files.values():
        ranks = info.__dict__.pop("_ranks", set())
        info.nranks = job.nprocs if -1 in ranks else len(ranks)
        info.shared = info.nranks > 1
        posix = info.layers.get(POSIX)
        if posix and posix.rank_bytes and -1 not in ranks:
            info.posix_ranks = sorted(r for r, b in posix.rank_bytes.items() if b > 0)
    job.files = list(files.values())
    job.__dict__["_ids"] = {rid: i for i, rid in enumerate(files)}


def _add_dxt(job, report, path, files, whole, stage):
    mods = [m for m in DXT_MODULES if m in whole]
    ids = job.__dict__.pop("_ids")
    if not mods:
        return
    parts = []
    for mod in mods:
        stage(mod)
        bad = {"records": 0, "segments": 0}
        for rec_id, rank, writes, reads in _dxt_segments(job, path, mod, bad):
            if rec_id not in ids:
                files[rec_id] = FileInfo(path=_name(report, rec_id))
                ids[rec_id] = len(job.files)
                job.files.append(files[rec_id])
            for segs, kind in ((writes, WRITE), (reads, READ)):
                segs, dropped = valid_segments(segs)
                bad["segments"] += dropped
                parts.append(_segments_to_ops(segs, kind, rank, ids[rec_id], DXT_MODULES[mod]))
        if bad["records"] or bad["segments"]:
            job.damaged.append(damage_note(mod, bad["records"], bad["segments"]))
    job.ops = np.concatenate(parts) if parts else empty_ops()
    job.has_ops = len(job.ops) > 0
    _mark_collective(job)
    _posix_ranks_from_dxt(job)


def _dxt_segments(job, path, mod, bad):
    """Yields (record id, rank, write segments, read segments) of a DXT module;
    a read error ends the module with a note in job.damaged, and records that
    cannot be used are counted in bad["records"]."""
    from darshan.backend import cffi_backend as be
    with _c_stderr() as messages:
        log = be.log_open(path)
        rc, records = 0, 0
        try:
            idx = be.log_get_modules(log)[mod]["idx"]
            ctype = be._structdefs[mod]
            header = be.ffi.sizeof("struct dxt_file_record")
            buf = be.ffi.new("void **")
            while (rc := be.libdutil.darshan_log_get_record(log["handle"], idx, buf)) > 0:
                rec = be.ffi.cast(ctype, buf)[0]
                nw, nr = int(rec.write_count), int(rec.read_count)
                rank = int(rec.base_rec.rank)
                records += 1
                if record_problem(rank, nw, nr, job.nprocs):
                    bad["records"] += 1
                else:
                    raw = be.ffi.buffer(be.ffi.cast("char *", buf[0]) + header, (nw + nr) * 32)
                    segs = np.frombuffer(raw, SEGMENT).copy()
                    yield int(rec.base_rec.id), rank, segs[:nw], segs[nw:]
                be.libdutil.darshan_free(buf[0])
                buf[0] = be.ffi.NULL   # NULL: the library allocates the next record
        finally:
            be.log_close(log)
    if rc < 0 or _library_errors(messages):
        job.damaged.append(f"the {mod} trace is damaged: read {records} records before "
                           "an error; the timeline shows only those")


def _segments_to_ops(segs, kind, rank, file_index, layer):
    ops = np.zeros(len(segs), OPS)
    ops["t_start"], ops["t_end"] = segs["start"], segs["end"]
    ops["offset"], ops["length"] = segs["offset"], segs["length"]
    ops["rank"], ops["file"], ops["kind"], ops["layer"] = rank, file_index, kind, layer
    return ops


def _mark_collective(job):
    """DXT does not say which MPI-IO calls were collective; the counters do.
    Files whose MPI-IO data calls were all collective get the flag."""
    for i, info in enumerate(job.files):
        st = info.layers.get(MPIIO)
        if st and st.ops and st.coll_reads + st.coll_writes == st.ops:
            sel = (job.ops["file"] == i) & (job.ops["layer"] == MPIIO)
            job.ops["flags"][sel] |= F_COLLECTIVE


def _posix_ranks_from_dxt(job):
    posix = job.ops[job.ops["layer"] == POSIX]
    for i, info in enumerate(job.files):
        ranks = np.unique(posix["rank"][posix["file"] == i])
        if len(ranks):
            info.posix_ranks = [int(r) for r in ranks]


def _add_notes(job, report, layout):
    if layout.truncated and not job.damaged:
        job.damaged.append(f"the log is shorter than its header says ({layout.size} of "
                           f"{layout.expected} bytes)")
    if layout.map_damage and not job.damaged:
        job.damaged.append(f"the log's header is damaged ({layout.map_damage})")
    if layout.checked is False:
        job.notes.append(f"Darshan log format {layout.version}: this reader cannot check "
                         "it for truncation")
    for mod, desc in report.modules.items():
        if desc.get("partial_flag"):
            job.partial.add(mod)
            job.notes.append(f"partial data: Darshan ran out of memory for the {mod} "
                             "module, so its records are incomplete")
    has_counters = any(m in report.modules for m in COUNTER_MODULES)
    if has_counters and not any(m in report.modules for m in DXT_MODULES):
        job.notes.append("no DXT trace in this log: showing what the counters allow; "
                         "run with DXT_ENABLE_IO_TRACE=1 for the timeline, the spatial "
                         "map and per-operation stragglers")
    if not job.files:
        job.notes.append("this log has no I/O records (only job metadata)")
