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
    elif f.layers.get(POSIX) is not None and not out & {"hdf5", "pnetcdf"}:
        out.add("posix-only")    # the program's own POSIX calls, not a library's
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
    """The hint values and stripe layouts agreed so far in one report.

    A hint is agreed per scope: a file's path, or "*" (every file).  Two
    requests for the same key whose scopes overlap ("*" overlaps every file)
    get the first one's value.  A hints file applies to every file, so it
    carries only the keys that have one value in the whole report."""

    def __init__(self, job):
        self.job = job
        self.hints: dict = {}      # (scope, key) -> (value, code that set it)
        self.stripes: dict = {}    # path -> (count, size, code)

    def agree_hints(self, hints: dict, path: str, code: str) -> tuple[dict, list[str]]:
        scope = path or "*"
        agreed, notes = {}, []
        for key, value in hints.items():
            first = next(((v, by) for (s, k), (v, by) in self.hints.items()
                          if k == key and (s == scope or "*" in (s, scope))), None)
            if first is not None and str(first[0]) != str(value):
                notes.append(f"{key}={first[0]} as {first[1]} gives (one value per file)")
                value = first[0]
            self.hints.setdefault((scope, key), (value, code))
            agreed[key] = value
        return agreed, notes

    def agree_stripes(self, path: str, count: int, size: int, code: str) -> None:
        self.stripes.setdefault(path, (count, size, code))

    def entries(self) -> list[tuple[str, dict]]:
        """[(pattern, hints)] for AGGIO_HINTS / MPICH_MPIIO_HINTS: every file
        first, then each file's own."""
        out: dict = {}
        for (scope, key), (value, _) in sorted(self.hints.items(), key=lambda kv: kv[0][0] != "*"):
            out.setdefault(scope, {})[key] = value
        return [(hintforms.pattern_for(s) if s != "*" else "*", h) for s, h in out.items()]

    def single_valued(self) -> dict:
        """Keys with one value in the whole report (what a hints file may hold)."""
        values: dict = {}
        for (_, key), (value, _) in self.hints.items():
            values.setdefault(key, set()).add(str(value))
        return {key: next(v for (_, k), (v, _) in self.hints.items() if k == key)
                for key, vals in values.items() if len(vals) == 1}

    def for_file(self, path: str) -> dict:
        """The hints that apply to one file."""
        out = {}
        for (scope, key), (value, _) in self.hints.items():
            if scope in ("*", path):
                out[key] = value
        return out

    def combined(self) -> dict:
        """key -> value for the hints with one value in the whole report."""
        return self.single_valued()

    def forms(self) -> list[tuple[str, str]]:
        """All the report's hints at once: [(kind, text)] in the three forms
        (the hints file with the keys that have one value)."""
        entries = self.entries()
        if not entries:
            return []
        out = [("aggio-hints", f'export AGGIO_HINTS="{hintforms.env_value(entries)}"')]
        cray = hintforms.env_value(entries, cray=True)
        if cray:
            out.append(("cray-hints", f'export MPICH_MPIIO_HINTS="{cray}"'))
        if self.single_valued():
            out.append(("romio-hints", hintforms.file_text(self.single_valued())))
        return out


def finalize(job, findings: list) -> list:
    """Fits, agrees and writes out the fixes of `findings` (sorted most
    severe first); returns them, with job.__dict__["fix_plan"] set."""
    plan = Plan(job)
    files = {f.path: f for f in job.files}
    pending_hints, pending_lustre = [], []
    stripes = _stripe_counts(job, findings, files)
    for finding in findings:
        subject = files.get(finding.subject)
        uses = file_uses(job, subject) if subject is not None else job_uses(job)
        fixes = []
        for fix in finding.fixes:
            if not fix.needs <= uses:
                continue
            if fix.kind == "hints":
                if {"mpiio", "aggio"} & uses:
                    _fit_cb_nodes(fix, stripes)
                    fix.hints, fix.label = plan.agree_hints(fix.hints, fix.path, finding.code)
                    fixes.append(fix)
                    pending_hints.append(fix)
            elif fix.kind == "lustre":
                if "lustre" in uses and fix.path in files:
                    plan.agree_stripes(fix.path, *fix.lustre, finding.code)
                    fixes.append(fix)
                    pending_lustre.append((fix, finding.code))
            else:
                fixes.append(fix)
        finding.fixes = fixes
    for finding in findings:
        finding.fixes = [out for fix in finding.fixes
                         for out in (_hint_forms(plan, fix) if fix.kind == "hints" else [fix])]
    _write_lustre(plan, pending_lustre)
    job.__dict__["fix_plan"] = plan
    return findings


def _stripe_counts(job, findings, files) -> dict:
    """path -> the stripe count the file will have: the first `lfs setstripe`
    the report gives for it (as Plan.agree_stripes keeps the first), else
    the count the log shows."""
    counts = {p: f.stripe_count for p, f in files.items() if f.stripe_count}
    asked: dict = {}
    for finding in findings:
        for fix in finding.fixes:
            if fix.kind == "lustre" and fix.path in files:
                asked.setdefault(fix.path, fix.lustre[0])
    counts.update(asked)
    return counts


def _fit_cb_nodes(fix, stripes) -> None:
    """cb_nodes for a striped file: a multiple or a divisor of the stripe
    count the file gets (the rule AGG-AGGREGATORS checks), whichever finding
    asks for it."""
    count = stripes.get(fix.path, 0)
    want = fix.hints.get("cb_nodes")
    if not count or want is None:
        return
    want = int(want)
    if want % count == 0 or count % want == 0:
        return
    fix.hints["cb_nodes"] = want - want % count if want > count else \
        max(d for d in range(1, want + 1) if count % d == 0)


def _hint_forms(plan, fix) -> list[Fix]:
    """The three forms of one agreed hint request; the hints file (every
    file) leaves out keys that another file of the report sets otherwise."""
    notes = list(fix.label)
    shared = plan.single_valued()
    left_out = [k for k in fix.hints if k not in shared]
    if left_out:
        notes.append(f"the hints file leaves out {', '.join(left_out)}: it would apply to "
                     "every file, and other files of this report need other values")
    suffix = f" - {'; '.join(notes)}" if notes else ""
    out = []
    for kind, text in hintforms.forms(fix.hints, fix.path):
        if kind == "romio-hints":
            kept = {k: v for k, v in fix.hints.items() if k in shared}
            if not kept:
                continue
            text = hintforms.file_text(kept)
        out.append(Fix(kind, text, label=FIX_LABELS[kind] + suffix))
    return out


def _write_lustre(plan, pending) -> None:
    """Stripe layouts per directory where every file of the job there gets
    the same one, else per file; the size follows an agreed striping_unit."""
    by_dir: dict = {}
    for f in plan.job.files:
        by_dir.setdefault(os.path.dirname(f.path) or ".", []).append(f.path)
    for fix, asked_by in pending:
        count, size, code = plan.stripes[fix.path]
        unit = plan.for_file(fix.path).get("striping_unit")
        size = int(unit) if unit else size
        directory = os.path.dirname(fix.path) or "."
        layouts = {plan.stripes.get(p, (None, None, None))[:2] for p in by_dir[directory]}
        size_opt = f" -S {lfs_size(size)}" if size else ""
        from .vetting import may_stripe_directory   # never a file system's root
        if len(layouts) == 1 and may_stripe_directory(plan.job, directory):
            fix.text = f"lfs setstripe -c {count}{size_opt} {directory}"
            fix.label = f"Lustre striping for new files in {directory} (before they are created)"
        else:
            fix.text = f"lfs setstripe -c {count}{size_opt} {fix.path}"
            fix.label = ("Lustre striping of this file: creates it empty with this layout "
                         "(before the program creates it)")
        if code != asked_by:
            fix.label += f" - as {code} gives (one layout per file)"
        fix.lustre = (count, size)
