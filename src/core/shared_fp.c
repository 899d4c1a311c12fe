/*
 * shared_fp.c - the shared file pointer of MPI-IO (MPI 3.1 section 13.4.4):
 * one counter per open file, in etypes of the view, that any rank moves
 * alone (write_shared, read_shared) while the others do something else.
 *
 * Where it lives, chosen once at open:
 *   - every rank of the file on one node (the emulated layout counts:
 *     aggio_emulate_nodes makes the ranks look like several nodes, and then
 *     the second path runs, so that tests reach it on one machine): the
 *     counter sits in a shared-memory window (MPI_Win_allocate_shared on
 *     fh->comm) and ranks move it with the processor's atomic fetch-and-add,
 *     a few nanoseconds and no MPI call;
 *   - otherwise: an MPI_Win_allocate window of 8 bytes on rank 0, moved with
 *     MPI_Fetch_and_op(MPI_SUM) inside one passive-target MPI_Win_lock_all
 *     epoch held from open to close.  This is the lightest correct
 *     mechanism MPI offers: one atomic round trip per call, no lock
 *     acquisition per call (accumulate operations on the same location are
 *     atomic with respect to each other in any epoch), no participation of
 *     rank 0 (RDMA atomics where the network has them), and no message
 *     protocol of our own that would need rank 0 to poll.  ROMIO instead
 *     keeps the pointer in a hidden file behind fcntl locks (two file
 *     system round trips and a lock per call).
 * Both windows are made collectively at open, so later independent calls
 * need no collective; both are freed at close.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "shared_fp.h"

static int mpi_fail(aggio_file fh, int rc, const char *what, struct aggio__err *e) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: shared file pointer: %s failed: %s",
                     fh->rank, what, text);
}

static int make(aggio_file fh, int64_t start, struct aggio__err *e) {
  MPI_Aint size = fh->rank == 0 ? (MPI_Aint)sizeof(int64_t) : 0;
  int64_t *base = NULL;
  int rc;
  /* aggio_node_shm=disable: no shared-memory window, this one included */
  fh->sfp.shm = fh->topo.nnodes == 1 && fh->hints.node_shm.num != AGGIO_DISABLE;
  if (fh->sfp.shm)
    rc = MPI_Win_allocate_shared(size, (int)sizeof(int64_t), MPI_INFO_NULL, fh->comm,
                                 &base, &fh->sfp.win);
  else
    rc = MPI_Win_allocate(size, (int)sizeof(int64_t), MPI_INFO_NULL, fh->comm, &base,
                          &fh->sfp.win);
  if (rc != MPI_SUCCESS) {
    fh->sfp.win = MPI_WIN_NULL;
    return mpi_fail(fh, rc, fh->sfp.shm ? "MPI_Win_allocate_shared" : "MPI_Win_allocate",
                    e);
  }
  MPI_Win_set_errhandler(fh->sfp.win, MPI_ERRORS_RETURN);
  fh->sfp.ptr = base;
  if (fh->sfp.shm) { /* every rank addresses rank 0's counter directly */
    MPI_Aint qsize = 0;
    int disp = 0;
    rc = MPI_Win_shared_query(fh->sfp.win, 0, &qsize, &disp, &fh->sfp.ptr);
    if (rc != MPI_SUCCESS)
      return mpi_fail(fh, rc, "MPI_Win_shared_query", e);
  }
  int err = aggio__fault(fh->faults, AGGIO_FAULT_WINDOW);
  if (err) /* for the tests: a failure after the window was made */
    return aggio__fail(e, aggio__errno_code(err), "rank %d: shared file pointer window: "
                       "injected failure (%s)", fh->rank, strerror(err));
  rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, fh->sfp.win);
  if (rc != MPI_SUCCESS)
    return mpi_fail(fh, rc, "MPI_Win_lock_all", e);
  fh->sfp.locked = 1;
  /* rank 0 sets the counter with the same atomic operations as every later
   * access (memory from MPI_Win_allocate starts undefined); the agreement
   * after make() orders it before any other rank's access */
  if (fh->rank == 0 && aggio__sfp_set(fh, start, e) != 0)
    return e->code;
  return 0;
}

void aggio__sfp_close(aggio_file fh) {
  if (fh->sfp.win == MPI_WIN_NULL)
    return;
  if (fh->sfp.locked)
    MPI_Win_unlock_all(fh->sfp.win);
  fh->sfp.locked = 0;
  MPI_Win_free(&fh->sfp.win);
  fh->sfp.win = MPI_WIN_NULL;
  fh->sfp.ptr = NULL;
}

void aggio__sfp_open(aggio_file fh) {
  struct aggio__err e = {0};
  if (fh->hints.shared_fp.num == AGGIO_DISABLE) { /* the same on every rank */
    snprintf(fh->sfp.why, sizeof fh->sfp.why, "aggio_shared_fp=disable");
    return;
  }
  make(fh, 0, &e);
  int ok = e.code == 0, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, fh->comm);
  if (all)
    return;
  aggio__sfp_abandon(fh);
  snprintf(fh->sfp.why, sizeof fh->sfp.why, "%.190s",
           e.code ? e.msg : "another rank could not make its window at open");
}

int aggio__sfp_available(aggio_file fh) {
  return fh->sfp.win != MPI_WIN_NULL && fh->sfp.locked;
}

static int ready(aggio_file fh, struct aggio__err *e) {
  if (aggio__sfp_available(fh))
    return 0;
  return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: this file has no shared file "
                     "pointer (%s)", fh->rank, fh->sfp.why[0] ? fh->sfp.why : "not made");
}

/* One atomic operation on the counter at rank 0: MPI_SUM adds, MPI_NO_OP
 * reads, MPI_REPLACE sets; *old gets the value before. */
static int rma_op(aggio_file fh, int64_t in, int64_t *old, MPI_Op op, struct aggio__err *e) {
  int rc = MPI_Fetch_and_op(&in, old, MPI_INT64_T, 0, 0, op, fh->sfp.win);
  if (rc == MPI_SUCCESS)
    rc = MPI_Win_flush(0, fh->sfp.win);
  return rc == MPI_SUCCESS ? 0 : mpi_fail(fh, rc, "MPI_Fetch_and_op", e);
}

int aggio__sfp_fetch_add(aggio_file fh, int64_t add, int64_t *old, struct aggio__err *e) {
  if (ready(fh, e) != 0)
    return e->code;
  if (add != 0)
    __atomic_store_n(&fh->sfp.moved, 1, __ATOMIC_RELAXED);
  if (!fh->sfp.shm)
    return rma_op(fh, add, old, MPI_SUM, e);
  *old = __atomic_fetch_add(fh->sfp.ptr, add, __ATOMIC_SEQ_CST);
  return 0;
}

int aggio__sfp_get(aggio_file fh, int64_t *value, struct aggio__err *e) {
  if (ready(fh, e) != 0)
    return e->code;
  if (!fh->sfp.shm)
    return rma_op(fh, 0, value, MPI_NO_OP, e);
  *value = __atomic_load_n(fh->sfp.ptr, __ATOMIC_SEQ_CST);
  return 0;
}

int aggio__sfp_set(aggio_file fh, int64_t value, struct aggio__err *e) {
  int64_t old = 0;
  if (ready(fh, e) != 0)
    return e->code;
  if (value != 0)
    __atomic_store_n(&fh->sfp.moved, 1, __ATOMIC_RELAXED);
  if (!fh->sfp.shm)
    return rma_op(fh, value, &old, MPI_REPLACE, e);
  __atomic_store_n(fh->sfp.ptr, value, __ATOMIC_SEQ_CST);
  return 0;
}

int aggio__sfp_moved(aggio_file fh) { return __atomic_load_n(&fh->sfp.moved, __ATOMIC_RELAXED); }

void aggio__sfp_mark_reset(aggio_file fh) { __atomic_store_n(&fh->sfp.moved, 0, __ATOMIC_RELAXED); }

/* A window only some ranks made cannot be freed (MPI_Win_free is
 * collective over all of them): its handle is dropped, the window is left
 * to MPI_Finalize. */
void aggio__sfp_abandon(aggio_file fh) {
  int mine = fh->sfp.win != MPI_WIN_NULL, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, fh->comm);
  if (all)
    aggio__sfp_close(fh);
  fh->sfp.win = MPI_WIN_NULL;
  fh->sfp.locked = 0;
  fh->sfp.ptr = NULL;
}
