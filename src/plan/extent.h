/*
 * extent.h - growable lists of (offset, length) byte ranges.
 *
 * Every access in aggio is described as such a list: file ranges of a view,
 * memory ranges of a datatype, the pieces one rank sends to one aggregator.
 * Plain C, no MPI, so that the planning code built on it unit-tests alone.
 */
#ifndef AGGIO_EXTENT_H
#define AGGIO_EXTENT_H

#include <stddef.h>
#include <stdint.h>

struct aggio__extent {
  int64_t off;
  int64_t len;
};

struct aggio__extents {
  struct aggio__extent *v;
  size_t n;
  size_t cap;
};

/* Appends [off, off+len); merges with the last range when they touch
 * (off == last.off + last.len).  len <= 0 is a no-op.  0, AGGIO_ERR_NOMEM,
 * or AGGIO_ERR_OVERFLOW when off + len passes INT64_MAX (nothing stored). */
int aggio__extents_push(struct aggio__extents *l, int64_t off, int64_t len);
int aggio__extents_reserve(struct aggio__extents *l, size_t n);
void aggio__extents_clear(struct aggio__extents *l);
void aggio__extents_free(struct aggio__extents *l);
int64_t aggio__extents_bytes(const struct aggio__extents *l);

#endif
