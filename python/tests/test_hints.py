"""Hint strings (defect 6) and the agreement of fixes in one report (defect
7): every string the tool prints parses back through aggio's own C parser,
values with ':' are quoted Cray's way, and no report gives two values for a
hint or two layouts for a file."""
import os
import re

import pytest
from builders import (LayerStats, collective_write, darshan_job, file_with, layer, per_rank,
                      two_phase_write)
from hintcheck import canonical, check_report_hints, parse_env, parse_file, parse_fix
from paths import ROOT, requires_hints_parser

from aggio import hintforms
from aggio.findings import run_all
from aggio.findings.base import Finding, hint_fixes, lfs_fix
from aggio.findings.fitting import finalize
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

MiB, GiB = 1 << 20, 1 << 30


def test_colon_values_are_quoted_cray_style():
    (aggio, cray, romio) = hintforms.forms({"cb_config_list": "*:1", "romio_cb_write": "enable"},
                                           "/lus/run/out.dat")
    assert aggio[1] == 'export AGGIO_HINTS="/lus/run/out.dat:cb_config_list=#*:1#:romio_cb_write=enable"'
    assert cray[1] == 'export MPICH_MPIIO_HINTS="/lus/run/out.dat:cb_config_list=#*:1#:romio_cb_write=enable"'
    assert romio[1] == "cb_config_list *:1\nromio_cb_write enable"   # a file needs no quoting


@requires_hints_parser
def test_cray_form_follows_crays_first_match_rule():
    # An every-file hint and one file's own: AGGIO_HINTS applies both
    # entries in order; MPICH_MPIIO_HINTS only the first match, so the
    # file's entry must come first and carry the every-file hint too.
    entries = [("*", {"romio_cb_write": "enable", "cb_nodes": 8}),
               ("/lus/run/out.dat", {"cb_nodes": 2})]
    aggio = hintforms.env_value(entries)
    cray = hintforms.env_value(entries, cray=True)
    assert cray.startswith("/lus/run/out.dat:")
    for path, nodes in (("/lus/run/out.dat", "2"), ("/lus/run/other.dat", "8")):
        want = {"romio_cb_write": "enable", "cb_nodes": nodes}
        assert parse_env(aggio, path) == want
        assert parse_env(cray, path, cray=True) == want
    # Written the AGGIO_HINTS way, Cray would miss the file's own value.
    assert parse_env(aggio, "/lus/run/out.dat", cray=True)["cb_nodes"] == "8"


def test_cray_form_leaves_out_aggio_hints():
    kinds = dict(hintforms.forms({"aggio_strategy": "two_phase", "cb_nodes": 4}))
    assert "aggio_strategy" in kinds["aggio-hints"] and "aggio_strategy" not in kinds["cray-hints"]
    only_aggio = dict(hintforms.forms({"aggio_strategy": "two_phase"}))
    assert "cray-hints" not in only_aggio and "aggio-hints" in only_aggio


def test_undocumented_or_unwritable_hints_are_refused():
    with pytest.raises(hintforms.HintError):
        hintforms.forms({"romio_lustre_co_ratio": 2})      # not in docs/hints.md
    with pytest.raises(hintforms.HintError):
        hintforms.forms({"cb_config_list": "#bad"})


def test_patterns_avoid_the_separators():
    assert hintforms.pattern_for("/a:b,c/out.dat") == "/a?b?c/out.dat"
    assert hintforms.pattern_for("") == "*" and hintforms.pattern_for("<record 7>") == "*"


def test_known_hints_are_the_documented_ones():
    docs = os.path.join(ROOT, "docs", "hints.md")
    if not os.path.exists(docs):
        pytest.skip("docs/hints.md is not in this tree")
    documented = set(re.findall(r"^\| `([a-z_]+)` \|", open(docs).read(), re.M))
    assert set(hintforms.KNOWN_HINTS) <= documented


@requires_hints_parser
def test_unquoted_and_quoted_cb_config_list_parse_alike():
    """Cray accepts `cb_config_list=*:1` unquoted, and so does aggio's parser
    (the field after it continues the value); the tool still writes the
    quoted form, which every reader takes."""
    want = {"cb_config_list": "*:1", "romio_cb_write": "enable"}
    for cray in (False, True):
        assert parse_env("*:cb_config_list=*:1:romio_cb_write=enable", "/x/f", cray=cray) == want
        assert parse_env("*:cb_config_list=#*:1#:romio_cb_write=enable", "/x/f", cray=cray) == want
    # Only cb_config_list continues: a stray field elsewhere is still an error.
    with pytest.raises(AssertionError, match="has no '='"):
        parse_env("*:romio_cb_write=enable:1", "/x/f")


@requires_hints_parser
def test_every_form_parses_back_to_the_same_hints(tmp_path):
    hints = {"cb_config_list": "*:2", "cb_nodes": 8, "cb_buffer_size": 4 * MiB,
             "striping_unit": MiB, "romio_ds_write": "disable", "aggio_strategy": "two_phase"}
    want = canonical(hints)
    for kind, text in hintforms.forms(hints, "/lus/a,b/out.dat"):
        got = parse_fix(kind, text, "/lus/a,b/out.dat")
        expect = {k: v for k, v in want.items()
                  if not (kind == "cray-hints" and hintforms.aggio_only(k))}
        assert got == expect, kind
    # the file pattern is specific: another file gets nothing
    assert parse_env(hintforms.env_value([(hintforms.pattern_for("/lus/x.dat"), hints)]),
                     "/lus/other.dat") == {}


def _finding(code, severity, fixes, subject="job"):
    return Finding(code, severity, code, "", {"x": 1}, fixes, subject=subject)


def _mpiio_job(paths, stripes=4):
    api = LayerStats(writes=10, coll_writes=10, bytes_written=10 * MiB)
    files = [file_with(p, mpiio=api, posix=LayerStats(writes=10, bytes_written=10 * MiB))
             for p in paths]
    for f in files:
        f.stripe_count, f.stripe_size = stripes, MiB
    return darshan_job(nprocs=16, modules=("POSIX", "MPI-IO", "LUSTRE"), files=files)


def test_one_value_per_hint_in_a_report():
    job = _mpiio_job(["/lus/a.dat"])
    first = _finding("AGG-A", "high", hint_fixes({"cb_nodes": 8, "romio_cb_write": "enable"}))
    second = _finding("AGG-B", "warn", hint_fixes({"cb_nodes": 16, "cb_buffer_size": MiB}))
    finalize(job, [first, second])
    texts = [x.text for x in second.fixes]
    assert all("cb_nodes=8" in t or "cb_nodes 8" in t for t in texts)
    assert all("cb_nodes=16" not in t and "cb_nodes 16" not in t for t in texts)
    assert "cb_nodes=8 as AGG-A gives (one value per file)" in second.fixes[0].label
    assert job.fix_plan.combined() == {"cb_nodes": 8, "romio_cb_write": "enable",
                                       "cb_buffer_size": MiB}


def test_stripe_layouts_per_directory_or_per_file():
    """Defect 7: `-c 1` and `-c 16` for the same place never both appear."""
    job = _mpiio_job(["/lus/run/big.dat", "/lus/run/small.0", "/lus/other/x.dat"])
    big = _finding("AGG-STRIPE", "high", [lfs_fix("/lus/run/big.dat", 16, 4 * MiB)],
                   "/lus/run/big.dat")
    small = _finding("AGG-STRIPE", "info", [lfs_fix("/lus/run/small.0", 1)], "/lus/run/small.0")
    alone = _finding("AGG-X", "warn", [lfs_fix("/lus/other/x.dat", 8)], "/lus/other/x.dat")
    again = _finding("AGG-Y", "warn", [lfs_fix("/lus/run/big.dat", 8)], "/lus/run/big.dat")
    finalize(job, [big, small, alone, again])
    assert big.fixes[0].text == "lfs setstripe -c 16 -S 4M /lus/run/big.dat"
    assert small.fixes[0].text == "lfs setstripe -c 1 /lus/run/small.0"
    assert alone.fixes[0].text == "lfs setstripe -c 8 /lus/other"     # the only file there
    assert again.fixes[0].text == big.fixes[0].text and "as AGG-STRIPE gives" in again.fixes[0].label
    targets = {}
    for f in (big, small, alone, again):
        for x in f.fixes:
            target = x.text.split()[-1]
            assert targets.setdefault(target, x.text) == x.text


@requires_hints_parser
def test_report_hints_parse_and_agree_on_synthetic_jobs(tmp_path):
    jobs = [
        # single aggregator on a one-stripe file: AGG-SINGLE-AGGREGATOR and AGG-STRIPE
        two_phase_write(8, [0], calls=2, buffer=128 << 20, round_dur=0.001).write(
            tmp_path / "a", meta={"path": "/lus/run/one.dat",
                                  "hints": {"striping_factor": "1", "striping_unit": str(MiB)}},
            aggregators=[0]),
        # aggregators that do not fit the stripes
        two_phase_write(16, [0, 4, 8, 12], calls=2).write(
            tmp_path / "b", meta={"path": "/lus/run/four.dat",
                                  "hints": {"striping_factor": "3", "striping_unit": "786432"}},
            aggregators=[0, 4, 8, 12], per_node=4),
        collective_write(8, 4096, 200, [0, 4]).write(tmp_path / "c", aggregators=[0, 4]),
    ]
    for path in jobs:
        job = load_jobs([path])[0]
        found = run_all(job, Thresholds())
        assert any(x.kind.endswith("hints") for f in found for x in f.fixes), path
        got = check_report_hints(found)
        merged = {}
        for hints in got.values():
            merged.update(hints)
        assert merged == canonical(job.fix_plan.combined())


@requires_hints_parser
@pytest.mark.parametrize("case", ["summary", "per-rank"])
def test_report_hints_parse_on_counter_jobs(case):
    api = layer(reduced=case == "summary", writes=64, coll_writes=64, bytes_written=4 * GiB,
                write_time=64 * 753.0)
    posix = layer(reduced=case == "summary", writes=256, bytes_written=4 * GiB,
                  write_time=264.0, reads=100, bytes_read=100 * MiB)
    if case == "summary":
        posix.slowest, posix.fastest = (0, 4 * GiB + 100 * MiB, 264.0), (1, 0, 0.0)
    else:
        per_rank(api, {r: 64 * MiB for r in range(64)}, {r: 753.0 for r in range(64)})
        per_rank(posix, {0: 4 * GiB}, {0: 264.0})
    f = file_with("/lus/run/ckpt.dat", nranks=64, mpiio=api, posix=posix)
    f.stripe_count, f.stripe_size = 1, MiB
    job = darshan_job(nprocs=64, modules=("POSIX", "MPI-IO", "LUSTRE"), files=[f])
    found = run_all(job, Thresholds())
    codes = {x.code for x in found}
    assert {"AGG-SINGLE-AGGREGATOR", "AGG-MPIIO-OVERHEAD", "AGG-RMW"} <= codes
    check_report_hints(found)
    assert parse_file("\n".join(f"{k} {v}" for k, v in job.fix_plan.combined().items()))


def test_files_may_differ_but_the_hints_file_then_leaves_the_key_out():
    job = _mpiio_job(["/lus/a.dat", "/lus/b.dat"])
    a = _finding("AGG-A", "high", hint_fixes({"cb_nodes": 8, "romio_cb_write": "enable"},
                                             "/lus/a.dat"), "/lus/a.dat")
    b = _finding("AGG-B", "warn", hint_fixes({"cb_nodes": 2}, "/lus/b.dat"), "/lus/b.dat")
    finalize(job, [a, b])
    assert [x.kind for x in a.fixes] == ["aggio-hints", "cray-hints", "romio-hints"]
    assert a.fixes[2].text == "romio_cb_write enable"          # cb_nodes differs per file
    assert "leaves out cb_nodes" in a.fixes[2].label
    assert [x.kind for x in b.fixes] == ["aggio-hints", "cray-hints"]   # nothing left for a file
    assert b.fixes[0].text == 'export AGGIO_HINTS="/lus/b.dat:cb_nodes=2"'
    forms = dict(job.fix_plan.forms())
    assert forms["aggio-hints"] == ('export AGGIO_HINTS="/lus/a.dat:cb_nodes=8:romio_cb_write='
                                    'enable,/lus/b.dat:cb_nodes=2"')
    assert forms["romio-hints"] == "romio_cb_write enable"


def test_cb_nodes_proposals_fit_the_stripes():
    from aggio.findings.layers import fit_aggregators
    f = file_with("/lus/x", mpiio=LayerStats())
    f.stripe_count = 3
    assert [fit_aggregators(f, n) for n in (1, 2, 3, 4, 8, 16)] == [1, 1, 3, 3, 6, 15]
    assert fit_aggregators(f, 16, limit=10) == 9
    f.stripe_count = 0
    assert fit_aggregators(f, 7) == 7
