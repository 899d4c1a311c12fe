/*
 * stage_order.h - which staged bytes must be written again so that the
 * newest write of each byte wins across ranks (docs/staging.md, "Writes
 * of different ranks to the same bytes").  Pure planning: no MPI, no file.
 *
 * Each rank's movers move its own records in order, so two ranks' writes
 * of the same bytes reach the file in whatever order their movers run.  A
 * program may order such writes by a barrier alone (HDF5 writes fill
 * values from one rank, then the data from another); written directly,
 * the later one wins.  At a sync or close, once every mover is done, the
 * ranks hand their records to the owners of file domains; an owner finds
 * the bytes that more than one rank wrote and names the rank whose write
 * is the newest there (stage_format.h's age); that rank writes them again.
 */
#ifndef AGGIO_STAGE_ORDER_H
#define AGGIO_STAGE_ORDER_H

#include <stdint.h>

#include "stage_format.h"

/* A staged record, or the part of one in a file domain (r.offset and
 * r.length cut to it), and its writer. */
struct aggio__stage_piece {
  struct aggio__stage_rec r;
  int rank;
};

/* Bytes [offset, offset+length) to be written again by rank `rank` from
 * its own newest records. */
struct aggio__stage_fix {
  int64_t offset, length;
  int rank;
};

/* The pieces cut at the domains of [lo, lo + domain * ndomains): each
 * piece of p that spans domains is split; *out (malloc'ed, sorted by
 * domain) and *owner_count[d] pieces per domain d.  0, or -1 when memory
 * runs out. */
int aggio__stage_split(const struct aggio__stage_piece *p, int64_t n, int64_t lo,
                       int64_t domain, int ndomains, struct aggio__stage_piece **out,
                       int64_t *nout, int64_t *owner_count);

/* The fixes for the pieces p (any order, any writers): the byte ranges
 * written by more than one rank, each given to the rank whose piece over
 * it is the newest; adjacent ranges of one rank joined; sorted by rank,
 * then offset.  *out is malloc'ed (NULL when none).  0, or -1 when memory
 * runs out. */
int aggio__stage_conflicts(const struct aggio__stage_piece *p, int64_t n,
                           struct aggio__stage_fix **out, int64_t *nout);

#endif
