"""Findings: stable codes, evidence and a fix for each.

Importing this package registers every check (one module per group);
run_all() runs them on a Job, most severe first, then fits their fixes to
the run and makes them agree with each other (fitting.finalize), and checks
each fix against the log and the other fixes (vetting.check_fixes).
"""
from __future__ import annotations

from . import balance, filesystem, interface, layers, requests  # noqa: F401  (registration)
from . import cost, grounds
from . import rmw  # noqa: F401  (registration)
from .base import REGISTRY, SEVERITIES, Finding, Fix
from .vetting import check_fixes

__all__ = ["REGISTRY", "Finding", "Fix", "run_all", "unknown_codes"]


def unknown_codes(codes) -> list[str]:
    return [c for c in codes or [] if c not in REGISTRY]


def run_all(job, thresholds, only: list[str] | None = None) -> list[Finding]:
    found = []
    for code, chk in REGISTRY.items():
        if only and code not in only:
            continue
        found.extend(chk.func(job, thresholds))
    grounds.attach(job, found)
    cost.attach(job, found, thresholds)
    grounds.caveat(job, found)
    grounds.withheld_notes(job)
    found.sort(key=cost.sort_key)
    return check_fixes(job, found)
