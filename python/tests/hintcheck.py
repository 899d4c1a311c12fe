"""Parsing hint strings back through aggio's own C parser (the
aggio_hints_parse program, tests/tools/hints_parse.c), not a Python copy of
it: what the report prints must be what the library reads."""
from __future__ import annotations

import os
import re
import subprocess
import tempfile

from paths import HINTS_PARSE

EXPORT = re.compile(r'^export (AGGIO_HINTS|MPICH_MPIIO_HINTS)="(.*)"$')


def _run(args) -> list[tuple[str, str, str]]:
    proc = subprocess.run([HINTS_PARSE, *args], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0, f"aggio's parser rejects {args}: {proc.stderr.strip()}"
    return [tuple(line.split("\t", 2)) for line in proc.stdout.splitlines()]


def parse_env(spec: str, path: str, cray: bool = False) -> dict:
    """key -> canonical value, as aggio reads AGGIO_HINTS=spec (with cray,
    MPICH_MPIIO_HINTS=spec: the first matching entry only) for `path`;
    every pair must be a known hint with a valid value."""
    out = {}
    for key, value, status in _run(["cray" if cray else "env", spec, path]):
        assert status.startswith("ok "), f"{key}={value}: {status}"
        out[key] = status[3:]
    return out


def parse_file(text: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".hints", delete=False) as f:
        f.write(text + "\n")
    try:
        out = {}
        for key, value, status in _run(["file", f.name]):
            assert status.startswith("ok "), f"{key} {value}: {status}"
            out[key] = status[3:]
        return out
    finally:
        os.unlink(f.name)


def canonical(hints: dict) -> dict:
    """The values as aggio reports them (sizes in bytes, ...), for comparing."""
    spec = "*:" + ":".join(f"{k}={'#' + str(v) + '#' if ':' in str(v) else v}"
                           for k, v in hints.items())
    return parse_env(spec, "/any/file")


def parse_fix(kind: str, text: str, path: str) -> dict:
    """The hints one fix sets for `path`, as aggio's parser reads them."""
    if kind == "romio-hints":
        return parse_file(text)
    m = EXPORT.match(text)
    assert m, f"not an export line: {text!r}"
    return parse_env(m.group(2), path, cray=m.group(1) == "MPICH_MPIIO_HINTS")


def check_report_hints(findings) -> dict:
    """Parses every hint fix of a report through aggio's parser, for the file
    each is about; asserts that no two fixes give one file two values (a
    job-wide fix or a hints file covers every file).  Returns
    {file: {key: value}} ("*" for the job-wide ones)."""
    seen: dict = {}
    for f in findings:
        path = f.subject if f.subject.startswith("/") else "*"
        for x in f.fixes:
            if x.kind not in ("aggio-hints", "cray-hints", "romio-hints"):
                continue
            scope = "*" if x.kind == "romio-hints" else path
            got = parse_fix(x.kind, x.text, path if path != "*" else "/any/file")
            for key, value in got.items():
                seen.setdefault(scope, {}).setdefault(key, value)
                assert seen[scope][key] == value, f"{f.code}: {key}={value} vs {seen[scope][key]}"
    for scope, hints in seen.items():
        for key, value in hints.items():
            for other, theirs in seen.items():
                if "*" in (scope, other) and key in theirs:
                    assert theirs[key] == value, f"{key}: {value} for {scope}, {theirs[key]} for {other}"
    return seen
