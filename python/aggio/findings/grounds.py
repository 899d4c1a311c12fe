"""What each finding rests on, and partial-data discipline (issue 26).

GROUNDS is the one table: per finding code, the layers whose records it
reads, the counters (or DXT/trace operations) it uses, and whether it reads
operations when the log has all of them (Job.ops_complete).  attach() writes
that into every finding (modules, counters, ranks); caveat() then lowers, by
one step, a finding that rests on a module the log marks partial, and says
so.  Analyses that cannot be right on missing records (aggregators, MPI-IO
beyond POSIX) are withheld where they are made (crosslayer.posix_missing).
"""
from __future__ import annotations

from .. import crosslayer as xl
from ..model import COUNTER_MODULE, DXT_MODULE, MPIIO, POSIX, STDIO
from .base import SEVERITIES

# code: (layers, counters, reads operations when complete)
GROUNDS: dict[str, tuple[tuple, tuple, bool]] = {
    "AGG-SMALL-REQ": ((POSIX,), ("POSIX_SIZE_{READ,WRITE}_*", "POSIX_ACCESS1..4_{ACCESS,COUNT}",
                                 "POSIX_READS", "POSIX_WRITES", "POSIX_F_{READ,WRITE}_TIME"), True),
    "AGG-MISALIGNED": ((POSIX,), ("POSIX_FILE_NOT_ALIGNED", "POSIX_MEM_NOT_ALIGNED",
                                  "POSIX_FILE_ALIGNMENT"), False),
    "AGG-RANDOM": ((POSIX,), ("POSIX_SEQ_{READS,WRITES}", "POSIX_READS", "POSIX_WRITES"), False),
    "AGG-REDUNDANT": ((POSIX,), ("POSIX_BYTES_{READ,WRITTEN}", "POSIX_MAX_BYTE_{READ,WRITTEN}"),
                      True),
    "AGG-DOMINANT-RANK": ((MPIIO, POSIX), ("*_BYTES_{READ,WRITTEN} per rank",
                                           "*_SLOWEST_RANK{,_BYTES}"), False),
    "AGG-IMBALANCE": ((MPIIO, POSIX), ("*_BYTES_{READ,WRITTEN} per rank",
                                       "*_{FASTEST,SLOWEST}_RANK_BYTES"), False),
    "AGG-STRAGGLER": ((MPIIO, POSIX), ("*_F_{READ,WRITE,META}_TIME per rank",
                                       "*_F_{FASTEST,SLOWEST}_RANK_TIME"), True),
    "AGG-INDEP-MPIIO": ((MPIIO,), ("MPIIO_{INDEP,COLL}_{READS,WRITES}",
                                   "MPIIO_SIZE_*_AGG_*"), False),
    "AGG-NO-MPIIO": ((POSIX, STDIO), ("POSIX_BYTES_*", "STDIO_BYTES_*"), False),
    "AGG-BLOCKING": ((MPIIO,), ("MPIIO_NB_{READS,WRITES}", "MPIIO_F_{READ,WRITE}_TIME"), False),
    "AGG-STDIO": ((STDIO, POSIX, MPIIO), ("*_BYTES_{READ,WRITTEN}",), False),
    "AGG-METADATA": ((POSIX, STDIO), ("POSIX_F_META_TIME", "STDIO_F_META_TIME",
                                      "POSIX_OPENS"), False),
    "AGG-STRIPE": ((POSIX, MPIIO), ("LUSTRE_STRIPE_{WIDTH,SIZE}", "*_BYTES_*"), False),
    "AGG-AGGREGATORS": ((MPIIO, POSIX), ("POSIX bytes/time/calls per rank",
                                         "MPIIO_COLL_{READS,WRITES}"), True),
    "AGG-SINGLE-AGGREGATOR": ((MPIIO, POSIX), ("POSIX bytes per rank",
                                               "MPIIO_COLL_{READS,WRITES}"), True),
    "AGG-SLOW-AGGREGATOR": ((MPIIO, POSIX), ("POSIX time per rank",), True),
    "AGG-MPIIO-OVERHEAD": ((MPIIO, POSIX), ("MPIIO_F_{READ,WRITE}_TIME per rank",
                                            "POSIX_F_{READ,WRITE}_TIME per rank"), True),
    "AGG-RMW": ((MPIIO, POSIX), ("POSIX_READS", "POSIX_BYTES_READ", "MPIIO_READS"), True),
}
RANK_KEYS = ("rank", "slowest_rank", "fastest_rank", "busiest_posix_rank")


def attach(job, findings) -> None:
    """Fills finding.rests_on (where the check did not) for every finding."""
    for f in findings:
        if f.rests_on:
            continue
        layers, counters, uses_ops = GROUNDS.get(f.code, ((), (), False))
        modules = [COUNTER_MODULE[l] for l in layers if _present(job, l)]
        if f.code == "AGG-STRIPE":
            modules.append("LUSTRE")
        if uses_ops and job.has_ops:
            modules += [DXT_MODULE[l] if job.kind == "darshan" else "aggio trace"
                        for l in layers if job.ops_complete(l) and l != STDIO]
        f.rests_on = {"modules": sorted(set(modules)), "counters": list(counters),
                      "ranks": _ranks(f.evidence)}


def _present(job, layer) -> bool:
    if job.kind != "darshan":
        return True
    return COUNTER_MODULE[layer] in job.modules or not job.modules


def _ranks(evidence) -> list | str:
    ranks = [evidence[k] for k in RANK_KEYS if isinstance(evidence.get(k), int)]
    ranks += [r for r in evidence.get("aggregator_ranks", []) if isinstance(r, int)]
    ranks += [s["rank"] for s in evidence.get("stragglers", [])]
    return sorted(set(ranks)) or "all ranks with records"


def caveat(job, findings) -> None:
    """A finding that rests on a partial module: one step less severe, and
    its message and evidence say which module is partial."""
    for f in findings:
        partial = sorted(set(f.rests_on.get("modules", ())) & job.partial)
        if not partial:
            continue
        f.severity = SEVERITIES[min(SEVERITIES.index(f.severity) + 1, len(SEVERITIES) - 1)]
        f.evidence["partial_modules"] = partial
        f.message += (f" - caveat: the log marks {', '.join(partial)} partial (Darshan ran "
                      "out of records or buffer): these figures may miss some ranks or calls")


def withheld_notes(job) -> None:
    """Says, in job.notes, which files' aggregators and MPI-IO overhead were
    not judged because their POSIX records are missing (once per file)."""
    for index, f in enumerate(job.files):
        if not xl.collective(f) and MPIIO not in f.layers:
            continue
        why = xl.posix_missing(job, index)
        note = (f"{f.path}: no aggregators named and no MPI-IO time compared with POSIX "
                f"(withheld: {why})")
        if why and note not in job.notes:
            job.notes.append(note)
