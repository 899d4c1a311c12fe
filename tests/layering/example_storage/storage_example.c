/*
 * storage_example.c - the storage back end that docs/architecture.md's
 * walk-through adds ("Adding a storage back end"): the file system, as
 * the POSIX back end keeps it, with every system write counted on the
 * way.  It is a whole back end, written against storage.h alone: every
 * call of the table forwards to the POSIX back end's, and
 * aggio_example_storage_writes() says how many writes went through.
 * add_strategy.cmake copies it into src/storage/ and adds its line to
 * storage_registry.c, nothing else.
 */
#include "storage.h"

extern const struct aggio__storage_ops aggio__storage_posix;
#define POSIX (&aggio__storage_posix)

static long writes; /* this process's pwrite calls */

static int ex_open(struct aggio__store *st, int create, struct aggio__err *e) {
  return POSIX->open(st, create, e);
}
static void ex_probe(struct aggio__store *st, struct aggio__fs_info *fi) {
  POSIX->probe(st, fi);
}
static void ex_open_direct(struct aggio__store *st) { POSIX->open_direct(st); }
static int ex_close(struct aggio__store *st, struct aggio__err *e) {
  return POSIX->close(st, e);
}
static int ex_pwrite(struct aggio__store *st, const void *buf, int64_t len, int64_t off,
                     int flags, struct aggio__err *e) {
  __atomic_fetch_add(&writes, 1, __ATOMIC_RELAXED); /* I/O threads write too */
  return POSIX->pwrite(st, buf, len, off, flags, e);
}
static int ex_pread(struct aggio__store *st, void *buf, int64_t len, int64_t off,
                    int64_t *got, int flags, struct aggio__err *e) {
  return POSIX->pread(st, buf, len, off, got, flags, e);
}
static int ex_sync(struct aggio__store *st, struct aggio__err *e) { return POSIX->sync(st, e); }
static int ex_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  return POSIX->size(st, size, e);
}
static int ex_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  return POSIX->truncate(st, size, e);
}
static int ex_lock(struct aggio__store *st, int64_t off, int64_t len, int is_write,
                   struct aggio__err *e) {
  return POSIX->lock(st, off, len, is_write, e);
}
static int ex_remove(struct aggio__store *st, struct aggio__err *e) {
  return POSIX->remove(st, e);
}
static void ex_release(struct aggio__store *st) { POSIX->release(st); }

/* No preallocate and no group lock: the storage layer extends the file
 * with size and truncate instead, and reports the lock hints ignored. */
const struct aggio__storage_ops aggio__storage_example = {
    .name = "example",
    .open = ex_open,
    .probe = ex_probe,
    .open_direct = ex_open_direct,
    .close = ex_close,
    .pwrite = ex_pwrite,
    .pread = ex_pread,
    .sync = ex_sync,
    .size = ex_size,
    .truncate = ex_truncate,
    .preallocate = NULL,
    .lock = ex_lock,
    .group_lock = NULL,
    .remove = ex_remove,
    .release = ex_release,
};

long aggio_example_storage_writes(void);
__attribute__((visibility("default"))) long aggio_example_storage_writes(void) {
  return __atomic_load_n(&writes, __ATOMIC_RELAXED);
}
