"""Advice that is wrong or contradicts itself (issue 26, item 4): every fix
is checked against the facts of the log and against the other fixes before
it is printed (findings/vetting.py)."""
from builders import LayerStats, darshan_job, file_with, layer, per_rank

from aggio.findings import run_all
from aggio.findings.base import Finding, Fix, hint_fixes, lfs_fix
from aggio.findings.vetting import check_fixes, may_stripe_directory, parse_aggio_hints
from aggio.thresholds import Thresholds

MiB, GiB = 1 << 20, 1 << 30


def texts(findings):
    return [x.text for f in findings for x in f.fixes]


def _misaligned_job(stripe=0):
    api = layer(writes=5000, indep_writes=5000, bytes_written=5000 * 5000)
    posix = layer(writes=5000, bytes_written=5000 * 5000, file_not_aligned=5000,
                  file_alignment=4096)
    f = file_with("/lus/run/a.dat", mpiio=api, posix=posix)
    f.stripe_count, f.stripe_size = (4, stripe) if stripe else (0, 0)
    return darshan_job(modules=("POSIX", "MPI-IO"), files=[f])


def test_striping_unit_below_lustres_minimum_is_left_out():
    (f,) = [x for x in run_all(_misaligned_job(), Thresholds()) if x.code == "AGG-MISALIGNED"]
    assert not any("striping_unit" in t for t in texts([f]))
    assert any("romio_cb_write=enable" in t for t in texts([f]))
    assert f.evidence["left_out_of_fixes"] == [
        "striping_unit=4096 left out: Lustre's stripe size is a multiple of 64 KiB "
        "(64 KiB at least)"]
    assert "fixes checked against the log" in f.message


def test_a_real_stripe_size_stays():
    (f,) = [x for x in run_all(_misaligned_job(MiB), Thresholds()) if x.code == "AGG-MISALIGNED"]
    assert any("striping_unit=1048576" in t for t in texts([f]))
    assert "left_out_of_fixes" not in f.evidence


def _metadata_job(independent):
    """A metadata-heavy run (one rank above 30 s); a collective file, and
    `independent` independent calls on a second file."""
    files = []
    for name, indep in (("/lus/run/coll.dat", 0), ("/lus/run/log.dat", independent)):
        api = layer(writes=8 + indep, coll_writes=8, indep_writes=indep, bytes_written=8 * MiB)
        posix = per_rank(layer(opens=4, writes=8, bytes_written=8 * MiB, write_time=1.0,
                               meta_time=41.0), {r: 2 * MiB for r in range(4)},
                         {r: 0.25 for r in range(4)}, {0: 40.0, 1: 0.4, 2: 0.3, 3: 0.3})
        files.append(file_with(name, mpiio=api, posix=posix))
    return darshan_job(modules=("POSIX", "MPI-IO"), files=files)


def test_no_indep_rw_never_for_a_program_with_independent_calls():
    (f,) = [x for x in run_all(_metadata_job(12), Thresholds()) if x.code == "AGG-METADATA"]
    assert not any("romio_no_indep_rw" in t for t in texts([f]))
    (why,) = f.evidence["left_out_of_fixes"]
    assert why.startswith("romio_no_indep_rw=true left out: the program makes 12 independent")


def test_no_indep_rw_stays_for_collective_only_programs():
    (f,) = [x for x in run_all(_metadata_job(0), Thresholds()) if x.code == "AGG-METADATA"]
    assert any("romio_no_indep_rw=true" in t for t in texts([f]))


def test_lfs_setstripe_never_names_a_file_systems_root():
    job = darshan_job(modules=("POSIX", "MPI-IO", "LUSTRE"), files=[
        file_with(p, mpiio=LayerStats(writes=1, coll_writes=1), posix=LayerStats(writes=1))
        for p in ("/lus/grand/ckpt.dat", "/lus/grand/run/out.dat", "/top.dat")])
    job.mounts = [("/lus/grand", "lustre"), ("/", "rootfs")]
    found = [Finding("AGG-X", "warn", "x", "x", {"a": 1}, [lfs_fix(f.path, 8)], subject=f.path)
             for f in job.files]
    check_fixes(job, found)
    assert [f.fixes[0].text for f in found] == ["lfs setstripe -c 8 /lus/grand/ckpt.dat",
                                                "lfs setstripe -c 8 /lus/grand/run",
                                                "lfs setstripe -c 8 /top.dat"]
    assert not may_stripe_directory(job, "/scratch") and not may_stripe_directory(job, ".")
    assert may_stripe_directory(job, "/scratch/run")


def test_a_line_outside_the_plan_that_disagrees_is_dropped():
    api = LayerStats(writes=10, coll_writes=10, bytes_written=10 * MiB)
    job = darshan_job(modules=("POSIX", "MPI-IO"), files=[
        file_with("/lus/a.dat", mpiio=api, posix=LayerStats(writes=10))])
    first = Finding("AGG-A", "high", "a", "a", {"x": 1},
                    hint_fixes({"romio_ds_write": "enable"}, "/lus/a.dat"), subject="/lus/a.dat")
    line = 'export AGGIO_HINTS="/lus/a.dat:aggio_strategy=two_phase:romio_ds_write=disable"'
    second = Finding("AGG-B", "warn", "b", "b", {"x": 1}, [Fix("aggio-hints", line)],
                     subject="/lus/a.dat")
    check_fixes(job, [first, second])
    assert second.fixes == []
    assert "romio_ds_write=disable for /lus/a.dat, where the report gives romio_ds_write=enable" \
        in second.evidence["left_out_of_fixes"][0]
    agreeing = Finding("AGG-C", "warn", "c", "c", {"x": 1}, [Fix("aggio-hints", line)],
                       subject="/lus/a.dat")
    check_fixes(job, [agreeing])
    assert [x.text for x in agreeing.fixes] == [line]


def test_parse_aggio_hints_keeps_quoted_values():
    line = 'export AGGIO_HINTS="*:cb_config_list=#*:1#:cb_nodes=4,/a:cb_nodes=2"'
    assert parse_aggio_hints(line) == [("*", {"cb_config_list": "*:1", "cb_nodes": "4"}),
                                       ("/a", {"cb_nodes": "2"})]
    assert parse_aggio_hints("lfs setstripe -c 4 /a") == []
