"""aggio tune as an experiment (issue 26, item 8): cold runs, hints only
where they are read, a recommendation scoped to what was measured, and the
issue's test - the recommendation, applied, beats the default in an
independent randomised re-measurement, or tune says there is no
significant difference."""
import json
import os

import pytest
from builders import darshan_job
from hintcheck import parse_fix
from paths import BENCH, requires_bench, requires_hints_parser
from test_replay import ior_hard

from aggio import benchrun, cli, replay, tune
from aggio import tunestats as ts
from aggio.pattern import detect
from aggio.sources import load_jobs


def test_mount_type_is_the_longest_mount_point():
    mounts = [("/", "ext4"), ("/gpfs", "gpfs"), ("/gpfs/scratch", "gpfs2"), ("/g", "xfs")]
    assert benchrun.mount_type(mounts, "/gpfs/scratch/a/out.dat") == "gpfs2"
    assert benchrun.mount_type(mounts, "/gpfs/out.dat") == "gpfs"
    assert benchrun.mount_type(mounts, "/gpfsx/out.dat") == "ext4"
    assert benchrun.mount_type([], "/x") == ""


def test_each_run_starts_cold_and_writes_a_file_of_its_own(tmp_path):
    f = tmp_path / "out.dat"
    f.write_bytes(b"x" * 8192)
    how = benchrun.make_cold(str(f))
    assert how == ("drop_caches" if benchrun.can_drop_caches() else "fadvise")
    assert how in benchrun.COLD_WORDS
    assert benchrun.rotated("/s/out.dat", 3) == "/s/out.3.dat"
    assert benchrun.rotated("/s/out", 0) == "/s/out.0"


def test_several_runs_make_one_figure():
    # 100 MiB at 100 MiB/s and 100 MiB at 50 MiB/s: 200 MiB in 3 s
    assert abs(tune.combined([(100, 100.0), (100, 50.0)]) - 200 / 3) < 1e-9
    assert tune.combined([]) == 0.0


def _result(tmp_path, job, values, nranks=2):
    pat = detect(load_jobs([ior_hard(tmp_path)])[0])
    rp = replay.build(pat, nranks=nranks)
    base = tune.Config("MPI library default", "MPIIO", False, baseline=True,
                       values=values["default"])
    fast = tune.Config("aggio two_phase", "AGGIO", True, {"aggio_strategy": "two_phase"},
                       code_change="the aggio API", values=values["fast"])
    verdict = ts.decide({"MPI library default": base.values, "aggio two_phase": fast.values},
                        base.name)
    result = tune.outcome(rp, [base, fast], {}, verdict)
    result.update(left_out=[], seed=1, cold="fadvise", cold_words="x", confidence=0.95,
                  scope=tune.scope(job, rp, "openmpi", "/gpfs/run/out.dat"))
    return result


def test_a_small_replay_is_no_production_setting_for_a_large_job(tmp_path, monkeypatch):
    """A 2-rank replay on ext4 for a 384-rank GPFS job: settings to try, not to paste."""
    monkeypatch.setattr(benchrun, "local_mounts", lambda: [("/", "ext4")])
    job = darshan_job(nprocs=384)
    job.mounts = [("/lus", "gpfs")]
    out = tune.render(_result(tmp_path, job, {"default": [100] * 6, "fast": [300] * 6}))
    assert "384 ranks in the log, 2 here" in out and "file system gpfs in the log, ext4 here" in out
    assert "not to paste into production" in out
    assert "  try aggio: export AGGIO_HINTS" in out


def test_a_recommendation_at_the_scale_measured(tmp_path, monkeypatch):
    monkeypatch.setattr(benchrun, "local_mounts", lambda: [("/", "ext4"), ("/gpfs", "gpfs")])
    job = darshan_job(nprocs=2)
    job.mounts = [("/lus", "gpfs")]
    out = tune.render(_result(tmp_path, job, {"default": [100] * 6, "fast": [300] * 6}))
    assert "for this job as measured (2 ranks, gpfs, openmpi)" in out
    assert "production" not in out and "  aggio: export AGGIO_HINTS" in out


def test_within_noise_nothing_is_recommended(tmp_path):
    job = darshan_job(nprocs=2)
    result = _result(tmp_path, job, {"default": [100, 90, 120, 110, 95, 105],
                                     "fast": [101, 92, 125, 108, 97, 130]})
    assert result["winner"] is None and result["paste"] == [] and not result["significant"]
    out = tune.render(result)
    assert "no significant difference: the 95% intervals" in out and "winner" not in out


def test_a_confidence_level_is_below_1(tmp_path, capsys):
    for bad in ("1", "1.5", "0"):
        with pytest.raises(SystemExit) as exc:
            cli.main(["tune", ior_hard(tmp_path), "--confidence", bad])
        assert exc.value.code == 2 and "--confidence" in capsys.readouterr().err


def test_only_keeps_the_baseline(tmp_path):
    pat = detect(load_jobs([ior_hard(tmp_path)])[0])
    configs = tune.configurations(pat, {}, "openmpi")
    assert [c.name for c in tune.only(configs, ["aggio two_phase"])] == [
        "MPI library default", "aggio two_phase"]
    assert tune.only(configs, None) == configs


def _tune(trace, out, *extra, capsys):
    assert cli.main(["tune", trace, "-n", "2", "--min-bytes", "4m", "--json", "-o", str(out),
                     "--bench", BENCH, "--timeout", "120", *extra]) == 0
    return json.loads(capsys.readouterr().out)


@requires_bench
@requires_hints_parser
def test_the_recommendation_beats_the_default_when_measured_again(tmp_path, capsys):
    """Issue 26's test, at 2 ranks and 4 MiB: tune either says there is no
    significant difference, or its winner, run again alone against the
    default with another seed, is faster again; and its hints parse."""
    trace = ior_hard(tmp_path, nranks=4, records=100)
    out = tmp_path / "bench.dat"
    first = _tune(trace, out, "--seed", "1", "--max-reps", "8", capsys=capsys)
    rows = first["configs"]
    assert rows[0]["baseline"] and all(len(r["MiBps"]) >= 6 for r in rows)
    assert first["seed"] == 1 and first["cold"] in benchrun.COLD_WORDS
    assert not [f for f in os.listdir(tmp_path) if f.startswith("bench")]   # runs removed
    if not first["winner_beats_default"]:
        assert first["paste"] == [] and (not first["significant"]
                                         or first["leader"] == rows[0]["name"])
        return
    for kind, text in first["paste"]:
        if kind.endswith("hints"):
            assert parse_fix(kind, text, "/lus/io500/ior-hard.dat") is not None
    again = _tune(trace, out, "--seed", "2", "--only", first["winner"], capsys=capsys)
    medians = {r["name"]: r["median"] for r in again["configs"]}
    assert medians[first["winner"]] > medians[rows[0]["name"]]
