"""Reads a Darshan log in a child process, so that a log which crashes or
hangs libdarshan-util costs that log, not the tool.

libdarshan-util (C, loaded by PyDarshan through cffi) trusts the lengths
and offsets a log holds: a damaged log can make it abort, segfault or loop.
darshan_layout checks what is cheap to check first; this module runs the
rest (darshan.load_darshan) in a forked child that sends back the Job.  The
child announces each step ("header", then each module) before taking it;
when it dies or stops answering, the step it was in is known:

  - in the header, job or name records: the log cannot be read (DarshanError);
  - in a module: the log is read again without that module, and the job
    says which module was lost and why (job.damaged).

Where fork is not available the log is read in this process, as before.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import signal
import traceback

from ..model import Job
from .darshan import DarshanError, checked_layout, load_darshan

# Seconds a step may take before the child is taken to hang: generous, since
# a big DXT module is legitimately slow to read (AGGIO_DARSHAN_TIMEOUT sets it).
BASE_TIMEOUT = 60.0
PER_MIB = 30.0


class ReaderBug(DarshanError):
    """aggio's own reading code raised an unexpected exception on this log
    (reported as an unreadable log; the fuzz pass treats it as a finding)."""


def step_timeout(path: str) -> float:
    env = os.environ.get("AGGIO_DARSHAN_TIMEOUT")
    if env:
        return float(env)
    return BASE_TIMEOUT + PER_MIB * os.path.getsize(path) / 2**20


def load_darshan_isolated(path: str, timeout: float | None = None) -> Job:
    """The Job of one log, read in a child process (raises DarshanError)."""
    layout = checked_layout(path)     # here: a foreign or cut file needs no child
    if "fork" not in multiprocessing.get_all_start_methods():
        return load_darshan(path)
    timeout = step_timeout(path) if timeout is None else timeout
    skipped: dict[str, str] = {}
    while True:
        kind, value, step = _run_child(path, frozenset(skipped), timeout)
        if kind == "job":
            return _with_losses(path, value, skipped)
        if kind == "error":
            raise DarshanError(value)
        if kind == "bug":
            raise ReaderBug(f"{path}: aggio could not read this log (internal error, "
                            f"please report it): {value}")
        # the child died or hung in `step`
        if step in (None, "header") or step in skipped:
            why = f"its header is damaged ({layout.map_damage}); " if layout.map_damage else ""
            raise DarshanError(f"{path}: damaged Darshan log: {why}libdarshan-util {value} "
                               "reading its header, job or file-name records")
        skipped[step] = value


def _with_losses(path, job, skipped) -> Job:
    job.damaged += [f"reading the {mod} records {why} in libdarshan-util; they were "
                    "left out" for mod, why in skipped.items()]
    if skipped and job.empty:
        raise DarshanError(f"{path}: damaged Darshan log, nothing could be read: "
                           + "; ".join(job.damaged))
    return job


def _run_child(path, skip, timeout):
    """("job", Job, step), ("error" | "bug", message, step) or
    ("died", what happened, step it happened in)."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, path, skip), daemon=True)
    child.start()
    send.close()
    step = None
    try:
        while True:
            if not receive.poll(timeout):
                child.kill()
                return "died", f"hung (no progress in {timeout:g} s)", step
            try:
                kind, value = pickle.loads(receive.recv_bytes())
            except (EOFError, OSError):
                child.join()
                return "died", _death(child.exitcode), step
            if kind != "step":
                return kind, value, step
            step = value
    finally:
        receive.close()
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()


def _death(code) -> str:
    if code is not None and code < 0:
        try:
            return f"crashed ({signal.Signals(-code).name})"
        except ValueError:
            return f"crashed (signal {-code})"
    return f"exited (status {code})"


def _child(send, path, skip):
    _default_signals()
    _never_close_logs()
    try:
        job = load_darshan(path, skip, stage=lambda step: _send(send, "step", step))
        _send(send, "job", job)
    except DarshanError as exc:
        _send(send, "error", str(exc))
    except BaseException as exc:   # noqa: BLE001  (sent to the parent, which decides)
        _send(send, "bug", "".join(traceback.format_exception_only(type(exc), exc)).strip()
                   + " at " + _where(exc))
    send.close()
    os._exit(0)   # no destructors: they would close the log again


def _send(conn, kind, value):
    # protocol 5: a job's many small NumPy arrays load several times faster
    conn.send_bytes(pickle.dumps((kind, value), protocol=5))


def _where(exc) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    return f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else "?"


def _default_signals():
    """A crash ends the child by its signal, which the parent reports: the
    handlers it inherits (pytest's faulthandler, libFuzzer's crash handler
    under atheris) would print tracebacks or write crash files for it."""
    import faulthandler
    faulthandler.disable()        # first: it puts back the handlers it replaced
    for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGFPE,
                signal.SIGILL):
        signal.signal(sig, signal.SIG_DFL)


def _never_close_logs():
    """libdarshan-util asserts when it closes a log whose read failed (its
    state was freed by the failure); the child ends with os._exit, so its
    logs need no closing."""
    try:
        from darshan.backend import cffi_backend
    except ImportError:        # load_darshan says what to install
        return
    cffi_backend.log_close = lambda log: None
