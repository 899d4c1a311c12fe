/*
 * engine.h - one access of one rank: what engine.c needs to time it and to
 * fill or check its buffer.
 */
#ifndef AGGIO_BENCH_ENGINE_H
#define AGGIO_BENCH_ENGINE_H

#include "bench.h"

struct bench_access {
  const struct bench_backend *be;
  const struct bench_layout *layout;
  enum bench_dir dir;
  const char *path;        /* the shared file, or this rank's file with -F */
  int fpp, collective, fsync, odirect;
  MPI_Info info;
  MPI_Datatype filetype;   /* the view (with -c on a shared file), else NULL */
  int64_t ncalls;          /* calls every rank makes with a view */
  unsigned char *buf;      /* layout->bytes bytes */
  uint64_t seed;           /* of the data in the file accessed */
};

/* Puts every rank's phase clock on rank 0's (collective). */
void bench_clock_sync(MPI_Comm comm);
/* Runs the access; aborts the job on an I/O error.  *hints_json, when
 * non-NULL and still NULL, receives the hints in effect. */
void bench_access_run(const struct bench_access *a, struct bench_times *t, char **hints_json);
/* Fills the buffer with the data the access writes. */
void bench_access_fill(const struct bench_access *a);
/* Counts bad bytes in the buffer after a read. */
int64_t bench_access_check(const struct bench_access *a, int64_t *first_bad);

#endif
