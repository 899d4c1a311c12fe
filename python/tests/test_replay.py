"""aggio replay and aggio tune: the access pattern found in a log, the
aggio-bench command that reproduces it, and (where aggio-bench is built)
real runs through the MPI library's MPI-IO and through aggio."""
import json
import os

import pytest
from builders import TraceBuilder, posix_writes, two_phase_write
from paths import BENCH, DXT_LOG, LOGS, requires_bench, requires_shared

from aggio import cli, hintforms, replay, tune
from aggio.pattern import PatternError, detect
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

MiB = 1 << 20
T = 47008


def ior_hard(tmp_path, nranks=4, records=50, collective=False, fsync=True, name="t"):
    """IO-500 ior-hard as the program issues it: 47008-byte records dealt
    round-robin over the ranks, one MPI-IO call (and one pwrite) each."""
    b = TraceBuilder(nranks).open_all()
    call = "write_at_all" if collective else "write_at"
    for j in range(records):
        for r in range(nranks):
            off = (j * nranks + r) * T
            b.op(r, call, off, T, 1, dur=0.0005, flags=2 if collective else 0)
            b.op(r, "pwrite", off, T, dur=0.0004, start=b.t[r] - 0.00045)
    if fsync:
        for r in range(nranks):
            b.op(r, "sync", dur=0.01)
    return b.close_all().write(tmp_path / name, meta={"path": "/lus/io500/ior-hard.dat"})


def test_detects_ior_hard(tmp_path):
    pat = detect(load_jobs([ior_hard(tmp_path)])[0])
    assert (pat.layout, pat.transfer, pat.fit) == ("strided", T, 1.0)
    assert pat.block == 50 * T and pat.segments == 1 and pat.ranks == 4
    assert pat.write and not pat.read and pat.fsync and not pat.collective
    assert pat.path == "/lus/io500/ior-hard.dat" and pat.requests == 200


def test_detects_ior_easy_segments(tmp_path):
    # IOR segmented: rank r's 4 MiB block at (s * n + r) * 4 MiB, in 1 MiB transfers
    offsets = {r: [(s * 3 + r) * 4 * MiB + i * MiB for s in range(5) for i in range(4)]
               for r in range(3)}
    pat = detect(load_jobs([posix_writes(3, offsets, MiB).write(tmp_path / "t")])[0])
    assert (pat.layout, pat.transfer, pat.block, pat.segments) == ("segmented", MiB, 4 * MiB, 5)
    assert pat.fit == 1.0 and not pat.fsync


def test_a_view_the_log_cannot_show(tmp_path):
    """aggio's own collective calls through a view: offsets are view-relative."""
    b = TraceBuilder(4).open_all()
    for r in range(4):
        b.op(r, "write_at_all", 0, 10 * T, 1, dur=0.01, flags=2)
    path = b.close_all().write(tmp_path / "t")
    pat = detect(load_jobs([path])[0])
    assert pat.layout == "segmented" and pat.fit == 0.0 and pat.collective
    assert any("file view" in n for n in pat.notes)
    forced = detect(load_jobs([path])[0], record=T)
    assert (forced.layout, forced.transfer, forced.block) == ("strided", T, 10 * T)
    assert any("--record 47008" in n for n in forced.notes)


def test_scaling_to_this_machine(tmp_path):
    pat = detect(load_jobs([ior_hard(tmp_path, nranks=4, records=1000)])[0])
    rp = replay.build(pat, nranks=2, max_bytes=8 * MiB)
    assert rp.nranks == 2 and rp.block == (4 * MiB // T) * T and rp.segments == 1
    assert rp.total_bytes <= 8 * MiB and "scaled to" in rp.scale_note
    up = replay.build(pat, nranks=2, min_bytes=256 * MiB)
    assert up.total_bytes > 200 * MiB and "scaled up" in up.scale_note
    same = replay.build(pat, nranks=4)
    assert same.block == 1000 * T and "scaled" not in same.scale_note
    args = same.bench_args(hints={"cb_nodes": 2}, path="/scratch/f")
    assert args[:4] == ["-a", "MPIIO", "--pattern", "strided"]
    assert "-c" not in args and "-e" in args and "-w" in args and "-r" not in args
    assert args[args.index("--hint") + 1] == "cb_nodes=2" and "/scratch/f" in args
    assert "-c" in same.bench_args(api="AGGIO", collective=True)


def test_replay_prints_the_command_and_its_limits(tmp_path, capsys):
    assert cli.main(["replay", ior_hard(tmp_path), "-n", "2", "--bench", "/bin/true"]) == 0
    out = capsys.readouterr().out
    assert "layout: strided, transfer 47008 bytes; reproduces 100.0%" in out
    assert "/bin/true -a MPIIO --pattern strided -t 47008" in out
    assert "does not reproduce the compute time" in out
    assert cli.main(["replay", ior_hard(tmp_path), "--json", "--bench", "/bin/true"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["pattern"]["layout"] == "strided" and data["command"][-1] == "-w"


def test_replay_without_per_operation_data_exits_1(tmp_path, capsys):
    from builders import darshan_job
    job_file = tmp_path / "x.darshan"
    job_file.write_bytes(b"not a log")
    assert cli.main(["replay", str(job_file)]) == 1
    assert "not a Darshan log" in capsys.readouterr().err
    with pytest.raises(PatternError, match="no per-operation data"):
        detect(darshan_job())


@requires_shared
@pytest.mark.parametrize("log", [p for p in LOGS if "dxt" in p.lower()] or [None],
                         ids=lambda p: os.path.basename(p or "none"))
def test_replay_every_shared_log_with_dxt(log, capsys):
    assert cli.main(["replay", log, "--bench", "/bin/true"]) == 0
    out = capsys.readouterr().out
    assert "/bin/true -a " in out and "limits:" in out


@requires_shared
def test_replay_of_counter_only_logs_says_why(capsys):
    log = [p for p in LOGS if p.endswith("mpi-io-test-x86_64-3.4.7.darshan")][0]
    assert cli.main(["replay", log]) == 1
    assert "needs DXT" in capsys.readouterr().err


@requires_shared
def test_replay_of_the_dxt_log():
    pat = detect(load_jobs([DXT_LOG])[0])
    assert pat.path.endswith("test.out") and pat.ranks == 32 and pat.layout == "strided"
    assert pat.transfer == 16 * MiB and pat.write and pat.read and not pat.collective


def test_tune_candidates_are_data_and_documented():
    for _, hints in tune.AGGIO_CANDIDATES:
        hintforms.check(hints)


def test_tune_configurations(tmp_path):
    pat = detect(load_jobs([ior_hard(tmp_path)])[0])
    configs = tune.configurations(pat, {"romio_cb_write": "enable", "aggio_strategy": "two_phase"},
                                  "openmpi")
    names = [c.name for c in configs]
    assert names[0] == "MPI library default" and configs[0].baseline
    assert not configs[0].collective and configs[0].api == "MPIIO"
    assert "Open MPI ROMIO" in names and "MPI-IO collective" in names
    # ROMIO's hints only under ROMIO: Open MPI's default MPI-IO (OMPIO) ignores them
    advised = next(c for c in configs if c.name == "MPI-IO collective + advised hints (ROMIO)")
    assert advised.hints == {"romio_cb_write": "enable"}          # no aggio_* for ROMIO
    assert advised.launcher_args == ["--mca", "io", "romio321"]
    assert all(c.code_change for c in configs if c.api == "AGGIO" or c.collective)
    launcher = dict(tune.paste(advised, replay.build(pat, 2)))["launcher"]
    assert launcher.endswith("(or export OMPI_MCA_io=romio321)")
    mpich = tune.configurations(pat, {"romio_cb_write": "enable"}, "mpich")
    romio = [c for c in mpich if c.hints == {"romio_cb_write": "enable"} and c.api == "MPIIO"]
    assert romio[0].name == "MPI-IO collective + advised hints" and not romio[0].launcher_args
    assert "Open MPI ROMIO" not in [c.name for c in mpich]
    assert "aggio + advised hints" not in [c.name for c in tune.configurations(pat, {}, "mpich")]
    unknown = tune.configurations(pat, {"romio_cb_write": "enable"}, "unknown")
    assert not any(c.api == "MPIIO" and c.hints for c in unknown)
    assert "reads ROMIO's hints is unknown" in tune.romio_left_out({"cb_nodes": 2},
                                                                   "unknown")[0][1]


def _aggregated(tmp_path, stripes, unit):
    path = two_phase_write(16, [0, 4, 8, 12], calls=4, rounds=2, buffer=MiB).write(
        tmp_path / f"agg{stripes}", aggregators=[0, 4, 8, 12], per_node=4,
        meta={"path": "/lus/run/out.dat", "hints": {"striping_factor": str(stripes),
                                                    "striping_unit": str(unit)}})
    job = load_jobs([path])[0]
    pat = detect(job)
    tune.advised_hints(job, Thresholds(), pat.path)
    return job, pat


def test_tune_keeps_collective_buffering_where_advise_calls_it_a_fit(tmp_path):
    """Issue 26: advise finds aggregators that fit the stripes; tune must not
    then crown independent I/O from a replay on a few ranks of this machine."""
    job, pat = _aggregated(tmp_path, 4, MiB)
    why = tune.aggregators_fit(job, pat.path)
    assert "4 collective-buffering aggregators that fit the 4 stripes" in why
    configs, left = tune.drop_independent(tune.configurations(pat, {}, "openmpi"), why)
    assert left == [["aggio independent", why]]
    assert configs[0].baseline and not any(tune.independent(c) for c in configs)
    # aggregators that do not fit: independent I/O stays a candidate
    job, pat = _aggregated(tmp_path, 3, 768 * 1024)
    assert tune.aggregators_fit(job, pat.path) == ""
    configs, left = tune.drop_independent(tune.configurations(pat, {}, "openmpi"), "")
    assert left == [] and "aggio independent" in [c.name for c in configs]


def test_tune_names_the_winner_and_its_line():
    rp = type("R", (), {"pattern": type("P", (), {"path": "/lus/f", "write": True,
                                                  "fsync": True})()})()
    base = tune.Config("MPI library default", "MPIIO", False, baseline=True, values=[100, 110, 90])
    fast = tune.Config("aggio two_phase", "AGGIO", True, {"aggio_strategy": "two_phase"},
                       code_change="the aggio API", values=[300, 320, 310])
    lines = dict(tune.paste(fast, rp))
    assert lines["needs"] == "the aggio API"
    assert lines["aggio-hints"] == 'export AGGIO_HINTS="/lus/f:aggio_strategy=two_phase"'
    assert "cray-hints" not in lines
    assert tune.paste(base, rp) == []


@requires_bench
def test_replay_run(tmp_path, capsys):
    trace = ior_hard(tmp_path, nranks=2, records=20)
    assert cli.main(["replay", trace, "--run", "-o", str(tmp_path / "f"),
                     "--bench", BENCH]) == 0
    assert "result: write" in capsys.readouterr().out


def test_tune_without_bench_exits_1(tmp_path, capsys):
    assert cli.main(["tune", ior_hard(tmp_path), "--bench", str(tmp_path / "nope")]) == 1
    assert "not an executable aggio-bench" in capsys.readouterr().err
