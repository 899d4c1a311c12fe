"""Writes a synthetic aggio trace with N operations (default 1,000,000) for
the report benchmark (docs/report-benchmark.md): 64 ranks, collective
writes, 8 aggregators."""
import argparse
import sys

import numpy as np

from aggio import trace as fmt


def make(path: str, n: int = 1_000_000, nranks: int = 64) -> None:
    rng = np.random.default_rng(0)
    rec = fmt.make_records(n)
    rank = np.arange(n) % nranks
    step = np.arange(n) // nranks
    posix = (rank % 8 == 0) & (step % 2 == 1)          # aggregators' pwrites
    rec["rank"] = rank
    rec["t_start"] = step * 1e-4 + rng.random(n) * 2e-5
    rec["t_end"] = rec["t_start"] + 5e-5 + rng.exponential(2e-5, n)
    rec["op"] = np.where(posix, fmt.OP["pwrite"], fmt.OP["write_at_all"])
    rec["flags"] = np.where(posix, fmt.FLAG_POSIX_AGGREGATOR, fmt.FLAG_API_COLLECTIVE)
    rec["length"] = np.where(posix, 8 * 65536, 65536)
    rec["type_size"] = np.where(posix, 0, 1)
    rec["offset"] = step * nranks * 65536 + rank * 65536
    fmt.write_trace(path, rec, nranks, {"path": "/lustre/bench/out.dat",
                                        "aggregators": list(range(0, nranks, 8)),
                                        "hints": {"striping_factor": "8"}})


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="make_trace.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="trace file to write")
    parser.add_argument("ops", nargs="?", type=int, default=1_000_000,
                        help="number of operations (default 1000000)")
    parser.add_argument("--ranks", type=int, default=64, help="ranks (default 64)")
    args = parser.parse_args(argv)
    if args.ops <= 0 or args.ranks <= 0:
        parser.error("ops and --ranks must be positive")
    make(args.output, args.ops, args.ranks)
    return 0


if __name__ == "__main__":
    sys.exit(main())
