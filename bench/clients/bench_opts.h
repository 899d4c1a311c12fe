/*
 * bench_opts.h - what hdf5_bench and pnetcdf_bench share: their options
 * (IOR's letters where IOR has one), the IOR pattern defaults, and the one
 * RESULT line a phase prints (bench/clients/compare reads it).  Each program
 * keeps its own I/O and says which patterns it knows.
 */
#ifndef AGGIO_BENCH_OPTS_H
#define AGGIO_BENCH_OPTS_H

#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../drop_cache.h"

struct opts {
  const char *pattern, *path;
  long long segments, transfer, block;
  long long grid[3]; /* x, y, z */
  int steps, reps, independent, write_only;
  int fpp;   /* -F: file per process (IOR's -F), where the program supports it */
  int fsync; /* -e: flush to storage before the close, inside the timing (IOR -e) */
  int warm;  /* --warm: read what the page cache holds (default: cold reads) */
  const char *cache; /* how the read phase started: "dropped", "fadvise", "warm" */
};

/* The options as given; 0, or -1 on a malformed or missing one. */
static inline int bench_parse_args(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.grid = {64, 64, 64}, .steps = 4, .reps = 1};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "-I"))
      o->independent = 1;
    else if (!strcmp(a, "-W"))
      o->write_only = 1;
    else if (!strcmp(a, "-e"))
      o->fsync = 1;
    else if (!strcmp(a, "-F"))
      o->fpp = 1;
    else if (!strcmp(a, "--warm"))
      o->warm = 1;
    else if (!v)
      return -1;
    else if (!strcmp(a, "-p"))
      o->pattern = v, i++;
    else if (!strcmp(a, "-o"))
      o->path = v, i++;
    else if (!strcmp(a, "-s"))
      o->segments = atoll(v), i++;
    else if (!strcmp(a, "-t"))
      o->transfer = atoll(v), i++;
    else if (!strcmp(a, "-b"))
      o->block = atoll(v), i++;
    else if (!strcmp(a, "-n"))
      o->steps = atoi(v), i++;
    else if (!strcmp(a, "-i"))
      o->reps = atoi(v), i++;
    else if (!strcmp(a, "-g")) {
      if (sscanf(v, "%lld,%lld,%lld", &o->grid[0], &o->grid[1], &o->grid[2]) != 3)
        return -1;
      i++;
    } else
      return -1;
  }
  return (o->pattern && o->path) ? 0 : -1;
}

/* 1 for IOR's patterns (ior-hard: one 47008-byte record per rank per
 * segment, 64 segments as IO-500's ior-hard writes them in one call each;
 * segmented: 4 x 1 MiB transfers per block), with their defaults filled in. */
static inline int bench_ior_pattern(struct opts *o) {
  int hard = !strcmp(o->pattern, "ior-hard");
  if (!hard && strcmp(o->pattern, "segmented"))
    return 0;
  if (!o->transfer)
    o->transfer = hard ? 47008 : 1048576;
  if (!o->block)
    o->block = hard ? 47008 : 4 * o->transfer;
  if (!o->segments)
    o->segments = hard ? 64 : 4;
  return 1;
}

static inline int bench_btio_ok(const struct opts *o) {
  return o->steps >= 1 && o->grid[0] >= 1 && o->grid[1] >= 1 && o->grid[2] >= 1;
}

/* Before a read phase, untimed: the file's pages leave the page cache, so
 * the read measures the storage, as it would on a file written by an
 * earlier job (issue 25: with the cache warm, the MPI library's buffered
 * reads were timed against aggio's direct ones).  One rank per node drops
 * the whole page cache where it may (root, bench/drop_cache.h, as
 * aggio-bench does), else every rank asks the kernel to drop this file's
 * pages (posix_fadvise DONTNEED, after fdatasync: clean pages only go).
 * o->cache says which, the same on every rank. */
static inline void bench_cold(MPI_Comm comm, struct opts *o) {
  if (o->warm) {
    o->cache = "warm";
    return;
  }
  if (bench_drop_page_cache(comm)) {
    o->cache = "dropped";
    return;
  }
  int ok = 0, all; /* every rank: one of each node's drops its copy */
  int fd = open(o->path, O_RDONLY);
  if (fd >= 0) {
    ok = fdatasync(fd) == 0 && posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
    close(fd);
  }
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  o->cache = all ? "fadvise" : "warm";
}

/* The phase's outcome over the ranks (bytes and errors summed, the slowest
 * rank's time, as IOR times) printed by rank 0; 0 when every rank
 * succeeded and every value read back was right. */
static inline int bench_report(MPI_Comm comm, const char *api, const struct opts *o, int writing,
                               int rep, long long bytes, long long errors, int rc,
                               double mine) {
  int rank, nranks;
  double secs;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &nranks);
  long long in[3] = {bytes, errors, rc ? 1 : 0}, sum[3];
  MPI_Allreduce(in, sum, 3, MPI_LONG_LONG, MPI_SUM, comm);
  MPI_Allreduce(&mine, &secs, 1, MPI_DOUBLE, MPI_MAX, comm);
  if (rank == 0)
    printf("RESULT api=%s pattern=%s ranks=%d access=%s rep=%d bytes=%lld seconds=%.6f "
           "MiBps=%.2f errors=%lld cache=%s files=%d%s\n",
           api, o->pattern, nranks, writing ? "write" : "read", rep, sum[0], secs,
           secs > 0 ? (double)sum[0] / 1048576.0 / secs : 0.0, sum[1],
           writing ? "-" : o->cache ? o->cache : "warm", o->fpp ? nranks : 1,
           sum[2] ? " failed=1" : "");
  fflush(stdout);
  return (sum[1] || sum[2]) ? 1 : 0;
}

#endif
