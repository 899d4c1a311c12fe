"""What a finding is, the registry of checks, and the fix snippets they share.

A check is a function (job, thresholds) -> list[Finding] registered under a
stable code with @check.  Codes never change meaning; new checks get new
codes.  Every finding carries its evidence (numbers from the log) and at
least one fix the user can paste.
"""
from __future__ import annotations

from dataclasses import dataclass, field

SEVERITIES = ("high", "warn", "info")


@dataclass
class Fix:
    """One fix.  Checks give `hints` and `lustre` fixes as requests (kind
    "hints" with a dict, kind "lustre" with (path, count, size)); fitting.py
    turns them into text once every finding of the report is known, so that
    the report gives one value per hint and per file (and leaves out what
    does not fit the interfaces the run used, `needs`)."""
    kind: str      # aggio-hints | romio-hints | cray-hints | lustre | code | env | hints
    text: str      # what to paste
    label: str = ""
    needs: frozenset = frozenset()   # interfaces the fix applies to (all of them)
    hints: dict | None = None        # kind "hints": key -> value
    path: str = ""                   # the file it is about ("" for the job)
    lustre: tuple | None = None      # kind "lustre": (count, size or 0)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "label": self.label or FIX_LABELS.get(self.kind, ""),
                "text": self.text}


FIX_LABELS = {"aggio-hints": "aggio (AGGIO_HINTS)",
              "romio-hints": "hints file (ROMIO: export ROMIO_HINTS=<file>; aggio: "
                             "export AGGIO_HINTS_FILE=<file>); applies to every file",
              "cray-hints": "Cray MPICH (MPICH_MPIIO_HINTS)",
              "lustre": "Lustre striping (before the file is created)",
              "code": "code change", "env": "environment"}


@dataclass
class Finding:
    code: str
    severity: str
    title: str
    message: str
    evidence: dict
    fixes: list = field(default_factory=list)
    subject: str = "job"    # a file path, or "job"
    # Issue 26: what the finding rests on (modules, counters, ranks: grounds.py)
    # and what it costs the job (seconds, shares: cost.py), set by run_all.
    rests_on: dict = field(default_factory=dict)
    cost: dict | None = None

    def to_dict(self) -> dict:
        return {"code": self.code, "severity": self.severity, "title": self.title,
                "subject": self.subject, "message": self.message,
                "evidence": self.evidence, "fixes": [f.to_dict() for f in self.fixes],
                "rests_on": self.rests_on, "cost": self.cost}


@dataclass
class Check:
    code: str
    title: str
    func: object


REGISTRY: dict[str, Check] = {}


def check(code: str, title: str):
    """Registers a check function under a stable code."""
    def wrap(func):
        if code in REGISTRY:
            raise ValueError(f"duplicate finding code {code}")
        REGISTRY[code] = Check(code, title, func)
        return func
    return wrap


# ---------------------------------------------------------------- helpers

def fmt_bytes(n: float) -> str:
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 1) if whole else 0.0


def hint_fixes(hints: dict, path: str = "", needs=()) -> list[Fix]:
    """A request for these hints (for `path`, or every file): it becomes
    AGGIO_HINTS, MPICH_MPIIO_HINTS and a hints file in fitting.finalize,
    where the run used MPI-IO or aggio (and the interfaces in `needs`)."""
    return [Fix("hints", "", hints=dict(hints), path=path, needs=frozenset(needs))]


def lfs_fix(path: str, count: int, size: int | None = None) -> Fix:
    """A request for `lfs setstripe` for the file at `path` (on Lustre)."""
    return Fix("lustre", "", path=path, lustre=(int(count), int(size or 0)))


def lfs_size(n: int) -> str:
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def top(items: dict, n: int = 3) -> list:
    return sorted(items.items(), key=lambda kv: kv[1], reverse=True)[:n]
