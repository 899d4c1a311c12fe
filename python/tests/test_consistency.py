"""The target "zero findings contradicted by the log's own counters": rules a
finding or fix must not break, checked on every shared log and on synthetic
jobs of each kind.  Each rule reads the counters itself, not the finding's
evidence."""
import os
import re

import numpy as np
import pytest
from builders import (collective_write, darshan_job, file_with, layer, per_rank, posix_writes,
                      two_phase_write)
from hintcheck import check_report_hints
from paths import HINTS_PARSE, log_params, pydarshan_logs

from aggio.findings import run_all
from aggio.model import MPIIO, POSIX, STDIO
from aggio.sources import load_jobs
from aggio.thresholds import Thresholds

MiB, GiB = 1 << 20, 1 << 30
HINT_KINDS = {"aggio-hints", "cray-hints", "romio-hints"}


def contradictions(job, found, th) -> list[str]:
    out = []
    files = {f.path: f for f in job.files}
    api_total = job.layer_total(MPIIO)
    has_mpiio = any(MPIIO in f.layers for f in job.files)
    per_rank_limit = job.runtime + 1.0 if job.runtime > 0 else None
    for f in found:
        subject = files.get(f.subject)
        api = subject.layers.get(MPIIO) if subject else api_total
        texts = [x.text for x in f.fixes]
        if not f.fixes or not f.evidence:
            out.append(f"{f.code}: no fix or no evidence")
        if any(x.kind in HINT_KINDS for x in f.fixes) and not (has_mpiio or job.kind == "aggio-trace"):
            out.append(f"{f.code}: MPI-IO hints for a run without MPI-IO")
        if any("H5P" in t for t in texts) and job.kind == "darshan" and \
                not job.modules & {"H5F", "H5D"}:
            out.append(f"{f.code}: HDF5 call for a run without HDF5")
        if any("ncmpi_" in t for t in texts) and not job.modules & {"PNETCDF_FILE", "PNETCDF"}:
            out.append(f"{f.code}: PnetCDF call for a run without PnetCDF")
        if any("instead of many small" in t or "by its collective twin" in t for t in texts) and \
                (api is None or not (api.indep_reads + api.indep_writes)):
            out.append(f"{f.code}: 'use collective calls' where no MPI-IO call is independent")
        if any(t.startswith("lfs setstripe") for t in texts) and not (
                "LUSTRE" in job.modules or any(x.stripe_count for x in job.files)):
            out.append(f"{f.code}: Lustre striping without a striped file")
        out += _code_rules(f, job, subject, api, th)
        out += _fact_rules(f, job, files, subject, api)
        for key in ("median_mpiio_seconds_per_rank", "max_rank_metadata_seconds"):
            if per_rank_limit and f.evidence.get(key, 0) > per_rank_limit:
                out.append(f"{f.code}: {key}={f.evidence[key]} exceeds the run time "
                           f"{job.runtime}: a summed figure taken per rank")
    return out + _agreement(found)


def _code_rules(f, job, subject, api, th):
    out = []
    d = f.evidence.get("direction")
    if f.code == "AGG-INDEP-MPIIO" and getattr(job.layer_total(MPIIO), f"coll_{d}s"):
        out.append("AGG-INDEP-MPIIO with collective calls in that direction")
    if f.code == "AGG-BLOCKING" and getattr(job.layer_total(MPIIO), f"nb_{d}s"):
        out.append("AGG-BLOCKING with non-blocking calls")
    if f.code == "AGG-NO-MPIIO" and "MPI-IO" in job.modules:
        out.append("AGG-NO-MPIIO with an MPI-IO module")
    if f.code == "AGG-NO-MPIIO":
        out += _no_mpiio_directions(f, job)
    if f.code == "AGG-RANDOM" and _all_one_span(job, d):
        out.append(f"AGG-RANDOM: every {d} of every file lies in one request's span of byte 0")
    if f.code == "AGG-INDEP-MPIIO" and job.nprocs == 1:
        out.append("AGG-INDEP-MPIIO: collective calls for a one-process job")
    if job.nprocs == 1 and any(x.kind in HINT_KINDS and "romio_cb_" in x.text and
                               f.code == "AGG-SMALL-REQ" for x in f.fixes):
        out.append(f"{f.code}: collective buffering for a one-process job")
    if f.code in ("AGG-SMALL-REQ", "AGG-RANDOM") and d == "read" and _only_library_reads(job):
        out.append(f"{f.code}: the program's reads, where every POSIX read lies beneath "
                   "MPI-IO writes of a file it never read through MPI-IO")
    if f.code in ("AGG-SINGLE-AGGREGATOR", "AGG-AGGREGATORS", "AGG-SLOW-AGGREGATOR") and \
            not (api and api.coll_reads + api.coll_writes):
        out.append(f"{f.code} without collective calls")
    if f.code == "AGG-REDUNDANT" and d == "read" and subject and api and \
            api.writes and not api.reads:
        out.append("AGG-REDUNDANT reads where MPI-IO only wrote (read-modify-write)")
    if f.code == "AGG-METADATA" and f.severity == "high":
        worst = 0.0
        for x in job.files:
            st = x.layers.get(POSIX) or x.layers.get(STDIO)
            if st is None:
                continue
            if st.reduced:
                worst = max(worst, st.meta_time / max(x.nranks or job.nprocs, 1))
            worst = max([worst, *st.rank_meta_time.values()])
        if worst <= th["metadata_rank_seconds"] and not any(
                (x.layers.get(POSIX) or layer()).reduced for x in job.files):
            out.append("AGG-METADATA high without a rank over the limit")
    if f.code == "AGG-STRIPE" and subject and f.evidence["stripe_count"] != subject.stripe_count:
        out.append("AGG-STRIPE stripe count differs from the file's")
    return out


def _no_mpiio_directions(f, job):
    """The MPI-IO calls offered are for the direction that moved the most."""
    read = job.layer_total(POSIX).bytes_read + job.layer_total(STDIO).bytes_read
    written = job.layer_total(POSIX).bytes_written + job.layer_total(STDIO).bytes_written
    most = "read" if read > written else "write"
    if not any(f"MPI_File_{most}_at_all" in x.text for x in f.fixes):
        return [f"AGG-NO-MPIIO: no MPI-IO {most} offered where the program mostly {most}s"]
    return []


def _all_one_span(job, d) -> bool:
    stats = [x.layers[POSIX] for x in job.files
             if POSIX in x.layers and getattr(x.layers[POSIX], d + "s")]
    top = "max_byte_read" if d == "read" else "max_byte_written"
    moved = "bytes_read" if d == "read" else "bytes_written"
    return bool(stats) and all(
        getattr(st, top) >= 0 and (getattr(st, top) + 1) * getattr(st, d + "s")
        <= getattr(st, moved) for st in stats)


def _only_library_reads(job) -> bool:
    readers = [x for x in job.files if POSIX in x.layers and x.layers[POSIX].reads]
    return bool(readers) and all(
        MPIIO in x.layers and x.layers[MPIIO].writes and not x.layers[MPIIO].reads
        for x in readers)


def _fact_rules(f, job, files, subject, api):
    """Issue 26: values the file system refuses, promises the program breaks,
    striping a file system's root."""
    out = []
    mounts = {m for m, _ in job.mounts}
    for x in f.fixes:
        if x.kind in HINT_KINDS:
            for m in re.finditer(r"striping_unit[= ](\d+)", x.text):
                if int(m.group(1)) < 65536 or int(m.group(1)) % 65536:
                    out.append(f"{f.code}: striping_unit={m.group(1)} is no Lustre stripe size")
            if re.search(r"romio_no_indep_rw[= ]true", x.text) and \
                    api is not None and api.indep_reads + api.indep_writes:
                out.append(f"{f.code}: romio_no_indep_rw=true for a program with independent calls")
        if x.kind == "lustre":
            target = x.text.split()[-1]
            if target not in files and (target in mounts or target.count("/") < 2):
                out.append(f"{f.code}: lfs setstripe on {target}, a file system's root")
    return out


def _agreement(found):
    out, targets, hints = [], {}, {}
    for f in found:
        for x in f.fixes:
            if x.kind == "lustre":
                target = x.text.split()[-1]
                if targets.setdefault(target, x.text) != x.text:
                    out.append(f"two layouts for {target}: {targets[target]!r}, {x.text!r}")
            if x.kind == "aggio-hints":
                spec = x.text.split('"')[1]
                for pair in spec.split(":", 1)[1].replace("#", "").split(":"):
                    if "=" in pair:
                        k, v = pair.split("=", 1)
                        if hints.setdefault(k, v) != v:
                            out.append(f"two values for {k}: {hints[k]}, {v}")
    return out


def _check(job):
    th = Thresholds()
    found = run_all(job, th)
    assert contradictions(job, found, th) == []
    if HINTS_PARSE:
        check_report_hints(found)
    return found


@pytest.mark.parametrize("log", log_params(), ids=lambda p: os.path.basename(p or "none"))
def test_no_contradictions_on_shared_logs(log):
    _check(load_jobs([log])[0])


@pytest.mark.parametrize("log", [pytest.param(p, id="/".join(p.split(os.sep)[-2:]))
                                 for p in pydarshan_logs()] or [pytest.param(
                                     None, marks=pytest.mark.skip(reason="no PyDarshan"))])
def test_no_contradictions_on_pydarshan_logs(log):
    """PyDarshan's own logs too (dxt.darshan: threads' metadata time summed
    past the run time)."""
    _check(load_jobs([log])[0])


def test_metadata_time_per_rank_is_at_most_the_run():
    """Three files each held open for 90 s of a 100 s run by one rank's
    threads: the rank's metadata time is the run's 100 s, not 270."""
    files = [file_with(f"/p{i}", shared=False, nranks=1, posix=layer(opens=1, meta_time=90.0))
             for i in range(3)]
    for f in files:
        f.layers[POSIX].rank_meta_time = {0: 90.0}
    job = darshan_job(nprocs=1, files=files)
    job.runtime = 100.0
    (f,) = [x for x in _check(job) if x.code == "AGG-METADATA"]
    assert f.evidence["max_rank_metadata_seconds"] == 100.0
    assert f.evidence["ranks_with_overlapping_calls"] == 1
    assert "summed more than the run's 100 s" in f.message


def _synthetic(tmp_path):
    yield load_jobs([two_phase_write(16, [0, 4, 8, 12], calls=3, rmw=True, exchange=0.5,
                                     slow=4, round_dur=0.1).write(
        tmp_path / "a", aggregators=[0, 4, 8, 12], per_node=4,
        meta={"path": "/lus/a.dat", "hints": {"striping_factor": "3", "striping_unit": "786432"}})])[0]
    yield load_jobs([collective_write(8, 4096, 400, [0]).write(
        tmp_path / "b", aggregators=[0], meta={"hints": {"striping_factor": "1"}})])[0]
    yield load_jobs([posix_writes(4, {r: np.arange(400) * 4 * 5000 + r * 5000 for r in range(4)},
                                  5000).write(tmp_path / "c")])[0]
    big = layer(reduced=True, writes=4096, coll_writes=4096, bytes_written=64 * GiB,
                write_time=4096 * 753.0, meta_time=35283.0)
    posix = layer(reduced=True, writes=4096, bytes_written=64 * GiB, write_time=264.0,
                  meta_time=35283.0, reads=100, bytes_read=100 * MiB, opens=65536)
    posix.slowest, posix.fastest = (7, 64 * GiB + 100 * MiB, 270.0), (1, 0, 0.1)
    f = file_with("/lus/run/ckpt.dat", nranks=65536, mpiio=big, posix=posix)
    f.stripe_count, f.stripe_size = 1, MiB
    small = [file_with(f"/lus/run/rank.{r}", shared=False, nranks=1,
                       posix=per_rank(layer(writes=1, bytes_written=MiB), {r: MiB}))
             for r in range(4)]
    for s in small:
        s.stripe_count, s.stripe_size = 8, MiB
    yield darshan_job(nprocs=65536, modules=("POSIX", "MPI-IO", "LUSTRE", "H5F"),
                      files=[f, *small])


def test_no_contradictions_on_synthetic_jobs(tmp_path):
    codes = set()
    for job in _synthetic(tmp_path):
        codes |= {f.code for f in _check(job)}
    # the jobs above exercise the cross-layer findings and the fix agreement
    assert {"AGG-AGGREGATORS", "AGG-SLOW-AGGREGATOR", "AGG-RMW", "AGG-MPIIO-OVERHEAD",
            "AGG-SINGLE-AGGREGATOR", "AGG-STRIPE"} <= codes


def test_the_rules_catch_a_contradiction(tmp_path):
    """A rule that never fires proves nothing: break a report on purpose."""
    job = load_jobs([posix_writes(4, {r: [r * MiB] for r in range(4)}, MiB).write(
        tmp_path / "t")])[0]
    from aggio.findings.base import Finding, Fix
    bad = [Finding("AGG-INDEP-MPIIO", "high", "x", "x", {"direction": "write"},
                   [Fix("code", "H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);")]),
           Finding("AGG-X", "warn", "x", "x", {"a": 1},
                   [Fix("lustre", "lfs setstripe -c 1 /d"), Fix("lustre", "lfs setstripe -c 4 /d")])]
    bad.append(Finding("AGG-Y", "warn", "x", "x", {"a": 1},
                       [Fix("aggio-hints", 'export AGGIO_HINTS="*:striping_unit=4096"'),
                        Fix("cray-hints", 'export MPICH_MPIIO_HINTS="*:romio_no_indep_rw=true"'),
                        Fix("lustre", "lfs setstripe -c 8 /scratch")]))
    job.kind = "darshan"
    found = contradictions(job, bad, Thresholds())
    assert any("striping_unit=4096 is no Lustre stripe size" in c for c in found)
    assert any("romio_no_indep_rw=true for a program with independent" in c for c in found)
    assert any("lfs setstripe on /scratch" in c for c in found)
    assert any("two layouts for /d" in c for c in found)
    assert any("HDF5 call" in c for c in found)
    assert any("Lustre striping without" in c for c in found)
    # POSIX reads beneath the MPI-IO writes of a file never read through MPI-IO
    rmw = darshan_job(modules=("POSIX", "MPI-IO"), files=[file_with(
        "/f", posix=layer(reads=10, writes=4), mpiio=layer(writes=4, coll_writes=4))])
    small = Finding("AGG-SMALL-REQ", "warn", "x", "x", {"direction": "read"}, [Fix("code", "x")])
    assert any("AGG-SMALL-REQ: the program's reads" in c
               for c in contradictions(rmw, [small], Thresholds()))
    # one process that read byte 0 again and again, through MPI-IO
    one = darshan_job(nprocs=1, modules=("POSIX", "MPI-IO"), files=[file_with(
        "/f", shared=False, nranks=1, mpiio=layer(reads=10, indep_reads=10),
        posix=layer(reads=10, bytes_read=10, max_byte_read=0))])
    bad = [Finding("AGG-INDEP-MPIIO", "warn", "x", "x", {"direction": "read"},
                   [Fix("code", "x")]),
           Finding("AGG-RANDOM", "warn", "x", "x", {"direction": "read"}, [Fix("code", "x")]),
           Finding("AGG-SMALL-REQ", "warn", "x", "x", {"direction": "read"},
                   [Fix("cray-hints", 'export MPICH_MPIIO_HINTS="*:romio_cb_read=enable"')]),
           Finding("AGG-NO-MPIIO", "info", "x", "x", {"a": 1},
                   [Fix("code", "MPI_File_write_at_all(fh, ...);")]),
           Finding("AGG-METADATA", "warn", "x", "x", {"max_rank_metadata_seconds": 50.0},
                   [Fix("code", "x")])]
    one.runtime = 10.0
    found = contradictions(one, bad, Thresholds())
    for words in ("collective calls for a one-process job", "AGG-RANDOM: every read",
                  "collective buffering for a one-process job",
                  "no MPI-IO read offered where the program mostly reads",
                  "max_rank_metadata_seconds=50.0 exceeds the run time"):
        assert any(words in c for c in found), words
