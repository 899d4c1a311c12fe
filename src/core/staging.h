/*
 * staging.h - whether a file is staged through a node-local directory
 * (staging.c; the back end is storage/storage_stage.c, the design
 * docs/staging.md).
 */
#ifndef AGGIO_STAGING_H
#define AGGIO_STAGING_H

#include "internal.h"

/* At open, after the back end and subfiling were chosen (collective):
 * with aggio_stage_dir set, an ordinary POSIX file becomes staged (the
 * stage back end over posix), with the open's session name from rank 0;
 * aggio_stage_dir on any other back end is marked ignored.  Bad values of
 * aggio_stage_drain or aggio_stage_sync are marked ignored and the
 * defaults used. */
int aggio__staging_choose(aggio_file fh, struct aggio__err *e);
/* After the topology: this process's share of aggio_stage_movers. */
void aggio__staging_resolve(aggio_file fh);
/* The strategy a staged file's calls take (independent: each byte's stage
 * lies on its writer's node), or `wanted` when the file is not staged; an
 * aggio_strategy hint that names another one is marked ignored. */
const struct aggio__strategy_ops *
aggio__staging_strategy(aggio_file fh, const struct aggio__strategy_ops *wanted);
int aggio__staged(aggio_file fh);
/* Staged bytes that could not reach the file, said on out (at finalize,
 * when nobody is left to hear it otherwise): their count. */
int64_t aggio__staging_report_unwritten(aggio_file fh, FILE *out);

#endif
