/*
 * trace.h - the per-operation trace (AGGIO_TRACE / hint aggio_trace).
 *
 * Two layers of records: the API call and the POSIX calls beneath it, on one
 * clock shared by all ranks.  Memory per rank is bounded; records past the
 * bound are counted as dropped, never silently lost.  The job's trace is one
 * file written in parallel at close.  Format: docs/trace-format.md.
 *
 * Off means free: fh->trace is NULL unless tracing is on, and callers read
 * the clock only when it is not.
 *
 * Not thread-safe: one thread at a time records into a file's trace (the
 * two-phase I/O thread records its pwrites while the main thread does not).
 * Path patterns (%f, %p, %t), clocks and the write at close:
 * docs/trace-format.md; how to use it: docs/observability.md.
 */
#ifndef AGGIO_TRACE_H
#define AGGIO_TRACE_H

#include <stdint.h>

struct aggio_file_s;
struct aggio__trace;

/* API-layer operations (docs/trace-format.md lists the numbers). */
enum aggio__trace_op {
  AGGIO_OP_WRITE_AT = 1,
  AGGIO_OP_READ_AT = 2,
  AGGIO_OP_WRITE_AT_ALL = 3,
  AGGIO_OP_READ_AT_ALL = 4,
  AGGIO_OP_OPEN = 5,
  AGGIO_OP_CLOSE = 6,
  AGGIO_OP_SYNC = 7,
  AGGIO_OP_SET_VIEW = 8,
  AGGIO_OP_SET_SIZE = 9,
  /* POSIX layer */
  AGGIO_OP_POSIX_OPEN = 32,
  AGGIO_OP_POSIX_PREAD = 33,
  AGGIO_OP_POSIX_PWRITE = 34,
  AGGIO_OP_POSIX_FSYNC = 35,
  AGGIO_OP_POSIX_CLOSE = 36,
  AGGIO_OP_POSIX_FTRUNCATE = 37
};

/* Seconds on this rank's monotonic clock (CLOCK_MONOTONIC). */
double aggio__now(void);

/* Collective over the file's communicator, at open: allocates the buffer and
 * agrees clock offsets so that every rank's timestamps are on rank 0's clock.
 * Sets *out (NULL when path is empty).  0 or an AGGIO_ERR_* code. */
int aggio__trace_open(struct aggio_file_s *fh, const char *path,
                      int64_t memory_bytes, struct aggio__trace **out);

/* Records one operation; t0/t1 from aggio__now().  No-op when tr is NULL.
 * flags bit 0: the rank acted as aggregator for this POSIX call. */
void aggio__trace_record(struct aggio__trace *tr, int op, int64_t offset,
                         int64_t length, int64_t type_size, double t0,
                         double t1, int flags);

/* Local, not collective: frees a trace without writing it (for a failed
 * open after aggio__trace_open succeeded).  No-op when tr is NULL. */
void aggio__trace_discard(struct aggio__trace *tr);

/* Collective at close: writes the whole job's trace into one file, each rank
 * its own part in parallel; frees the buffer.  0 or an AGGIO_ERR_* code. */
int aggio__trace_close(struct aggio_file_s *fh, struct aggio__trace *tr);

#endif
