/*
 * test_overlap.c - non-blocking writes overlap the application's
 * computation, shown by the order of trace events rather than by timing:
 * a rank starts a write of a few MiB, computes (spins, making no aggio or
 * MPI call), then waits; in the trace (docs/trace-format.md) some pwrite
 * of the data must have started before the wait record's t_start, i.e.
 * while the rank was computing.
 *   - "multiple": MPI_THREAD_MULTIPLE, aggio_file_iwrite_at_all through
 *     two-phase I/O: the progress thread runs the exchanges and the
 *     aggregators' writes (every rank's wait is checked against the
 *     pwrites of its node);
 *   - "single": MPI_THREAD_SINGLE (no progress thread), aggio_file_iwrite_at
 *     of the independent strategy: the starting call hands the I/O to the
 *     file's I/O threads, which write while the rank computes; and
 *     aggio_file_iwrite_at_all through two-phase, where the starting call
 *     runs the operation ahead until its first round's writes are on the
 *     I/O threads.  The run-ahead is bounded (2 ms) and meets the other
 *     ranks only when they start within it, which a busy machine (ctest -j2
 *     with oversubscribed ranks) does not promise: the test widens it with
 *     AGGIO_TEST_TIMING, so it checks the mechanism, not the scheduler
 *     (what the default hides is measured in BENCHMARKS.md).
 * The file is then checked byte for byte through MPI-IO.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: single multiple
 */
#include <aggio.h>

#include "harness.h"
#include "nb_common.h"

#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <string.h>

enum { OP_IWRITE_AT = 10, OP_IWRITE_AT_ALL = 12, OP_WAIT = 14, OP_PWRITE = 34 };

struct rec {
  double t_start;
  int op, rank;
};

/* The trace's records and each rank's node (rank 0 reads it). */
struct trace {
  int nranks;
  int *node;
  struct rec *r;
  long n;
};

static uint64_t u64_at(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static int read_trace(const char *path, struct trace *t) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *raw = malloc((size_t)size);
  int ok = raw && fread(raw, 1, (size_t)size, f) == (size_t)size && size >= 64 &&
           memcmp(raw, "AGGIOTRC", 8) == 0;
  fclose(f);
  if (!ok) {
    free(raw);
    return -1;
  }
  uint32_t nranks, recsize;
  memcpy(&nranks, raw + 12, 4);
  memcpy(&recsize, raw + 16, 4);
  uint64_t total = u64_at(raw + 24), at = u64_at(raw + 48);
  if (recsize != 48 || at + total * 48 > (uint64_t)size || 64 + 32 * (uint64_t)nranks > at) {
    free(raw);
    return -1;
  }
  t->nranks = (int)nranks;
  t->node = malloc(sizeof(int) * nranks);
  for (uint32_t i = 0; i < nranks; i++)
    memcpy(&t->node[i], raw + 64 + 32 * i + 24, 4);
  t->n = (long)total;
  t->r = malloc(sizeof *t->r * (total ? total : 1));
  for (uint64_t i = 0; i < total; i++) {
    const unsigned char *p = raw + at + 48 * i;
    uint16_t op;
    int32_t rank;
    memcpy(&t->r[i].t_start, p, 8);
    memcpy(&op, p + 40, 2);
    memcpy(&rank, p + 44, 4);
    t->r[i].op = op;
    t->r[i].rank = rank;
  }
  free(raw);
  return 0;
}

/* Busy computation for `seconds`, no aggio or MPI call. */
static double spin(double seconds) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  volatile double x = 1.0;
  do {
    for (int i = 0; i < 10000; i++)
      x = x * 1.0000001 + 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &b);
  } while ((double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec) < seconds);
  return x;
}

/* For every rank: its start and wait records exist, and (when `need`)
 * some pwrite of its node started before its wait began.  Returns 1 on
 * rank 0 when every rank's did, else 0. */
static int check_overlap(struct nb *c, const char *trace_path, int start_op,
                         const char *what, int need) {
  int all_early = 1;
  if (c->rank != 0)
    return 0;
  struct trace t = {0};
  CHECK(read_trace(trace_path, &t) == 0, "%s: cannot read the trace %s", what, trace_path);
  if (!t.r)
    return 0;
  CHECK(t.nranks == c->np, "%s: trace of %d ranks", what, t.nranks);
  for (int r = 0; r < c->np && r < t.nranks; r++) {
    double wait_t = -1, first_pw = 1e300;
    int starts = 0, waits = 0;
    long pwrites = 0, early = 0;
    for (long i = 0; i < t.n; i++) {
      const struct rec *x = &t.r[i];
      if (x->rank == r && x->op == start_op)
        starts++;
      if (x->rank == r && x->op == OP_WAIT) {
        waits++;
        wait_t = x->t_start;
      }
    }
    for (long i = 0; i < t.n; i++) {
      const struct rec *x = &t.r[i];
      if (x->op != OP_PWRITE || x->rank < 0 || x->rank >= t.nranks ||
          t.node[x->rank] != t.node[r])
        continue;
      pwrites++;
      if (x->t_start < first_pw)
        first_pw = x->t_start;
      early += waits == 1 && x->t_start < wait_t;
    }
    CHECK(starts == 1 && waits == 1, "%s: rank %d has %d start and %d wait records", what, r,
          starts, waits);
    all_early &= early > 0;
    if (need)
      CHECK(early > 0, "%s: rank %d: none of its node's %ld pwrites started before its wait "
            "(wait at %.6f s, first pwrite at %.6f s): no overlap", what, r, pwrites, wait_t,
            first_pw);
    printf("%s: rank %d: %ld of %ld pwrites started before the wait (first %.3f ms before)\n",
           what, r, early, pwrites, (wait_t - first_pw) * 1e3);
  }
  free(t.r);
  free(t.node);
  return all_early;
}

/* One start, compute, wait; `need`: the overlap is required of this try.
 * Returns (on every rank) whether it was seen. */
static int t_overlap(struct nb *c, const char *strategy, int collective, int need) {
  const int64_t n = (int64_t)4 << 20; /* per rank */
  char what[160], trace_path[700];
  snprintf(what, sizeof what, "overlap of %s (%s, thread level %d)",
           collective ? "iwrite_at_all" : "iwrite_at", strategy, c->level);
  snprintf(trace_path, sizeof trace_path, "%s/trace.trc", c->dir);
  nb_begin(c, what);
  unsigned char *w = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++)
    w[i] = nb_datum(8, c->rank, i);
  aggio_file fh;
  /* 1 MiB collective buffer: several rounds of two-phase I/O */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", strategy);
  MPI_Info_set(info, "cb_buffer_size", "1048576");
  MPI_Info_set(info, "aggio_trace", trace_path);
  int rc = aggio_file_open(MPI_COMM_WORLD, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, info,
                           &fh);
  MPI_Info_free(&info);
  if (nb_ok(c, "open", rc) != 0) {
    free(w);
    return 0;
  }
  aggio_request q;
  MPI_Offset off = (MPI_Offset)c->rank * n;
  rc = collective ? aggio_file_iwrite_at_all(fh, off, w, (int)n, MPI_BYTE, &q)
                  : aggio_file_iwrite_at(fh, off, w, (int)n, MPI_BYTE, &q);
  nb_ok(c, "start", rc);
  spin(0.5);
  MPI_Status st;
  int cnt = -1;
  nb_ok(c, "wait", aggio_wait(&q, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(cnt == n, "%s: count %d", what, cnt);
  nb_ok(c, "close", aggio_file_close(&fh));
  MPI_Barrier(MPI_COMM_WORLD);
  int seen = check_overlap(c, trace_path, collective ? OP_IWRITE_AT_ALL : OP_IWRITE_AT, what,
                           need);
  MPI_Bcast(&seen, 1, MPI_INT, 0, MPI_COMM_WORLD);
  unsigned char *expect = malloc((size_t)n * c->np);
  for (int p = 0; p < c->np; p++)
    for (int64_t i = 0; i < n; i++)
      expect[(int64_t)p * n + i] = nb_datum(8, p, i);
  nb_compare_file(c, c->path[0], expect, n * c->np, what);
  if (c->rank == 0)
    unlink(trace_path);
  free(expect);
  free(w);
  return seen;
}

int main(int argc, char **argv) {
  struct nb c;
  setenv("AGGIO_TEST_TIMING", "1000", 0); /* run-ahead 2 s, see above */
  if (nb_init(&c, &argc, &argv, "overlap") != 0)
    return nb_finish(&c);
  if (c.level == MPI_THREAD_MULTIPLE) {
    t_overlap(&c, "two_phase", 1, 1);
    t_overlap(&c, "independent", 1, 1);
  } else {
    t_overlap(&c, "independent", 0, 1);
    t_overlap(&c, "two_phase", 1, 1);
  }
  return nb_finish(&c);
}
