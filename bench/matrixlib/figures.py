"""Figures from the runs: min/median/max per configuration, ratios against
the best file-per-process and the best MPI-IO configuration of the same
group (MPI flavour, ranks, pattern, direction), peak memory, calls per
second of the 4 KiB calls, and the targets.  Pure functions of the results
(dicts made by runner.run_one); nothing here runs anything."""
import collections
import statistics

from . import plan

# metric: (access in the record, per-repetition key)
METRICS = {
    "write": ("write", "bw_durable_MiBps"),   # open + write + fsync + close
    "buffered": ("write", "bw_buffered_MiBps"),
    "read": ("read", "bw_MiBps"),
}
DIRECTIONS = ("write", "read")

# A target: the patterns it applies to (None: every bandwidth pattern), the
# direction, the reference (see references()) and the least ratio of the
# default aggio configuration to it.
Target = collections.namedtuple("Target", "patterns direction ref goal text")
TARGETS = (
    Target(("ior-hard",), "write", "mpiio", 1.5, "durable write ≥ 1.5× best MPI-IO"),
    Target(("ior-hard",), "write", "fpp_odirect", 0.8, "durable write ≥ 0.8× FPP O_DIRECT"),
    Target(("ior-hard",), "read", "mpiio", 1.2, "cold-cache read ≥ 1.2× best MPI-IO"),
    Target(("segmented-1m",), "write", "fpp_odirect", 0.9, "durable write ≥ 0.9× FPP O_DIRECT"),
    Target(("segmented-1m", "segmented-64m"), "write", "fpp", 0.9,
           "durable write ≥ 0.9× best FPP (buffered or O_DIRECT)"),
    Target(("segmented-1m", "segmented-64m"), "read", "fpp", 1.0, "cold read ≥ best FPP"),
    Target(None, "write", "peer", 0.95, "durable write ≥ 0.95× best peer"),
    Target(None, "read", "peer", 0.95, "read ≥ 0.95× best peer"),
    Target(("strided-batched", "hacc-soa"), "write", "mpiio", 2.0,
           "durable write ≥ 2× best MPI-IO (earlier target)"),
    Target(("strided-batched", "hacc-soa"), "write", "fpp_odirect", 0.85,
           "durable write ≥ 0.85× FPP O_DIRECT (earlier target)"),
)


# ---- per configuration ------------------------------------------------------------

def trio(values):
    """(min, median, max), or None without values."""
    if not values:
        return None
    return (min(values), statistics.median(values), max(values))


def rep_values(record, metric):
    access, key = METRICS[metric]
    a = record.get(access) if record else None
    if not a:
        return []
    return [r[key] for r in a.get("reps", []) if r.get(key) is not None]


def calls_per_second(record):
    """Write calls per second of each repetition (calls per rank / the
    write phase's time, latest end - earliest start over the ranks)."""
    calls = (record.get("calls") or {}).get("write") or 0
    return [calls / r["write"] for r in record["write"]["reps"] if r.get("write")]


def memory_overhead(record):
    """The rank whose growth of peak RSS from the end of set-up is largest
    against its allowance (2 × cb_buffer_size + its data buffers), as
    (growth KiB, allowance KiB); None without the figures."""
    mem = record.get("memory")
    cb = (record.get("hints") or {}).get("cb_buffer_size")
    if not mem or not cb or not str(cb).isdigit():
        return None
    pairs = [(p - b, (2 * int(cb) + d) / 1024)
             for p, b, d in zip(mem["peak_kib"], mem["baseline_kib"], mem["data_bytes"])]
    return max(pairs, key=lambda x: x[0] / x[1]) if pairs else None


def strategies(records):
    """The strategies aggio reported choosing, in order of first use."""
    out = []
    for rec in records:
        for access in ("write", "read"):
            s = (rec.get(access) or {}).get("strategy")
            if s and s not in out:
                out.append(s)
    return out


def cell_stats(cell, results):
    """min/median/max per metric, peak memory and the rest for one cell."""
    recs = [r["record"] for r in results if r["record"]]
    stats = {"config": cell["config"], "kind": cell["kind"], "runs": len(results),
             "ok": len(recs), "errors": [r["error"] for r in results if r["error"]],
             "strategies": strategies(recs)}
    for m in METRICS:
        stats[m] = trio([v for rec in recs for v in rep_values(rec, m)])
    peaks = [rec["memory"]["peak_kib_max"] for rec in recs if rec.get("memory")]
    stats["peak_kib"] = max(peaks) if peaks else None
    over = [o for o in (memory_overhead(rec) for rec in recs) if o]
    stats["memory"] = max(over, key=lambda x: x[0] / x[1]) if over else None
    stats["calls_per_s"] = trio([v for rec in recs for v in calls_per_second(rec)])
    return stats


def summarize(results):
    """{(flavor, np, pattern): {config: stats}} in run order."""
    by_cell = collections.OrderedDict()
    for r in results:
        c = r["cell"]
        by_cell.setdefault((c["flavor"], c["np"], c["pattern"], c["config"]), (c, []))[1].append(r)
    groups = collections.OrderedDict()
    for (flavor, np, pattern, name), (cell, rs) in by_cell.items():
        groups.setdefault((flavor, np, pattern), collections.OrderedDict())[name] = cell_stats(cell, rs)
    return groups


# ---- references and ratios --------------------------------------------------------

def median(stats, metric):
    t = stats.get(metric) if stats else None
    return t[1] if t else None


def best(group, metric, kinds):
    """(median, configuration) of the best configuration of these kinds."""
    vals = [(median(s, metric), name) for name, s in group.items()
            if s["kind"] in kinds and median(s, metric) is not None]
    return max(vals) if vals else (None, None)


def references(group, metric):
    """The figures ratios are taken against, each (median, configuration)."""
    fpp_direct = group.get("FPP-odirect")
    return {"fpp": best(group, metric, ("fpp",)),
            "fpp_odirect": (median(fpp_direct, metric), "FPP-odirect"),
            "mpiio": best(group, metric, ("mpiio",)),
            "peer": best(group, metric, plan.PEER_KINDS)}


def ratio(a, b):
    return a / b if a is not None and b else None


def summary_rows(groups):
    """Per group and direction: the default aggio configuration and the best
    aggio configuration against the best FPP and the best MPI-IO."""
    rows = []
    for (flavor, np, pattern), group in groups.items():
        if plan.pattern(pattern).micro:
            continue
        for d in DIRECTIONS:
            refs = references(group, d)
            auto = median(group.get(plan.DEFAULT_AGGIO), d)
            top, top_name = best(group, d, ("aggio",))
            rows.append({"flavor": flavor, "np": np, "pattern": pattern, "direction": d,
                         "auto": auto, "best_aggio": top, "best_aggio_name": top_name,
                         "refs": refs,
                         "auto_fpp": ratio(auto, refs["fpp"][0]),
                         "auto_mpiio": ratio(auto, refs["mpiio"][0]),
                         "best_fpp": ratio(top, refs["fpp"][0]),
                         "best_mpiio": ratio(top, refs["mpiio"][0])})
    return rows


# ---- the 4 KiB calls ----------------------------------------------------------------

def micro_rows(groups):
    """Per micro group: each configuration's calls per second and cost per
    call against the cheapest MPI-IO collective configuration."""
    out = []
    for (flavor, np, pattern), group in groups.items():
        if not plan.pattern(pattern).micro:
            continue
        ref, ref_name = best(group, "calls_per_s", ("mpiio",))
        rows = []
        for name, s in group.items():
            cps = s["calls_per_s"]
            rows.append({"config": name, "stats": s, "calls_per_s": cps,
                         "us_per_call": 1e6 / cps[1] if cps and cps[1] else None,
                         "cost_vs_mpiio": ratio(ref, cps[1]) if cps else None})
        out.append({"flavor": flavor, "np": np, "ref": ref, "ref_name": ref_name, "rows": rows})
    return out


# ---- targets ------------------------------------------------------------------------

def state(value, goal, at_most=False):
    if value is None:
        return "not measured"
    return "met" if (value <= goal if at_most else value >= goal) else "**MISSED**"


def bandwidth_targets(groups):
    rows = []
    for (flavor, np, pattern), group in groups.items():
        if plan.pattern(pattern).micro:
            continue
        for t in TARGETS:
            if t.patterns is not None and pattern not in t.patterns:
                continue
            ref, ref_name = references(group, t.direction)[t.ref]
            v = ratio(median(group.get(plan.DEFAULT_AGGIO), t.direction), ref)
            rows.append({"flavor": flavor, "np": np, "pattern": pattern, "what": t.text,
                         "against": ref_name, "value": v, "goal": t.goal,
                         "state": state(v, t.goal)})
    return rows


def memory_targets(groups):
    """Peak memory per rank within 2 × cb_buffer_size + the user's data:
    the default aggio configuration's worst rank, growth from set-up."""
    rows = []
    for (flavor, np, pattern), group in groups.items():
        s = group.get(plan.DEFAULT_AGGIO)
        if plan.pattern(pattern).micro or s is None:
            continue
        m = s["memory"]
        rows.append({"flavor": flavor, "np": np, "pattern": pattern,
                     "what": "peak RSS growth ≤ 2 × cb_buffer_size + data buffers",
                     "against": "allowance", "value": ratio(*m) if m else None, "goal": 1.0,
                     "detail": m, "state": state(ratio(*m) if m else None, 1.0, at_most=True)})
    return rows


def micro_targets(groups):
    """A 4 KiB collective call costs no more than the MPI library's own."""
    rows = []
    for m in micro_rows(groups):
        auto = next((r for r in m["rows"] if r["config"] == plan.DEFAULT_AGGIO), None)
        v = auto["cost_vs_mpiio"] if auto else None
        rows.append({"flavor": m["flavor"], "np": m["np"], "pattern": "4k-calls",
                     "what": "cost per 4 KiB collective call ≤ best MPI-IO's",
                     "against": m["ref_name"], "value": v, "goal": 1.0,
                     "state": state(v, 1.0, at_most=True)})
    return rows


def targets(groups):
    return bandwidth_targets(groups) + memory_targets(groups) + micro_targets(groups)
