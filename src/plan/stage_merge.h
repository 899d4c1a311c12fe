/*
 * stage_merge.h - the next run a node's movers take (docs/staging.md,
 * "A node's movers").  Pure planning: no MPI, no file.
 *
 * With aggio_stage_merge=node the movers of a node's first process move
 * the records of every process of the node.  A record is one write of one
 * rank; ior-hard's are 47,008 bytes, and the ranks' records interleave in
 * the file, so moved rank by rank every one is a request of its own.  A
 * run joins records of any of the node's writers whose bytes follow each
 * other in the final file into one transfer.  Each writer's records are
 * taken in its own order, so that of two writes of one rank to the same
 * bytes the later reaches the file last.
 */
#ifndef AGGIO_STAGE_MERGE_H
#define AGGIO_STAGE_MERGE_H

#include <stdint.h>

struct aggio__merge_rec {
  int64_t offset, length; /* bytes [offset, offset + length) of the final file */
};

/* A writer's records that can be taken now, oldest first: rec[0] is its
 * next one (its head). */
struct aggio__merge_queue {
  const struct aggio__merge_rec *rec;
  int64_t n;
};

/* Bytes another mover is writing now. */
struct aggio__merge_range {
  int64_t lo, hi;
};

/* The next run: it starts at the head with the lowest offset (of equal
 * ones, the lowest writer) that overlaps no busy range, and grows while a
 * writer's head (each writer's records taken in order) starts where the
 * run ends, overlaps no busy range and keeps the run within max bytes (a
 * first record longer than max goes alone).  order[k] gets the writer of
 * the run's k-th record, in file order (at most cap records), taken[w]
 * the records taken from writer w's queue (zeroed first).  Returns the
 * run's records, 0 when no head can be taken now. */
int64_t aggio__stage_merge_run(const struct aggio__merge_queue *q, int nwriters,
                               const struct aggio__merge_range *busy, int nbusy,
                               int64_t max, int *order, int64_t cap, int64_t *taken);

#endif
