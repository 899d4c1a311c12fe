"""Where the tests find what lives outside the Python package: the shared
Darshan logs (../../shared/darshan-logs, absent in a bare clone), aggio's
hint parser and aggio-bench (in a build of the C code).  Each `requires_*`
marker skips a test with the reason when the thing is missing."""
from __future__ import annotations

import glob
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared", "darshan-logs"))
LOGS = sorted(glob.glob(os.path.join(SHARED, "*", "*.darshan")))
DXT_LOG = os.path.join(SHARED, "mpi_io_test_with_dxt",
                       "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan")
BUILDS = ("build/openmpi", "build/mpich", "build")

requires_shared = pytest.mark.skipif(
    not os.path.isdir(SHARED),
    reason=f"the shared Darshan logs are not at {SHARED} (a bare clone): these tests read "
           "real logs")


def log_params():
    """Parameters over the shared logs; one skipped parameter with the reason
    when there are none (pytest's own empty-set skip says nothing useful)."""
    if LOGS:
        return LOGS
    return [pytest.param(None, marks=pytest.mark.skip(
        reason=f"no shared Darshan logs at {SHARED} (a bare clone)"))]


def _built(name: str, sub: str) -> str | None:
    for b in BUILDS:
        path = os.path.join(ROOT, b, sub, name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


HINTS_PARSE = os.environ.get("AGGIO_HINTS_PARSE") or _built("aggio_hints_parse", "tests")
BENCH = os.environ.get("AGGIO_BENCH") or _built("aggio-bench", "bench")
MPIEXEC = shutil.which("mpiexec")

requires_hints_parser = pytest.mark.skipif(
    not HINTS_PARSE, reason="aggio's hint parser is not built (build/*/tests/aggio_hints_parse; "
                            "scripts/build openmpi): hint strings cannot be parsed back")
requires_bench = pytest.mark.skipif(
    not (BENCH and MPIEXEC), reason="aggio-bench is not built (scripts/build openmpi) or no "
                                    "mpiexec: the replays cannot run")


def pydarshan_logs() -> list[str]:
    """The logs PyDarshan ships (format 3.10 among them, which ../shared
    lacks); none without PyDarshan."""
    try:
        import darshan
    except ImportError:
        return []
    root = os.path.dirname(darshan.__file__)
    return sorted(glob.glob(os.path.join(root, "tests", "input", "*.darshan"))
                  + glob.glob(os.path.join(root, "examples", "*", "*.darshan")))
