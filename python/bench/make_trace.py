"""Writes a synthetic aggio trace with N operations (default 1,000,000) for
the report benchmark: 64 ranks, collective writes, 8 aggregators."""
import sys

import numpy as np

from aggio import trace as fmt


def main(path: str, n: int = 1_000_000, nranks: int = 64) -> None:
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


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000)
