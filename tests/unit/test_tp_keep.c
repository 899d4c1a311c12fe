/*
 * test_tp_keep.c - the bounds a two-phase call keeps (src/plan/tp_keep.h):
 * from the agreed piece counts; small ones are kept, large ones (or
 * overflowing ones) not; a call fits only what an agreed call held, and
 * what is held only grows.
 */
#include <stdint.h>

#include "harness.h"
#include "tp_keep.h"

static const struct aggio__tp_sizes SZ = {24, 16, 20};

static void check_bound(void) {
  struct aggio__tp_bound b;
  CHECK(aggio__tp_keep_bound(64, 16, 4, 2, &SZ, &b) && b.most == 16 && b.total == 64,
        "16 pieces a rank, 64 in all: kept, with those bounds (got %lld, %lld)",
        (long long)b.most, (long long)b.total);
  CHECK(aggio__tp_keep_bound(0, 0, 4, 2, &SZ, &b), "a call without data: kept (nothing)");
  CHECK(!aggio__tp_keep_bound(8, 16, 4, 2, &SZ, &b),
        "one rank's pieces above all ranks': not a summary, not kept");
  CHECK(!aggio__tp_keep_bound(-1, 0, 4, 2, &SZ, &b), "negative counts: not kept");
  /* an aggregator keeps 2 lists per rank of `most`: 8,192 ranks x 1 piece
   * is small, 8,192 ranks x 4,096 pieces is not */
  CHECK(aggio__tp_keep_bound(8192, 1, 8192, 512, &SZ, &b), "ior-hard, 8,192 ranks: kept");
  CHECK(!aggio__tp_keep_bound(8192 * 4096LL, 4096, 8192, 512, &SZ, &b),
        "4,096 pieces a rank at 8,192 ranks: too much to keep");
  CHECK(!aggio__tp_keep_bound(INT64_MAX, INT64_MAX / 2, 1 << 20, 1 << 10, &SZ, &b),
        "counts whose memory overflows: not kept");
}

/* The largest `most` kept with 4 ranks and 2 domains, by bisection: the
 * memory at it is within AGGIO_TP_KEEP_BYTES, one more is not. */
static void check_limit(void) {
  struct aggio__tp_bound b;
  int64_t lo = 0, hi = 1 << 24;
  while (hi - lo > 1) {
    int64_t mid = (lo + hi) / 2;
    if (aggio__tp_keep_bound(4 * mid, mid, 4, 2, &SZ, &b))
      lo = mid;
    else
      hi = mid;
  }
  /* per piece of `most`: 2 x 24 own + 2 x 4 x 16 lists + 2 x 4 x 16 runs + 20 scratch */
  int64_t per = 2 * 24 + 2 * 4 * 16 + 2 * 4 * 16 + 20;
  CHECK(lo * per + 20 <= AGGIO_TP_KEEP_BYTES && (lo + 1) * per + 20 > AGGIO_TP_KEEP_BYTES,
        "the largest kept call has %lld pieces a rank, %lld bytes each: not the limit's",
        (long long)lo, (long long)per);
}

static void check_fits(void) {
  struct aggio__tp_bound held = {-1, -1}, b = {0, 0};
  CHECK(!aggio__tp_keep_fits(&held, &b), "nothing fits before an agreed call held any");
  struct aggio__tp_bound c1 = {10, 40}, c2 = {5, 80}, c3 = {10, 80}, c4 = {11, 10};
  aggio__tp_keep_hold(&held, &c1);
  CHECK(aggio__tp_keep_fits(&held, &c1) && aggio__tp_keep_fits(&held, &b),
        "the same call, and an empty one, fit");
  CHECK(!aggio__tp_keep_fits(&held, &c2), "more pieces in all than held: does not fit");
  aggio__tp_keep_hold(&held, &c2);
  CHECK(held.most == 10 && held.total == 80, "held grows field by field: %lld, %lld",
        (long long)held.most, (long long)held.total);
  CHECK(aggio__tp_keep_fits(&held, &c3), "10 a rank, 80 in all fit after both");
  CHECK(!aggio__tp_keep_fits(&held, &c4), "11 pieces of one rank do not");
}

int main(void) {
  check_bound();
  check_limit();
  check_fits();
  return test_summary();
}
