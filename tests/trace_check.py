#!/usr/bin/env python3
"""trace_check.py - reads an aggio trace (docs/trace-format.md) with NumPy
alone and checks that it is consistent: header against rank table and file
size, every record on its rank, end >= start, POSIX calls inside the API call
that made them, collective calls overlapping across ranks, metadata that
matches the rank table.  Optional expectations (--expect-*) turn it into a
test of a known run.  Exit status 0 when every check passes.

    python3 tests/trace_check.py TRACE [--ranks N] [--dropped R:N ...]
        [--count OP=N ...] [--quiet]
"""
import argparse
import json
import os
import sys

try:
    import numpy as np
except ImportError:  # pragma: no cover - ctest reports the test as skipped
    print("trace_check.py: NumPy is not installed; skipped")
    sys.exit(77)

HEADER = np.dtype([("magic", "S8"), ("version", "<u4"), ("nranks", "<u4"),
                   ("record_size", "<u4"), ("flags", "<u4"),
                   ("total_records", "<u8"), ("total_dropped", "<u8"),
                   ("meta_len", "<u8"), ("records_offset", "<u8"),
                   ("clock_base", "<f8")])
RANK = np.dtype([("first", "<u8"), ("count", "<u8"), ("dropped", "<u8"),
                 ("node", "<i4"), ("aggregator", "<i4")])
RECORD = np.dtype([("t_start", "<f8"), ("t_end", "<f8"), ("offset", "<i8"),
                   ("length", "<i8"), ("type_size", "<i8"), ("op", "<u2"),
                   ("flags", "<u2"), ("rank", "<i4")])

OPS = {1: "write_at", 2: "read_at", 3: "write_at_all", 4: "read_at_all",
       5: "open", 6: "close", 7: "sync", 8: "set_view", 9: "set_size",
       15: "write_shared", 16: "read_shared", 17: "iwrite_shared", 18: "iread_shared",
       19: "write_ordered", 20: "read_ordered", 21: "seek_shared", 22: "preallocate",
       32: "posix_open", 33: "posix_pread", 34: "posix_pwrite",
       35: "posix_fsync", 36: "posix_close", 37: "posix_ftruncate",
       38: "posix_fallocate"}
OP_BY_NAME = {v: k for k, v in OPS.items()}
API_MAX = 31                      # ops above are the POSIX layer
SYNCHRONIZING = (3, 4, 5)         # collectives whose ranks must overlap
META_KEYS = ("path", "nodes", "aggregators", "strategy", "hints",
             "mpi_library", "clock_offset_max")


class Trace:
    """A trace file, parsed: header, ranks (rank table), meta, recs."""

    def __init__(self, path):
        with open(path, "rb") as f:
            raw = f.read()
        if len(raw) < HEADER.itemsize:
            raise ValueError(f"{path}: {len(raw)} bytes, shorter than the header")
        self.size = len(raw)
        self.header = np.frombuffer(raw, dtype=HEADER, count=1)[0]
        h = self.header
        if h["magic"] != b"AGGIOTRC":
            raise ValueError(f"{path}: bad magic {h['magic']!r}")
        if h["version"] != 1:
            raise ValueError(f"{path}: version {h['version']}, this reader knows 1")
        n = int(h["nranks"])
        table_end = 64 + RANK.itemsize * n
        if len(raw) < table_end + int(h["meta_len"]):
            raise ValueError(f"{path}: truncated before the end of the metadata")
        self.ranks = np.frombuffer(raw, dtype=RANK, count=n, offset=64)
        self.meta = json.loads(raw[table_end:table_end + int(h["meta_len"])])
        need = int(h["records_offset"]) + RECORD.itemsize * int(h["total_records"])
        if len(raw) < need:
            raise ValueError(f"{path}: {len(raw)} bytes, records need {need}")
        self.recs = np.frombuffer(raw, dtype=RECORD, count=int(h["total_records"]),
                                  offset=int(h["records_offset"]))

    def of_rank(self, r):
        e = self.ranks[r]
        return self.recs[int(e["first"]):int(e["first"]) + int(e["count"])]


class Checker:
    def __init__(self, quiet=False):
        self.failures = 0
        self.checks = 0
        self.quiet = quiet

    def check(self, cond, msg):
        self.checks += 1
        if not cond:
            self.failures += 1
            print(f"FAIL: {msg}", file=sys.stderr)
        return cond


def check_structure(t, c):
    h = t.header
    c.check(h["record_size"] == RECORD.itemsize, f"record_size {h['record_size']}")
    c.check(h["records_offset"] % 8 == 0, "records_offset not a multiple of 8")
    c.check(h["records_offset"] >= 64 + 32 * h["nranks"] + h["meta_len"],
            "records overlap the metadata")
    c.check(int(t.ranks["count"].sum()) == int(h["total_records"]),
            "total_records != sum of per-rank counts")
    c.check(int(t.ranks["dropped"].sum()) == int(h["total_dropped"]),
            "total_dropped != sum of per-rank dropped")
    first = np.concatenate(([0], np.cumsum(t.ranks["count"].astype(np.int64))[:-1]))
    c.check(np.array_equal(first, t.ranks["first"].astype(np.int64)),
            "rank table 'first' is not the prefix sum of 'count'")
    for k in META_KEYS:
        c.check(k in t.meta, f"metadata lacks {k!r}")
    nodes = t.meta.get("nodes", [])
    c.check(all(0 <= nd < max(len(nodes), 1) for nd in t.ranks["node"]),
            "a rank's node index is outside the metadata's node list")
    aggr = sorted(t.meta.get("aggregators", []))
    flagged = sorted(int(r) for r in np.nonzero(t.ranks["aggregator"])[0])
    c.check(aggr == flagged, f"aggregators {aggr} != rank table flags {flagged}")


def check_records(t, c, tol):
    recs = t.recs
    c.check(bool(np.all(np.isfinite(recs["t_start"]) & np.isfinite(recs["t_end"]))),
            "non-finite timestamps")
    bad = np.nonzero(recs["t_end"] < recs["t_start"])[0]
    c.check(bad.size == 0, f"{bad.size} records end before they start")
    known = np.isin(recs["op"], list(OPS))
    c.check(bool(known.all()), f"unknown op codes {sorted(set(recs['op'][~known]))}")
    for r in range(int(t.header["nranks"])):
        rr = t.of_rank(r)
        c.check(bool(np.all(rr["rank"] == r)), f"rank {r}'s records carry other ranks")
        if t.ranks[r]["dropped"] == 0:
            check_nesting(rr, r, c, tol)


def check_nesting(rr, r, c, tol):
    """Every POSIX data call of a rank lies inside one of its API calls."""
    api = rr[rr["op"] <= API_MAX]
    posix = rr[(rr["op"] > API_MAX)]
    if posix.size == 0:
        return
    order = np.argsort(api["t_start"], kind="stable")
    starts, ends = api["t_start"][order], api["t_end"][order]
    ends = np.maximum.accumulate(ends) if ends.size else ends
    i = np.searchsorted(starts, posix["t_start"] + tol, side="right") - 1
    inside = (i >= 0) & (ends[np.maximum(i, 0)] + tol >= posix["t_end"]) if api.size \
        else np.zeros(posix.size, bool)
    c.check(bool(inside.all()),
            f"rank {r}: {int((~inside).sum())} POSIX calls outside any API call")


def check_collectives(t, c, tol):
    """The k-th call of each synchronizing collective overlaps on all ranks."""
    n = int(t.header["nranks"])
    if n < 2 or int(t.header["total_dropped"]) > 0:
        return
    for op in SYNCHRONIZING:
        per_rank = [t.of_rank(r) for r in range(n)]
        per_rank = [x[x["op"] == op] for x in per_rank]
        counts = {len(x) for x in per_rank}
        if not c.check(len(counts) == 1,
                       f"{OPS[op]}: call counts differ across ranks {sorted(counts)}"):
            continue
        if counts.pop() == 0:
            continue
        latest_start = np.max([x["t_start"] for x in per_rank], axis=0)
        earliest_end = np.min([x["t_end"] for x in per_rank], axis=0)
        bad = np.nonzero(latest_start > earliest_end + tol)[0]
        k = int(bad[0]) if bad.size else 0
        c.check(bad.size == 0,
                f"{OPS[op]}: {bad.size} calls do not overlap across ranks, first "
                f"#{k} (latest start {latest_start[k]:.6f} > earliest end "
                f"{earliest_end[k]:.6f})")


def summary(t):
    h = t.header
    lines = [f"trace of {t.meta.get('path')!r}: {int(h['nranks'])} ranks, "
             f"{int(h['total_records'])} records, {int(h['total_dropped'])} dropped"]
    ops, counts = np.unique(t.recs["op"], return_counts=True)
    for op, k in zip(ops, counts):
        lines.append(f"  {OPS.get(int(op), op)}: {int(k)}")
    for r, e in enumerate(t.ranks):
        if e["dropped"]:
            lines.append(f"  rank {r}: {int(e['dropped'])} records dropped "
                         "(trace buffer full; raise aggio_trace_memory)")
    return "\n".join(lines)


def setup_parser(p=None):
    p = p or argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("trace")
    p.add_argument("--ranks", type=int, help="expected number of ranks")
    p.add_argument("--dropped", action="append", default=[], metavar="RANK:N",
                   help="expected dropped count of a rank ('*:N' for all ranks)")
    p.add_argument("--count", action="append", default=[], metavar="OP=N",
                   help="expected number of records of an op (e.g. posix_pwrite=8)")
    p.add_argument("--tolerance", type=float, default=1e-4,
                   help="seconds of clock error allowed (default 1e-4)")
    p.add_argument("--quiet", action="store_true")
    return p


def main(argv=None):
    args = setup_parser().parse_args(argv)
    c = Checker(args.quiet)
    try:
        t = Trace(args.trace)
    except (OSError, ValueError) as exc:
        print(f"FAIL: {exc}", file=sys.stderr)
        return 1
    check_structure(t, c)
    check_records(t, c, args.tolerance)
    check_collectives(t, c, args.tolerance)
    if args.ranks is not None:
        c.check(int(t.header["nranks"]) == args.ranks,
                f"nranks {int(t.header['nranks'])} != {args.ranks}")
    for spec in args.dropped:
        who, n = spec.split(":")
        ranks = range(int(t.header["nranks"])) if who == "*" else [int(who)]
        for r in ranks:
            c.check(int(t.ranks[r]["dropped"]) == int(n),
                    f"rank {r} dropped {int(t.ranks[r]['dropped'])}, expected {n}")
    for spec in args.count:
        name, n = spec.split("=")
        got = int(np.count_nonzero(t.recs["op"] == OP_BY_NAME[name]))
        c.check(got == int(n), f"{got} {name} records, expected {n}")
    if not args.quiet:
        print(summary(t))
        print(f"{c.checks} checks, {c.failures} failed ({os.path.basename(args.trace)})")
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
