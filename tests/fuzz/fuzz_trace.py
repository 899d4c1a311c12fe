#!/usr/bin/env python3
"""Atheris (coverage-guided, libFuzzer's engine) target for the Python tool's
trace reader: aggio.sources.load_jobs on one file, as `aggio advise` and
`aggio report` read it.

A damaged or foreign file must end in InputError (the tool's "cannot read"
message and exit status 1), or in a Job whose operations are all within what
the format allows; any other exception, a crash or a hang is a finding.

  python tests/fuzz/fuzz_trace.py [libFuzzer options] [corpus dirs]
  python tests/fuzz/fuzz_trace.py --replay FILE_OR_DIR...   (no atheris needed)
"""
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

# Each input is a file of its own, unlinked after the check: no directory
# is made, because libFuzzer ends the process without running Python's exit
# handlers, and one would be left behind by every run.
SCRATCH = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()


def check_job(job):
    """What every job the reader returns must satisfy."""
    from aggio.model import KIND_NAMES, LAYER_NAMES
    ops = job.ops
    assert job.nprocs >= 0 and len(job.files) >= 1
    if len(ops) == 0:
        return
    assert np.isfinite(ops["t_start"]).all() and np.isfinite(ops["t_end"]).all()
    assert (ops["t_end"] >= ops["t_start"]).all()
    assert (ops["rank"] >= 0).all() and (ops["rank"] < max(job.nprocs, 1)).all()
    assert (ops["length"] >= 0).all() and (ops["offset"] >= -1).all()
    assert (ops["file"] >= 0).all() and (ops["file"] < len(job.files)).all()
    assert set(np.unique(ops["kind"])) <= set(KIND_NAMES)
    assert set(np.unique(ops["layer"])) <= set(LAYER_NAMES)


def one_input(data: bytes) -> None:
    from aggio.sources import InputError, load_jobs
    fd, path = tempfile.mkstemp(prefix="aggio-fuzz-trace-", dir=SCRATCH)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            jobs = load_jobs([path])
        except InputError:
            return
        for job in jobs:
            check_job(job)
    finally:
        os.unlink(path)


def replay(paths, target=None) -> int:
    """Runs target (this file's one_input by default) on every file of
    paths (files or folders): the corpus as a regression test."""
    target = target or one_input
    files = []
    for p in paths:
        files += ([os.path.join(p, n) for n in sorted(os.listdir(p))]
                  if os.path.isdir(p) else [p])
    for name in files:
        with open(name, "rb") as f:
            target(f.read())
    print(f"{len(files)} inputs replayed")
    return 0 if files else 1


def main(argv):
    if len(argv) > 1 and argv[1] == "--replay":
        return replay(argv[2:])
    import atheris
    with atheris.instrument_imports(include=["aggio"]):
        import aggio.sources  # noqa: F401  (instrumented for coverage)
        import aggio.sources.trace  # noqa: F401
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
