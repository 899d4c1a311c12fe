/*
 * flat.c - the MPI-free half of datatype flattening: building a piece list
 * (coalesced, with prefix sums of data bytes), mapping a data-stream range
 * to byte ranges, and packing/unpacking with one memcpy per piece.
 * Same representation as ROMIO's ADIOI_Flatlist_node (adio/common/flatten.c),
 * plus the prefix array so that a stream position is found by binary search.
 */
#include "flat.h"

#include <stdlib.h>
#include <string.h>

#include "aggio_errno.h"

/* Copies the non-empty pieces, merging each with the previous one when it
 * starts where that one ends (typemap order is kept: only touching pieces in
 * sequence merge, never pieces that touch out of order). */
static int64_t copy_coalesced(struct aggio__flat *f, const int64_t *off,
                              const int64_t *len, int64_t n) {
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    if (len[i] <= 0)
      continue;
    if (m > 0 && f->off[m - 1] + f->len[m - 1] == off[i]) {
      f->len[m - 1] += len[i];
      continue;
    }
    f->off[m] = off[i];
    f->len[m] = len[i];
    m++;
  }
  return m;
}

struct aggio__flat *aggio__flat_new(const int64_t *off, const int64_t *len,
                                    int64_t n, int64_t lb, int64_t extent) {
  struct aggio__flat *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  /* at least one slot each, so that n == 0 is not a malloc(0) special case */
  size_t slots = (size_t)(n > 0 ? n : 1);
  f->off = malloc(slots * sizeof *f->off);
  f->len = malloc(slots * sizeof *f->len);
  f->prefix = malloc((slots + 1) * sizeof *f->prefix);
  if (!f->off || !f->len || !f->prefix) {
    aggio__flat_free(f);
    return NULL;
  }
  f->n = copy_coalesced(f, off, len, n);
  f->prefix[0] = 0;
  for (int64_t i = 0; i < f->n; i++)
    f->prefix[i + 1] = f->prefix[i] + f->len[i];
  f->size = f->prefix[f->n];
  f->lb = lb;
  f->extent = extent;
  f->refs = 1;
  return f;
}

void aggio__flat_free(struct aggio__flat *f) {
  if (!f)
    return;
  free(f->off);
  free(f->len);
  free(f->prefix);
  free(f);
}

int aggio__flat_is_contiguous(const struct aggio__flat *f, int64_t count) {
  if (count <= 0 || f->size == 0)
    return 1; /* an empty stream is trivially one (empty) range */
  if (f->n != 1)
    return 0; /* coalesced: several pieces never form one range in order */
  return count == 1 || f->len[0] == f->extent;
}

int aggio__flat_pieces_ordered(const struct aggio__flat *f, int disjoint) {
  /* gaps as unsigned differences: pieces may lie far apart */
  for (int64_t i = 1; i < f->n; i++)
    if (f->off[i] < f->off[i - 1] ||
        (disjoint && (uint64_t)f->off[i] - (uint64_t)f->off[i - 1] < (uint64_t)f->len[i - 1]))
      return 0;
  return 1;
}

int aggio__flat_tiles_ordered(const struct aggio__flat *f, int disjoint) {
  if (f->n == 0)
    return 1;
  /* the next tile starts at off[0] + extent: at or after the last piece's
   * start (ordered), or its end (disjoint) */
  int64_t next, last = f->off[f->n - 1];
  if (__builtin_add_overflow(f->off[0], f->extent, &next) ||
      (disjoint && __builtin_add_overflow(last, f->len[f->n - 1], &last)))
    return 0;
  return next >= last;
}

int aggio__flat_is_monotonic(const struct aggio__flat *f) {
  return aggio__flat_pieces_ordered(f, 0) && aggio__flat_tiles_ordered(f, 0);
}

int aggio__flat_is_disjoint(const struct aggio__flat *f) {
  return aggio__flat_pieces_ordered(f, 1) && aggio__flat_tiles_ordered(f, 1);
}

/* Index of the piece holding in-tile data byte r (0 <= r < size): the last i
 * with prefix[i] <= r. */
static int64_t find_piece(const struct aggio__flat *f, int64_t r) {
  int64_t lo = 0, hi = f->n - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo + 1) / 2;
    if (f->prefix[mid] <= r)
      lo = mid;
    else
      hi = mid - 1;
  }
  return lo;
}

/* *at = base + tile * extent + off[i] + skip, or 1 if that overflows (a
 * view or an offset near INT64_MAX: an error for the caller, not a wrap). */
static int piece_offset(const struct aggio__flat *f, int64_t base, int64_t tile, int64_t i,
                        int64_t skip, int64_t *at) {
  int64_t x;
  return __builtin_mul_overflow(tile, f->extent, &x) || __builtin_add_overflow(x, base, &x) ||
         __builtin_add_overflow(x, f->off[i], &x) || __builtin_add_overflow(x, skip, at);
}

/* A type whose one piece fills its extent (MPI_BYTE, a contiguous type)
 * tiles the file without gaps: the bytes from pos on are one range, found
 * at once instead of tile by tile (PnetCDF's and HDF5's byte views). */
static int map_gapless(const struct aggio__flat *f, int64_t base, int64_t pos,
                       int64_t nbytes, struct aggio__extents *out) {
  int64_t at;
  if (__builtin_add_overflow(base, f->off[0], &at) || __builtin_add_overflow(at, pos, &at))
    return AGGIO_ERR_OVERFLOW; /* the view reaches past INT64_MAX */
  return aggio__extents_push(out, at, nbytes);
}

int aggio__flat_map(const struct aggio__flat *f, int64_t base, int64_t pos,
                    int64_t nbytes, struct aggio__extents *out) {
  if (nbytes <= 0)
    return 0;
  if (pos < 0 || f->size <= 0)
    return AGGIO_ERR_ARG; /* no data bytes to map onto */
  if (f->n == 1 && f->len[0] == f->extent)
    return map_gapless(f, base, pos, nbytes, out);
  int64_t tile = pos / f->size;
  int64_t r = pos % f->size;
  int64_t i = find_piece(f, r);
  int64_t skip = r - f->prefix[i]; /* start mid-piece */
  while (nbytes > 0) {
    int64_t take = f->len[i] - skip, at;
    if (take > nbytes)
      take = nbytes;
    if (piece_offset(f, base, tile, i, skip, &at))
      return AGGIO_ERR_OVERFLOW; /* the view reaches past INT64_MAX */
    int rc = aggio__extents_push(out, at, take);
    if (rc)
      return rc;
    nbytes -= take;
    skip = 0;
    if (++i == f->n) {
      i = 0;
      tile++;
    }
  }
  return 0;
}

void aggio__flat_pack(const struct aggio__flat *f, int64_t count,
                      const void *buf, void *dst) {
  const char *src = buf;
  char *out = dst;
  if (aggio__flat_is_contiguous(f, count)) {
    if (count > 0 && f->size > 0)
      memcpy(out, src + f->off[0], (size_t)(count * f->size));
    return;
  }
  for (int64_t t = 0; t < count; t++) {
    const char *tile = src + t * f->extent;
    for (int64_t i = 0; i < f->n; i++) {
      memcpy(out, tile + f->off[i], (size_t)f->len[i]);
      out += f->len[i];
    }
  }
}

void aggio__flat_unpack(const struct aggio__flat *f, int64_t count,
                        const void *src, int64_t nbytes, void *buf) {
  const char *in = src;
  char *dst = buf;
  if (count > 0 && nbytes > count * f->size)
    nbytes = count * f->size;
  for (int64_t t = 0; t < count && nbytes > 0; t++) {
    char *tile = dst + t * f->extent;
    for (int64_t i = 0; i < f->n && nbytes > 0; i++) {
      int64_t take = f->len[i] < nbytes ? f->len[i] : nbytes;
      memcpy(tile + f->off[i], in, (size_t)take);
      in += take;
      nbytes -= take;
    }
  }
}
