/*
 * test_node_plan.c - node-local aggregation's planning (src/plan/node_plan.c):
 * the choice of a node's aggregators, the split of the node's bytes into
 * contiguous shares, the packing of each share into rounds of a buffer
 * (alignment, no overlap, nothing lost), and a rank's copies: random
 * layouts are carried through the plan into a file image, which must equal
 * the image the ranks' ranges describe.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "node_plan.h"
#include "plan.h"
#include "rng.h"

static void test_aggregators(void) {
  int out[16];
  int none[4] = {0, 0, 0, 0}, first[4] = {1, 0, 0, 0}, two[4] = {1, 0, 1, 0};
  int n = aggio__nl_aggregators(4, none, 0, out);
  CHECK(n == 1 && out[0] == 0, "no flagged rank, k=0: %d first %d", n, out[0]);
  n = aggio__nl_aggregators(4, first, 0, out);
  CHECK(n == 1 && out[0] == 0, "cb_config_list's one: %d", n);
  n = aggio__nl_aggregators(4, two, 0, out);
  CHECK(n == 2 && out[0] == 0 && out[1] == 2, "cb_config_list's two: %d %d %d", n, out[0], out[1]);
  n = aggio__nl_aggregators(4, two, 1, out);
  CHECK(n == 1 && out[0] == 0, "k=1 of two flagged: %d %d", n, out[0]);
  n = aggio__nl_aggregators(4, first, 2, out);
  CHECK(n == 2 && out[0] == 0 && out[1] == 2, "k=2, one flagged: spread %d %d", out[0], out[1]);
  n = aggio__nl_aggregators(4, none, 9, out);
  CHECK(n == 4 && out[0] == 0 && out[3] == 3, "k capped by the node: %d", n);
  int six[6] = {1, 1, 1, 1, 1, 1};
  n = aggio__nl_aggregators(6, six, 3, out);
  CHECK(n == 3 && out[0] == 0 && out[1] == 2 && out[2] == 4, "spread over flagged: %d %d %d",
        out[0], out[1], out[2]);
  CHECK(aggio__nl_aggregators(0, none, 2, out) == 0, "empty node");
}

/* Checks the plan's invariants against the runs it was made from. */
static void check_plan(const struct aggio__extents *runs, const struct aggio__nl_plan *p,
                       int64_t slot, int64_t align, int64_t cut) {
  int64_t bytes = aggio__extents_bytes(runs), covered = 0, prev_end = INT64_MIN;
  for (int j = 0; j < p->k; j++) {
    int64_t share = 0, last_round = -1, last_pos = 0;
    for (size_t q = p->first[j]; q < p->first[j + 1]; q++) {
      const struct aggio__nl_piece *pc = &p->v[q];
      share += pc->len;
      CHECK(pc->len > 0 && pc->pos >= 0 && pc->pos + pc->len <= slot, "piece within the slot");
      CHECK(pc->off >= prev_end, "pieces in file order, shares contiguous: %lld < %lld",
            (long long)pc->off, (long long)prev_end);
      prev_end = pc->off + pc->len;
      CHECK(pc->round >= last_round, "rounds in order");
      if (pc->round == last_round)
        CHECK(pc->pos >= last_pos, "no overlap in the buffer");
      last_round = pc->round;
      last_pos = pc->pos + pc->len;
      if (align > 1 && slot >= 2 * align)
        CHECK(pc->pos % align == pc->off % align, "aligned offsets on aligned memory");
      CHECK(pc->round < p->rounds[j], "round count");
    }
    covered += share;
    if (cut == 0)
      CHECK(share == (int64_t)(((__int128)bytes * (j + 1)) / p->k) -
                         (int64_t)(((__int128)bytes * j) / p->k),
            "exact split: share %d has %lld of %lld", j, (long long)share, (long long)bytes);
  }
  CHECK(covered == bytes, "every byte planned once: %lld of %lld", (long long)covered,
        (long long)bytes);
}

/* Random ranges for R ranks of a node over a file of `size` bytes,
 * disjoint (MPI leaves overlapping collective writes undefined). */
static void random_layout(rng_t *g, int R, int64_t size, struct aggio__extents *mine) {
  int64_t off = rng_range(g, 0, 64);
  while (off < size) {
    int64_t len = rng_range(g, 1, rng_range(g, 0, 3) ? 700 : 20000);
    if (rng_range(g, 0, 4) > 0)
      aggio__extents_push(&mine[rng_range(g, 0, R - 1)], off, len);
    off += len + (rng_range(g, 0, 2) ? 0 : rng_range(g, 1, 5000));
  }
}

static unsigned char byte_of(int r, int64_t spos) { return (unsigned char)(r * 37 + spos * 11 + 1); }

/* Carries each rank's stream through its copies into the aggregators'
 * buffers, round by round, and the pieces into a file image. */
static void simulate(const struct aggio__nl_plan *p, const struct aggio__extents *mine, int R,
                     int64_t slot, unsigned char *image, int64_t size) {
  struct aggio__nl_move **mv = calloc((size_t)R, sizeof *mv);
  size_t *nm = calloc((size_t)R, sizeof *nm);
  unsigned char *buf = malloc((size_t)(slot * p->k));
  for (int r = 0; r < R; r++) {
    CHECK(aggio__nl_moves(p, &mine[r], &mv[r], &nm[r]) == 0, "moves");
    int64_t total = 0;
    for (size_t i = 0; i < nm[r]; i++)
      total += mv[r][i].len;
    CHECK(total == aggio__extents_bytes(&mine[r]), "rank %d's moves carry its bytes", r);
    for (size_t i = 1; i < nm[r]; i++)
      CHECK(mv[r][i].round >= mv[r][i - 1].round, "moves sorted by round");
  }
  for (int64_t round = 0; round < p->nrounds; round++) {
    memset(buf, 0, (size_t)(slot * p->k));
    for (int r = 0; r < R; r++)
      for (size_t i = 0; i < nm[r]; i++) {
        const struct aggio__nl_move *m = &mv[r][i];
        if (m->round != round)
          continue;
        CHECK(m->off >= 0 && m->off + m->len <= p->hi, "move's file offset");
        for (int64_t b = 0; b < m->len; b++)
          buf[m->aggr * slot + m->pos + b] = byte_of(r, m->spos + b);
      }
    for (int j = 0; j < p->k; j++)
      for (size_t q = p->first[j]; q < p->first[j + 1]; q++)
        if (p->v[q].round == round && p->v[q].off + p->v[q].len <= size)
          memcpy(image + p->v[q].off, buf + j * slot + p->v[q].pos, (size_t)p->v[q].len);
  }
  for (int r = 0; r < R; r++)
    free(mv[r]);
  free(mv);
  free(nm);
  free(buf);
}

static void test_random(void) {
  rng_t g = {12345};
  for (int iter = 0; iter < 300; iter++) {
    int R = (int)rng_range(&g, 1, 6), k = (int)rng_range(&g, 1, 5);
    int64_t size = rng_range(&g, 1, 200000);
    int64_t align = rng_range(&g, 0, 1) ? 512 : 1;
    int64_t slot = rng_range(&g, 0, 3) ? rng_range(&g, 2, 16) * 512 : rng_range(&g, 1, 3000);
    int64_t cut = rng_range(&g, 0, 1) ? 0 : 4096;
    struct aggio__extents *mine = calloc((size_t)R, sizeof *mine), runs = {0};
    random_layout(&g, R, size, mine);
    CHECK(aggio__coverage(mine, R, &runs) == 0, "coverage");
    struct aggio__nl_plan p;
    CHECK(aggio__nl_plan_make(&runs, k, slot, align, cut, &p) == 0, "plan");
    check_plan(&runs, &p, slot, align, cut);
    int64_t span = size + 30000;
    unsigned char *want = calloc(1, (size_t)span), *got = calloc(1, (size_t)span);
    for (int r = 0; r < R; r++) {
      int64_t spos = 0;
      for (size_t i = 0; i < mine[r].n; i++)
        for (int64_t b = 0; b < mine[r].v[i].len; b++)
          want[mine[r].v[i].off + b] = byte_of(r, spos++);
    }
    simulate(&p, mine, R, slot, got, span);
    CHECK(memcmp(want, got, (size_t)span) == 0, "iteration %d: the image differs (R=%d k=%d "
          "slot=%lld align=%lld)", iter, R, k, (long long)slot, (long long)align);
    free(want);
    free(got);
    aggio__nl_plan_free(&p);
    aggio__extents_free(&runs);
    for (int r = 0; r < R; r++)
      aggio__extents_free(&mine[r]);
    free(mine);
  }
}

/* A contiguous node's share is one piece per aggregator and round, cut at
 * stripe boundaries. */
static void test_contiguous(void) {
  struct aggio__extents runs = {0};
  aggio__extents_push(&runs, 1 << 20, 8 << 20);
  struct aggio__nl_plan p;
  CHECK(aggio__nl_plan_make(&runs, 4, 4 << 20, 4096, 1 << 20, &p) == 0, "plan");
  CHECK(p.n == 4 && p.nrounds == 1, "one write per aggregator: %zu pieces, %lld rounds", p.n,
        (long long)p.nrounds);
  for (size_t q = 0; q < p.n; q++)
    CHECK(p.v[q].off % (1 << 20) == 0 && p.v[q].len == 2 << 20, "stripe-aligned shares");
  aggio__nl_plan_free(&p);
  /* a slot of 1 MiB: two rounds each */
  CHECK(aggio__nl_plan_make(&runs, 4, 1 << 20, 4096, 1 << 20, &p) == 0, "plan");
  CHECK(p.n == 8 && p.nrounds == 2, "two rounds: %zu pieces, %lld rounds", p.n,
        (long long)p.nrounds);
  aggio__nl_plan_free(&p);
  aggio__extents_clear(&runs);
  CHECK(aggio__nl_plan_make(&runs, 3, 4096, 4096, 0, &p) == 0, "empty plan");
  CHECK(p.n == 0 && p.nrounds == 0 && p.lo == 0 && p.hi == 0, "nothing to do");
  aggio__nl_plan_free(&p);
  aggio__extents_free(&runs);
}

static void test_fragmented(void) {
  int64_t apart[4] = {0, 100, 100, 200}, inter[4] = {0, 150, 50, 200};
  CHECK(!aggio__nl_fragmented(apart, 2, 0, 10, 1), "disjoint spans are not interleaved");
  CHECK(aggio__nl_fragmented(inter, 2, 0, 10, 1), "overlapping spans, many runs");
  CHECK(!aggio__nl_fragmented(inter, 2, 0, 2, 2), "one run per aggregator is not fragmented");
  int64_t empty[4] = {0, 150, 0, 0};
  CHECK(!aggio__nl_fragmented(empty, 2, 0, 10, 1), "a node without data interleaves nothing");
}

int main(void) {
  test_aggregators();
  test_contiguous();
  test_random();
  test_fragmented();
  return test_summary();
}
