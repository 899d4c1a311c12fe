"""argparse value types shared by the subcommands (each raises
argparse.ArgumentTypeError, so a bad value is a usage error, exit 2)."""
from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def parse_size(text: str) -> int:
    """A byte count, with an optional k, m or g suffix (powers of 1024)."""
    mult = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(text[-1:].lower(), 1)
    try:
        value = int(text[:-1] if mult > 1 else text) * mult
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 256m)") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text} is not positive")
    return value


def _range(text: str, kind, what: str):
    first, sep, last = text.partition(":")
    if not sep:
        raise argparse.ArgumentTypeError(f"{what} wants FIRST:LAST (either may be empty), "
                                         f"got {text!r}")
    try:
        lo = kind(first) if first.strip() else None
        hi = kind(last) if last.strip() else None
    except ValueError:
        raise argparse.ArgumentTypeError(f"{what}: {text!r} is not FIRST:LAST") from None
    if lo is not None and hi is not None and hi < lo:
        raise argparse.ArgumentTypeError(f"{what}: {text!r} ends before it starts")
    return lo, hi


def time_range(text: str):
    """`START:END` in seconds, either side may be empty."""
    return _range(text, float, "--time")


def rank_range(text: str):
    """`FIRST:LAST` ranks, inclusive, either side may be empty."""
    lo, hi = _range(text, int, "--ranks")
    if (lo is not None and lo < 0) or (hi is not None and hi < 0):
        raise argparse.ArgumentTypeError(f"--ranks: {text!r} has a negative rank")
    return lo, hi
