"""The C library and the Python tool read each other's subfiled files
(docs/subfiling.md): aggio-bench writes through aggio with aggio_subfiles,
`aggio subfile join` (serial, and with --mpi on 2 ranks) turns that into the
same bytes the MPI library's own MPI-IO writes for the same run, and a file
`aggio subfile split` made is read back by aggio-bench through aggio, every
byte verified.  Skipped with the reason where aggio-bench, mpiexec or
aggio-subfile-join is missing."""
from __future__ import annotations

import filecmp
import subprocess

import pytest

from aggio import benchrun, cli, subfile
from paths import BENCH, requires_bench


def _join_tool():
    try:
        return subfile.find_join_tool()
    except subfile.SubfileError:
        return None


requires_join_tool = pytest.mark.skipif(
    not _join_tool(), reason="aggio-subfile-join is not built (scripts/build openmpi): the "
                             "MPI join cannot run")

# ior-hard's record through 64 KiB stripes: pieces cross stripe boundaries
PATTERN = ["--pattern", "strided", "-t", "47008", "-b", "470080", "-s", "3", "-c"]


def _bench(path, api, *extra, hints="", nranks=2):
    cmd, env, _ = benchrun.launcher(BENCH, nranks)
    if hints:
        env["AGGIO_HINTS"] = hints
        if "mpiexec.openmpi" in cmd[0]:
            cmd += ["-x", "AGGIO_HINTS"]
        else:
            cmd += ["-genv", "AGGIO_HINTS", hints]
    proc = subprocess.run(cmd + [BENCH, "-a", api, *PATTERN, "-o", str(path), "-i", "1",
                                 *extra], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


@requires_bench
def test_join_gives_the_mpi_librarys_bytes(tmp_path):
    sub, ref, joined = tmp_path / "sub.dat", tmp_path / "ref.dat", tmp_path / "joined.dat"
    _bench(sub, "AGGIO", "-w", "-k", hints="*:aggio_subfiles=3:aggio_subfile_stripe=64k")
    _bench(ref, "MPIIO", "-w", "-k")
    assert sub.read_bytes().startswith(b"aggio subfiled file, format 1\n")
    assert (tmp_path / "sub.dat.subfile.2.of.3").exists()
    assert cli.main(["subfile", "join", str(sub), str(joined)]) == 0
    assert filecmp.cmp(joined, ref, shallow=False)


@requires_bench
def test_a_split_file_reads_back_through_aggio(tmp_path):
    plain = tmp_path / "plain.dat"
    _bench(plain, "MPIIO", "-w", "-k")
    assert cli.main(["subfile", "split", str(plain), "--subfiles", "2", "--stripe", "8k"]) == 0
    assert plain.read_bytes().startswith(b"aggio subfiled file, format 1\n")
    out = _bench(plain, "AGGIO", "-r", "-R", "-k", nranks=1)
    assert "verification: passed" in out


@requires_bench
@requires_join_tool
def test_the_mpi_join_gives_the_same_bytes_in_place(tmp_path):
    sub, ref = tmp_path / "sub.dat", tmp_path / "ref.dat"
    _bench(sub, "AGGIO", "-w", "-k", hints="*:aggio_subfiles=3:aggio_subfile_stripe=64k")
    _bench(ref, "MPIIO", "-w", "-k")
    assert cli.main(["subfile", "join", str(sub), "--mpi", "2"]) == 0
    assert filecmp.cmp(sub, ref, shallow=False)
    assert not list(tmp_path.glob("sub.dat.subfile.*"))


@requires_join_tool
def test_the_mpi_join_refuses_an_ordinary_file(tmp_path, capsys):
    plain = tmp_path / "plain.dat"
    plain.write_bytes(b"x" * 100)
    assert cli.main(["subfile", "join", str(plain), str(tmp_path / "o"), "--mpi", "2"]) == 1
    assert "not" in capsys.readouterr().err
