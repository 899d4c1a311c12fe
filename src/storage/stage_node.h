/*
 * stage_node.h - a node's movers (aggio_stage_merge=node; docs/staging.md,
 * "A node's movers"), for the stage back end (storage_stage.c).
 *
 * Threads of the node's first process move the staged records of every
 * process of the node, and join records of different ranks that adjoin
 * in the final file into one transfer (plan/stage_merge.h): ior-hard's
 * 47,008-byte records, interleaved over the ranks, reach the file in runs
 * of up to 8 MiB instead of one request each.  They read the writers'
 * stage files as a replay does (a record counts once its bytes and it
 * were written), so the writers tell them nothing between syncs; at a
 * sync or close the core tells the node's first process how many records
 * each writer made (aggio__stage_node_drain), and every one is in the
 * final file before any writer forgets its stage files.
 */
#ifndef AGGIO_STAGE_NODE_H
#define AGGIO_STAGE_NODE_H

#include <stdint.h>

struct aggio__store;
struct aggio__err;
struct aggio__faults;
struct aggio__stage_node;

/* What the node's movers need: the node's writers (ranks of the file,
 * this process first), their stage files (dir, session), this process's
 * store of the final file (its pwrite is called from the movers), how
 * many movers, and whether they move from the first record on (after a
 * quiet spell of the writers, as a rank's own movers) or only while a
 * drain waits. */
struct aggio__stage_node_conf {
  struct aggio__store *final;
  const char *dir, *session;
  const int *ranks;
  int nranks, movers, background;
  struct aggio__faults *faults;
};

/* Starts the movers: NULL with e set when out of memory or threads. */
struct aggio__stage_node *aggio__stage_node_start(const struct aggio__stage_node_conf *c,
                                                  struct aggio__err *e);

/* Waits until writer i's first counts[i] records in its current stage
 * files (counts in the order of conf.ranks) are in the final file, not
 * synced.  Called while every writer waits in the same sync or close, so
 * none writes meanwhile: a record not valid then was never written (its
 * write failed, and said so).  The movers' failure, now or before, is
 * e's; after one nothing moves any more. */
int aggio__stage_node_drain(struct aggio__stage_node *nd, const int64_t *counts,
                            struct aggio__err *e);

/* Stops the movers (each finishes its transfer first) and frees them. */
void aggio__stage_node_stop(struct aggio__stage_node *nd);

#endif
