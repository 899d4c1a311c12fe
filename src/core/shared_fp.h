/*
 * shared_fp.h - the shared file pointer (shared_fp.c): one 64-bit counter
 * per open file, in etypes of the current view, that every rank of the
 * file's communicator reads and moves atomically without the others taking
 * part.  docs/shared-fp.md tells how it is kept and what it costs.
 */
#ifndef AGGIO_SHARED_FP_H
#define AGGIO_SHARED_FP_H

#include <mpi.h>
#include <stdint.h>

#include "aggio.h"

struct aggio__err;

/* The file handle's part (fh->sfp), in etypes of the view. */
struct aggio__sfp_state {
  MPI_Win win;      /* its window, MPI_WIN_NULL until made */
  int64_t *ptr;     /* the counter (rank 0's; every rank's when shm) */
  int shm;          /* one node: moved with atomics in shared memory */
  int locked;       /* the lock_all epoch is open: the pointer works */
  int moved;        /* this rank moved it off 0 since open or the last reset
                     * (set_view resets it only when some rank did) */
  char why[200];    /* why there is none (open could not make it) */
};

/* Collective at open (after the topology is known): makes the pointer, at
 * 0.  It never fails the open: when any rank cannot make its part, no rank
 * has a pointer (agreed), and the shared-pointer calls return
 * AGGIO_ERR_UNSUPPORTED saying why, so that a program that never uses them
 * does not lose its file to an MPI library whose windows do not work. */
void aggio__sfp_open(aggio_file fh);
/* 1 when the file has a shared pointer (the same on every rank). */
int aggio__sfp_available(aggio_file fh);
/* Collective at close; nothing when the pointer was never made. */
void aggio__sfp_close(aggio_file fh);
/* Collective, on a failed open: frees the window when every rank has one. */
void aggio__sfp_abandon(aggio_file fh);

/* Atomically adds `add` (etypes) to the pointer and returns in *old the
 * value before.  Independent: no other rank takes part. */
int aggio__sfp_fetch_add(aggio_file fh, int64_t add, int64_t *old, struct aggio__err *e);
/* Reads the pointer (independent). */
int aggio__sfp_get(aggio_file fh, int64_t *value, struct aggio__err *e);
/* Sets the pointer (independent: the callers make one rank do it inside a
 * collective call, between two synchronisations). */
int aggio__sfp_set(aggio_file fh, int64_t value, struct aggio__err *e);
/* 1 when this rank moved the pointer off 0 since open or the last
 * aggio__sfp_mark_reset (set_view's reduction asks every rank). */
int aggio__sfp_moved(aggio_file fh);
void aggio__sfp_mark_reset(aggio_file fh);

#endif
