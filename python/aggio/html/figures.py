"""Plotly figures as plain dicts (no plotly.graph_objects: building them is
what makes big DXT plots slow).  Numeric arrays travel as base64 typed arrays
({"dtype", "bdata"}), which plotly.js decodes without JSON parsing.

Each builder returns (figure, note): the note says in words what the figure
shows when it does not show every operation.
"""
from __future__ import annotations

import base64

import numpy as np

from ..analysis import data_ops
from ..model import (KIND_NAMES, LAYER_NAMES, MPIIO, POSIX, READ, WRITE, SIZE_BIN_LABELS,
                     Job)

COLORS = {READ: "#1f77b4", WRITE: "#d62728", "meta": "#7f7f7f"}
SLOWEST_COLORS = {READ: "#ffbb78", WRITE: "#ff7f0e"}
LAYERS = (MPIIO, POSIX)   # top to bottom


def typed(values, dtype="f4") -> dict:
    arr = np.ascontiguousarray(values, dtype=dtype)
    return {"dtype": arr.dtype.str.lstrip("<|"), "bdata": base64.b64encode(arr.tobytes()).decode()}


def axes_for_layers(layers):
    """Stacked y axes, one per layer, sharing the x axis (MPI-IO above POSIX)."""
    layout, n = {}, len(layers)
    for i, layer in enumerate(layers):
        top = 1 - i / n
        name = "yaxis" if i == 0 else f"yaxis{i + 1}"
        layout[name] = {"domain": [max(0, top - 1 / n + 0.06), top], "title": {"text": f"{LAYER_NAMES[layer]} rank"},
                        "zeroline": False}
    return layout


def yref(i):
    return "y" if i == 0 else f"y{i + 1}"


def timeline(job: Job, max_points: int) -> tuple[dict, str]:
    layers = [l for l in LAYERS if (job.ops["layer"] == l).any()]
    if not layers:
        return {}, ""
    layout = {"xaxis": {"title": {"text": "seconds"}, "anchor": yref(len(layers) - 1)},
              "height": 320 + 160 * len(layers), "hovermode": "closest",
              "margin": {"t": 30}, "legend": {"orientation": "h"}}
    layout.update(axes_for_layers(layers))
    if len(job.ops) <= max_points:
        data = _exact_timeline(job.ops, layers)
        return {"data": data, "layout": layout}, (
            f"Exact: all {len(job.ops):,} operations; zoom with the mouse, hover for details.")
    data = _heatmap_timeline(job.ops, layers)
    data += _slowest_overlay(job.ops, layers, 2000)
    return {"data": data, "layout": layout}, (
        f"Aggregated: {len(job.ops):,} operations are more than {max_points:,}, so each "
        "cell shows the fraction of a time bin a rank spent in reads and writes (heatmap, "
        "400 bins; an operation counts in every bin it covers); the 2,000 slowest reads and "
        "writes per layer are drawn exactly on top, in orange.  "
        "Raise --max-points to draw every operation.")


def _exact_timeline(ops, layers):
    data = []
    for i, layer in enumerate(layers):
        sel = ops[ops["layer"] == layer]
        for kind in (WRITE, READ, None):
            part = sel[(sel["kind"] == kind)] if kind else \
                sel[(sel["kind"] != READ) & (sel["kind"] != WRITE)]
            if not len(part):
                continue
            data += segments(part, i, kind, LAYER_NAMES[layer])
    return data


def segments(part, i, kind, layer_name, name=None, color=None):
    n = len(part)
    x = np.empty(3 * n, np.float32)
    y = np.empty(3 * n, np.float32)
    x[0::3], x[1::3], x[2::3] = part["t_start"], part["t_end"], np.nan
    y[0::3] = y[1::3] = part["rank"]
    y[2::3] = np.nan
    name = name or f"{layer_name} {KIND_NAMES[kind] if kind else 'open/close/sync'}"
    color = color or (COLORS[kind] if kind else COLORS["meta"])
    line = {"type": "scattergl", "mode": "lines", "name": name, "x": typed(x), "y": typed(y),
            "yaxis": yref(i), "line": {"color": color, "width": 6}, "hoverinfo": "skip",
            "legendgroup": name}
    custom = np.stack([part["offset"], part["length"],
                       (part["t_end"] - part["t_start"]) * 1e3], axis=1)
    hover = {"type": "scattergl", "mode": "markers", "name": name, "showlegend": False,
             "legendgroup": name, "x": typed(part["t_start"]), "y": typed(part["rank"]),
             "yaxis": yref(i), "marker": {"color": color, "size": 4},
             "customdata": custom.tolist() if n <= 50_000 else None,
             "hovertemplate": (f"{name}<br>rank %{{y}}<br>start %{{x:.6f}} s"
                               + ("<br>offset %{customdata[0]}<br>bytes %{customdata[1]}"
                                  "<br>%{customdata[2]:.3f} ms" if n <= 50_000 else "")
                               + "<extra></extra>")}
    if hover["customdata"] is None:
        del hover["customdata"]
    return [line, hover]


def busy_fraction(ops: np.ndarray, t0: float, width: float, bins: int,
                  nranks: int) -> np.ndarray:
    """(nranks, bins): the fraction of each time bin each rank spent inside
    `ops`.  Every operation's duration is spread over the bins it covers (a
    10-bin operation adds a full bin to 8 of them and the partial ends to the
    first and last), with one difference array per rank: O(ops + cells)."""
    busy = np.zeros((nranks, bins + 1), np.float64)
    if not len(ops):
        return busy[:, :bins]
    s = np.clip((ops["t_start"] - t0) / width, 0, bins)
    e = np.clip((ops["t_end"] - t0) / width, 0, bins)
    b0 = np.minimum(np.floor(s).astype(np.int64), bins - 1)
    b1 = np.minimum(np.floor(e).astype(np.int64), bins - 1)
    r = ops["rank"]
    one = b0 == b1
    np.add.at(busy, (r[one], b0[one]), e[one] - s[one])
    many = ~one
    np.add.at(busy, (r[many], b0[many]), (b0[many] + 1) - s[many])   # head
    np.add.at(busy, (r[many], b1[many]), e[many] - b1[many])         # tail
    full = np.zeros((nranks, bins + 1), np.float64)                   # whole bins between
    np.add.at(full, (r[many], b0[many] + 1), 1.0)
    np.add.at(full, (r[many], b1[many]), -1.0)
    busy += np.cumsum(full, axis=1)
    return np.minimum(busy[:, :bins], 1.0)


def _heatmap_timeline(ops, layers, bins=400):
    t0, t1 = float(ops["t_start"].min()), float(ops["t_end"].max())
    width = max((t1 - t0) / bins, 1e-12)
    nranks = int(ops["rank"].max()) + 1
    data = []
    for i, layer in enumerate(layers):
        sel = ops[(ops["layer"] == layer) & ((ops["kind"] == READ) | (ops["kind"] == WRITE))]
        busy = busy_fraction(sel, t0, width, bins, nranks)
        data.append({"type": "heatmap", "z": typed(busy.reshape(-1)) | {"shape": f"{nranks}, {bins}"},
                     "x0": t0 + width / 2, "dx": width, "y0": 0, "dy": 1, "yaxis": yref(i),
                     "colorscale": "Viridis", "zmin": 0, "zmax": 1, "showscale": i == 0,
                     "name": f"{LAYER_NAMES[layer]} busy fraction",
                     "colorbar": {"title": {"text": "busy"}},
                     "hovertemplate": "rank %{y}<br>t %{x:.3f} s<br>busy %{z:.2f}<extra></extra>"})
    return data


def _slowest_overlay(ops, layers, n):
    """The n slowest reads and writes of each layer, drawn exactly over the
    heatmap in one orange (reads dotted)."""
    data = []
    for i, layer in enumerate(layers):
        sel = data_ops(ops[ops["layer"] == layer])
        if not len(sel):
            continue
        dur = sel["t_end"] - sel["t_start"]
        k = min(n, len(sel))
        part = sel[np.argpartition(-dur, k - 1)[:k]]
        for kind in (WRITE, READ):
            chosen = part[part["kind"] == kind]
            if len(chosen):
                data += segments(chosen, i, kind, LAYER_NAMES[layer],
                                  name=f"{LAYER_NAMES[layer]} slowest {KIND_NAMES[kind]}s",
                                  color=SLOWEST_COLORS[kind])
    return data


def size_distribution(job: Job) -> tuple[dict, str]:
    data = []
    for layer in LAYERS:
        st = job.layer_total(layer)
        for kind, hist in ((READ, st.hist_read), (WRITE, st.hist_write)):
            if hist.sum():
                data.append({"type": "bar", "name": f"{LAYER_NAMES[layer]} {KIND_NAMES[kind]}s",
                             "x": SIZE_BIN_LABELS, "y": hist.tolist()})
    if not data:
        return {}, ""
    top = max(max(d["y"]) for d in data)
    # a log axis starts at the smallest bar unless told: start below 1 so that
    # every bar shows its height
    layout = {"barmode": "group", "xaxis": {"title": {"text": "request size (bytes)"}},
              "yaxis": {"title": {"text": "requests"}, "type": "log",
                        "range": [-0.3, float(np.log10(max(top, 1)) + 0.3)]}, "height": 360,
              "margin": {"t": 30}}
    src = "counters" if not job.has_ops else "operations"
    return {"data": data, "layout": layout}, f"Request sizes per layer (from {src})."


def spatial_map(job: Job, max_points: int) -> tuple[dict, str]:
    d = data_ops(job.ops)
    d = d[d["layer"] == POSIX] if (d["layer"] == POSIX).any() else d
    if not len(d):
        return {}, ""
    step = max(1, -(-len(d) // max_points))
    shown = d[::step]
    data = []
    for kind in (WRITE, READ):
        part = shown[shown["kind"] == kind]
        if len(part):
            data.append({"type": "scattergl", "mode": "markers", "name": KIND_NAMES[kind] + "s",
                         "x": typed(part["t_start"]), "y": typed(part["offset"], "f8"),
                         "marker": {"size": 4, "color": typed(part["rank"]),
                                    "colorscale": "Turbo", "showscale": kind == WRITE,
                                    "colorbar": {"title": {"text": "rank"}},
                                    "symbol": "circle" if kind == WRITE else "x"},
                         "hovertemplate": "t %{x:.6f} s<br>offset %{y}<br>rank %{marker.color}<extra></extra>"})
    layout = {"xaxis": {"title": {"text": "seconds"}}, "yaxis": {"title": {"text": "file offset (bytes)"}},
              "height": 420, "margin": {"t": 30}, "hovermode": "closest",
              "legend": {"orientation": "h", "y": -0.2}}
    note = ("File offsets of POSIX requests by time, coloured by rank (all files)."
            if step == 1 else
            f"Sampled: every {step}th of {len(d):,} requests is drawn (uniform stride).")
    return {"data": data, "layout": layout}, note


def rank_times(job: Job, times: np.ndarray) -> tuple[dict, str]:
    if not len(times):
        return {}, ""
    med = float(np.median(times[times > 0])) if (times > 0).any() else 0.0
    fig = {"data": [{"type": "bar", "x": list(range(len(times))), "y": typed(times, "f8"),
                     "name": "I/O seconds", "marker": {"color": "#2ca02c"}}],
           "layout": {"xaxis": {"title": {"text": "rank"}}, "yaxis": {"title": {"text": "seconds in read/write calls"}},
                      "height": 300, "margin": {"t": 30},
                      "shapes": [{"type": "line", "xref": "paper", "x0": 0, "x1": 1,
                                  "y0": med, "y1": med, "line": {"dash": "dot"}}]}}
    return fig, f"Time each rank spent in read/write calls; dotted line: median ({med:.4f} s)."
