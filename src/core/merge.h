/*
 * merge.h - non-blocking collective operations started back to back on one
 * file, each small, run as one (merge.c): the request scheduler
 * (request.c) offers them; the engine runs the merged one through the
 * hooks of struct aggio__merge (engine.h).
 */
#ifndef AGGIO_MERGE_H
#define AGGIO_MERGE_H

#include "engine.h"

/* An offer of ops[0..n) (ops[0] the carrier), with the memory of their
 * merged access; NULL without memory (then nothing is offered). */
struct aggio__merge *aggio__merge_new(struct aggio__op **ops, int n);
void aggio__merge_free(struct aggio__merge *g);

/* At the carrier's completion: each merged operation gets the outcome (and
 * what it read); the carrier gets its own access back.  Returns how many
 * operations were merged (1: none). */
int aggio__merge_finish(struct aggio__op *op);

#endif
