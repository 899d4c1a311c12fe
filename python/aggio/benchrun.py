"""Finding and running aggio-bench for `aggio replay --run` and `aggio tune`.

aggio-bench is looked for in --bench, then $AGGIO_BENCH, then PATH, then the
build directories of the source tree this package sits in (build/openmpi,
build/mpich, build).  Its MPI library (Open MPI or MPICH, from its shared
libraries) picks the launcher: mpiexec.openmpi or mpiexec.mpich when they
exist, else mpiexec; --mpiexec overrides.  Open MPI gets --oversubscribe, and,
when run as root, the two variables it wants for that.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

SOURCE_ROOT = Path(__file__).resolve().parents[2]
BUILD_DIRS = ("build/openmpi", "build/mpich", "build")


class BenchError(RuntimeError):
    """aggio-bench cannot be found or a run failed."""


def locate_program(name: str, sub: str, explicit: str | None) -> str | None:
    """explicit (which must be an executable: else ValueError), then PATH,
    then the build directories of this source tree (BUILD_DIR/sub/name)."""
    if explicit:
        if os.access(explicit, os.X_OK) and os.path.isfile(explicit):
            return explicit
        raise ValueError(explicit)
    found = shutil.which(name)
    if found:
        return found
    for d in BUILD_DIRS:
        path = SOURCE_ROOT / d / sub / name
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    return None


def find_bench(explicit: str | None = None) -> str:
    try:
        found = locate_program("aggio-bench", "bench", explicit or os.environ.get("AGGIO_BENCH"))
    except ValueError as exc:
        raise BenchError(f"{exc}: not an executable aggio-bench") from None
    if not found:
        raise BenchError("aggio-bench not found: build it (scripts/build openmpi) and give "
                         "--bench PATH or set AGGIO_BENCH")
    return found


def mpi_flavor(bench: str) -> str:
    """"openmpi", "mpich" or "unknown", from the libraries bench links."""
    try:
        out = subprocess.run(["ldd", bench], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    if "libmpich" in out:
        return "mpich"
    if "libmpi.so" in out or "openmpi" in out:
        return "openmpi"
    return "unknown"


def launcher(bench: str, nranks: int, explicit: str | None = None) -> tuple[list, dict, str]:
    """(command prefix, environment, flavor) to start `nranks` ranks."""
    flavor = mpi_flavor(bench)
    env = dict(os.environ)
    if explicit:
        cmd = explicit.split()
    else:
        name = {"openmpi": "mpiexec.openmpi", "mpich": "mpiexec.mpich"}.get(flavor, "mpiexec")
        cmd = [shutil.which(name) or shutil.which("mpiexec") or "mpiexec"]
    cmd += ["-n", str(nranks)]
    if flavor == "openmpi":
        cmd.append("--oversubscribe")
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    return cmd, env, flavor


def run(cmd: list, env: dict, timeout: float) -> list[dict]:
    """Runs one aggio-bench command (with --json -); its JSON records."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BenchError(f"timed out after {timeout:.0f} s: {' '.join(cmd)}") from None
    except OSError as exc:
        raise BenchError(f"cannot start {cmd[0]}: {exc}") from None
    records = []
    for line in proc.stdout.splitlines():
        if line.startswith("{") and '"aggio-bench"' in line:
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    if proc.returncode != 0 or not records:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-6:]
        raise BenchError(f"exit {proc.returncode}: {' '.join(cmd)}\n  " + "\n  ".join(tail))
    return records


# ---- a cold start for each run (tune) ----------------------------------------
# What one run leaves in memory (the file's pages, dirty data still being
# written back) must not speed up or slow down the next.  Root can drop the
# page cache; anyone can write back dirty data (sync) and ask the kernel to
# forget one file's pages (posix_fadvise DONTNEED).  tune also gives every
# run a file name of its own, so no run can find an earlier run's pages.
DROP_CACHES = "/proc/sys/vm/drop_caches"
COLD_WORDS = {
    "drop_caches": "page cache dropped before each run (sync, 3 > /proc/sys/vm/drop_caches) "
                   "and before each timed read (aggio-bench --drop-caches); a new file name "
                   "for each run",
    "fadvise": "not permitted to drop the page cache: dirty data written back (sync) and the "
               "kept file's pages forgotten (posix_fadvise DONTNEED) between the runs of a "
               "replay; a new file name for each run.  A read in the same run as its write "
               "still reads from memory",
}


def can_drop_caches() -> bool:
    return os.access(DROP_CACHES, os.W_OK)


def make_cold(path: str | None = None) -> str:
    """Writes back dirty data and drops the page cache where permitted
    ("drop_caches"), else forgets `path`'s pages ("fadvise")."""
    os.sync()
    try:
        with open(DROP_CACHES, "w") as f:
            f.write("3\n")
        return "drop_caches"
    except OSError:
        pass
    if path and os.path.exists(path):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)                 # DONTNEED leaves dirty pages
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)
    return "fadvise"


def rotated(path: str, n: int) -> str:
    """The file name of run n: `path` with .n before its extension."""
    root, ext = os.path.splitext(path)
    return f"{root}.{n}{ext}"


def mount_type(mounts: list, path: str) -> str:
    """The file system type of `path`: the longest mount point of
    [(mount point, type)] that holds it ("" when none does)."""
    best, kind = "", ""
    for point, fstype in mounts:
        point = point.rstrip("/") or "/"
        inside = path == point or path.startswith(point if point == "/" else point + "/")
        if inside and len(point) > len(best):
            best, kind = point, fstype
    return kind


def local_mounts() -> list:
    """This machine's [(mount point, type)], from /proc/mounts."""
    try:
        with open("/proc/mounts") as f:
            return [(p[1], p[2]) for p in (line.split() for line in f) if len(p) > 2]
    except OSError:
        return []
