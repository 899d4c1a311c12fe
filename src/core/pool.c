/*
 * pool.c - the process's persistent I/O threads (pool.h).  One mutex guards
 * the queue and every batch counter; threads sleep on `work`, waiters on
 * `done`.
 */
#include <pthread.h>
#include <stdlib.h>

#include "pool.h"

struct aggio__pool {
  pthread_mutex_t lock;
  pthread_cond_t work, done;
  struct aggio__job *head, *tail;
  pthread_t thread[AGGIO_POOL_THREADS];
  int nthreads;
  int running; /* jobs taken from the queue and not finished */
};

static void *worker(void *arg) {
  struct aggio__pool *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->head)
      pthread_cond_wait(&p->work, &p->lock);
    struct aggio__job *j = p->head;
    p->head = j->next;
    if (!p->head)
      p->tail = NULL;
    p->running++;
    pthread_mutex_unlock(&p->lock);
    struct aggio__err e = {0};
    j->run(j, &e);
    pthread_mutex_lock(&p->lock);
    struct aggio__batch *b = j->batch;
    if (e.code != 0 && b->err.code == 0)
      b->err = e;
    b->pending--;
    p->running--;
    pthread_cond_broadcast(&p->done);
  }
  return NULL;
}

static struct aggio__pool *process_pool;
static pthread_once_t process_once = PTHREAD_ONCE_INIT;

static void make_pool(void) {
  struct aggio__pool *p = calloc(1, sizeof *p);
  if (!p)
    return;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->work, NULL);
  pthread_cond_init(&p->done, NULL);
  process_pool = p;
}

struct aggio__pool *aggio__pool_process(void) {
  pthread_once(&process_once, make_pool);
  return process_pool;
}

/* Starts the threads at the first job: files that never need them cost
 * nothing. */
static int start_threads(struct aggio__pool *p) {
#ifdef AGGIO_SIMGRID
  /* SMPI simulates ranks, not their threads: the callers do the I/O
   * themselves, as when no thread can be created (SIMULATION.md). */
  (void)p;
  (void)worker;
  return -1;
#else
  while (p->nthreads < AGGIO_POOL_THREADS &&
         pthread_create(&p->thread[p->nthreads], NULL, worker, p) == 0)
    p->nthreads++;
  return p->nthreads > 0 ? 0 : -1;
#endif
}

int aggio__pool_submit(struct aggio__pool *p, struct aggio__job *job,
                       struct aggio__batch *batch) {
  pthread_mutex_lock(&p->lock);
  if (p->nthreads == 0 && start_threads(p) != 0) {
    pthread_mutex_unlock(&p->lock);
    return -1;
  }
  job->next = NULL;
  job->batch = batch;
  batch->pending++;
  if (p->tail)
    p->tail->next = job;
  else
    p->head = job;
  p->tail = job;
  pthread_cond_signal(&p->work);
  pthread_mutex_unlock(&p->lock);
  return 0;
}

int aggio__batch_done(struct aggio__pool *p, struct aggio__batch *batch) {
  if (!p)
    return batch->pending == 0;
  pthread_mutex_lock(&p->lock);
  int done = batch->pending == 0;
  pthread_mutex_unlock(&p->lock);
  return done;
}

void aggio__batch_wait(struct aggio__pool *p, struct aggio__batch *batch) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  while (batch->pending > 0)
    pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
}

void aggio__pool_quiet(struct aggio__pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  while (p->head || p->running > 0)
    pthread_cond_wait(&p->done, &p->lock);
  pthread_mutex_unlock(&p->lock);
}
