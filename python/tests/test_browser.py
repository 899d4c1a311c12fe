"""The report in Debian's headless chromium: no JavaScript errors, the
findings and the timeline present; saves the README screenshot."""
import os

import numpy as np
import pytest
from builders import collective_write

import chromium
from aggio import cli

pytestmark = pytest.mark.skipif(not chromium.available(), reason="no chromium")
HERE = os.path.dirname(__file__)
SHARED = os.path.join(HERE, "..", "..", "..", "shared", "darshan-logs")
DXT_LOG = os.path.join(SHARED, "mpi_io_test_with_dxt",
                       "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan")
README_SCREENSHOT = os.path.join(HERE, "..", "..", "docs", "img", "report.png")
needs_shared = pytest.mark.skipif(
    not os.path.isfile(DXT_LOG),
    reason=f"no Darshan log {os.path.normpath(DXT_LOG)} (a bare clone has no shared/ "
           "beside it)")
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
    assert cli.main(["report", traced, DXT_LOG, "-o", out, *extra]) == 0
    return out


@needs_shared
def test_report_loads_clean_and_saves_screenshot(tmp_path):
    """The screenshot goes to the test's tmp dir; with AGGIO_UPDATE_SCREENSHOT=1
    it replaces the README's docs/img/report.png (so test runs leave the
    tree unchanged)."""
    import json
    out = _trace_report(tmp_path)
    update = os.environ.get("AGGIO_UPDATE_SCREENSHOT") == "1"
    SCREENSHOT = README_SCREENSHOT if update else str(tmp_path / "report.png")
    os.makedirs(os.path.dirname(SCREENSHOT), exist_ok=True)
    result = chromium.load(out, PROBE, screenshot=SCREENSHOT, width=1200, height=1500)
    assert result.errors == []
    state = json.loads(result.value)
    assert state["ready"] == "true" and state["timeline"] and state["findings"] >= 1
    assert state["plots"] >= 8       # 4 figures per job with operations
    assert os.path.getsize(SCREENSHOT) > 10_000


@needs_shared
def test_aggregated_timeline_loads_clean(tmp_path):
    import json
    out = _trace_report(tmp_path, ["--max-points", "100"])
    assert "Aggregated:" in open(out).read()
    result = chromium.load(out, PROBE)
    assert result.errors == [] and json.loads(result.value)["timeline"]
