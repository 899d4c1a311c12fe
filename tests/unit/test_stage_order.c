/*
 * test_stage_order.c - the staged bytes written again so that the newest
 * write wins across ranks (src/plan/stage_order.h): HDF5's case (rank 0's
 * fill values, then rank 1's data over them) by hand; then random pieces
 * of several ranks against a byte-by-byte model (a byte is fixed when two
 * or more ranks wrote it, by the rank of its newest write), whole and cut
 * into domains by aggio__stage_split as the core cuts them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rng.h"
#include "stage_order.h"

static struct aggio__stage_piece piece(int rank, int64_t off, int64_t len, uint64_t calls,
                                       uint64_t t, uint64_t seq) {
  struct aggio__stage_piece p = {{0}, rank};
  p.r.offset = (uint64_t)off, p.r.length = (uint64_t)len;
  p.r.calls = calls, p.r.time_ns = t, p.r.seq = seq;
  return p;
}

static void check_hdf5_fill(void) {
  /* rank 0 fills [0, 100) with zeros; after a barrier ranks 1 and 2 write
   * [0, 50) and [50, 100); rank 1 also writes [200, 300) alone */
  struct aggio__stage_piece p[] = {piece(0, 0, 100, 4, 10, 0), piece(1, 0, 50, 4, 20, 0),
                                   piece(2, 50, 50, 4, 21, 0), piece(1, 200, 100, 4, 22, 1)};
  struct aggio__stage_fix *f = NULL;
  int64_t n = -1;
  CHECK(aggio__stage_conflicts(p, 4, &f, &n) == 0, "conflicts planned");
  CHECK(n == 2 && f[0].rank == 1 && f[0].offset == 0 && f[0].length == 50 &&
            f[1].rank == 2 && f[1].offset == 50 && f[1].length == 50,
        "ranks 1 and 2 write their halves again, rank 1's own bytes alone not (%lld fixes)",
        (long long)n);
  free(f);
  /* the data written in a later collective call wins over a fill whose
   * clock reads later (another node's clock) */
  p[0].r.time_ns = 99;
  CHECK(aggio__stage_conflicts(p, 4, &f, &n) == 0 && n == 1 && f[0].rank == 0 &&
            f[0].length == 100,
        "same calls: the later clock wins (rank 0's two ranges joined)");
  free(f);
  p[1].r.calls = p[2].r.calls = 5;
  CHECK(aggio__stage_conflicts(p, 4, &f, &n) == 0 && n == 2 && f[0].rank == 1 &&
            f[1].rank == 2,
        "a later collective call wins whatever the clocks say");
  free(f);
  struct aggio__stage_piece own[] = {piece(3, 0, 10, 0, 5, 0), piece(3, 5, 10, 0, 6, 1)};
  CHECK(aggio__stage_conflicts(own, 2, &f, &n) == 0 && n == 0 && f == NULL,
        "one rank's own overlapping writes need no fix (its movers keep its order)");
}

#define SPAN 96
#define RANKS 4

/* The model: per byte, the rank of the newest piece and how many ranks. */
static void model(const struct aggio__stage_piece *p, int n, int *win, int *ranks) {
  for (int x = 0; x < SPAN; x++) {
    int best = -1, seen[RANKS] = {0};
    ranks[x] = 0;
    for (int i = 0; i < n; i++) {
      if ((int64_t)p[i].r.offset > x || (int64_t)(p[i].r.offset + p[i].r.length) <= x)
        continue;
      ranks[x] += !seen[p[i].rank];
      seen[p[i].rank] = 1;
      if (best < 0 || aggio__stage_rec_older(&p[best].r, p[best].rank, &p[i].r, p[i].rank) < 0)
        best = i;
    }
    win[x] = best < 0 ? -1 : p[best].rank;
  }
}

/* The fixes painted over the bytes: -1 where none; 1 when two fixes
 * overlap or one is out of order. */
static int paint(const struct aggio__stage_fix *f, int64_t n, int *fixed) {
  for (int x = 0; x < SPAN; x++)
    fixed[x] = -1;
  for (int64_t i = 0; i < n; i++) {
    if (i > 0 && (f[i].rank < f[i - 1].rank ||
                  (f[i].rank == f[i - 1].rank && f[i].offset <= f[i - 1].offset)))
      return 1;
    for (int64_t x = f[i].offset; x < f[i].offset + f[i].length; x++) {
      if (x < 0 || x >= SPAN || fixed[x] != -1)
        return 1;
      fixed[x] = f[i].rank;
    }
  }
  return 0;
}

static int expected(int x, const int *win, const int *ranks) {
  return ranks[x] >= 2 ? win[x] : -1;
}

static void check_random(void) {
  rng_t g = {12345};
  int bad = 0, bad_split = 0, fixes = 0;
  for (int trial = 0; trial < 3000; trial++) {
    struct aggio__stage_piece p[12];
    int n = (int)rng_range(&g, 1, 12);
    uint64_t seq[RANKS] = {0}, clock[RANKS] = {0}, calls[RANKS] = {0};
    for (int i = 0; i < n; i++) {
      int r = (int)rng_range(&g, 0, RANKS - 1);
      int64_t off = rng_range(&g, 0, SPAN - 2);
      int64_t len = rng_range(&g, 1, SPAN - off);
      calls[r] += (uint64_t)rng_range(&g, 0, 1); /* never decreasing within a rank */
      clock[r] += (uint64_t)rng_range(&g, 0, 3);
      p[i] = piece(r, off, len, calls[r], clock[r], seq[r]++);
    }
    int win[SPAN], ranks[SPAN], fixed[SPAN];
    model(p, n, win, ranks);
    struct aggio__stage_fix *f = NULL;
    int64_t nf = 0;
    if (aggio__stage_conflicts(p, n, &f, &nf) != 0 || paint(f, nf, fixed)) {
      bad++;
      free(f);
      continue;
    }
    for (int x = 0; x < SPAN; x++)
      bad += fixed[x] != expected(x, win, ranks);
    fixes += nf > 0;
    free(f);
    /* the same pieces cut into domains: the fixes of each domain together */
    int nd = (int)rng_range(&g, 1, 5);
    int64_t dom = rng_range(&g, 1, SPAN), count[5];
    struct aggio__stage_piece *cut = NULL;
    int64_t ncut = 0;
    if (aggio__stage_split(p, n, 0, dom, nd, &cut, &ncut, count) != 0) {
      bad_split++;
      continue;
    }
    int all[SPAN];
    for (int x = 0; x < SPAN; x++)
      all[x] = -1;
    int64_t at = 0;
    for (int d = 0; d < nd; d++) {
      for (int64_t i = at; i < at + count[d]; i++) {
        int64_t lo = d * dom, hi = d == nd - 1 ? INT64_MAX : (d + 1) * dom;
        bad_split += (int64_t)cut[i].r.offset < lo ||
                     (int64_t)(cut[i].r.offset + cut[i].r.length) > hi;
      }
      if (aggio__stage_conflicts(cut + at, count[d], &f, &nf) != 0 || paint(f, nf, fixed)) {
        bad_split++;
        free(f);
        break;
      }
      for (int x = 0; x < SPAN; x++)
        if (fixed[x] != -1)
          all[x] = fixed[x];
      free(f);
      at += count[d];
    }
    for (int x = 0; x < SPAN; x++)
      bad_split += all[x] != expected(x, win, ranks);
    free(cut);
  }
  CHECK(bad == 0, "%d bytes fixed otherwise than the byte model says", bad);
  CHECK(bad_split == 0, "%d bytes wrong when the pieces are cut into domains", bad_split);
  CHECK(fixes > 500, "only %d of 3000 random trials had a conflict", fixes);
}

int main(void) {
  check_hdf5_fill();
  check_random();
  return test_summary();
}
