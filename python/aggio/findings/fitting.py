"""Fitting each fix to the run, and making the fixes of one report agree.

Checks state what they would change (hint and striping requests, code
snippets with the interfaces they need); finalize() then, over all the
findings of one job, most severe first:

* drops fixes for interfaces the run did not use (ROMIO hints for a
  POSIX-only program, HDF5 calls where there is no HDF5, "use collective
  calls" where the calls are collective already);
* gives each hint one value in the whole report: a later finding that wants
  another value for the same key shows the agreed one, and says so;
* gives each file one stripe layout, written for its directory when every
  file of the job there gets the same, else for the file itself;
* writes hint requests out in the three forms (hintforms.py).
"""
from __future__ import annotations

import os

from .. import hintforms
from ..model import MPIIO, POSIX, STDIO
from .base import FIX_LABELS, Fix, lfs_size

HDF5_MODULES = {"H5F", "H5D"}
PNETCDF_MODULES = {"PNETCDF", "PNETCDF_FILE", "PNETCDF_VAR"}


def file_uses(job, f) -> frozenset:
    """Interfaces the run used for one file (plus the job-wide ones)."""
    out = set(_job_wide(job))
    api = f.layers.get(MPIIO)
    if api is not None and (api.ops or api.opens):
        out.add("mpiio")
        if api.coll_reads + api.coll_writes:
            out.add("collective")
        if api.indep_reads + api.indep_writes:
            out.add("independent")
    elif f.layers.get(STDIO) is not None and f.layers[STDIO].ops:
        out.add("stdio")
    elif f.layers.get(POSIX) is not None:
        out.add("posix-only")
    if f.stripe_count or job.fstype == "lustre" or "LUSTRE" in job.modules:
        out.add("lustre")
    return frozenset(out)


def job_uses(job) -> frozenset:
    out = set(_job_wide(job))
    for f in job.files:
        out |= file_uses(job, f)
    if "mpiio" in out:
        out.discard("posix-only")
    return frozenset(out)


def _job_wide(job) -> set:
    out = set()
    if job.kind == "aggio-trace":
        out.add("aggio")
    if job.modules & HDF5_MODULES:
        out.add("hdf5")
    if job.modules & PNETCDF_MODULES:
        out.add("pnetcdf")
    return out


class Plan:
    """The hint values and stripe layouts agreed so far in one report."""

    def __init__(self, job):
        self.job = job
        self.hints: dict = {}      # key -> (value, code that set it)
        self.stripes: dict = {}    # path -> (count, size, code)

    def agree_hints(self, hints: dict, code: str) -> tuple[dict, list[str]]:
        agreed, notes = {}, []
        for key, value in hints.items():
            if key in self.hints and str(self.hints[key][0]) != str(value):
                first, by = self.hints[key]
                notes.append(f"{key}={first} as {by} gives (one value per report)")
                value = first
            else:
                self.hints.setdefault(key, (value, code))
            agreed[key] = value
        return agreed, notes

    def agree_stripes(self, path: str, count: int, size: int, code: str) -> None:
        self.stripes.setdefault(path, (count, size, code))

    def combined(self) -> dict:
        return {k: v for k, (v, _) in self.hints.items()}


def finalize(job, findings: list) -> list:
    """Fits, agrees and writes out the fixes of `findings` (sorted most
    severe first); returns them, with job.__dict__["fix_plan"] set."""
    plan = Plan(job)
    files = {f.path: f for f in job.files}
    pending = []
    for finding in findings:
        subject = files.get(finding.subject)
        uses = file_uses(job, subject) if subject is not None else job_uses(job)
        fixes = []
        for fix in finding.fixes:
            if not fix.needs <= uses:
                continue
            if fix.kind == "hints":
                fixes += _hint_forms(plan, fix, finding.code, uses)
            elif fix.kind == "lustre":
                if "lustre" in uses and fix.path in files:
                    plan.agree_stripes(fix.path, *fix.lustre, finding.code)
                    fixes.append(fix)
                    pending.append((fix, finding.code))
            else:
                fixes.append(fix)
        finding.fixes = fixes
    _write_lustre(plan, pending)
    job.__dict__["fix_plan"] = plan
    return findings


def _hint_forms(plan, fix, code, uses) -> list[Fix]:
    if not ({"mpiio", "aggio"} & uses):
        return []
    hints, notes = plan.agree_hints(fix.hints, code)
    suffix = f" - {'; '.join(notes)}" if notes else ""
    return [Fix(kind, text, label=FIX_LABELS[kind] + suffix)
            for kind, text in hintforms.forms(hints, fix.path)]


def _write_lustre(plan, pending) -> None:
    """Stripe layouts per directory where every file of the job there gets
    the same one, else per file; the size follows an agreed striping_unit."""
    unit = plan.hints.get("striping_unit", (0, ""))[0]
    by_dir: dict = {}
    for f in plan.job.files:
        by_dir.setdefault(os.path.dirname(f.path) or ".", []).append(f.path)
    for fix, asked_by in pending:
        count, size, code = plan.stripes[fix.path]
        size = int(unit) if unit else size
        directory = os.path.dirname(fix.path) or "."
        layouts = {plan.stripes.get(p, (None, None, None))[:2] for p in by_dir[directory]}
        size_opt = f" -S {lfs_size(size)}" if size else ""
        if len(layouts) == 1:
            fix.text = f"lfs setstripe -c {count}{size_opt} {directory}"
            fix.label = f"Lustre striping for new files in {directory} (before they are created)"
        else:
            fix.text = f"lfs setstripe -c {count}{size_opt} {fix.path}"
            fix.label = ("Lustre striping of this file: creates it empty with this layout "
                         "(before the program creates it)")
        if code != asked_by:
            fix.label += f" - as {code} gives (one layout per file)"
        fix.lustre = (count, size)
