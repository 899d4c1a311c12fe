"""The report's cross-layer sections: the collective-buffering aggregators
of each file (bytes, time, rounds) and the translation of one collective
MPI-IO call into the POSIX calls it caused (which ranks sent what, which
aggregators wrote what)."""
from __future__ import annotations

import numpy as np

from .. import crosslayer as xl
from ..findings.base import fmt_bytes
from ..model import KIND_NAMES, MPIIO, POSIX, READ, WRITE, Job
from . import figures
from .parts import e, figure, table

MAX_FILES = 5
MAX_ROWS = 64


def aggregators_html(i: int, job: Job) -> str:
    found = []
    for index, f in sorted(enumerate(job.files), key=lambda x: -x[1].bytes):
        agg = xl.aggregators(job, index)
        if agg is not None and agg.callers >= 2:
            found.append(agg)
        if len(found) >= MAX_FILES:
            break
    if not found:
        return ""
    out = ["<h3>Aggregators (collective buffering)</h3><p class='caption'>Ranks that did the "
           "POSIX I/O of files accessed with collective MPI-IO: bytes, seconds in POSIX calls "
           "and rounds (POSIX calls) per aggregator.</p>"]
    for n, agg in enumerate(found):
        out.append(_one_file(i, n, job, agg))
    return "\n".join(out)


def _one_file(i, n, job, agg) -> str:
    ranks = sorted(agg.ranks, key=lambda r: -agg.bytes.get(r, 0))[:MAX_ROWS]
    rows = []
    for r in ranks:
        secs, nbytes = agg.seconds.get(r, 0.0), agg.bytes.get(r, 0)
        node = job.rank_node.get(r)
        rows.append([r, job.node_names[node] if node is not None and node < len(job.node_names)
                     else ("-" if node is None else node), fmt_bytes(nbytes), f"{secs:.4f}",
                     agg.calls.get(r, "-"),
                     f"{nbytes / secs / 2**20:.1f}" if secs > 0 else "-"])
    more = len(agg.ranks) - len(ranks)
    head = (f"<p><span class='code'>{e(agg.path)}</span>: {len(agg.ranks)} aggregator(s) for "
            f"{agg.callers} MPI-IO ranks ({e(agg.source)})"
            + (f"; placement: {e(agg.placement)}" if agg.placement else "")
            + (f"; buffer {fmt_bytes(agg.buffer_size)} ({e(agg.buffer_source)})"
               if agg.buffer_size else "") + "</p>")
    fig = _bars(agg, ranks)
    return (head + figure(f"aggregators-{i}-{n}", "Per aggregator", fig,
                          "Bars: bytes (left axis); dots: seconds in POSIX calls (right axis).")
            + table(f"aggregators-table-{i}-{n}",
                    ["rank", "node", "bytes", "POSIX seconds", "rounds (POSIX calls)", "MiB/s"],
                    rows)
            + (f"<p class='caption'>{more} more aggregators not listed.</p>" if more > 0 else ""))


def _bars(agg, ranks) -> dict:
    x = [str(r) for r in ranks]
    return {"data": [{"type": "bar", "x": x, "y": [agg.bytes.get(r, 0) / 2**20 for r in ranks],
                      "name": "MiB", "marker": {"color": "#1f77b4"}},
                     {"type": "scatter", "mode": "markers", "x": x,
                      "y": [agg.seconds.get(r, 0.0) for r in ranks], "yaxis": "y2",
                      "name": "seconds", "marker": {"color": "#d62728", "size": 9}}],
            "layout": {"xaxis": {"title": {"text": "aggregator rank"}, "type": "category"},
                       "yaxis": {"title": {"text": "MiB written/read"}},
                       "yaxis2": {"title": {"text": "seconds in POSIX calls"},
                                  "overlaying": "y", "side": "right"},
                       "height": 300, "margin": {"t": 30}, "legend": {"orientation": "h"}}}


def translation_html(i: int, job: Job, call: int | None) -> str:
    """One collective call of the largest collectively accessed file: the
    chosen one (`call`, 0-based) or the slowest."""
    if not job.has_ops:
        return ""
    for index, f in sorted(enumerate(job.files), key=lambda x: -x[1].bytes):
        table = xl.call_table(job, index)
        if len(table):
            return _translation(i, job, index, table, call)
    return ""


def _translation(i, job, index, table, wanted) -> str:
    title = "Translation of one collective call: MPI-IO to POSIX"
    if wanted is not None and not 0 <= wanted < len(table):
        return (f"<h3>{e(title)}</h3><div class='note' id='translation-{i}'>--call {wanted}: "
                f"{e(job.files[index].path)} has collective calls 0 to {len(table) - 1}.</div>")
    number = wanted if wanted is not None else table.slowest()
    why = "chosen with --call" if wanted is not None else f"the slowest of {len(table)}"
    api, posix = xl.call_ops(job, index, number)
    c = xl.make_call(index, number, api, posix)
    note = (f"Call {c.number} on {job.files[index].path} ({why}): "
            f"{KIND_NAMES[c.kind]} of {fmt_bytes(c.bytes)} by {len(c.senders)} ranks, "
            f"{c.seconds * 1e3:.3f} ms from the first rank's entry to the last rank's exit; "
            f"{len(c.writers)} aggregator(s) made {len(posix)} POSIX calls.")
    fig = _call_figure(api, posix)
    return (f"<div id='translation-{i}'>" + figure(f"translation-fig-{i}", title, fig, note, "time")
            + _senders_table(i, c) + _writers_table(i, c) + "</div>")


def _call_figure(api, posix) -> dict:
    layers = [layer for layer, part in ((MPIIO, api), (POSIX, posix)) if len(part)]
    data = []
    for n, (layer, part) in enumerate(((MPIIO, api), (POSIX, posix))):
        if not len(part):
            continue
        for kind in (WRITE, READ):
            sel = part[part["kind"] == kind]
            if len(sel):
                data += figures.segments(sel, layers.index(layer), kind,
                                         figures.LAYER_NAMES[layer])
    layout = {"xaxis": {"title": {"text": "seconds"}, "anchor": figures.yref(len(layers) - 1)},
              "height": 260 + 140 * len(layers), "hovermode": "closest", "margin": {"t": 30},
              "legend": {"orientation": "h"}}
    layout.update(figures.axes_for_layers(layers))
    return {"data": data, "layout": layout}


def _senders_table(i, c) -> str:
    items = sorted(c.senders.items())
    sizes = np.array([b for _, (b, _, _) in items])
    summary = (f"<p class='caption'>{len(items)} ranks sent between {fmt_bytes(sizes.min())} and "
               f"{fmt_bytes(sizes.max())} (median {fmt_bytes(np.median(sizes))}); last rank "
               f"to enter: {max(items, key=lambda kv: kv[1][1])[0]}, last to leave: "
               f"{max(items, key=lambda kv: kv[1][2])[0]}.</p>")
    rows = [[r, fmt_bytes(b), f"{(s - c.start) * 1e3:.3f}", f"{(t - c.start) * 1e3:.3f}"]
            for r, (b, s, t) in items[:MAX_ROWS]]
    return ("<h4>Ranks that called it</h4>" + summary
            + table(f"translation-senders-{i}", ["rank", "bytes", "entered (ms)", "left (ms)"],
                    rows)
            + (f"<p class='caption'>{len(items) - MAX_ROWS} more ranks not listed.</p>"
               if len(items) > MAX_ROWS else ""))


def _writers_table(i, c) -> str:
    if not c.writers:
        return ("<h4>Aggregators</h4><p class='caption'>No POSIX calls ran inside this call "
                "(data written later, or no POSIX trace).</p>")
    items = sorted(c.writers.items(), key=lambda kv: -kv[1]["bytes"])[:MAX_ROWS]
    rows = [[r, fmt_bytes(w["bytes"]), fmt_bytes(w["read_bytes"]), w["calls"],
             f"{w['first']:,} - {w['last']:,}", f"{w['seconds'] * 1e3:.3f}",
             f"{(w['end'] - c.start) * 1e3:.3f}"] for r, w in items]
    return ("<h4>Aggregators: what each wrote</h4>"
            + table(f"translation-writers-{i}", ["rank", "wrote", "read (read-modify-write)",
                                                 "POSIX calls", "file range (bytes)",
                                                 "POSIX ms", "done at (ms)"], rows))
