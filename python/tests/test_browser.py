"""The report in Debian's headless chromium: no JavaScript errors, the
findings and the timeline present; saves the README screenshot."""
import os

import pytest
from builders import collective_write

import chromium
from aggio import cli
from paths import DXT_LOG

pytestmark = pytest.mark.skipif(not chromium.available(), reason="no chromium")
HERE = os.path.dirname(__file__)
README_SCREENSHOT = os.path.join(HERE, "..", "..", "docs", "img", "report.png")
PROBE = """JSON.stringify({ready: document.body.dataset.aggioReady,
  plots: document.querySelectorAll('.js-plotly-plot').length,
  timeline: !!document.querySelector('#timeline-0 .main-svg'),
  findings: document.querySelectorAll('#findings-0 .finding').length})"""


def test_detects_a_javascript_error(tmp_path):
    page = tmp_path / "bad.html"
    page.write_text("<html><body><script>callThatDoesNotExist();</script></body></html>")
    result = chromium.load(str(page))
    assert any("callThatDoesNotExist" in e for e in result.errors)


def _trace_report(tmp_path, extra=()):
    # a job with a problem to show: 16 ranks, one aggregator, one stripe
    traced = collective_write(16, 64 * 1024, 40, [0]).write(
        tmp_path / "t", meta={"path": "/lustre/run/out.dat",
                              "hints": {"striping_factor": "1", "striping_unit": "1048576"}},
        aggregators=[0])
    out = str(tmp_path / "r.html")
    logs = [traced] + ([DXT_LOG] if os.path.exists(DXT_LOG) else [])   # none in a bare clone
    assert cli.main(["report", *logs, "-o", out, *extra]) == 0
    return out, len(logs)


def test_report_loads_clean_and_saves_screenshot(tmp_path):
    """The screenshot goes to the test's tmp dir; with AGGIO_UPDATE_SCREENSHOT=1
    it replaces the README's docs/img/report.png (so test runs leave the
    tree unchanged)."""
    import json
    out, jobs = _trace_report(tmp_path)
    update = os.environ.get("AGGIO_UPDATE_SCREENSHOT") == "1"
    SCREENSHOT = README_SCREENSHOT if update else str(tmp_path / "report.png")
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    result = chromium.load(out, PROBE, screenshot=SCREENSHOT, width=1200, height=1500)
    assert result.errors == []
    state = json.loads(result.value)
    assert state["ready"] == "true" and state["timeline"] and state["findings"] >= 1
    assert state["plots"] >= 4 * jobs     # at least 4 figures per job with operations
    assert os.path.getsize(SCREENSHOT) > 10_000


def test_aggregated_timeline_loads_clean(tmp_path):
    import json
    out, _ = _trace_report(tmp_path, ["--max-points", "100"])
    assert "Aggregated:" in open(out).read()
    result = chromium.load(out, PROBE)
    assert result.errors == [] and json.loads(result.value)["timeline"]


CONTROLS = """(function(){
  document.getElementById('t0-0').value = '0.01';
  document.getElementById('t1-0').value = '0.02';
  document.getElementById('r0-0').value = '4';
  document.getElementById('r1-0').value = '7';
  document.getElementById('controls-0').requestSubmit();
  var t = document.getElementById('timeline-0').layout;
  return JSON.stringify({x: t.xaxis.range, y: t.yaxis.range,
    aggregators: !!document.querySelector('#aggregators-0-0 .main-svg'),
    translation: !!document.querySelector('#translation-fig-0 .main-svg')});
})()"""


def test_cross_layer_views_and_range_controls(tmp_path):
    """The aggregator and translation figures draw, and the range controls
    zoom the timeline (time and ranks) without a JavaScript error."""
    import json

    from builders import two_phase_write
    path = two_phase_write(16, [0, 4, 8, 12], calls=3, slow=8, rmw=True).write(
        tmp_path / "t", aggregators=[0, 4, 8, 12], per_node=4)
    out = str(tmp_path / "r.html")
    assert cli.main(["report", path, "-o", out]) == 0
    result = chromium.load(out, CONTROLS)
    assert result.errors == []
    state = json.loads(result.value)
    assert state["aggregators"] and state["translation"]
    assert state["x"] == [0.01, 0.02] and state["y"] == [3.5, 7.5]
