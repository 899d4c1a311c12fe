/*
 * staging.h - whether a file is staged through a node-local directory
 * (staging.c; the back end is storage/storage_stage.c, the design
 * docs/staging.md).
 */
#ifndef AGGIO_STAGING_H
#define AGGIO_STAGING_H

#include <stdio.h>

#include "internal.h"

/* At open, after the back end and subfiling were chosen (collective):
 * with aggio_stage_dir set, an ordinary POSIX file becomes staged (the
 * stage back end over posix), with the open's session name from rank 0;
 * aggio_stage_dir on any other back end is marked ignored.  Bad values of
 * aggio_stage_drain or aggio_stage_sync are marked ignored and the
 * defaults used. */
int aggio__staging_choose(aggio_file fh, struct aggio__err *e);
/* After the topology: who moves this rank's records (aggio_stage_merge:
 * the movers of its node's first rank, when the node has two or more of
 * the file's ranks) and how many movers this process runs
 * (aggio_stage_movers: all of the node's when it moves for the node, else
 * its share).  Fails only out of memory. */
int aggio__staging_resolve(aggio_file fh, struct aggio__err *e);
/* What resolve allocated (at the handle's release). */
void aggio__staging_free(aggio_file fh);
/* The strategy a staged file's calls take (independent: each byte's stage
 * lies on its writer's node), or `wanted` when the file is not staged; an
 * aggio_strategy hint that names another one is marked ignored. */
const struct aggio__strategy_ops *
aggio__staging_strategy(aggio_file fh, const struct aggio__strategy_ops *wanted);
int aggio__staged(aggio_file fh);
/* The statistics block's lines of a staged file (nothing when not
 * staged): the stage directory and the drain mode. */
void aggio__staging_stats(aggio_file fh, FILE *f);
/* Where the final file must hold every staged byte (collective). */
enum aggio__stage_point {
  AGGIO_STAGE_POINT_SYNC,
  AGGIO_STAGE_POINT_CLOSE,
  AGGIO_STAGE_POINT_FLUSH
};
/* On every rank, before the store's sync (aggio_stage_sync=final), close
 * (drain not none), or flush (set_size, atomic mode): waits for this
 * rank's movers, then writes again the bytes that several ranks staged,
 * each from the rank whose write is the newest there (plan/stage_order.h),
 * so that the file holds what writing directly would have left even when
 * only a barrier ordered the writes.  Any failure on any rank fails every
 * rank's store (their records stay, for a replay in order) and is e's;
 * the caller agrees.  Otherwise nothing to do. */
int aggio__staging_order(aggio_file fh, enum aggio__stage_point at, struct aggio__err *e);
/* set_size(size) of a staged file (collective): whether no rank holds
 * staged bytes at or past size, so that the final file can be cut or
 * grown without waiting for the movers (HDF5 sets the size to its end of
 * allocation at every flush and close).  0 for a file not staged. */
int aggio__staging_below(aggio_file fh, int64_t size);
/* Close with aggio_stage_drain=detach, once every rank closed
 * (collective): one rank per node hands the node's stage of the file to
 * a drainer process that outlives the program (aggio-stage-drain:
 * AGGIO_STAGE_DRAINER, else the installed one, else this build's), or,
 * when none can start, writes it to the file itself.  Its failure is e's
 * (the caller agrees). */
void aggio__staging_hand_over(aggio_file fh, struct aggio__err *e);
/* Staged bytes that could not reach the file, said on out (at finalize,
 * when nobody is left to hear it otherwise): their count. */
int64_t aggio__staging_report_unwritten(aggio_file fh, FILE *out);

#endif
