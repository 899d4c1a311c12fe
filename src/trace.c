/*
 * trace.c - the per-operation trace.  (Placeholder until the observability
 * work lands.)
 */
#include <time.h>

#include "internal.h"

double aggio__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int aggio__trace_open(struct aggio_file_s *fh, const char *path,
                      int64_t memory_bytes, struct aggio__trace **out) {
  (void)fh; (void)path; (void)memory_bytes;
  *out = NULL;
  return 0;
}

void aggio__trace_record(struct aggio__trace *tr, int op, int64_t offset,
                         int64_t length, int64_t type_size, double t0,
                         double t1, int flags) {
  (void)tr; (void)op; (void)offset; (void)length; (void)type_size;
  (void)t0; (void)t1; (void)flags;
}

int aggio__trace_close(struct aggio_file_s *fh, struct aggio__trace *tr) {
  (void)fh; (void)tr;
  return 0;
}
