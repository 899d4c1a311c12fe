"""What a finding is, the registry of checks, and the fix snippets they share.

A check is a function (job, thresholds) -> list[Finding] registered under a
stable code with @check.  Codes never change meaning; new checks get new
codes.  Every finding carries its evidence (numbers from the log) and at
least one fix the user can paste.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

SEVERITIES = ("high", "warn", "info")


@dataclass
class Fix:
    kind: str      # aggio-hints | romio-hints | cray-hints | lustre | code | env
    text: str      # what to paste
    label: str = ""

    def to_dict(self) -> dict:
        return {"kind": self.kind, "label": self.label or FIX_LABELS.get(self.kind, ""),
                "text": self.text}


FIX_LABELS = {"aggio-hints": "aggio (AGGIO_HINTS)",
              "romio-hints": "ROMIO hints file (export ROMIO_HINTS=<file>)",
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

    def to_dict(self) -> dict:
        return {"code": self.code, "severity": self.severity, "title": self.title,
                "subject": self.subject, "message": self.message,
                "evidence": self.evidence, "fixes": [f.to_dict() for f in self.fixes]}


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


def hint_fixes(hints: dict, path: str = "") -> list[Fix]:
    """The same hints in the three syntaxes users paste: AGGIO_HINTS and Cray's
    MPICH_MPIIO_HINTS (pattern:key=value:...), and a ROMIO hints file."""
    pattern = os.path.basename(path) if path and not path.startswith("<") else "*"
    pairs = ":".join(f"{k}={v}" for k, v in hints.items())
    lines = "\n".join(f"{k} {v}" for k, v in hints.items())
    cray_pattern = path if path and not path.startswith("<") else "*"
    return [Fix("aggio-hints", f'export AGGIO_HINTS="{pattern}:{pairs}"'),
            Fix("romio-hints", lines),
            Fix("cray-hints", f'export MPICH_MPIIO_HINTS="{cray_pattern}:{pairs}"')]


def lfs_fix(path: str, count: int | str, size: int | None = None) -> Fix:
    """`lfs setstripe` on the file's directory (new files inherit it)."""
    directory = os.path.dirname(path) or "." if not path.startswith("<") else "<dir>"
    size_opt = f" -S {_lfs_size(size)}" if size else ""
    return Fix("lustre", f"lfs setstripe -c {count}{size_opt} {directory}")


def _lfs_size(n: int) -> str:
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


def top(items: dict, n: int = 3) -> list:
    return sorted(items.items(), key=lambda kv: kv[1], reverse=True)[:n]
