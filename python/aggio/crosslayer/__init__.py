"""Cross-layer analysis: what a file's MPI-IO calls caused at the POSIX layer.

Under collective buffering (ROMIO's two-phase I/O, aggio's two_phase) the
ranks that call MPI-IO are not the ranks that call POSIX: a few aggregators
gather the data and write it in rounds of cb_buffer_size bytes, and may read
first to fill holes (read-modify-write).  This module recovers that from the
evidence a log has, best first:

* per-operation data (aggio traces; Darshan DXT): each POSIX call is
  attributed to the MPI-IO call of the same rank that was running when it
  ran; collective calls are matched across ranks by their order (the k-th
  collective call of every rank on a file is the same call);
* per-rank counter records (Darshan without DXT, unreduced files);
* a summary record (Darshan's rank -1 record of a shared file, which sums
  every rank): only what the fastest/slowest rank fields allow.  Its times
  are sums over ranks, so they are divided by the rank count before they are
  compared with anything per rank.

Nothing here decides what is a problem: findings/layers.py does.
"""

from .aggregators import Aggregators, aggregators
from .amplification import (CallReads, RmwCost, WriteAmplification, rmw_calls, rmw_cost,
                            write_amplification)
from .calls import (CallTable, CollectiveCall, call_ops, call_table, collective_call,
                    collective_calls, collective_ordinals, last_finishers, make_call)
from .common import collective, containing, file_ops, mpiio_callers, posix_missing
from .overhead import Overhead, mpiio_overhead
from .reads import PosixReads, posix_reads

__all__ = ["Aggregators", "aggregators", "CallTable", "CollectiveCall", "call_ops",
           "call_table", "collective_call", "collective_calls", "collective_ordinals",
           "last_finishers", "make_call", "collective", "containing", "file_ops",
           "mpiio_callers", "posix_missing", "Overhead", "mpiio_overhead", "PosixReads",
           "posix_reads", "CallReads", "RmwCost", "WriteAmplification", "rmw_calls",
           "rmw_cost", "write_amplification"]
