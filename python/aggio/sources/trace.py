"""aggio traces -> the common model.

Several trace files of one job (one per file the job opened) become one Job;
their clocks are put on a common base (the earliest clock_base).
"""
from __future__ import annotations

import numpy as np

from .. import trace as fmt
from ..derive import data_ranks, group_by_file_layer, layer_stats
from ..model import (OPS, MPIIO, POSIX, READ, WRITE, OPEN, CLOSE, SYNC, META,
                     F_COLLECTIVE, F_AGGREGATOR, F_NONBLOCKING, FileInfo, Job)

DEFAULT_ALIGNMENT = 4096

# A record's times are seconds since the header's clock_base; no job runs
# longer than this (about 116 days), so a time beyond it is damage.
MAX_SECONDS = 1e7
INT64_MAX = np.iinfo(np.int64).max

# trace op code -> (layer, kind); layer 0 marks records left out of the
# model: codes the format does not define, and `wait` (14), the completion
# of a non-blocking request, whose bytes its starting record (10-13)
# already counts and whose direction the record does not say.
_LAYER = np.zeros(64, np.uint8)
_KIND = np.zeros(64, np.uint8)
for _code, _layer, _kind in ((1, MPIIO, WRITE), (2, MPIIO, READ), (3, MPIIO, WRITE),
                             (4, MPIIO, READ), (5, MPIIO, OPEN), (6, MPIIO, CLOSE),
                             (7, MPIIO, SYNC), (8, MPIIO, META), (9, MPIIO, META),
                             (10, MPIIO, WRITE), (11, MPIIO, READ), (12, MPIIO, WRITE),
                             (13, MPIIO, READ), (15, MPIIO, WRITE), (16, MPIIO, READ),
                             (17, MPIIO, WRITE), (18, MPIIO, READ), (19, MPIIO, WRITE),
                             (20, MPIIO, READ), (21, MPIIO, META), (22, MPIIO, META),
                             (32, POSIX, OPEN), (33, POSIX, READ), (34, POSIX, WRITE),
                             (35, POSIX, SYNC), (36, POSIX, CLOSE), (37, POSIX, META),
                             (38, POSIX, META)):
    _LAYER[_code], _KIND[_code] = _layer, _kind


_DATA_OPS = [fmt.OP[k] for k in ("write_at", "read_at", "write_at_all", "read_at_all",
                                  "iwrite_at", "iread_at", "iwrite_at_all", "iread_at_all",
                                  "write_shared", "read_shared", "iwrite_shared",
                                  "iread_shared", "write_ordered", "read_ordered")]
_NONBLOCKING = [fmt.OP[k] for k in ("iwrite_at", "iread_at", "iwrite_at_all", "iread_at_all",
                                    "iwrite_shared", "iread_shared")]


def load_traces(paths: list[str]) -> Job:
    """Reads aggio traces (raises fmt.TraceError for unreadable ones)."""
    traces = [fmt.read_trace(p) for p in paths]
    for tr in traces:
        if not np.isfinite(tr.clock_base):
            raise fmt.TraceError(f"{tr.path}: clock_base {tr.clock_base} is not a time")
        _drop_invalid_records(tr)
        _check_meta(tr)
    job = Job(source=", ".join(paths), kind="aggio-trace", has_ops=True,
              modules={"AGGIO-TRACE"})
    base = min(t.clock_base for t in traces)
    far = [t.path for t in traces if t.clock_base - base > MAX_SECONDS]
    if far:
        raise fmt.TraceError(f"{', '.join(far)}: clock_base more than {MAX_SECONDS:g} s "
                             "after the other traces': not traces of one job")
    parts = []
    for index, tr in enumerate(traces):
        job.files.append(_file_info(tr))
        job.notes.extend(f"{tr.path}: {w}" for w in tr.warnings)
        parts.append(_convert(tr, index, tr.clock_base - base))
        views = tr.records[tr.records["op"] == fmt.OP["set_view"]]
        if len(views) and not (views["flags"] & fmt.FLAG_VIEW_CONTIGUOUS).all():
            job.notes.append(f"{tr.path}: the program set a non-contiguous file "
                             "view; MPI-IO offsets under it are in etypes of that "
                             "view (byte offsets are exact at the POSIX layer only)")
        job.nprocs = max(job.nprocs, tr.nranks)
        job.hints.update(tr.meta.get("hints") or {})
        if not job.rank_node and tr.nranks:
            job.rank_node = {r: int(n) for r, n in enumerate(tr.ranks["node"])}
            job.node_names = [str(n) for n in tr.meta.get("nodes") or []]
        job.fstype = job.fstype or str(tr.meta.get("fstype") or "")
    job.ops = np.concatenate(parts) if parts else np.zeros(0, OPS)
    _fill_stats(job)
    if len(job.ops):
        job.runtime = float(job.ops["t_end"].max() - min(0.0, job.ops["t_start"].min()))
    return job


def record_problems(tr: fmt.Trace) -> dict[str, np.ndarray]:
    """For each way a record can contradict the header or the format, a mask
    of the records that do (a record may appear under several)."""
    rec = tr.records
    t0, t1 = rec["t_start"], rec["t_end"]
    offset, length, tsize = rec["offset"], rec["length"], rec["type_size"]
    with np.errstate(invalid="ignore"):
        bad_time = ~(np.isfinite(t0) & np.isfinite(t1) & (np.abs(t0) <= MAX_SECONDS)
                     & (np.abs(t1) <= MAX_SECONDS))
        backwards = t1 < t0
    room = INT64_MAX - np.maximum(offset, 0)      # >= 0: no overflow here
    too_long = (length > 0) & (length > room // np.maximum(tsize, 1))
    problems = {
        "rank outside the header's nranks": (rec["rank"] < 0) | (rec["rank"] >= tr.nranks),
        "unknown operation code": ~np.isin(rec["op"], list(fmt.OP_NAMES)),
        "time not finite or beyond 1e7 s": bad_time,
        "ends before it starts": backwards & ~bad_time,
        "negative length or type size": (length < 0) | (tsize < 0),
        "offset below -1": offset < -1,
        "byte range past 2^63": too_long & (length >= 0) & (tsize >= 0),
    }
    placed = _rank_by_position(tr)
    if placed is not None:
        problems["rank differs from its rank-table slot"] = rec["rank"] != placed
    return problems


def _rank_by_position(tr: fmt.Trace):
    """The rank each record's position gives by the rank table (records of
    rank r are first..first+count-1), or None when the table is itself
    inconsistent (read_trace has warned about that)."""
    counts = tr.ranks["count"].astype(np.int64) if tr.nranks else np.zeros(0, np.int64)
    if int(counts.sum()) != len(tr.records):
        return None
    first = np.concatenate(([0], np.cumsum(counts)[:-1])) if tr.nranks else counts
    if not np.array_equal(tr.ranks["first"].astype(np.int64), first):
        return None
    return np.repeat(np.arange(tr.nranks, dtype=np.int64), counts)


def _drop_invalid_records(tr: fmt.Trace) -> None:
    """Keeps only the records consistent with the header, and says how many
    were rejected and why (a damaged trace must not turn into a report of
    absurd times, ranks or offsets)."""
    if len(tr.records) == 0:
        return
    problems = record_problems(tr)
    bad = np.zeros(len(tr.records), bool)
    for mask in problems.values():
        bad |= mask
    n = int(bad.sum())
    if n == 0:
        return
    why = ", ".join(f"{reason}: {int(mask.sum())}" for reason, mask in problems.items()
                    if mask.any())
    tr.warnings.append(f"{n} of {len(tr.records)} records rejected as damaged ({why})")
    tr.records = tr.records[~bad]


def _check_meta(tr: fmt.Trace) -> None:
    """Metadata keys of the wrong type are dropped with a warning."""
    meta = tr.meta
    wrong = []
    if not isinstance(meta.get("hints", {}), dict):
        wrong.append("hints")
        meta.pop("hints")
    if meta.get("hints"):
        meta["hints"] = {str(k): str(v) for k, v in meta["hints"].items()}
    aggr = meta.get("aggregators")
    if aggr is not None and not (isinstance(aggr, list) and all(
            isinstance(r, int) and not isinstance(r, bool) and 0 <= r < tr.nranks
            for r in aggr)):
        wrong.append("aggregators")
        meta.pop("aggregators")
    if not isinstance(meta.get("path", ""), str):
        wrong.append("path")
        meta.pop("path")
    if wrong:
        tr.warnings.append(f"metadata ignored, not as the format says: {', '.join(wrong)}")


def _file_info(tr: fmt.Trace) -> FileInfo:
    meta = tr.meta
    hints = meta.get("hints") or {}
    info = FileInfo(path=str(meta.get("path") or tr.path), nranks=tr.nranks,
                    shared=tr.nranks > 1)
    info.aggregators = [int(r) for r in (meta.get("aggregators") or
                                         np.flatnonzero(tr.ranks["aggregator"]))]
    info.stripe_size = _int_hint(hints, "striping_unit")
    info.stripe_count = _int_hint(hints, "striping_factor")
    return info


def _int_hint(hints: dict, key: str) -> int:
    try:
        return int(str(hints.get(key, 0)).strip() or 0)
    except ValueError:
        return 0


def _convert(tr: fmt.Trace, file_index: int, shift: float) -> np.ndarray:
    rec = tr.records
    code = np.minimum(rec["op"], 63)
    out = np.empty(len(rec), OPS)
    out["t_start"] = rec["t_start"] + shift
    out["t_end"] = rec["t_end"] + shift
    out["rank"] = rec["rank"]
    out["file"] = file_index
    out["layer"] = _LAYER[code]
    out["kind"] = _KIND[code]
    api = out["layer"] == MPIIO
    out["length"] = np.where(api, rec["length"] * np.maximum(rec["type_size"], 1),
                             rec["length"])
    out["offset"] = _byte_offsets(rec, api)
    coll = api & ((rec["flags"] & fmt.FLAG_API_COLLECTIVE) != 0)
    agg = ~api & ((rec["flags"] & fmt.FLAG_POSIX_AGGREGATOR) != 0)
    nb = api & np.isin(rec["op"], _NONBLOCKING)
    out["flags"] = (np.where(coll, F_COLLECTIVE, 0) | np.where(agg, F_AGGREGATOR, 0)
                    | np.where(nb, F_NONBLOCKING, 0))
    return out[out["layer"] != 0]


def _byte_offsets(rec, api):
    """API offsets are in etypes of the view in effect.  A set_view record
    holds the displacement (offset), the etype size (length) and a flag
    (FLAG_VIEW_CONTIGUOUS) when the filetype is contiguous: then offset o is
    byte disp + o * etype.  Other views map offsets through a filetype the
    trace does not hold; their offsets are kept (the POSIX layer has the
    bytes, and a note says so)."""
    out = rec["offset"].astype(np.int64)
    views = np.flatnonzero(rec["op"] == fmt.OP["set_view"])
    if not len(views):
        return out
    data = api & np.isin(rec["op"], _DATA_OPS)
    for rank in np.unique(rec["rank"][views]):
        mine = np.flatnonzero(rec["rank"] == rank)  # in completion order
        disp, etype, contiguous = 0, 1, True
        for i in mine:
            if rec["op"][i] == fmt.OP["set_view"]:
                disp, etype = int(rec["offset"][i]), max(int(rec["length"][i]), 1)
                contiguous = bool(rec["flags"][i] & fmt.FLAG_VIEW_CONTIGUOUS)
            elif data[i] and contiguous and rec["offset"][i] >= 0:
                # -1 is "no offset" and stays so; a damaged displacement
                # that maps below 0 or past 2^63 keeps the etype offset
                byte = disp + int(rec["offset"][i]) * etype
                if 0 <= byte < 2**63:
                    out[i] = byte
    return out


def _fill_stats(job: Job) -> None:
    for f, layer, ops in group_by_file_layer(job.ops):
        info = job.files[f]
        alignment = info.stripe_size or DEFAULT_ALIGNMENT
        info.layers[layer] = layer_stats(ops, alignment)
        if layer == POSIX:
            info.posix_ranks = data_ranks(ops)
    for info in job.files:
        api = info.layers.get(MPIIO)
        if api:
            info.nranks = max(info.nranks, len(api.rank_bytes))
