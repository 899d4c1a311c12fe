"""The C library's stage and the Python tool's drain (docs/staging.md), and
the crash tests: a checkpointing program (tests/tools/stage_writer.c)
writes through a stage directory, its ranks are killed (SIGKILL) while it
writes and while the movers drain, or `aggio stage drain` itself is
killed; after `aggio stage drain` every block holds the version the
program was last told was written, or a later one whole, never anything
else.  Without a kill the drained file equals what the MPI library's own
MPI-IO writes for the same calls.  Skipped with the reason where the
writer (a build of the C code) or mpiexec is missing."""
from __future__ import annotations

import filecmp
import os
import signal
import subprocess
import sys
import time

import pytest

from aggio import benchrun
from paths import MPIEXEC, _built

WRITER = os.environ.get("AGGIO_STAGE_WRITER") or _built("aggio_stage_writer", "tests")
requires_writer = pytest.mark.skipif(
    not (WRITER and MPIEXEC), reason="tests/tools/stage_writer.c is not built "
                                     "(scripts/build openmpi) or no mpiexec")

NRANKS = 2


def _aggio(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "aggio", *args], capture_output=True,
                          text=True, timeout=timeout)


def _writer_cmd(tmp_path, drain, blocks, block, writes, movers=2, stage=None):
    cmd, env, _ = benchrun.launcher(WRITER, NRANKS)
    stage = stage or tmp_path / "stage"
    return cmd + [WRITER, str(tmp_path / "f.dat"), str(stage), drain,
                  str(blocks), str(block), str(writes), str(tmp_path / "log"),
                  str(movers)], env


def _pattern(off: int, length: int, version: int) -> bytes:
    return bytes(((off + i) * 31 + version * 17 + 1) % 251 for i in range(length))


def _log(tmp_path, rank):
    """Rank's log: for each block, the events in order [(kind, version)]."""
    events: dict[int, list] = {}
    path = tmp_path / f"log.{rank}"
    if not path.exists():
        return events
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0] in ("W", "A"):
            events.setdefault(int(parts[1]), []).append((parts[0], int(parts[2])))
    return events


def _check_blocks(tmp_path, blocks, block):
    """Every block: the last acknowledged version, or a later one whole; a
    block never acknowledged is absent (zeros, or past the end) or whole.
    Returns how many acknowledged writes were checked."""
    data = (tmp_path / "f.dat").read_bytes()
    acked = 0
    for rank in range(NRANKS):
        for b, events in _log(tmp_path, rank).items():
            off = (b * NRANKS + rank) * block
            got = data[off:off + block]
            last = max((i for i, e in enumerate(events) if e[0] == "A"), default=None)
            allowed = {v for k, v in events[(last or 0):] if k == "W"}
            if last is not None:
                allowed.add(events[last][1])
                acked += 1
            whole = any(got == _pattern(off, block, v) for v in allowed)
            absent = last is None and (len(got) < block or got == bytes(len(got))) \
                and got.strip(b"\0") == b""
            assert whole or absent, (
                f"rank {rank} block {b} at {off}: the bytes are no version of "
                f"{sorted(allowed)} (last acknowledged: "
                f"{events[last][1] if last is not None else None})")
    return acked


def _pids(tmp_path):
    pids = []
    for rank in range(NRANKS):
        p = tmp_path / f"log.{rank}.pid"
        if p.exists() and p.read_text().strip():
            pids.append(int(p.read_text()))
    return pids


def _acks(tmp_path):
    return sum(1 for r in range(NRANKS) if (tmp_path / f"log.{r}").exists()
               for line in (tmp_path / f"log.{r}").read_text().splitlines()
               if line.startswith("A"))


def _run_and_kill(tmp_path, drain, blocks, block, after_acks):
    """Starts the writer (until killed), SIGKILLs its ranks once they were
    told of after_acks writes, and waits for the launcher to end."""
    cmd, env = _writer_cmd(tmp_path, drain, blocks, block, 0)
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=env)
    deadline = time.time() + 60
    while time.time() < deadline and (len(_pids(tmp_path)) < NRANKS or
                                      _acks(tmp_path) < after_acks):
        assert proc.poll() is None, "the writer ended before it was killed"
        time.sleep(0.005)
    assert _acks(tmp_path) >= after_acks, "the writer did not get far enough in 60 s"
    for pid in _pids(tmp_path):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@requires_writer
@pytest.mark.parametrize("drain", ["none", "background", "at_close"])
def test_the_drained_file_is_the_mpi_librarys(tmp_path, drain):
    cmd, env = _writer_cmd(tmp_path, drain, 8, 100000, 40)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    stage = tmp_path / "stage"
    if drain == "none":  # the close left everything in the stage
        assert (tmp_path / "f.dat").stat().st_size == 0
        status = _aggio("stage", "status", str(stage), "--json")
        assert status.returncode == 0, status.stderr
        assert '"remaining_bytes": 8000000' in status.stdout.replace("\n", " ")
        out = _aggio("stage", "drain", str(stage))
        assert out.returncode == 0, out.stderr
    assert filecmp.cmp(tmp_path / "f.dat", tmp_path / "f.dat.ref", shallow=False)
    assert not any(stage.iterdir()) if stage.exists() else True
    again = _aggio("stage", "drain", str(stage)) if stage.exists() else None
    assert again is None or again.returncode == 0
    assert filecmp.cmp(tmp_path / "f.dat", tmp_path / "f.dat.ref", shallow=False)


@requires_writer
@pytest.mark.parametrize("drain", ["none", "background"])
def test_a_kill_mid_checkpoint_loses_no_acknowledged_write(tmp_path, drain):
    blocks, block = 16, 65536
    # at least two versions of some blocks: the newest acknowledged one wins
    _run_and_kill(tmp_path, drain, blocks, block, after_acks=3 * blocks * NRANKS)
    out = _aggio("stage", "drain", str(tmp_path / "stage"))
    assert out.returncode == 0, out.stderr
    assert _check_blocks(tmp_path, blocks, block) >= blocks * NRANKS
    first = (tmp_path / "f.dat").read_bytes()
    again = _aggio("stage", "drain", str(tmp_path / "stage"))
    assert again.returncode == 0, again.stderr
    assert (tmp_path / "f.dat").read_bytes() == first


@requires_writer
def test_a_killed_drain_finishes_when_run_again(tmp_path):
    blocks, block = 32, 1 << 20  # 64 MiB staged: the drain takes a while
    cmd, env = _writer_cmd(tmp_path, "none", blocks, block, blocks)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    drain = subprocess.Popen([sys.executable, "-m", "aggio", "stage", "drain",
                              str(tmp_path / "stage")], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    while drain.poll() is None and not (tmp_path / "f.dat").stat().st_size:
        time.sleep(0.002)
    drain.send_signal(signal.SIGKILL)
    drain.wait()
    out = _aggio("stage", "drain", str(tmp_path / "stage"))
    assert out.returncode == 0, out.stderr
    assert filecmp.cmp(tmp_path / "f.dat", tmp_path / "f.dat.ref", shallow=False)


@requires_writer
def test_the_next_open_finishes_a_killed_jobs_drain(tmp_path):
    """No `aggio stage drain`: the next job that opens the file through aggio
    moves what the killed one staged before it writes."""
    blocks, block = 8, 65536
    _run_and_kill(tmp_path, "none", blocks, block, after_acks=2 * blocks * NRANKS)
    logs = [(tmp_path / f"log.{r}").read_text() for r in range(NRANKS)]
    # a second job writes nothing (0 writes would run forever: 1 write of
    # block 0 by each rank, version 0, into another log)
    cmd, env = _writer_cmd(tmp_path, "background", blocks, block, 1)
    cmd[-2] = str(tmp_path / "log2")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for r in range(NRANKS):  # its write of block 0, version 0, is the newest there
        (tmp_path / f"log.{r}").write_text(logs[r] + "W 0 0\nA 0 0\n")
    assert _check_blocks(tmp_path, blocks, block) >= blocks * NRANKS
    assert not (tmp_path / "stage").exists() or not any((tmp_path / "stage").iterdir())


@requires_writer
@pytest.mark.skipif(not os.path.isdir("/dev/shm"), reason="no /dev/shm on this machine")
def test_a_dev_shm_stage_without_data_crcs_drains_whole(tmp_path):
    """On a memory file system the library leaves the data's CRC out
    (aggio_stage_checksum=auto, docs/staging.md): its AGSR records drain."""
    stage = f"/dev/shm/aggio-test-stage-{os.getpid()}"
    try:
        cmd, env = _writer_cmd(tmp_path, "none", 8, 100000, 24, stage=stage)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr[-2000:]
        index = next(p for d in os.scandir(stage) for p in os.scandir(d.path)
                     if p.name.endswith(".index"))
        with open(index.path, "rb") as f:
            assert f.read(4) == b"AGSR"
        out = _aggio("stage", "drain", stage)
        assert out.returncode == 0, out.stderr
        assert filecmp.cmp(tmp_path / "f.dat", tmp_path / "f.dat.ref", shallow=False)
    finally:
        subprocess.run(["rm", "-rf", stage], check=False)


@requires_writer
def test_a_failed_drain_at_finalize_is_said_and_the_stage_kept(tmp_path):
    """The program leaves the file open; MPI_Finalize closes it, the movers'
    writes to the file fail (AGGIO_FAULTS), and stderr says how many bytes
    and where they are; `aggio stage drain` then writes them."""
    blocks, block = 4, 65536
    cmd, env = _writer_cmd(tmp_path, "at_close", blocks, block, blocks)
    # blocks staged writes are the first pwrite calls; the movers' come after
    env.update(AGGIO_STAGE_WRITER_NO_CLOSE="1", AGGIO_FAULTS=f"pwrite@*#{blocks + 1}+")
    if "openmpi" in os.path.basename(cmd[0]):
        cmd[1:1] = ["-x", "AGGIO_STAGE_WRITER_NO_CLOSE", "-x", "AGGIO_FAULTS"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    said = [line for line in proc.stderr.splitlines() if "could not be written" in line]
    assert len(said) == NRANKS, proc.stderr[-3000:]
    assert all(f"{blocks * block} bytes" in line and "aggio stage drain" in line
               for line in said), said
    assert (tmp_path / "f.dat").stat().st_size == 0
    out = _aggio("stage", "drain", str(tmp_path / "stage"))
    assert out.returncode == 0, out.stderr
    assert filecmp.cmp(tmp_path / "f.dat", tmp_path / "f.dat.ref", shallow=False)
