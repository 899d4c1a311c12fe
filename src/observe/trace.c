/*
 * trace.c - recording the per-operation trace: a bounded per-rank buffer
 * of 48-byte records (API calls and the POSIX calls beneath them).  Its
 * clocks are aligned at open and the job's file written at close by the
 * core (core/trace_file.c), which knows the file's communicator.
 * docs/trace-format.md.
 */
#include <stdlib.h>
#include <time.h>

#include "observe.h"

#define TRACE_INITIAL_RECORDS 4096

double aggio__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- recording ------------------------------------------------------------ */

/* Grows the buffer by doubling up to the bound; 0 when there is room. */
int aggio__trace_grow(struct aggio__trace *tr) {
  if (tr->cap >= tr->max)
    return -1;
  uint64_t ncap = tr->cap ? tr->cap * 2 : TRACE_INITIAL_RECORDS;
  if (ncap > tr->max)
    ncap = tr->max;
  struct aggio__trace_rec *p = realloc(tr->rec, (size_t)ncap * sizeof *p);
  if (!p) {
    tr->max = tr->cap; /* out of memory: the bound is what we have */
    return -1;
  }
  tr->rec = p;
  tr->cap = ncap;
  return 0;
}

static int op_is_collective(int op) {
  return op >= AGGIO_OP_WRITE_AT_ALL && op <= AGGIO_OP_SET_SIZE;
}

void aggio__trace_record(struct aggio__trace *tr, int op, int64_t offset,
                         int64_t length, int64_t type_size, double t0,
                         double t1, int flags) {
  if (!tr)
    return;
  if (tr->n == tr->cap && aggio__trace_grow(tr) != 0) {
    tr->dropped++;
    return;
  }
  if (op_is_collective(op))
    flags |= AGGIO_TRACE_FLAG_COLLECTIVE;
  struct aggio__trace_rec *r = &tr->rec[tr->n++];
  r->t_start = t0 + tr->delta;
  r->t_end = t1 + tr->delta;
  r->offset = offset;
  r->length = length;
  r->type_size = type_size;
  r->op = (uint16_t)op;
  r->flags = (uint16_t)flags;
  r->rank = tr->rank;
}

/* ---- freeing ---------------------------------------------------------------- */

void aggio__trace_free(struct aggio__trace *tr) {
  if (!tr)
    return;
  free(tr->rec);
  free(tr->path);
  free(tr->aux);
  free(tr);
}

/* A trace record taken under the file's trace lock (any thread). */
void aggio__obs_record(struct aggio__obs_state *obs, int op, int64_t offset, int64_t length,
                       int64_t type_size, double t0, double t1, int flags) {
  if (!obs->trace)
    return;
  pthread_mutex_lock(&obs->trace_lock);
  aggio__trace_record(obs->trace, op, offset, length, type_size, t0, t1, flags);
  pthread_mutex_unlock(&obs->trace_lock);
}
