"""Every threshold the findings use, in one place.

Override with `--threshold NAME=VALUE` (repeatable) or `--thresholds FILE`
(JSON or TOML with NAME = VALUE pairs).  Defaults follow Drishti's where
Drishti has one, so that the two tools can be compared on the same logs.
"""
from __future__ import annotations

import json
import tomllib

# name: (default, meaning)
DEFAULTS: dict[str, tuple[float, str]] = {
    "small_request_bytes": (1 << 20, "a request below this many bytes is small"),
    "small_request_fraction": (0.1, "small requests above this fraction of requests"),
    "small_request_min": (1000, "... and above this many small requests"),
    "misaligned_fraction": (0.1, "misaligned requests above this fraction"),
    "random_fraction": (0.2, "random (non-sequential) requests above this fraction"),
    "random_min": (1000, "... and above this many random requests"),
    "redundant_fraction": (0.1, "bytes moved above (1 + this) x distinct bytes"),
    "redundant_min_bytes": (1 << 20, "... and at least this many redundant bytes"),
    "dominant_rank_fraction": (0.5, "one rank moves above this fraction of a shared file"),
    "dominant_min_ranks": (4, "... of a file opened by at least this many ranks"),
    "imbalance_fraction": (0.3, "per-rank bytes differ by above this fraction of the max"),
    "straggler_ratio": (1.5, "a rank is a straggler above this x the median I/O time"),
    "straggler_min_seconds": (0.5, "... and above the median by this many seconds (what the "
                                   "job waits for it)"),
    "collective_fraction": (0.5, "independent MPI-IO calls above this fraction"),
    "collective_min": (1000, "... and above this many independent calls"),
    "collective_small_min": (64, "... or this many small independent calls on a shared file"),
    "blocking_min_ops": (1, "blocking MPI-IO calls needed for the non-blocking advice"),
    "stdio_fraction": (0.1, "STDIO above this fraction of bytes"),
    "metadata_rank_seconds": (30.0, "metadata time of one rank above this many seconds"),
    "metadata_fraction": (0.3, "metadata above this fraction of I/O time ..."),
    "metadata_min_seconds": (1.0, "... and above this many seconds in all"),
    "stripe_min_bytes": (1 << 30, "shared files above this size want more than one stripe"),
    "overhead_min_seconds": (1.0, "MPI-IO seconds per rank beyond POSIX (own, or the busiest "
                                  "aggregator's under collective I/O) above this"),
    "overhead_fraction": (0.5, "... and above this fraction of the MPI-IO time"),
    "rmw_min_bytes": (1 << 20, "read-modify-write reads beneath MPI-IO writes above this many bytes"),
    # Severity follows cost (issue 26): seconds per rank a finding costs the job.
    "cost_high_seconds": (1.0, "HIGH: the finding costs at least this many seconds per rank ..."),
    "cost_high_share": (0.25, "... and at least this fraction of the job's I/O time per rank"),
    "cost_warn_seconds": (0.1, "WARN: at least this many seconds per rank ..."),
    "cost_warn_share": (0.05, "... and at least this fraction of the I/O time (else INFO)"),
    "min_io_seconds": (1.0, "no HIGH finding on a job with less I/O time per rank than this ..."),
    "min_io_bytes": (16 << 20, "... or fewer bytes than this"),
    "top_findings": (3, "the report's top lists this many findings, costliest first"),
    "rmw_time_fraction": (0.25, "... or: those reads take above this fraction of the POSIX time "
                                "on the file ..."),
    "rmw_min_reads": (1000, "... and number above this many, or cost above rmw_min_seconds"),
    "rmw_min_seconds": (1.0, "seconds of read-modify-write on the busiest rank that count"),
    "write_amp_ratio": (1.5, "POSIX bytes written above this x the MPI-IO bytes written ..."),
    "write_amp_min_bytes": (1 << 20, "... and at least this many bytes beyond them"),
    "rmw_call_fraction": (0.1, "one collective write above this fraction of the run ..."),
    "rmw_call_read_ratio": (1.0, "... whose aggregators read above this x the bytes it wrote"),
    "phase_gap_fraction": (0.02, "idle gap (fraction of the run) that separates I/O phases"),
    "max_plot_points": (200_000, "above this many operations the timeline is aggregated"),
}


class Thresholds(dict):
    """The defaults, with overrides applied; reads like a dict of numbers."""

    def __init__(self, overrides: dict | None = None):
        super().__init__({k: v for k, (v, _) in DEFAULTS.items()})
        for key, value in (overrides or {}).items():
            self.set(key, value)

    def set(self, key: str, value) -> None:
        if key not in DEFAULTS:
            raise KeyError(f"unknown threshold {key!r}; known: {', '.join(DEFAULTS)}")
        self[key] = type(DEFAULTS[key][0])(float(value))


def parse_pairs(pairs: list[str]) -> dict:
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--threshold wants NAME=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def load_file(path: str) -> dict:
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".toml"):
        return tomllib.loads(data.decode())
    return json.loads(data)


def from_args(pairs: list[str] | None, path: str | None) -> Thresholds:
    overrides = load_file(path) if path else {}
    overrides.update(parse_pairs(pairs or []))
    return Thresholds(overrides)


def add_arguments(parser) -> None:
    parser.add_argument("--threshold", action="append", metavar="NAME=VALUE",
                        help="override one threshold (see `aggio advise --list-thresholds`)")
    parser.add_argument("--thresholds", metavar="FILE",
                        help="JSON or TOML file of threshold overrides")
