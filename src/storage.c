/*
 * storage.c - the calls of the storage edge as the rest of the library
 * makes them (storage.h), and the allocations that tests can make fail.
 */
#include <stdlib.h>

#include "internal.h"

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

int aggio__fsync(aggio_file fh, struct aggio__err *e) {
  if (!fh->opened)
    return 0;
  return fh->store->sync(fh, e);
}

void *aggio__alloc_aligned(int64_t len, int64_t align) {
  void *p = NULL;
  if (align < (int64_t)sizeof(void *))
    align = sizeof(void *);
  if (posix_memalign(&p, (size_t)align, (size_t)(len > 0 ? len : 1)) != 0)
    return NULL;
  return p;
}

void *aggio__malloc(aggio_file fh, size_t n) {
  if (aggio__fault(fh->faults, AGGIO_FAULT_ALLOC))
    return NULL;
  return malloc(n ? n : 1);
}

void *aggio__calloc(aggio_file fh, size_t n, size_t size) {
  if (aggio__fault(fh->faults, AGGIO_FAULT_ALLOC))
    return NULL;
  return calloc(n ? n : 1, size ? size : 1);
}
