/*
 * storage.c - the calls of the storage edge as the rest of the library
 * makes them (storage.h): what every back end gets the same way (faults
 * injected for tests, the trace records and counters of open, sync, size,
 * truncate and preallocate), and what every back end counts per transfer.
 * The back ends are listed in storage_registry.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- statistics and trace --------------------------------------------------- */

/* I/O threads write too, so counters are added atomically. */
static void add(int64_t *p, int64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

static void add_time(double *p, double v) {
  double old, new;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do
    new = old + v;
  while (!__atomic_compare_exchange(p, &old, &new, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static int64_t align_unit(aggio_file fh) {
  int64_t su = fh->hints.striping_unit.num;
  return su > 0 ? su : fh->block;
}

void aggio__storage_note(aggio_file fh, int is_write, int64_t off, int64_t len, int direct,
                         double t0, int flags) {
  double t1 = (fh->obs.trace || fh->obs.stats) ? aggio__now() : 0.0;
  if (fh->obs.trace)
    aggio__trace_record_locked(fh, is_write ? AGGIO_OP_POSIX_PWRITE : AGGIO_OP_POSIX_PREAD,
                               off, len, 0, t0, t1,
                               flags & (AGGIO_IO_AGGREGATOR | AGGIO_IO_BEHIND));
  struct aggio__stats *s = fh->obs.stats;
  if (!s)
    return;
  if (flags & AGGIO_IO_BEHIND)
    add_time(&s->behind_time, t1 - t0);
  add_time(is_write ? &s->sys_write_time : &s->sys_read_time, t1 - t0);
  add(&s->c[is_write ? AGGIO_C_SYS_WRITES : AGGIO_C_SYS_READS], 1);
  add(&s->c[is_write ? AGGIO_C_SYS_WRITE_BYTES : AGGIO_C_SYS_READ_BYTES], len);
  int64_t a = align_unit(fh);
  if (a > 0 && off % a == 0)
    add(&s->c[is_write ? AGGIO_C_SYS_WRITES_ALIGNED : AGGIO_C_SYS_READS_ALIGNED], 1);
  if (direct) {
    add(&s->c[is_write ? AGGIO_C_DIRECT_WRITES : AGGIO_C_DIRECT_READS], 1);
    add(&s->c[is_write ? AGGIO_C_DIRECT_WRITE_BYTES : AGGIO_C_DIRECT_READ_BYTES], len);
  }
  if (flags & AGGIO_IO_BEHIND)
    add(&s->c[is_write ? AGGIO_C_BEHIND_WRITES : AGGIO_C_BEHIND_READS], 1);
  if (is_write && (flags & AGGIO_IO_AGGREGATOR)) { /* per-aggregator lines at close */
    add(&s->c[AGGIO_C_AGGR_WRITES], 1);
    add(&s->c[AGGIO_C_AGGR_WRITE_BYTES], len);
  }
}

/* ---- the calls ---------------------------------------------------------------- */

int aggio__pwrite(aggio_file fh, const void *buf, int64_t len, int64_t off, int flags,
                  struct aggio__err *e) {
  if (len <= 0)
    return 0;
  return fh->store->pwrite(fh, buf, len, off, flags, e);
}

int aggio__pread(aggio_file fh, void *buf, int64_t len, int64_t off, int64_t *got,
                 int flags, struct aggio__err *e) {
  *got = 0;
  if (len <= 0)
    return 0;
  return fh->store->pread(fh, buf, len, off, got, flags, e);
}

/* ---- the calls every back end gets the same way -------------------------------- */

/* A failure AGGIO_FAULTS injects into this call (the errno of the POSIX
 * call named), for every back end alike: 0, or the error recorded in e. */
static int injected(aggio_file fh, enum aggio__fault_op op, const char *call,
                    struct aggio__err *e) {
  int err = aggio__fault(fh->faults, op);
  if (err)
    aggio__fail(e, aggio__errno_code(err), "rank %d: %s(%s): %s", fh->rank, call, fh->path,
                strerror(err));
  return err ? e->code : 0;
}

int aggio__store_open(aggio_file fh, int create, struct aggio__err *e) {
  /* the trace starts after the open (it needs the topology): its times are
   * kept and recorded then */
  fh->obs.posix_open_t0 = aggio__now();
  int rc = injected(fh, AGGIO_FAULT_OPEN, "open", e);
  if (rc == 0)
    rc = fh->store->open(fh, create, e);
  fh->obs.posix_open_t1 = aggio__now();
  return rc;
}

int aggio__fsync(aggio_file fh, struct aggio__err *e) {
  if (!fh->opened)
    return 0;
  double t0 = aggio__now();
  int err = aggio__fault(fh->faults, AGGIO_FAULT_FSYNC); /* stands for fsync's errno */
  if (err)
    return aggio__fail(e, err == EINVAL || err == EROFS ? AGGIO_ERR_IO
                                                        : aggio__errno_code(err),
                       "rank %d: fsync(%s): %s; the data may not be durable", fh->rank,
                       fh->path, strerror(err));
  int rc = fh->store->sync(fh, e);
  if (rc != 0)
    return rc;
  if (fh->obs.trace)
    aggio__trace_record_locked(fh, AGGIO_OP_POSIX_FSYNC, -1, 0, 0, t0, aggio__now(), 0);
  if (fh->obs.stats)
    add(&fh->obs.stats->c[AGGIO_C_SYNCS], 1);
  return 0;
}

int aggio__store_size(aggio_file fh, int64_t *size, struct aggio__err *e) {
  int rc = injected(fh, AGGIO_FAULT_SIZE, "stat", e);
  return rc ? rc : fh->store->size(fh, size, e);
}

int aggio__store_truncate(aggio_file fh, int64_t size, struct aggio__err *e) {
  double t0 = fh->obs.trace ? aggio__now() : 0.0;
  int rc = injected(fh, AGGIO_FAULT_TRUNCATE, "ftruncate", e);
  if (rc == 0)
    rc = fh->store->truncate(fh, size, e);
  if (rc == 0 && fh->obs.trace)
    aggio__trace_record_locked(fh, AGGIO_OP_POSIX_FTRUNCATE, size, 0, 0, t0, aggio__now(), 0);
  return rc;
}

/* The back end's preallocate, or, for one without, a truncate that only
 * ever extends (MPI_File_preallocate never shortens a file). */
int aggio__store_preallocate(aggio_file fh, int64_t size, struct aggio__err *e) {
  double t0 = fh->obs.trace ? aggio__now() : 0.0;
  int rc = injected(fh, AGGIO_FAULT_PREALLOCATE, "posix_fallocate", e);
  if (rc == 0 && fh->store->preallocate) {
    rc = fh->store->preallocate(fh, size, e);
  } else if (rc == 0) {
    int64_t now = 0;
    rc = fh->store->size(fh, &now, e);
    if (rc == 0 && now < size)
      rc = fh->store->truncate(fh, size, e);
  }
  if (rc == 0 && fh->obs.trace)
    aggio__trace_record_locked(fh, AGGIO_OP_POSIX_FALLOCATE, 0, size, 0, t0, aggio__now(), 0);
  return rc;
}
