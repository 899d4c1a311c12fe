/*
 * test_stage_merge.c - the runs a node's movers take (src/plan/
 * stage_merge.h): ior-hard's interleaved records of four writers joined
 * into one transfer, a busy range, the size bound, a writer's own order;
 * then random queues against the rule's properties (one transfer of
 * adjacent bytes, each writer's records in its order, nothing busy, the
 * lowest free head first, nothing that could still join left out).
 */
#include <stdint.h>
#include <stdio.h>

#include "harness.h"
#include "rng.h"
#include "stage_merge.h"

#define MIB (1 << 20)
#define REC 47008

static void check_ior_hard(void) {
  struct aggio__merge_rec r[4][10];
  struct aggio__merge_queue q[4];
  for (int w = 0; w < 4; w++) {
    for (int k = 0; k < 10; k++)
      r[w][k] = (struct aggio__merge_rec){(int64_t)(k * 4 + w) * REC, REC};
    q[w] = (struct aggio__merge_queue){r[w], 10};
  }
  int order[64];
  int64_t taken[4];
  int64_t n = aggio__stage_merge_run(q, 4, NULL, 0, 8 * MIB, order, 64, taken);
  int in_order = n == 40;
  for (int64_t i = 0; in_order && i < n; i++)
    in_order = order[i] == (int)(i % 4);
  CHECK(in_order && taken[0] == 10 && taken[3] == 10,
        "four writers' interleaved records are one run (%lld records)", (long long)n);
  /* the same with rank 0's third record being written by another mover */
  struct aggio__merge_range busy = {8 * REC, 9 * REC};
  n = aggio__stage_merge_run(q, 4, &busy, 1, 8 * MIB, order, 64, taken);
  CHECK(n == 8 && taken[0] == 2 && taken[1] == 2 && taken[3] == 2,
        "a run stops before busy bytes (%lld records)", (long long)n);
  /* a cap on records */
  n = aggio__stage_merge_run(q, 4, NULL, 0, 8 * MIB, order, 5, taken);
  CHECK(n == 5 && taken[0] == 2 && taken[1] == 1, "at most cap records (%lld)", (long long)n);
}

static void check_bounds_and_order(void) {
  struct aggio__merge_rec big[3] = {{0, 3 * MIB}, {3 * MIB, 3 * MIB}, {6 * MIB, 3 * MIB}};
  struct aggio__merge_queue q = {big, 3};
  int order[8];
  int64_t taken[2];
  int64_t n = aggio__stage_merge_run(&q, 1, NULL, 0, 8 * MIB, order, 8, taken);
  CHECK(n == 2 && taken[0] == 2, "a run stays within max bytes (%lld records)", (long long)n);
  struct aggio__merge_rec huge = {0, 10 * MIB};
  q = (struct aggio__merge_queue){&huge, 1};
  n = aggio__stage_merge_run(&q, 1, NULL, 0, 8 * MIB, order, 8, taken);
  CHECK(n == 1, "a record longer than max goes alone (%lld)", (long long)n);
  /* writer 0 wrote [100, 200) and then [0, 100); writer 1 [0, 100) */
  struct aggio__merge_rec w0[2] = {{100, 100}, {0, 100}}, w1[1] = {{0, 100}};
  struct aggio__merge_queue two[2] = {{w0, 2}, {w1, 1}};
  n = aggio__stage_merge_run(two, 2, NULL, 0, 8 * MIB, order, 8, taken);
  CHECK(n == 2 && order[0] == 1 && order[1] == 0 && taken[0] == 1 && taken[1] == 1,
        "a writer's records are taken in its own order (%lld records)", (long long)n);
  struct aggio__merge_queue none[2] = {{w0, 0}, {w1, 0}};
  CHECK(aggio__stage_merge_run(none, 2, NULL, 0, 8 * MIB, order, 8, taken) == 0,
        "nothing ready, no run");
  struct aggio__merge_range all = {0, 1000};
  CHECK(aggio__stage_merge_run(two, 2, &all, 1, 8 * MIB, order, 8, taken) == 0,
        "everything busy, no run");
}

#define W 5
#define N 12

static int overlaps(const struct aggio__merge_range *b, int nb, struct aggio__merge_rec r) {
  for (int i = 0; i < nb; i++)
    if (r.offset < b[i].hi && b[i].lo < r.offset + r.length)
      return 1;
  return 0;
}

/* The properties of one random case; returns 0 when they hold. */
static int random_case(rng_t *g) {
  struct aggio__merge_rec r[W][N];
  struct aggio__merge_queue q[W];
  int nw = (int)rng_range(g, 1, W);
  for (int w = 0; w < nw; w++) {
    q[w] = (struct aggio__merge_queue){r[w], rng_range(g, 0, N)};
    for (int k = 0; k < q[w].n; k++) /* offsets on a coarse grid, so that some adjoin */
      r[w][k] = (struct aggio__merge_rec){rng_range(g, 0, 40) * 8, rng_range(g, 1, 3) * 8};
  }
  struct aggio__merge_range busy[3];
  int nb = (int)rng_range(g, 0, 3);
  for (int i = 0; i < nb; i++) {
    busy[i].lo = rng_range(g, 0, 320);
    busy[i].hi = busy[i].lo + rng_range(g, 1, 40);
  }
  int64_t max = rng_range(g, 8, 96), taken[W], seen[W] = {0};
  int order[W * N];
  int64_t n = aggio__stage_merge_run(q, nw, busy, nb, max, order, W * N, taken);
  int64_t end = -1, bytes = 0, lowest = INT64_MAX;
  for (int w = 0; w < nw; w++)
    if (q[w].n > 0 && !overlaps(busy, nb, r[w][0]) && r[w][0].offset < lowest)
      lowest = r[w][0].offset;
  if (n == 0)
    return lowest != INT64_MAX; /* a free head was left */
  for (int64_t i = 0; i < n; i++) {
    int w = order[i];
    struct aggio__merge_rec x = r[w][seen[w]++]; /* each writer in its own order */
    if ((i == 0 && x.offset != lowest) || (i > 0 && x.offset != end) || overlaps(busy, nb, x))
      return 1;
    end = x.offset + x.length;
    bytes += x.length;
  }
  for (int w = 0; w < nw; w++)
    if (seen[w] != taken[w])
      return 1;
  if (n > 1 && bytes > max)
    return 1;
  for (int w = 0; w < nw; w++) /* nothing that could still join */
    if (taken[w] < q[w].n && r[w][taken[w]].offset == end &&
        bytes + r[w][taken[w]].length <= max && !overlaps(busy, nb, r[w][taken[w]]))
      return 1;
  return 0;
}

static void check_random(void) {
  rng_t g = {20261129};
  int bad = 0;
  for (int i = 0; i < 20000; i++)
    bad += random_case(&g);
  CHECK(bad == 0, "%d of 20000 random cases break the rule", bad);
}

int main(void) {
  check_ior_hard();
  check_bounds_and_order();
  check_random();
  return test_summary();
}
