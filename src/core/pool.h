/*
 * pool.h - a file's I/O threads: a fixed set of threads made at the first
 * job and kept until close, running jobs from one queue (libuv's
 * threadpool.c: no thread per operation).  The threads never call MPI, so
 * they are allowed at every MPI thread level.
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

/* A pool of AGGIO_POOL_THREADS threads, started lazily; NULL on failure. */
struct aggio__pool *aggio__pool_new(void);
/* Waits for every job, stops the threads and frees the pool. */
void aggio__pool_free(struct aggio__pool *p);
/* Queues job in batch.  Returns 0, or -1 when no thread could start (the
 * caller then runs the job itself). */
int aggio__pool_submit(struct aggio__pool *p, struct aggio__job *job,
                       struct aggio__batch *batch);
/* 1 when every job of the batch has finished. */
int aggio__batch_done(struct aggio__pool *p, struct aggio__batch *batch);
/* Blocks until every job of the batch has finished. */
void aggio__batch_wait(struct aggio__pool *p, struct aggio__batch *batch);

#endif
