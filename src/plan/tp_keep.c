/*
 * tp_keep.c - the bounds of a two-phase call's lists (tp_keep.h).
 */
#include "tp_keep.h"

/* a * b, or -1 past INT64_MAX (a, b >= 0) */
static int64_t mul(int64_t a, int64_t b) {
  int64_t r;
  return __builtin_mul_overflow(a, b, &r) ? -1 : r;
}

static int64_t add(int64_t a, int64_t b) {
  int64_t r;
  return a < 0 || b < 0 || __builtin_add_overflow(a, b, &r) ? -1 : r;
}

/* What an aggregator keeps (the most of any rank): its own pieces in each
 * domain, the list of every rank's pieces in its domain and the same
 * clipped to a round, two buffers' covered runs, the scratch arrays. */
static int64_t kept_bytes(const struct aggio__tp_bound *b, int nprocs, int naggr,
                          const struct aggio__tp_sizes *sz) {
  int64_t own = mul(mul(b->most, naggr), (int64_t)sz->piece);
  int64_t lists = mul(mul(mul(b->most, nprocs), 2), (int64_t)sz->extent);
  int64_t runs = mul(mul(b->total, 2), (int64_t)sz->extent);
  int64_t scratch = mul(b->most + 1, (int64_t)sz->scratch);
  return add(add(own, lists), add(runs, scratch));
}

int aggio__tp_keep_bound(int64_t pieces, int64_t most, int nprocs, int naggr,
                         const struct aggio__tp_sizes *sz, struct aggio__tp_bound *b) {
  if (pieces < 0 || most < 0 || most > pieces || nprocs < 1 || naggr < 1)
    return 0;
  b->most = most;
  b->total = pieces;
  int64_t bytes = kept_bytes(b, nprocs, naggr, sz);
  return bytes >= 0 && bytes <= AGGIO_TP_KEEP_BYTES;
}

int aggio__tp_keep_fits(const struct aggio__tp_bound *held,
                        const struct aggio__tp_bound *b) {
  return held->most >= 0 && b->most <= held->most && b->total <= held->total;
}

void aggio__tp_keep_hold(struct aggio__tp_bound *held, const struct aggio__tp_bound *b) {
  if (b->most > held->most)
    held->most = b->most;
  if (b->total > held->total)
    held->total = b->total;
}
