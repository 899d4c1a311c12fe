/*
 * extent.c - growable (offset, length) lists; appends merge touching ranges
 * so that lists built from coalescable pieces stay short.
 */
#include "extent.h"

#include <stdlib.h>

#include "aggio_errno.h"
#include "vec.h"

int aggio__extents_reserve(struct aggio__extents *l, size_t n) {
  return aggio__vec_reserve(l, n);
}

/* 1 when a range starting at off begins where `last` ends.  Compared as an
 * unsigned difference: off - last->off may not fit in int64_t (a range far
 * above a negative memory offset), and no sum is formed that could overflow. */
static int touches(const struct aggio__extent *last, int64_t off) {
  return off >= last->off && (uint64_t)off - (uint64_t)last->off == (uint64_t)last->len;
}

int aggio__extents_push(struct aggio__extents *l, int64_t off, int64_t len) {
  int64_t end;
  if (len <= 0)
    return 0;
  if (__builtin_add_overflow(off, len, &end))
    return AGGIO_ERR_OVERFLOW; /* the range passes INT64_MAX */
  if (l->n > 0) {
    struct aggio__extent *last = &l->v[l->n - 1];
    if (touches(last, off)) {
      int64_t merged;
      if (__builtin_add_overflow(last->len, len, &merged))
        return AGGIO_ERR_OVERFLOW; /* longer than INT64_MAX bytes */
      last->len = merged;
      return 0;
    }
  }
  if (l->n == l->cap && aggio__extents_reserve(l, l->n + 1))
    return AGGIO_ERR_NOMEM;
  l->v[l->n].off = off;
  l->v[l->n].len = len;
  l->n++;
  return 0;
}

void aggio__extents_clear(struct aggio__extents *l) { l->n = 0; }

void aggio__extents_free(struct aggio__extents *l) {
  free(l->v);
  l->v = NULL;
  l->n = l->cap = 0;
}

int64_t aggio__extents_bytes(const struct aggio__extents *l) {
  int64_t sum = 0;
  for (size_t i = 0; i < l->n; i++)
    sum += l->v[i].len;
  return sum;
}
