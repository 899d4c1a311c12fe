/*
 * engine.c - one timed access (open, transfer, sync, close) of one rank's
 * layout through a back end, and the byte-by-byte check of what was read.
 * The phases are separated by barriers; each phase's time runs from the
 * earliest start to the latest end over the ranks (as IOR does).
 *
 * How the layout is moved:
 *   -F          each call of the stream at its stream offset in the rank's
 *               own file (the N:N reference);
 *   -c          one *_at_all per call of the layout; every rank makes as
 *               many calls as the busiest one (empty calls for the others).
 *               Where every call is one contiguous piece of the file, at
 *               that file offset with the default view, as IOR's MPIIO back
 *               end does without -V; otherwise (or with -V) through a file
 *               view of the rank's extents, at offsets in the view;
 *   otherwise   one independent call per extent (IOR's transfers).
 * Every back end goes through one transfer loop, which rejects a call that
 * moves fewer bytes than asked.
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

double bench_now(void) { return now(); }

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

static void report_error(const struct bench_access *a, const char *what, int rc) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr, "aggio-bench: rank %d: %s %s %s: %s\n", rank, a->be->name, what, a->path,
          a->be->error(rc));
}

static void die(const struct bench_access *a, const char *what, int rc) {
  report_error(a, what, rc);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

const char *bench_mode_name(enum bench_mode mode) {
  static const char *const names[] = {"file-per-process", "view", "explicit", "extents"};
  return names[mode];
}

static const char *dir_name(enum bench_dir dir) { return dir == BENCH_WRITE ? "write" : "read"; }

/* One call of an access: `len` bytes of the stream from `pos`, at `off`
 * (a file offset, or an offset in the view). */
struct piece {
  int64_t off, pos, len;
};

int64_t bench_access_calls(const struct bench_access *a) {
  switch (a->mode) {
  case BENCH_MODE_FPP: return (int64_t)a->layout->ncalls;
  case BENCH_MODE_EXTENTS: return (int64_t)a->layout->next;
  default: return a->ncalls; /* collective: as many as the busiest rank */
  }
}

/* Call i; `pos` is where call i - 1 ended in the stream. */
static struct piece piece_of(const struct bench_access *a, int64_t i, int64_t pos) {
  const struct bench_layout *l = a->layout;
  if (a->mode == BENCH_MODE_EXTENTS)
    return (struct piece){.off = l->ext[i].off, .pos = pos, .len = l->ext[i].len};
  if ((size_t)i >= l->ncalls) return (struct piece){0, 0, 0}; /* an empty collective */
  const struct bench_call *c = &l->calls[i];
  int64_t off = a->mode == BENCH_MODE_EXPLICIT ? c->off : c->pos;
  return (struct piece){.off = off, .pos = c->pos, .len = c->len};
}

/* The one transfer loop of every back end: pieces of at most 1 GiB (an MPI
 * count is an int; collective calls are capped below that by --call-size,
 * so they are never split), at least one call even for 0 bytes (a
 * collective needs every rank), and a call that moves fewer bytes than
 * asked ends the transfer.  *done gets the bytes moved. */
static int xfer_piece(const struct bench_access *a, void *fh, struct piece p, int64_t *done) {
  *done = 0;
  do {
    int64_t left = p.len - *done, moved = 0;
    int n = left > BENCH_GIB ? (int)BENCH_GIB : (int)left;
    int rc = a->be->xfer(fh, a->dir, p.off + *done, a->buf + p.pos + *done, n, &moved);
    if (rc) return rc;
    *done += moved;
    if (moved != n) return 0;
  } while (*done < p.len);
  return 0;
}

static void report_short(const struct bench_access *a, struct piece p, int64_t done) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  fprintf(stderr,
          "aggio-bench: rank %d: %s %s %s: short transfer: %lld of %lld bytes at offset %lld\n",
          rank, a->be->name, dir_name(a->dir), a->path, (long long)done, (long long)p.len,
          (long long)p.off);
}

/* Returns 0, or 1 after this rank printed why its transfer failed.  A
 * rank whose transfer failed stops its independent calls, but keeps making
 * its collective ones (a short read past the end of the file is not an
 * error to MPI-IO, so the other ranks may go on): no rank is left waiting
 * in a collective call, and the job ends cleanly after the phase instead
 * of by MPI_Abort, with which MPICH's launcher sometimes drops the message
 * the rank printed just before. */
static int xfer_all(const struct bench_access *a, void *fh) {
  int64_t n = bench_access_calls(a), pos = 0;
  int failed = 0, in_step = a->collective && !a->fpp;
  for (int64_t i = 0; i < n; i++) {
    struct piece p = piece_of(a, i, pos);
    int64_t done;
    int rc = xfer_piece(a, fh, p, &done);
    if (!failed && rc) report_error(a, dir_name(a->dir), rc);
    else if (!failed && done != p.len) report_short(a, p, done);
    failed |= rc || done != p.len;
    if (failed && !in_step) return 1;
    pos = p.pos + p.len;
  }
  return failed;
}

/* Every rank learns whether any transfer failed; then all leave together
 * with status 1, the failing ranks' messages printed. */
static void end_if_failed(const struct bench_access *a, void *fh, int failed) {
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!failed) return;
  a->be->close(fh); /* its outcome no longer matters */
  MPI_Finalize();
  exit(1);
}

/* The hints in effect as JSON text, replacing *out. */
static void read_hints(const struct bench_access *a, void *fh, char **out) {
  MPI_Info used = MPI_INFO_NULL;
  if (!out || !a->be->info || a->be->info(fh, &used) != 0) return;
  free(*out);
  *out = bench_info_json(used);
  MPI_Info_free(&used);
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
  if (a->mode == BENCH_MODE_VIEW && (rc = a->be->set_view(fh, a->filetype)))
    die(a, "set_view", rc);
  en[PH_OPEN] = now();

  MPI_Barrier(MPI_COMM_WORLD);
  st[PH_XFER] = now();
  int failed = xfer_all(a, fh);
  en[PH_XFER] = now();
  read_hints(a, fh, hints_json); /* untimed: between the phases */

  end_if_failed(a, fh, failed); /* also the barrier before the next phase */
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
