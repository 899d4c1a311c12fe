/*
 * vec.h - the one growable array of the library: any struct with a `v`
 * (T *), `n` and `cap` (size_t) is one, e.g. struct aggio__extents.  It
 * grows by doubling from 16; a failed growth leaves the array as it was.
 * The macros evaluate their arguments more than once: pass plain lvalues.
 *   struct { struct thing *v; size_t n, cap; } a = {0};
 *   if (aggio__vec_push(&a, t) != 0) ... out of memory ...
 *   free(a.v);
 */
#ifndef AGGIO_VEC_H
#define AGGIO_VEC_H

#include <stddef.h>

#include "aggio_errno.h"

/* Room for `need` elements of `elem` bytes: returns the array to keep
 * (moved, maybe), *cap grown to at least need; or, out of memory, v itself
 * and *cap unchanged. */
void *aggio__grow(void *v, size_t *cap, size_t need, size_t elem);

/* Room for need elements: 0 or AGGIO_ERR_NOMEM. */
#define aggio__vec_reserve(a, need)                                      \
  ((a)->v = aggio__grow((a)->v, &(a)->cap, (need), sizeof *(a)->v),     \
   (a)->cap >= (size_t)(need) ? 0 : AGGIO_ERR_NOMEM)

/* Appends x: 0 or AGGIO_ERR_NOMEM. */
#define aggio__vec_push(a, x) \
  (aggio__vec_reserve((a), (a)->n + 1) != 0 ? AGGIO_ERR_NOMEM : ((a)->v[(a)->n++] = (x), 0))

#endif
