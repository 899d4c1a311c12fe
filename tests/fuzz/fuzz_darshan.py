#!/usr/bin/env python3
"""Atheris target for the Python tool's Darshan log reader: aggio.sources.
load_jobs on one file, as `aggio advise` and `aggio report` read it (the
header checks of darshan_layout, then libdarshan-util in a child process).

A damaged log must end in InputError (the tool's "cannot read" message and
exit status 1) or in a Job that satisfies fuzz_trace.check_job.  A finding
is: this process crashing, an input taking more than 10 s (libdarshan-util
looping: the child is only given up after darshan_isolated's much longer
timeout), an exception other than InputError, or an InputError that hides
an unexpected exception in aggio's own reading code (ReaderBug).  A crash of
libdarshan-util inside the child is the case the child is there for, and is
not a finding, unless AGGIO_FUZZ_LIBRARY_CRASHES=1 (exploratory runs that
look for inputs worth a check in darshan_layout.py).

  python tests/fuzz/fuzz_darshan.py [libFuzzer options] [corpus dirs]
  python tests/fuzz/fuzz_darshan.py --replay FILE_OR_DIR...   (no atheris needed)
"""
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fuzz_trace  # noqa: E402  (check_job, replay, the scratch folder)

LIBRARY_CRASHES = os.environ.get("AGGIO_FUZZ_LIBRARY_CRASHES") == "1"


def _library_crash(text: str) -> None:
    """In exploratory runs, a libdarshan-util crash that no check of
    darshan_layout explains is a finding."""
    explained = "its header is damaged (" in text
    if LIBRARY_CRASHES and ("crashed (" in text or "hung (" in text) and not explained:
        raise AssertionError(f"libdarshan-util: {text}")


def one_input(data: bytes) -> None:
    from aggio.sources import InputError, load_jobs
    from aggio.sources.darshan_isolated import ReaderBug
    fd, path = tempfile.mkstemp(prefix="aggio-fuzz-darshan-", suffix=".darshan",
                                dir=fuzz_trace.SCRATCH)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        try:
            jobs = load_jobs([path])
        except InputError as exc:
            if isinstance(exc.__cause__, ReaderBug):
                raise AssertionError(str(exc.__cause__)) from exc
            _library_crash(str(exc))
            return
        for job in jobs:
            _library_crash(" ".join(job.damaged))
            if not job.empty:          # a log with no records is a valid log
                fuzz_trace.check_job(job)
    finally:
        os.unlink(path)


def main(argv):
    if len(argv) > 1 and argv[1] == "--replay":
        return fuzz_trace.replay(argv[2:], one_input)
    import atheris
    with atheris.instrument_imports(include=["aggio"]):
        import aggio.sources  # noqa: F401  (instrumented for coverage)
        import aggio.sources.darshan  # noqa: F401
        import aggio.sources.darshan_isolated  # noqa: F401
        import aggio.sources.darshan_layout  # noqa: F401
    atheris.Setup(argv, one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
