/*
 * extent.c - growable (offset, length) lists; appends merge touching ranges
 * so that lists built from coalescable pieces stay short.
 */
#include "extent.h"

#include <stdlib.h>

#include "aggio_errno.h"

int aggio__extents_reserve(struct aggio__extents *l, size_t n) {
  if (n <= l->cap)
    return 0;
  size_t cap = l->cap ? l->cap : 16;
  while (cap < n)
    cap *= 2;
  struct aggio__extent *v = realloc(l->v, cap * sizeof *v);
  if (!v)
    return AGGIO_ERR_NOMEM;
  l->v = v;
  l->cap = cap;
  return 0;
}

int aggio__extents_push(struct aggio__extents *l, int64_t off, int64_t len) {
  if (len <= 0)
    return 0;
  if (l->n > 0) {
    struct aggio__extent *last = &l->v[l->n - 1];
    if (last->off + last->len == off) {
      last->len += len;
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
