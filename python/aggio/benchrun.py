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


def find_bench(explicit: str | None = None) -> str:
    for candidate in (explicit, os.environ.get("AGGIO_BENCH")):
        if candidate:
            if os.access(candidate, os.X_OK) and os.path.isfile(candidate):
                return candidate
            raise BenchError(f"{candidate}: not an executable aggio-bench")
    found = shutil.which("aggio-bench")
    if found:
        return found
    for d in BUILD_DIRS:
        path = SOURCE_ROOT / d / "bench" / "aggio-bench"
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    raise BenchError("aggio-bench not found: build it (scripts/build openmpi) and give "
                     "--bench PATH or set AGGIO_BENCH")


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
