"""One self-contained HTML page: plotly.js embedded once, every figure as
JSON in the page, findings first.  Works offline (no CDN, no fetch).

Findings and the files table describe the whole input; the per-operation
views (timeline, aggregators, translation, spatial map, phases, per-rank
time) show the job as filtered by --time/--ranks, and the page's own
range controls zoom every time-axis figure at once."""
from __future__ import annotations

import json

from .. import analysis
from ..findings.base import FIX_LABELS, fmt_bytes
from ..findings.cost import top
from ..findings.balance import rank_io_time
from ..model import KIND_NAMES, LAYER_NAMES, MPIIO, POSIX, STDIO, Job
from . import figures
from .layers import aggregators_html, translation_html
from .parts import e as _e
from .parts import figure as _figure

MAX_FILE_ROWS = 200

CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222;max-width:1400px}
h1{font-size:1.5em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left;max-width:40em;overflow-wrap:anywhere}
.finding{border-left:6px solid #999;padding:.4em .8em;margin:.6em 0;background:#fafafa}
.high{border-color:#d62728}.warn{border-color:#ff7f0e}.info{border-color:#1f77b4}
.sev{font-weight:bold;text-transform:uppercase;margin-right:.5em}.code{font-family:monospace}
pre{background:#f0f0f0;padding:.5em;overflow-x:auto;margin:.2em 0}
.note{background:#fff8e1;padding:.3em .6em;margin:.3em 0}.caption{color:#555;font-size:.9em}
button.copy{float:right;font-size:.75em}.scroll{max-height:320px;overflow-y:auto}
.damaged{background:#fde0dc;font-weight:bold}.controls{background:#eef;padding:.4em .6em;margin:.6em 0}
.controls input{width:7em}h4{margin:.8em 0 .3em}
"""

LOADER = """
(function(){
  var errors = 0;
  document.querySelectorAll('div[data-figure]').forEach(function(div){
    var fig = JSON.parse(document.getElementById(div.dataset.figure).textContent);
    Plotly.newPlot(div, fig.data, fig.layout, {responsive: true, displaylogo: false});
  });
  function num(id){ var v = document.getElementById(id).value; return v === '' ? null : Number(v); }
  document.querySelectorAll('form.controls').forEach(function(form){
    var job = form.dataset.job;
    function apply(reset){
      var t0 = reset ? null : num('t0-' + job), t1 = reset ? null : num('t1-' + job);
      var r0 = reset ? null : num('r0-' + job), r1 = reset ? null : num('r1-' + job);
      document.querySelectorAll('#job-' + job + ' div[data-axes]').forEach(function(div){
        if (!div.layout) return;
        var upd = {};
        if (t0 !== null && t1 !== null) upd['xaxis.range'] = [t0, t1]; else upd['xaxis.autorange'] = true;
        if (div.dataset.axes.indexOf('rank') >= 0) {
          Object.keys(div.layout).forEach(function(k){
            if (k.indexOf('yaxis') !== 0) return;
            if (r0 !== null && r1 !== null) upd[k + '.range'] = [r0 - 0.5, r1 + 0.5];
            else upd[k + '.autorange'] = true;
          });
        }
        Plotly.relayout(div, upd);
      });
    }
    form.addEventListener('submit', function(ev){ ev.preventDefault(); apply(false); });
    form.querySelector('button.reset').addEventListener('click', function(){ apply(true); });
  });
  document.querySelectorAll('button.copy').forEach(function(b){
    b.addEventListener('click', function(){
      var text = b.parentElement.querySelector('pre').textContent;
      if (navigator.clipboard) navigator.clipboard.writeText(text);
    });
  });
  document.body.dataset.aggioReady = 'true';
})();
"""


def render(results, th, plotly_js: str, call: int | None = None) -> str:
    """results: [(job, findings, view)] -> the page; `view` is the job as
    filtered for the per-operation sections (or the job itself)."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>aggio report</title>"
             f"<style>{CSS}</style><script>{plotly_js}</script></head><body>",
             "<h1>aggio I/O report</h1>"]
    for index, (job, found, view) in enumerate(results):
        parts.append(_job_section(index, job, found, view, th, call))
    parts.append(f"<script>{LOADER}</script></body></html>")
    return "\n".join(parts)


def _job_section(i, job: Job, found, view, th, call) -> str:
    out = [f"<section class='job' id='job-{i}'><h2>{_e(job.source)}</h2>",
           f"<p>{_e(job.kind)} &middot; {job.nprocs} processes &middot; {len(job.files)} files "
           f"&middot; run time {job.runtime:.2f} s &middot; {len(job.ops):,} traced operations"
           + (f" &middot; {_e(job.exe)}" if job.exe else "") + "</p>"]
    out += [f"<div class='note damaged'>Damaged input, read in part: {_e(d)}</div>"
            for d in job.damaged]
    out += [f"<div class='note'>{_e(n)}</div>" for n in job.notes]
    if job.empty:
        out.append("<div class='note' id='empty-{0}'>No I/O was recorded in this input: "
                   "nothing to show.</div></section>".format(i))
        return "\n".join(out)
    out.append(_findings_html(i, job, found, int(th["top_findings"])))
    out.append(_files_html(i, job))
    out.append(_figures_html(i, view, th, call))
    out.append("</section>")
    return "\n".join(out)


def _findings_html(i, job, found, top_n: int = 3) -> str:
    out = [f"<h3>Findings</h3><div class='findings' id='findings-{i}'>"]
    best = top(found, top_n)
    if best:
        items = "".join(f"<li><span class='code'>{f.code}</span> {_e(f.title)}: "
                        f"{f.cost['seconds']:.3g} s per rank" +
                        (f" ({100 * f.cost['share_of_io']:.0f}% of the I/O time)"
                         if f.cost["share_of_io"] is not None else "") + "</li>"
                        for f in best)
        out.append(f"<div class='costliest' id='costliest-{i}'><b>Costliest findings</b>"
                   f"<ol>{items}</ol></div>")
    if not found:
        out.append("<p>No findings above the thresholds.</p>")
    for f in found:
        ev = "".join(f"<tr><td>{_e(k)}</td><td>{_e(_ev(v))}</td></tr>" for k, v in f.evidence.items())
        ev += "".join(f"<tr><td>{_e(k)}</td><td>{_e(_ev(v))}</td></tr>"
                      for k, v in (("rests on", f.rests_on), ("cost", f.cost)) if v)
        fixes = "".join(_fix_html(x.to_dict()["label"], x.text) for x in f.fixes)
        subject = f" &middot; <span class='code'>{_e(f.subject)}</span>" if f.subject != "job" else ""
        out.append(f"<div class='finding {f.severity}' data-code='{f.code}'>"
                   f"<span class='sev'>{f.severity}</span><span class='code'>{f.code}</span> "
                   f"<b>{_e(f.title)}</b>{subject}<p>{_e(f.message)}</p>"
                   f"<details><summary>evidence</summary><table>{ev}</table></details>{fixes}</div>")
    out.append("</div>")
    out.append(_combined_html(i, job))
    return "\n".join(out)


def _fix_html(label, text) -> str:
    return (f"<div><b>{_e(label)}</b><button class='copy'>copy</button>"
            f"<pre>{_e(text)}</pre></div>")


def _combined_html(i, job) -> str:
    plan = job.__dict__.get("fix_plan")
    forms = plan.forms() if plan else []
    if not forms:
        return ""
    fixes = "".join(_fix_html(FIX_LABELS[kind], text) for kind, text in forms)
    return (f"<details class='combined' id='combined-{i}'><summary>All the hints above at "
            f"once (one value per file)</summary>{fixes}</details>")


def _ev(v):
    return json.dumps(v, default=lambda x: x.item() if hasattr(x, "item") else str(x)) \
        if isinstance(v, (list, dict)) else v


def _files_html(i, job: Job) -> str:
    files = sorted(job.files, key=lambda f: f.bytes, reverse=True)
    rows = []
    for f in files[:MAX_FILE_ROWS]:
        rows.append("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in _file_row(f)) + "</tr>")
    head = ("<tr><th>file</th><th>bytes</th><th>layers: reads / writes</th><th>ranks</th>"
            "<th>access</th><th>MPI-IO collective / independent</th>"
            "<th>ranks doing POSIX I/O</th><th>stripes</th></tr>")
    more = (f"<p class='caption'>{len(files) - MAX_FILE_ROWS} smaller files not listed.</p>"
            if len(files) > MAX_FILE_ROWS else "")
    return (f"<h3>Files</h3><div class='scroll'><table class='files' id='files-{i}'>{head}"
            f"{''.join(rows)}</table></div>{more}")


def _file_row(f) -> list:
    layers = ", ".join(f"{LAYER_NAMES[l]} {st.reads}/{st.writes}" for l, st in sorted(f.layers.items()))
    api = f.layers.get(MPIIO)
    coll = (f"{api.coll_reads + api.coll_writes} / {api.indep_reads + api.indep_writes}"
            if api else "no MPI-IO")
    access = "shared" if f.shared else ("file per process" if f.nranks == 1 else "-")
    stripes = f"{f.stripe_count} x {fmt_bytes(f.stripe_size)}" if f.stripe_count else ""
    return [f.path, fmt_bytes(f.bytes), layers, f.nranks or "?", access, coll,
            _ranks_text(f.posix_ranks), stripes]


def _ranks_text(ranks) -> str:
    if ranks is None:
        return "unknown (reduced record)"
    if len(ranks) > 8:
        return f"{len(ranks)} ranks ({', '.join(map(str, ranks[:6]))}, ...)"
    return ", ".join(map(str, ranks)) or "none"


def _controls_html(i, job) -> str:
    t1 = float(job.ops["t_end"].max()) if len(job.ops) else 0.0
    r1 = int(job.ops["rank"].max()) if len(job.ops) else 0
    return (f"<form class='controls' data-job='{i}' id='controls-{i}'>Zoom every time axis: "
            f"from <input id='t0-{i}' type='number' step='any' placeholder='0'> to "
            f"<input id='t1-{i}' type='number' step='any' placeholder='{t1:.3f}'> s; ranks "
            f"<input id='r0-{i}' type='number' min='0' placeholder='0'> to "
            f"<input id='r1-{i}' type='number' min='0' placeholder='{r1}'> "
            "<button type='submit'>apply</button> <button type='button' class='reset'>reset"
            "</button> (to leave data out of the page instead: --time, --ranks)</form>")


def _figures_html(i, job: Job, th, call) -> str:
    max_points = int(th["max_plot_points"])
    out = []
    if job.__dict__.get("filter_text"):
        out.append(f"<div class='note' id='filter-{i}'>{_e(job.filter_text)}</div>")
    if job.has_ops:
        out.append(_controls_html(i, job))
        out.append(_figure(f"timeline-{i}", "Operation timeline per rank (MPI-IO above POSIX)",
                           *figures.timeline(job, max_points), "time rank"))
    else:
        why = ("its DXT records were lost (see the damage note above)"
               if any("DXT" in d for d in job.damaged) else "Darshan without DXT")
        out.append(f"<h3>Operation timeline</h3><div class='note' id='timeline-{i}'>This input "
                   f"has no per-operation data ({why}): the timeline, the spatial "
                   "map and per-operation stragglers need DXT (DXT_ENABLE_IO_TRACE=1) or an "
                   "aggio trace (hint aggio_trace).</div>")
    out.append(aggregators_html(i, job))
    out.append(translation_html(i, job, call))
    out.append(_figure(f"sizes-{i}", "Request sizes", *figures.size_distribution(job)))
    if job.has_ops:
        out.append(_figure(f"spatial-{i}", "Spatial map: file offsets by rank and time",
                           *figures.spatial_map(job, max_points), "time"))
        out.append(_phases_html(i, job, th))
        times = rank_io_time(job.ops)
        out.append(_figure(f"ranks-{i}", "Stragglers: I/O time per rank", *figures.rank_times(job, times)))
        out.append(_slowest_html(i, job))
    else:
        out.append(_extremes_html(i, job))
    return "\n".join(out)


def _phases_html(i, job, th) -> str:
    rows = []
    for n, p in enumerate(analysis.phases(job, th["phase_gap_fraction"])):
        rows.append(f"<tr><td>{n + 1}</td><td>{p.start:.4f}</td><td>{p.end - p.start:.4f}</td>"
                    f"<td>{p.ops:,}</td><td>{_e(fmt_bytes(p.bytes))}</td><td>{p.ranks}</td>"
                    f"<td>{p.slowest_rank}</td><td>{p.slowest_rank_end:.4f}</td>"
                    f"<td>{p.median_rank_end:.4f}</td></tr>")
    return ("<h3>I/O phases</h3><p class='caption'>Data operations separated by idle gaps "
            f"longer than {th['phase_gap_fraction'] * 100:.0f}% of the run. A phase ends when "
            "its slowest rank ends. Bytes are counted once, at the layer the program called "
            "(MPI-IO where the file has it; the POSIX writes beneath carry the same bytes)."
            f"</p><table id='phases-{i}'><tr><th>phase</th><th>start s</th>"
            "<th>duration s</th><th>ops</th><th>bytes</th><th>ranks</th><th>slowest rank</th>"
            "<th>its end s</th><th>median rank end s</th></tr>" + "".join(rows) + "</table>")


def _slowest_html(i, job) -> str:
    rows = []
    for op in analysis.slowest_ops(job, 10):
        rows.append(f"<tr><td>{_e(job.files[op['file']].path)}</td><td>{LAYER_NAMES[int(op['layer'])]}</td>"
                    f"<td>{KIND_NAMES[int(op['kind'])]}</td><td>{int(op['rank'])}</td>"
                    f"<td>{int(op['offset'])}</td><td>{int(op['length'])}</td>"
                    f"<td>{op['t_start']:.6f}</td><td>{(op['t_end'] - op['t_start']) * 1e3:.3f}</td></tr>")
    return (f"<h3>Slowest operations</h3><table id='slowest-{i}'><tr><th>file</th><th>layer</th>"
            "<th>op</th><th>rank</th><th>offset</th><th>bytes</th><th>start s</th><th>ms</th></tr>"
            + "".join(rows) + "</table>")


def _extremes_html(i, job) -> str:
    rows = []
    for f in job.files:
        for layer in (MPIIO, POSIX, STDIO):
            st = f.layers.get(layer)
            if st and st.slowest and st.fastest:
                rows.append(f"<tr><td>{_e(f.path)}</td><td>{LAYER_NAMES[layer]}</td>"
                            f"<td>{st.fastest[0]} ({st.fastest[2]:.4f} s, {_e(fmt_bytes(st.fastest[1]))})</td>"
                            f"<td>{st.slowest[0]} ({st.slowest[2]:.4f} s, {_e(fmt_bytes(st.slowest[1]))})</td></tr>")
    if not rows:
        return ""
    return ("<h3>Stragglers (from counters)</h3><p class='caption'>Darshan keeps only the fastest "
            "and slowest rank of each shared file; DXT would show every rank.</p>"
            f"<table id='extremes-{i}'><tr><th>file</th><th>layer</th><th>fastest rank</th>"
            "<th>slowest rank</th></tr>" + "".join(rows[:MAX_FILE_ROWS]) + "</table>")
