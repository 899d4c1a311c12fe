/*
 * shm.h - memory shared by the ranks of one node, made without blocking
 * (shm.c).  MPI_Win_allocate_shared would do, but MPI has no non-blocking
 * form of it, and a strategy's first operation on a file may be a
 * non-blocking one whose steps run in progress passes: a pass that blocked
 * in a window creation while another rank had left its starting call for
 * MPI_Barrier hung both (docs/engine.md, "Liveness").  Here the node's
 * first rank creates a POSIX shared-memory object, the others learn its
 * name from a posted MPI_Ibcast and map it, a posted MPI_Iallreduce agrees
 * that every rank did, and the name is unlinked.  Freeing is local
 * (munmap): the memory goes when the node's last rank unmaps it, so no
 * collective is needed to free it, and a rank whose peers failed can
 * always let go of its part.
 */
#ifndef AGGIO_SHM_H
#define AGGIO_SHM_H

#include "engine.h"

/* Steps of op that make `len` bytes (the same on every rank of comm)
 * shared by the ranks of comm, then go on with `then` in `phase`.  On
 * every rank s->base is then the mapping, or NULL when any rank could not
 * create or map it (the caller decides whether that is an error: two-phase
 * falls back to messages, the node cache cannot run).  s->init (NULL, or
 * set before) prepares the memory on the creating rank before any other
 * rank can see it.  Posted collectives only; s must live until `then`
 * runs (per-file state). */
int aggio__shm_make(struct aggio__op *op, struct aggio__shm *s, MPI_Comm comm, size_t len,
                    aggio__step_fn then, int phase);

/* Unmaps s (local).  Safe on a segment never made or already freed. */
void aggio__shm_free(struct aggio__shm *s);

#endif
