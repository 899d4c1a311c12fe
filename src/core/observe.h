/*
 * observe.h - what a file records about itself: statistics and timers
 * (stats.h), the trace (trace.h), and the times of its open.  The file
 * handle's part (fh->obs).
 */
#ifndef AGGIO_OBSERVE_H
#define AGGIO_OBSERVE_H

#include <pthread.h>

#include "stats.h"
#include "trace.h"

struct aggio__obs_state {
  struct aggio__stats *stats;  /* NULL unless stats or timers are on */
  struct aggio__trace *trace;  /* NULL unless tracing is on */
  pthread_mutex_t trace_lock;  /* I/O threads record POSIX calls too */
  double open_time;            /* seconds taken by open, for the timers */
  double posix_open_t0, posix_open_t1; /* the open(2), traced once the trace starts */
};

#endif
