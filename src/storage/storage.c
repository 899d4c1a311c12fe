/*
 * storage.c - the calls of the storage layer as the rest of the library
 * makes them (storage.h): what every back end gets the same way (faults
 * injected for tests, the trace records and counters of open, sync, size,
 * truncate and preallocate), and what every back end counts per transfer.
 * The back ends are listed in storage_registry.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "storage.h"

/* ---- statistics and trace --------------------------------------------------- */

void aggio__storage_note(struct aggio__store *st, int is_write, int64_t off, int64_t len,
                         int direct, double t0, int flags) {
  struct aggio__transfer x = {is_write, off, len, direct, flags, st->align_unit};
  aggio__obs_transfer(st->obs, &x, t0);
}

/* ---- the calls ---------------------------------------------------------------- */

int aggio__store_pwrite(struct aggio__store *st, const void *buf, int64_t len, int64_t off, int flags,
                  struct aggio__err *e) {
  if (len <= 0)
    return 0;
  return st->ops->pwrite(st, buf, len, off, flags, e);
}

int aggio__store_pread(struct aggio__store *st, void *buf, int64_t len, int64_t off, int64_t *got,
                 int flags, struct aggio__err *e) {
  *got = 0;
  if (len <= 0)
    return 0;
  return st->ops->pread(st, buf, len, off, got, flags, e);
}

/* ---- the calls every back end gets the same way -------------------------------- */

/* A failure AGGIO_FAULTS injects into this call (the errno of the POSIX
 * call named), for every back end alike: 0, or the error recorded in e. */
static int injected(struct aggio__store *st, enum aggio__fault_op op, const char *call,
                    struct aggio__err *e) {
  int err = aggio__fault(st->faults, op);
  if (err)
    aggio__fail(e, aggio__errno_code(err), "rank %d: %s(%s): %s", st->rank, call, st->path,
                strerror(err));
  return err ? e->code : 0;
}

int aggio__store_open(struct aggio__store *st, int create, struct aggio__err *e) {
  /* the trace starts after the open (it needs the topology): its times are
   * kept and recorded then */
  st->obs->posix_open_t0 = aggio__now();
  int rc = injected(st, AGGIO_FAULT_OPEN, "open", e);
  if (rc == 0)
    rc = st->ops->open(st, create, e);
  st->obs->posix_open_t1 = aggio__now();
  return rc;
}

int aggio__store_sync(struct aggio__store *st, struct aggio__err *e) {
  if (!st->opened)
    return 0;
  double t0 = aggio__now();
  int err = aggio__fault(st->faults, AGGIO_FAULT_FSYNC); /* stands for fsync's errno */
  if (err)
    return aggio__fail(e, err == EINVAL || err == EROFS ? AGGIO_ERR_IO
                                                        : aggio__errno_code(err),
                       "rank %d: fsync(%s): %s; the data may not be durable", st->rank,
                       st->path, strerror(err));
  int rc = st->ops->sync(st, e);
  if (rc != 0)
    return rc;
  if (st->obs->trace)
    aggio__obs_record(st->obs, AGGIO_OP_POSIX_FSYNC, -1, 0, 0, t0, aggio__now(), 0);
  aggio__obs_count(st->obs, AGGIO_C_SYNCS, 1);
  return 0;
}

int aggio__store_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  int rc = injected(st, AGGIO_FAULT_SIZE, "stat", e);
  return rc ? rc : st->ops->size(st, size, e);
}

int aggio__store_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  double t0 = st->obs->trace ? aggio__now() : 0.0;
  int rc = injected(st, AGGIO_FAULT_TRUNCATE, "ftruncate", e);
  if (rc == 0)
    rc = st->ops->truncate(st, size, e);
  if (rc == 0 && st->obs->trace)
    aggio__obs_record(st->obs, AGGIO_OP_POSIX_FTRUNCATE, size, 0, 0, t0, aggio__now(), 0);
  return rc;
}

/* The back end's preallocate, or, for one without, a truncate that only
 * ever extends (MPI_File_preallocate never shortens a file). */
int aggio__store_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  double t0 = st->obs->trace ? aggio__now() : 0.0;
  int rc = injected(st, AGGIO_FAULT_PREALLOCATE, "posix_fallocate", e);
  if (rc == 0 && st->ops->preallocate) {
    rc = st->ops->preallocate(st, size, e);
  } else if (rc == 0) {
    int64_t now = 0;
    rc = st->ops->size(st, &now, e);
    if (rc == 0 && now < size)
      rc = st->ops->truncate(st, size, e);
  }
  if (rc == 0 && st->obs->trace)
    aggio__obs_record(st->obs, AGGIO_OP_POSIX_FALLOCATE, 0, size, 0, t0, aggio__now(), 0);
  return rc;
}

/* fcntl record locks, as ROMIO's ADIOI_Set_lock: atomic mode on POSIX.
 * Blocking; is_write < 0 unlocks. */
int aggio__storage_fcntl_lock(struct aggio__store *st, int fd, int64_t off, int64_t len,
                              int is_write, struct aggio__err *e) {
  struct flock fl = {0};
  fl.l_type = is_write < 0 ? F_UNLCK : is_write ? F_WRLCK : F_RDLCK;
  fl.l_whence = SEEK_SET;
  fl.l_start = (off_t)off;
  fl.l_len = (off_t)len;
  int rc;
  do
    rc = fcntl(fd, F_SETLKW, &fl);
  while (rc != 0 && errno == EINTR);
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(errno), "rank %d: fcntl lock on %s: %s",
                       st->rank, st->path, strerror(errno));
  return 0;
}
