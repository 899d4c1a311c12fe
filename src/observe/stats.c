/*
 * stats.c - the statistics and timers a file records (stats.h): made at
 * open, counted by every layer, reduced and printed at close by the core
 * (core/stats_report.c), which knows the file's communicator.
 */
#include <stdlib.h>
#include <string.h>

#include "aggio_errno.h"
#include "observe.h"

struct aggio__stats *aggio__stats_new(int timers) {
  struct aggio__stats *s = calloc(1, sizeof *s);
  if (s)
    s->timers = timers;
  return s;
}

int aggio__stats_set_domains(struct aggio__stats *s, int n,
                             const int64_t *start, const int64_t *end) {
  if (!s || n < 0)
    return 0;
  if (n > s->fd_cap) {
    int64_t *a = malloc(sizeof *a * (size_t)n), *b = malloc(sizeof *b * (size_t)n);
    if (!a || !b) {
      free(a);
      free(b);
      return AGGIO_ERR_NOMEM;
    }
    free(s->fd_start);
    free(s->fd_end);
    s->fd_start = a;
    s->fd_end = b;
    s->fd_cap = n;
  }
  if (n > 0) {
    memcpy(s->fd_start, start, sizeof *start * (size_t)n);
    memcpy(s->fd_end, end, sizeof *end * (size_t)n);
  }
  s->nfd = n;
  return 0;
}

void aggio__stats_set_cyclic(struct aggio__stats *s, int64_t unit, int groups) {
  if (s) {
    s->fd_unit = unit;
    s->fd_groups = groups;
  }
}

void aggio__stats_free(struct aggio__stats *s) {
  free(s->fd_start);
  free(s->fd_end);
  free(s);
}

/* ---- a transfer of the storage layer ---------------------------------------- */

/* I/O threads write too, so counters are added atomically. */
static void add(int64_t *p, int64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

static void add_time(double *p, double v) {
  double old, new;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do
    new = old + v;
  while (!__atomic_compare_exchange(p, &old, &new, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

void aggio__obs_count(struct aggio__obs_state *obs, enum aggio__counter c, int64_t v) {
  if (obs->stats)
    add(&obs->stats->c[c], v);
}

void aggio__obs_transfer(struct aggio__obs_state *obs, const struct aggio__transfer *x,
                         double t0) {
  double t1 = (obs->trace || obs->stats) ? aggio__now() : 0.0;
  int w = x->is_write, behind = (x->flags & AGGIO_OBS_BEHIND) != 0;
  if (obs->trace)
    aggio__obs_record(obs, w ? AGGIO_OP_POSIX_PWRITE : AGGIO_OP_POSIX_PREAD, x->off, x->len, 0,
                      t0, t1, x->flags & (AGGIO_OBS_AGGREGATOR | AGGIO_OBS_BEHIND));
  struct aggio__stats *s = obs->stats;
  if (!s)
    return;
  if (behind)
    add_time(&s->behind_time, t1 - t0);
  add_time(w ? &s->sys_write_time : &s->sys_read_time, t1 - t0);
  add(&s->c[w ? AGGIO_C_SYS_WRITES : AGGIO_C_SYS_READS], 1);
  add(&s->c[w ? AGGIO_C_SYS_WRITE_BYTES : AGGIO_C_SYS_READ_BYTES], x->len);
  if (x->align > 0 && x->off % x->align == 0)
    add(&s->c[w ? AGGIO_C_SYS_WRITES_ALIGNED : AGGIO_C_SYS_READS_ALIGNED], 1);
  if (x->direct) {
    add(&s->c[w ? AGGIO_C_DIRECT_WRITES : AGGIO_C_DIRECT_READS], 1);
    add(&s->c[w ? AGGIO_C_DIRECT_WRITE_BYTES : AGGIO_C_DIRECT_READ_BYTES], x->len);
  }
  if (behind)
    add(&s->c[w ? AGGIO_C_BEHIND_WRITES : AGGIO_C_BEHIND_READS], 1);
  if (w && (x->flags & AGGIO_OBS_AGGREGATOR)) { /* per-aggregator lines at close */
    add(&s->c[AGGIO_C_AGGR_WRITES], 1);
    add(&s->c[AGGIO_C_AGGR_WRITE_BYTES], x->len);
  }
}
