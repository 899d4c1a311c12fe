/*
 * engine.h - one access of one rank: what engine.c needs to time it and to
 * fill or check its buffer.
 */
#ifndef AGGIO_BENCH_ENGINE_H
#define AGGIO_BENCH_ENGINE_H

#include "bench.h"

/* How an access's calls reach the back end. */
enum bench_mode {
  BENCH_MODE_FPP,      /* -F: each call at its stream offset in the rank's file */
  BENCH_MODE_VIEW,     /* -c through a file view: *_all at view offsets */
  BENCH_MODE_EXPLICIT, /* -c as IOR: *_at_all at each call's file offset */
  BENCH_MODE_EXTENTS,  /* otherwise: one independent call per extent */
};

/* "file-per-process", "view", "explicit" or "extents". */
const char *bench_mode_name(enum bench_mode mode);

struct bench_access {
  const struct bench_backend *be;
  const struct bench_layout *layout;
  enum bench_dir dir;
  const char *path;        /* the shared file, or this rank's file with -F */
  enum bench_mode mode;
  int fpp, collective, fsync, odirect;
  MPI_Info info;
  MPI_Datatype filetype;   /* the view (BENCH_MODE_VIEW), else NULL */
  int64_t ncalls;          /* collective calls every rank makes */
  unsigned char *buf;      /* layout->bytes bytes */
  uint64_t seed;           /* of the data in the file accessed */
};

/* The phase clock, seconds (CLOCK_MONOTONIC on rank 0's scale). */
double bench_now(void);
/* Puts every rank's phase clock on rank 0's (collective). */
void bench_clock_sync(MPI_Comm comm);
/* Runs the access; aborts the job on an I/O error or a short transfer.
 * *hints_json, when hints_json is non-NULL, is replaced by the hints in
 * effect after the transfer (read between the timed phases). */
void bench_access_run(const struct bench_access *a, struct bench_times *t, char **hints_json);
/* The I/O calls this rank makes in the access. */
int64_t bench_access_calls(const struct bench_access *a);
/* Fills the buffer with the data the access writes. */
void bench_access_fill(const struct bench_access *a);
/* Counts bad bytes in the buffer after a read. */
int64_t bench_access_check(const struct bench_access *a, int64_t *first_bad);

/* The overlap (--compute) and small-requests (--small-requests) modes
 * (overlap.c): runs them, reports, returns the exit status.  `provided` is
 * the MPI thread level. */
int bench_nb_main(const struct bench_access *wa, const struct bench_access *ra,
                  const struct bench_params *p, const struct bench_sysinfo *sys, int provided);

#endif
