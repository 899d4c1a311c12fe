/*
 * alloc.c - the small allocations whose failure paths
 * the tests reach through fault injection (AGGIO_FAULTS alloc, fault.c).
 */
#include <stdlib.h>

#include "internal.h"

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
