/*
 * observe.h - the observability layer: what a file records about itself,
 * statistics and timers (stats.h) and the trace (trace.h), and the times of
 * its open.  The file handle's part (fh->obs).  It knows nothing of the
 * handle: the storage layer below the core records into it, and the core
 * reduces, prints and writes it at close (core/report.h), where the file's
 * communicator and topology are known.
 */
#ifndef AGGIO_OBSERVE_H
#define AGGIO_OBSERVE_H

#include <pthread.h>
#include <stdint.h>

#include "stats.h"
#include "trace.h"

struct aggio__obs_state {
  struct aggio__stats *stats;  /* NULL unless stats or timers are on */
  struct aggio__trace *trace;  /* NULL unless tracing is on */
  pthread_mutex_t trace_lock;  /* I/O threads record POSIX calls too */
  double open_time;            /* seconds taken by open, for the timers */
  double posix_open_t0, posix_open_t1; /* the open(2), traced once the trace starts */
};

/* A trace record taken under the file's trace lock (any thread); no-op
 * when tracing is off. */
void aggio__obs_record(struct aggio__obs_state *obs, int op, int64_t offset, int64_t length,
                       int64_t type_size, double t0, double t1, int flags);

/* Adds v to counter c, atomically (any thread); no-op without statistics. */
void aggio__obs_count(struct aggio__obs_state *obs, enum aggio__counter c, int64_t v);

/* One system read or write, as the storage layer reports it. */
#define AGGIO_OBS_AGGREGATOR 1 /* made while acting as an aggregator */
#define AGGIO_OBS_BEHIND 2     /* made by an I/O thread after the call returned */
struct aggio__transfer {
  int is_write;
  int64_t off, len;
  int direct;    /* through O_DIRECT */
  int flags;     /* AGGIO_OBS_* */
  int64_t align; /* what "aligned" means for this file: the stripe, or the
                  * block (the counters of aligned calls) */
};

/* Records a transfer that began at t0 (aggio__now) and ends now: its trace
 * record and its counters, the same whichever back end made it.  Any
 * thread. */
void aggio__obs_transfer(struct aggio__obs_state *obs, const struct aggio__transfer *x,
                         double t0);

#endif
