/*
 * flat.h - a datatype flattened to its list of contiguous pieces, and the
 * pure (MPI-free) operations on it: mapping a byte range of the data stream
 * to file or memory ranges, packing and unpacking.
 *
 * The MPI side (decoding a datatype with MPI_Type_get_envelope/contents and
 * caching the result on it) lives in flatten.c; this half unit-tests alone.
 */
#ifndef AGGIO_FLAT_H
#define AGGIO_FLAT_H

#include <stdint.h>

#include "extent.h"

/* One datatype's typemap, as byte pieces in typemap order, adjacent pieces
 * coalesced.  The type tiles with stride `extent` (count > 1, or a file view).
 * prefix[i] is the number of data bytes before piece i (prefix[n] == size),
 * so a data-stream position finds its piece by binary search. */
struct aggio__flat {
  int64_t n;       /* number of pieces */
  int64_t *off;    /* byte displacement of each piece from the buffer/view origin */
  int64_t *len;    /* length of each piece, > 0 */
  int64_t *prefix; /* n + 1 entries */
  int64_t size;    /* bytes of data in one instance (MPI_Type_size) */
  int64_t lb;      /* lower bound (MPI_Type_get_extent) */
  int64_t extent;  /* extent: the tiling stride */
  int refs;        /* reference count, see flatten.h */
};

/* Builds a flat from explicit pieces (copies them, coalesces, fills prefix).
 * Zero-length pieces are dropped.  NULL on allocation failure. */
struct aggio__flat *aggio__flat_new(const int64_t *off, const int64_t *len,
                                    int64_t n, int64_t lb, int64_t extent);
void aggio__flat_free(struct aggio__flat *f);

/* 1 if `count` instances tiled from offset 0 form a single contiguous range
 * starting at off[0] (then the data stream is that range of memory). */
int aggio__flat_is_contiguous(const struct aggio__flat *f, int64_t count);

/* 1 if, within one instance, piece displacements never decrease (and, with
 * `disjoint`, no piece overlaps the one before). */
int aggio__flat_pieces_ordered(const struct aggio__flat *f, int disjoint);

/* 1 if the next instance (one extent on) starts at or after the start of
 * this instance's last piece (with `disjoint`: after its end).  False for a
 * type whose data run past its extent, which HDF5 builds (resized types
 * smaller than their data) and uses for one instance per access: such a
 * filetype is valid as long as an access stays within one instance. */
int aggio__flat_tiles_ordered(const struct aggio__flat *f, int disjoint);

/* 1 if piece displacements never decrease, across tiles too (what MPI-IO
 * requires of a filetype). */
int aggio__flat_is_monotonic(const struct aggio__flat *f);

/* 1 if, tiled, no byte is covered twice and pieces never go back: what
 * MPI-IO requires of the etype and the filetype of a file opened for
 * writing. */
int aggio__flat_is_disjoint(const struct aggio__flat *f);

/* Appends to `out` the byte ranges, relative to `base`, that hold data-stream
 * bytes [pos, pos + nbytes) of the type tiled without end.  Adjacent ranges
 * coalesce.  0, AGGIO_ERR_NOMEM, or AGGIO_ERR_OVERFLOW when a range would
 * reach past INT64_MAX. */
int aggio__flat_map(const struct aggio__flat *f, int64_t base, int64_t pos,
                    int64_t nbytes, struct aggio__extents *out);

/* Copies `count` instances described by f from buf into the contiguous
 * stream dst (pack) or back (unpack).  Only the first nbytes of the stream
 * are moved on unpack (short reads). */
void aggio__flat_pack(const struct aggio__flat *f, int64_t count,
                      const void *buf, void *dst);
void aggio__flat_unpack(const struct aggio__flat *f, int64_t count,
                        const void *src, int64_t nbytes, void *buf);

#endif
