/*
 * engine.c - one timed access (open, transfer, sync, close) of one rank's
 * layout through a back end, and the byte-by-byte check of what was read.
 * The phases are separated by barriers; each phase's time runs from the
 * earliest start to the latest end over the ranks (as IOR does).
 *
 * How the layout is moved:
 *   -F          each call of the stream at its stream offset in the rank's
 *               own file (the N:N reference);
 *   -c          a file view of the rank's extents, then one *_all call per
 *               call of the layout; every rank makes as many calls as the
 *               busiest one (empty calls for the others);
 *   otherwise   one independent call per extent (IOR's transfers).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine.h"

/* MPI_Wtime need not be global (Open MPI's counts from each process's
 * start), so the phases are timed with CLOCK_MONOTONIC, shifted onto rank
 * 0's clock by bench_clock_sync() when the job spans several nodes. */
static double clock_offset;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - clock_offset;
}

/* Cristian's algorithm against rank 0, best of a few round trips.  On one
 * node CLOCK_MONOTONIC is already common to all processes: nothing to do. */
void bench_clock_sync(MPI_Comm comm) {
  int rank, size, node_size;
  MPI_Comm node;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &node_size);
  MPI_Comm_free(&node);
  clock_offset = 0;
  if (node_size == size) return;
  for (int r = 1; r < size; r++) {
    if (rank == 0) {
      double best_rtt = 1e30, best = 0;
      for (int k = 0; k < 8; k++) {
        double t1 = now(), tr;
        MPI_Send(&t1, 1, MPI_DOUBLE, r, 0, comm);
        MPI_Recv(&tr, 1, MPI_DOUBLE, r, 0, comm, MPI_STATUS_IGNORE);
        double t2 = now();
        if (t2 - t1 < best_rtt) {
          best_rtt = t2 - t1;
          best = tr - (t1 + t2) / 2;
        }
      }
      MPI_Send(&best, 1, MPI_DOUBLE, r, 1, comm);
    } else if (rank == r) {
      for (int k = 0; k < 8; k++) {
        double t1, tr;
        MPI_Recv(&t1, 1, MPI_DOUBLE, 0, 0, comm, MPI_STATUS_IGNORE);
        tr = now();
        MPI_Send(&tr, 1, MPI_DOUBLE, 0, 0, comm);
      }
      double off;
      MPI_Recv(&off, 1, MPI_DOUBLE, 0, 1, comm, MPI_STATUS_IGNORE);
      clock_offset = off;
    }
  }
}

static void die(const struct bench_access *a, const char *what, int rc) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "aggio-bench: rank %d: %s %s %s: %s\n", rank, a->be->name, what, a->path,
          a->be->error(rc));
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static void xfer_all(const struct bench_access *a, void *fh) {
  const struct bench_layout *l = a->layout;
  int rc = 0;
  if (a->fpp) {
    for (size_t i = 0; i < l->ncalls && !rc; i++)
      rc = a->be->xfer(fh, a->dir, l->calls[i].pos, a->buf + l->calls[i].pos, l->calls[i].len);
  } else if (a->filetype != MPI_DATATYPE_NULL) {
    for (int64_t i = 0; i < a->ncalls && !rc; i++) {
      struct bench_call c = (size_t)i < l->ncalls ? l->calls[i] : (struct bench_call){0, 0};
      rc = a->be->xfer(fh, a->dir, c.pos, a->buf + c.pos, c.len);
    }
  } else {
    int64_t pos = 0;
    for (size_t i = 0; i < l->next && !rc; pos += l->ext[i++].len)
      rc = a->be->xfer(fh, a->dir, l->ext[i].off, a->buf + pos, l->ext[i].len);
  }
  if (rc) die(a, a->dir == BENCH_WRITE ? "write" : "read", rc);
}

void bench_access_run(const struct bench_access *a, struct bench_times *t, char **hints_json) {
  struct bench_open_args args = {.path = a->path,
                                 .comm = a->fpp ? MPI_COMM_SELF : MPI_COMM_WORLD,
                                 .dir = a->dir,
                                 .collective = a->collective,
                                 .odirect = a->odirect,
                                 .info = a->info};
  double st[PH_COUNT] = {0}, en[PH_COUNT] = {0};
  void *fh = NULL;
  int rc;

  MPI_Barrier(MPI_COMM_WORLD);
  st[PH_OPEN] = now();
  if ((rc = a->be->open(&args, &fh))) die(a, "open", rc);
  if (a->filetype != MPI_DATATYPE_NULL && (rc = a->be->set_view(fh, a->filetype)))
    die(a, "set_view", rc);
  en[PH_OPEN] = now();
  if (hints_json && !*hints_json) { /* untimed: between the phases */
    MPI_Info used = MPI_INFO_NULL;
    if (a->be->info && a->be->info(fh, &used) == 0) {
      *hints_json = bench_info_json(used);
      MPI_Info_free(&used);
    }
  }

  MPI_Barrier(MPI_COMM_WORLD);
  st[PH_XFER] = now();
  xfer_all(a, fh);
  en[PH_XFER] = now();

  MPI_Barrier(MPI_COMM_WORLD);
  st[PH_SYNC] = now();
  if (a->dir == BENCH_WRITE && a->fsync && (rc = a->be->sync(fh))) die(a, "sync", rc);
  en[PH_SYNC] = now();

  MPI_Barrier(MPI_COMM_WORLD);
  st[PH_CLOSE] = now();
  if ((rc = a->be->close(fh))) die(a, "close", rc);
  en[PH_CLOSE] = now();

  double first[PH_COUNT], last[PH_COUNT];
  MPI_Allreduce(st, first, PH_COUNT, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(en, last, PH_COUNT, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int ph = 0; ph < PH_COUNT; ph++) t->phase[ph] = last[ph] - first[ph];
  if (!(a->dir == BENCH_WRITE && a->fsync)) t->phase[PH_SYNC] = 0;
  t->total = last[PH_CLOSE] - first[PH_OPEN];
}

int64_t bench_access_check(const struct bench_access *a, int64_t *first_bad) {
  const struct bench_layout *l = a->layout;
  int64_t bad = 0;
  if (a->fpp) /* the stream sits at its own offsets in the writer's file */
    return bench_check(a->buf, 0, l->bytes, a->seed, first_bad);
  int64_t pos = 0;
  for (size_t i = 0; i < l->next; pos += l->ext[i++].len)
    bad += bench_check(a->buf + pos, l->ext[i].off, l->ext[i].len, a->seed, first_bad);
  return bad;
}

void bench_access_fill(const struct bench_access *a) {
  const struct bench_layout *l = a->layout;
  if (a->fpp) {
    bench_fill(a->buf, 0, l->bytes, a->seed);
    return;
  }
  int64_t pos = 0;
  for (size_t i = 0; i < l->next; pos += l->ext[i++].len)
    bench_fill(a->buf + pos, l->ext[i].off, l->ext[i].len, a->seed);
}
