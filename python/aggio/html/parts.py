"""Small HTML pieces every section uses: escaping, a figure (its JSON in a
script tag, drawn by the page's loader) and a table."""
from __future__ import annotations

import html
import json


def e(text) -> str:
    return html.escape(str(text))


def figure(div_id: str, title: str, fig: dict, note: str, axes: str = "") -> str:
    """A titled plotly figure; `axes` ("time", "time rank") marks the figure
    for the page's time and rank range controls."""
    if not fig:
        return f"<h3>{e(title)}</h3><p class='caption' id='{div_id}'>Nothing to show.</p>"
    payload = json.dumps(fig, separators=(",", ":")).replace("</", "<\\/")
    marks = f" data-axes='{axes}'" if axes else ""
    return (f"<h3>{e(title)}</h3><p class='caption'>{e(note)}</p>"
            f"<div id='{div_id}' class='figure' data-figure='{div_id}-json'{marks}></div>"
            f"<script type='application/json' id='{div_id}-json'>{payload}</script>")


def table(table_id: str, head: list, rows: list) -> str:
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table id='{table_id}'><tr>{th}</tr>{body}</table>"
