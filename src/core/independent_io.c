/*
 * independent_io.c - the data path of independent calls: every rank reads
 * and writes its own ranges, through the storage edge, on the file's I/O
 * threads when the call is non-blocking.  The independent strategy runs
 * collective calls this way too (strategies/independent).
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "writeback.h"

/* Whether a write of `len` bytes goes to the device (direct I/O where the
 * file system allows it) or through the page cache: from the
 * aggio_direct_min hint's size when it is set, else large requests direct,
 * small ones cached, and those between as measured (dio_choice.h).
 * *timed: the choice was measured, and the request's time is to be
 * learnt (with *probe: it tries the way that has been slower).  Only
 * those requests take the lock and the clock. */
static int pick_way(aggio_file fh, int64_t len, int *timed, int *probe) {
  *timed = *probe = 0;
  int64_t fixed = fh->hints.direct_min.num;
  if (fixed > 0)
    return len >= fixed ? AGGIO_WAY_DIRECT : AGGIO_WAY_CACHE;
  if (!aggio__dio_measured(len))
    return aggio__dio_pick(&fh->dio_choice, len, probe); /* the fixed rule: no state */
  if (__atomic_load_n(&fh->st.dio, __ATOMIC_RELAXED) == AGGIO_DIO_OFF)
    return AGGIO_WAY_CACHE; /* nothing to choose between */
  *timed = 1;
  pthread_mutex_lock(&fh->dio_lock);
  int way = aggio__dio_pick(&fh->dio_choice, len, probe);
  pthread_mutex_unlock(&fh->dio_lock);
  return way;
}

static void learn_way(aggio_file fh, int way, int probe, int64_t len, double seconds) {
  pthread_mutex_lock(&fh->dio_lock);
  aggio__dio_learn(&fh->dio_choice, way, probe, len, (int64_t)(seconds * 1e9));
  pthread_mutex_unlock(&fh->dio_lock);
}

static int write_ranges(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__access *acc = &op->acc;
  int64_t spos = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    int timed, probe, way = pick_way(fh, x->len, &timed, &probe);
    int flags = way == AGGIO_WAY_DIRECT ? AGGIO_IO_DIRECT_OK : 0;
    double t0 = timed ? aggio__now() : 0;
    int rc = aggio__pwrite(fh, acc->stream + spos, x->len, x->off, flags, &op->err);
    if (rc != 0)
      return rc;
    if (timed)
      learn_way(fh, way, probe, x->len, aggio__now() - t0);
    if (!flags || __atomic_load_n(&fh->st.dio, __ATOMIC_RELAXED) == AGGIO_DIO_OFF)
      aggio__writeback_note(fh, x->off, x->len); /* it went through the page cache */
    spos += x->len;
  }
  return 0;
}

/* Reads range by range; the first short read is the end of the file (the
 * ranges are sorted), and nothing is written past it. */
static int read_ranges(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__access *acc = &op->acc;
  int64_t spos = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    int64_t got = 0;
    int rc = aggio__pread(fh, acc->stream + spos, x->len, x->off, &got, 0, &op->err);
    if (rc != 0)
      return rc;
    if (got < x->len) {
      aggio__op_saw_eof(op, x->off + got);
      return 0;
    }
    spos += x->len;
  }
  return 0;
}

/* In atomic mode the whole range is locked against other processes, as
 * ROMIO does with fcntl locks. */
static int locked(struct aggio__op *op, int (*io)(struct aggio__op *)) {
  aggio_file fh = op->fh;
  const struct aggio__extents *f = &op->acc.file;
  if (!fh->atomic || f->n == 0)
    return io(op);
  int64_t lo = f->v[0].off, hi = f->v[f->n - 1].off + f->v[f->n - 1].len;
  if (fh->st.ops->lock(&fh->st, lo, hi - lo, op->acc.is_write, &op->err) != 0)
    return op->err.code;
  int rc = io(op);
  struct aggio__err ue = {0};
  fh->st.ops->lock(&fh->st, lo, hi - lo, -1, &ue);
  return rc;
}

/* This rank's ranges, read or written now by the calling thread. */
static int io_now(struct aggio__op *op) {
  return locked(op, op->acc.is_write ? write_ranges : read_ranges);
}

/* After the I/O: a collective operation agrees on the outcome. */
static int after_io(struct aggio__op *op) {
  if (op->collective)
    return aggio__then(op, aggio__step_agree_outcome, AGGIO_P_AGREE);
  return aggio__then(op, NULL, AGGIO_P_WRITE);
}

/* A non-blocking operation's I/O runs on the file's I/O threads, so that
 * it goes on while the application computes.  The job owns op->err and
 * op->eof until its batch is done (the pool's lock orders the accesses). */
struct io_job {
  struct aggio__job job;
  struct aggio__op *op;
};

static void run_io_job(struct aggio__job *job, struct aggio__err *e) {
  struct aggio__op *op = ((struct io_job *)job)->op;
  (void)e; /* failures go to op->err, read once the batch is done */
  io_now(op);
}

static void free_io_job(struct aggio__op *op) { free(op->sdata); }

static int submit_io(struct aggio__op *op) {
  struct aggio__pool *p = aggio__file_pool(op->fh);
  struct io_job *j = p ? calloc(1, sizeof *j) : NULL;
  if (!j)
    return -1;
  j->job.run = run_io_job;
  j->op = op;
  op->sdata = j;
  op->sdata_free = free_io_job;
  if (aggio__pool_submit(p, &j->job, &op->batch) != 0)
    return -1; /* no thread: the caller does the I/O */
  return 0;
}

int aggio__independent_io(struct aggio__op *op) {
  if (op->err.code == 0 && op->acc.nbytes > 0 && !op->blocking && !op->sdata &&
      submit_io(op) == 0) {
    aggio__then(op, after_io, AGGIO_P_IO_WAIT);
    op->wait_phase = AGGIO_P_IO_WAIT;
    return AGGIO_STEP_PENDING;
  }
  if (op->err.code == 0)
    io_now(op);
  return after_io(op);
}

int aggio__step_io_first(struct aggio__op *op) {
  op->io_first = 1;
  if (op->err.code == 0 && op->acc.nbytes > 0)
    io_now(op);
  return aggio__then(op, aggio__step_summarize, AGGIO_P_AGREE);
}

/* A small blocking independent write while a strategy holds written data
 * of this file (write-behind's node cache) joins that data instead of
 * going to the file at once.  Why: the I/O libraries write their metadata
 * this way between collective calls (PnetCDF the record count after each
 * record, HDF5 its object headers and B-tree nodes); a buffered write to
 * the file waits on the file system's inode lock behind the I/O threads'
 * large direct writes in flight (ext4: a few milliseconds, on 2 % of
 * PnetCDF's record-count writes, a third of aggio's time in its ior-hard
 * run).  A small read of bytes a strategy holds (write-behind's loaded
 * blocks) is copied from them.  Large accesses go to the file. */
#define HELD_MAX (64 << 10)

static int held_by_strategy(struct aggio__op *op) {
  aggio_file fh = op->fh;
  if (op->acc.nbytes > HELD_MAX)
    return 0;
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (s && s->hold_independent && aggio__ready(fh, i) &&
        s->hold_independent(fh, fh->strategy_state[i], &op->acc))
      return 1;
  }
  return 0;
}

/* Before an independent access, strategies holding data of this node make
 * the touched bytes consistent (MPI's rule for one process's own
 * accesses); then the reference data path runs. */
int aggio__step_independent(struct aggio__op *op) {
  aggio_file fh = op->fh;
  if (op->err.code != 0 || op->acc.nbytes == 0)
    return aggio__then(op, NULL, AGGIO_P_WRITE);
  /* auto's read rule counts the program's independent reads (plan.c) */
  if (!op->acc.is_write)
    __atomic_store_n(&fh->read_alone, 1, __ATOMIC_RELAXED);
  if (op->blocking && !fh->atomic && held_by_strategy(op)) {
    if (op->acc.is_write)
      __atomic_store_n(&fh->wrote_alone, 1, __ATOMIC_RELAXED);
    return aggio__then(op, NULL, op->acc.is_write ? AGGIO_P_WRITE : AGGIO_P_READ);
  }
  for (int i = 0; i < AGGIO_NSTRATEGIES && op->err.code == 0; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (s && s->before_independent && aggio__ready(fh, i))
      s->before_independent(fh, fh->strategy_state[i], &op->acc, &op->err);
  }
  if (op->err.code != 0)
    return aggio__then(op, NULL, AGGIO_P_WRITE);
  if (op->acc.is_write) /* independent calls may run on several threads at once */
    __atomic_store_n(&fh->wrote_alone, 1, __ATOMIC_RELAXED);
  return aggio__then(op, aggio__independent_io, op->acc.is_write ? AGGIO_P_WRITE : AGGIO_P_READ);
}
