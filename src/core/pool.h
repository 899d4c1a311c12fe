/*
 * pool.h - the process's I/O threads: a fixed set of threads made at the
 * first job and kept for the life of the process, running the jobs of
 * every file from one queue (libuv's threadpool.c: no thread per
 * operation, one pool per process).  The threads never call MPI, so they
 * are allowed at every MPI thread level.
 *
 * The node cache of write-behind (strategies/write_behind/cache.c) has
 * threads of its own, for a reason: its queue lives in node-shared memory
 * and the node's other processes fill it, so the threads that serve it
 * must wait on a process-shared condition; this pool's queue is private to
 * the process.
 *
 * A job belongs to a batch (the jobs of one operation); the operation tests
 * or waits for its batch, and the first failure of a job in the batch is
 * the batch's error.
 */
#ifndef AGGIO_POOL_H
#define AGGIO_POOL_H

#include "internal.h"

#define AGGIO_POOL_THREADS 2

struct aggio__batch {
  int pending;             /* jobs submitted and not finished */
  struct aggio__err err;   /* the first failure among them */
};

struct aggio__job {
  /* Runs on an I/O thread; reports failure through e. */
  void (*run)(struct aggio__job *job, struct aggio__err *e);
  struct aggio__job *next;
  struct aggio__batch *batch;
};

struct aggio__pool;

/* The process's pool of AGGIO_POOL_THREADS threads, made at the first
 * call, its threads started at the first job; NULL without memory. */
struct aggio__pool *aggio__pool_process(void);
/* Waits until no job is queued or running (at a file's close: none of its
 * jobs outlives it; the jobs of other files it waits for end on their
 * own, since jobs never wait for MPI). */
void aggio__pool_quiet(struct aggio__pool *p);
/* Queues job in batch.  Returns 0, or -1 when no thread could start (the
 * caller then runs the job itself). */
int aggio__pool_submit(struct aggio__pool *p, struct aggio__job *job,
                       struct aggio__batch *batch);
/* 1 when every job of the batch has finished. */
int aggio__batch_done(struct aggio__pool *p, struct aggio__batch *batch);
/* Blocks until every job of the batch has finished. */
void aggio__batch_wait(struct aggio__pool *p, struct aggio__batch *batch);

#endif
