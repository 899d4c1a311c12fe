"""The last check before a report is printed: every fix against the facts of
the log and against the other fixes.

Checks state fixes; fitting.finalize() fits them to the interfaces the run
used and gives each hint one value per file.  check_fixes() wraps it:

* before: each hint a fix requests is held against the rules in RULES (one
  list; each rule reads the log, not the finding): a value the file system
  refuses or a promise the program breaks is left out of the fix, and the
  finding says so (evidence "left_out_of_fixes" and its message);
* after: fixes written outside the plan (aggio-run's AGGIO_HINTS line) must
  agree with the plan's value for each key and file pattern, or are dropped
  with a note.

may_stripe_directory() is the rule for `lfs setstripe` on a directory
(fitting.py asks it): never a file system's root or another mount point.
"""
from __future__ import annotations

import os
import re

from ..model import MPIIO
from .fitting import finalize

LUSTRE_MIN_STRIPE = 64 << 10      # Lustre's stripe size: a multiple of 64 KiB


def _independent_calls(job, path: str) -> int:
    """Independent MPI-IO calls on one file, or on every file ("")."""
    total = 0
    for f in job.files:
        st = f.layers.get(MPIIO)
        if st is not None and (not path or f.path == path):
            total += st.indep_reads + st.indep_writes
    return total


def _striping_unit(job, key, value, path) -> str | None:
    if key != "striping_unit":
        return None
    try:
        n = int(value)
    except (TypeError, ValueError):
        return f"striping_unit={value} left out: not a number of bytes"
    if n < LUSTRE_MIN_STRIPE or n % LUSTRE_MIN_STRIPE:
        return (f"striping_unit={n} left out: Lustre's stripe size is a multiple of 64 KiB "
                "(64 KiB at least)")
    return None


def _no_indep_rw(job, key, value, path) -> str | None:
    if key != "romio_no_indep_rw" or str(value).lower() != "true":
        return None
    n = _independent_calls(job, path)
    if not n:
        return None
    where = f"on {path}" if path else "in this run"
    return (f"romio_no_indep_rw=true left out: the program makes {n} independent MPI-IO "
            f"call(s) {where}, which fail on ranks that do not open the file under it")


# Every rule a requested hint must pass: (job, key, value, path) -> the reason
# it is left out, or None.
RULES = (_striping_unit, _no_indep_rw)


def may_stripe_directory(job, directory: str) -> bool:
    """Whether `lfs setstripe` may name this directory: not relative, not
    the root, not a mount point the log lists, and not a top-level directory
    (/scratch, /lus: a file system's root on most machines)."""
    d = os.path.normpath(directory or ".")
    if not d.startswith("/") or d.count("/") < 2:
        return False
    return d not in {os.path.normpath(m) for m, _ in job.mounts}


def check_fixes(job, findings: list) -> list:
    """finalize() with the checks of the module docstring around it."""
    for finding in findings:
        _vet_requests(job, finding)
    findings = finalize(job, findings)
    _vet_outside_plan(job, findings)
    return findings


def _note(finding, reasons: list[str]) -> None:
    if not reasons:
        return
    finding.evidence.setdefault("left_out_of_fixes", []).extend(reasons)
    finding.message += " (fixes checked against the log: " + "; ".join(reasons) + ")"


def _vet_requests(job, finding) -> None:
    kept, reasons = [], []
    for fix in finding.fixes:
        if fix.kind == "hints":
            for key, value in list(fix.hints.items()):
                reason = next((r for rule in RULES if (r := rule(job, key, value, fix.path))),
                              None)
                if reason:
                    del fix.hints[key]
                    reasons.append(reason)
            if not fix.hints:
                continue
        kept.append(fix)
    finding.fixes = kept
    _note(finding, reasons)


# ------------------------------------------- fixes written outside the plan

EXPORT = re.compile(r'^export AGGIO_HINTS="(.*)"$')
OUTSIDE_QUOTES = r"{}(?=(?:[^#]*#[^#]*#)*[^#]*$)"


def parse_aggio_hints(text: str) -> list[tuple[str, dict]]:
    """[(pattern, {key: value})] of an `export AGGIO_HINTS="..."` line (values
    quoted #...# keep their ':' and ','); [] for any other text."""
    m = EXPORT.match(text.strip())
    if not m:
        return []
    out = []
    for entry in re.split(OUTSIDE_QUOTES.format(","), m.group(1)):
        pattern, *pairs = re.split(OUTSIDE_QUOTES.format(":"), entry)
        hints = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            hints[key] = value.strip("#")
        out.append((pattern, hints))
    return out


def _vet_outside_plan(job, findings) -> None:
    plan = job.__dict__.get("fix_plan")
    agreed = {}
    for pattern, hints in plan.entries() if plan else []:
        for key, value in hints.items():
            agreed[(pattern, key)] = str(value)
    for finding in findings:
        kept, reasons = [], []
        for fix in finding.fixes:
            clash = _clash(agreed, parse_aggio_hints(fix.text)) if fix.kind == "aggio-hints" \
                else None
            if clash:
                reasons.append(f"{fix.label or 'an AGGIO_HINTS line'} left out: {clash}")
                continue
            kept.append(fix)
        finding.fixes = kept
        _note(finding, reasons)


def _clash(agreed: dict, entries) -> str | None:
    """The first key an entry sets otherwise than the report already does for
    the same pattern (or for every file, "*"); records the entry's values."""
    for pattern, hints in entries:
        for key, value in hints.items():
            for scope in {pattern, "*"} if pattern != "*" else {"*"}:
                other = agreed.get((scope, key))
                if other is not None and other != value:
                    return f"{key}={value} for {pattern}, where the report gives {key}={other}"
    for pattern, hints in entries:
        for key, value in hints.items():
            agreed.setdefault((pattern, key), value)
    return None


__all__ = ["RULES", "check_fixes", "may_stripe_directory", "parse_aggio_hints"]
