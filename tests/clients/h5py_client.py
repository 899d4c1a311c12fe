"""h5py_client.py - an ordinary h5py program with driver='mpio' (Debian's
python3-h5py-mpi and python3-mpi4py, run by the system's /usr/bin/python3),
used to check that aggio can stand in for the MPI library's MPI-IO under an
unmodified Python application (clientrun.py runs it with and without aggio
and compares the files with h5diff).

    mpiexec -n N /usr/bin/python3 h5py_client.py FILE

Each rank writes its rows of a 2-D float64 dataset collectively (``with
dset.collective``) and its strided elements of a 1-D int32 dataset
independently, and a chunked dataset of a compound dtype by columns; then the
file is reopened read-only and every rank reads everything back and checks
it.  Rank 0 prints "h5py_client: ok ..." with the data bytes moved, and the
exit status is 0 only when every rank agrees.
"""
import sys

import h5py
import numpy as np
from mpi4py import MPI

ROWS_PER_RANK = 5
COLS = 23
STRIDED_PER_RANK = 17
RECORD = np.dtype([("a", "<i4"), ("b", "<f8"), ("c", "S3")])


def expected(nranks):
    rows = nranks * ROWS_PER_RANK
    grid = np.arange(rows * COLS, dtype="<f8").reshape(rows, COLS) * 0.5 + 7
    strided = np.arange(nranks * STRIDED_PER_RANK, dtype="<i4") * 3 - 11
    rec = np.zeros((rows, COLS), dtype=RECORD)
    rec["a"] = np.arange(rows * COLS).reshape(rows, COLS)
    rec["b"] = rec["a"] * 0.25
    rec["c"] = [[b"%03d" % ((i * COLS + j) % 1000) for j in range(COLS)] for i in range(rows)]
    return grid, strided, rec


def write(path, comm):
    rank, n = comm.rank, comm.size
    grid, strided, rec = expected(n)
    rows = slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)
    with h5py.File(path, "w", driver="mpio", comm=comm, track_order=False) as f:
        f.attrs["ranks"] = n
        g = f.create_dataset("grid", grid.shape, dtype="<f8", track_times=False)
        s = f.create_dataset("strided", strided.shape, dtype="<i4", track_times=False)
        r = f.create_dataset("records", rec.shape, dtype=RECORD, chunks=(4, 6),
                             track_times=False)
        with g.collective:
            g[rows, :] = grid[rows, :]
        s[rank::n] = strided[rank::n]  # independent, a strided selection
        with r.collective:
            # columns rank, rank + n, ...: every rank has some (main checks n <= COLS)
            r[:, rank::n] = rec[:, rank::n]


def read_and_check(path, comm):
    n = comm.size
    grid, strided, rec = expected(n)
    bad = []
    with h5py.File(path, "r", driver="mpio", comm=comm) as f:
        if int(f.attrs["ranks"]) != n:
            return ["file written at %d ranks, read at %d" % (int(f.attrs["ranks"]), n)]
        g, s, r = f["grid"], f["strided"], f["records"]
        with g.collective:
            got_grid = g[...]
        got_strided = s[...]
        with r.collective:
            got_rec = r[...]
    for name, got, want in (("grid", got_grid, grid), ("strided", got_strided, strided),
                            ("records", got_rec, rec)):
        if got.shape != want.shape or not np.array_equal(got, want):
            bad.append(name)
    return bad


def main(argv):
    if len(argv) != 2:
        print("usage: h5py_client.py FILE", file=sys.stderr)
        return 2
    comm = MPI.COMM_WORLD
    if not h5py.get_config().mpi:
        if comm.rank == 0:
            print("h5py_client: FAILED, this h5py has no MPI (Debian picks the MPI build "
                  "under mpiexec only)", file=sys.stderr)
        return 1
    if comm.size > COLS:
        if comm.rank == 0:
            print("h5py_client: FAILED, at most %d ranks" % COLS, file=sys.stderr)
        return 2
    path = argv[1]
    err = None
    try:
        write(path, comm)
    except Exception as e:  # a client error, reported with the rank
        err = "rank %d: write: %r" % (comm.rank, e)
    errs = [e for e in comm.allgather(err) if e]
    if not errs:
        bad = read_and_check(path, comm)
        errs = ["rank %d: wrong %s" % (i, ", ".join(b)) for i, b in enumerate(comm.allgather(bad)) if b]
    if comm.rank == 0:
        if errs:
            print("h5py_client: FAILED, %d ranks: %s" % (comm.size, "; ".join(errs)))
        else:
            # every element is written once, and every rank reads them all
            data = sum(a.nbytes for a in expected(comm.size))
            print("h5py_client: ok, %d ranks, data bytes written %d, data bytes read %d"
                  % (comm.size, data, data * comm.size))
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
