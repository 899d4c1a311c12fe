"""Findings: stable codes, evidence and a fix for each.

Importing this package registers every check (one module per group);
run_all() runs them on a Job in code order, most severe first.
"""
from __future__ import annotations

from . import balance, filesystem, interface, requests  # noqa: F401  (registration)
from .base import REGISTRY, SEVERITIES, Finding, Fix

__all__ = ["REGISTRY", "Finding", "Fix", "run_all"]


def run_all(job, thresholds, only: list[str] | None = None) -> list[Finding]:
    found = []
    for code, chk in REGISTRY.items():
        if only and code not in only:
            continue
        found.extend(chk.func(job, thresholds))
    return sorted(found, key=lambda f: (SEVERITIES.index(f.severity), f.code))
