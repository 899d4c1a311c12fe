/*
 * align.c - aligned buffers (align.h).
 */
#include <stdlib.h>

#include "align.h"

void *aggio__alloc_aligned(int64_t len, int64_t align) {
  void *p = NULL;
  if (align < (int64_t)sizeof(void *))
    align = sizeof(void *);
  if (posix_memalign(&p, (size_t)align, (size_t)(len > 0 ? len : 1)) != 0)
    return NULL;
  return p;
}
