/*
 * alloc.c - aligned buffers, and the small allocations whose failure paths
 * the tests reach through fault injection (AGGIO_FAULTS alloc, fault.c).
 */
#include <stdlib.h>

#include "internal.h"

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
