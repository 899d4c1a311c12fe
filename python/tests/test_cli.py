"""The commands on every shared Darshan log and on traces; exit codes."""
import glob
import json
import os

import numpy as np
import pytest
from builders import collective_write

from aggio import cli, trace
from aggio.sources import load_jobs

from paths import LOGS, SHARED, log_params, requires_shared


@requires_shared
def test_shared_logs_exist():
    assert len(LOGS) >= 10


@pytest.mark.parametrize("log", log_params(), ids=lambda p: os.path.basename(p or "none"))
def test_report_and_advise_every_shared_log(log, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert cli.main(["report", log, "-o", str(out)]) == 0
    page = out.read_text()
    assert page.count("plotly.js v") == 1 and "cdn." not in page.split("</script>", 1)[1]
    assert cli.main(["advise", "--json", log]) == 0
    data = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    for f in data[0]["findings"]:
        assert f["code"].startswith("AGG-") and f["fixes"] and f["evidence"]


@requires_shared
def test_empty_log_says_so(capsys):
    log = os.path.join(SHARED, "empty_log", "empty_log.darshan")
    assert cli.main(["advise", log]) == 0
    assert "no I/O recorded" in capsys.readouterr().out


@requires_shared
def test_partial_and_no_dxt_are_reported():
    partial = load_jobs([os.path.join(SHARED, "partial_data_dxt", "partial_data_dxt.darshan")])[0]
    assert any("partial data" in n for n in partial.notes) and partial.has_ops
    ior = load_jobs(glob.glob(os.path.join(SHARED, "ior_pnetcdf_hdf5", "*HDF5*")))[0]
    assert any("no DXT" in n for n in ior.notes) and not ior.has_ops


def test_unreadable_input_exits_1(tmp_path, capsys):
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(b"not a log")
    assert cli.main(["advise", str(bad)]) == 1
    assert cli.main(["report", str(bad), "-o", str(tmp_path / "x.html")]) == 1
    assert cli.main(["advise", str(tmp_path / "missing")]) == 1


def test_truncated_trace_exits_1(tmp_path):
    path = collective_write(4, 1024, 2, [0]).write(tmp_path / "t")
    data = open(path, "rb").read()
    open(path, "wb").write(data[:-10])
    assert cli.main(["advise", path]) == 1


def test_trace_roundtrip(tmp_path):
    recs = trace.make_records(5)
    recs["rank"] = [1, 0, 1, 0, 2]
    recs["op"] = [34, 34, 3, 1, 33]
    recs["length"] = [10, 20, 30, 40, 50]
    path = str(tmp_path / "t")
    trace.write_trace(path, recs, 3, {"path": "/x", "hints": {"cb_nodes": "2"}},
                      clock_base=12.5, dropped=np.array([0, 3, 0]))
    t = trace.read_trace(path)
    assert t.nranks == 3 and t.clock_base == 12.5 and t.meta["path"] == "/x"
    assert list(t.ranks["count"]) == [2, 2, 1] and list(t.ranks["first"]) == [0, 2, 4]
    assert list(t.records["rank"]) == [0, 0, 1, 1, 2]      # grouped by rank
    assert sorted(t.records["length"]) == [10, 20, 30, 40, 50]
    assert t.total_dropped == 3 and "dropped" in t.warnings[0]


def test_threshold_file_and_unknown_name(tmp_path, capsys):
    path = collective_write(4, 1024, 2, [0]).write(tmp_path / "t")
    cfg = tmp_path / "th.toml"
    cfg.write_text("small_request_min = 5\n")
    assert cli.main(["advise", "--json", "--thresholds", str(cfg), path]) == 0
    assert cli.main(["advise", "--threshold", "nonsense=1", path]) == 1
