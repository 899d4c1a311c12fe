/*
 * test_plan.c - the MPI-free planning code: aggregator selection, emulated
 * nodes, file domains and their alignment, round windows, clipping,
 * coverage and the read-modify-write decision.
 */
#include <string.h>

#include "harness.h"
#include "plan.h"

static void test_aggregators(void) {
  /* 8 ranks on 2 nodes, node 0 = ranks 0-3, node 1 = ranks 4-7 */
  int node[8] = {0, 0, 0, 0, 1, 1, 1, 1};
  const char *names[2] = {"nid001", "nid002"};
  int aggr[8], n;
  char err[128];
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:1", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 2 && aggr[0] == 0 && aggr[1] == 4, "*:1 -> %d: %d %d", n, aggr[0], aggr[1]);
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:2", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 4 && aggr[0] == 0 && aggr[1] == 2 && aggr[2] == 4 && aggr[3] == 6,
        "*:2 spreads within nodes: %d %d %d %d", aggr[0], aggr[1], aggr[2], aggr[3]);
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:*", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 8, "*:* takes every rank: %d", n);
  /* cb_nodes caps and nodes take turns */
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:*", 3, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 3 && aggr[0] == 0 && aggr[1] == 2 && aggr[2] == 4, "cap 3: %d %d %d", aggr[0], aggr[1], aggr[2]);
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:*", 2, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 2 && aggr[0] == 0 && aggr[1] == 4, "cap 2 is one per node: %d %d", aggr[0], aggr[1]);
  /* host-specific entries win over a later '*' */
  CHECK(aggio__select_aggregators(8, node, 2, names, "nid002:4,*:1", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 5 && aggr[0] == 0 && aggr[1] == 4 && aggr[4] == 7, "host list: n=%d", n);
  /* a host without count means one; a glob matches */
  CHECK(aggio__select_aggregators(8, node, 2, names, "nid00[2]", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 1 && aggr[0] == 4, "glob host: n=%d first=%d", n, aggr[0]);
  /* more than the node has is clamped */
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:9", 0, aggr, &n, err, sizeof err) == 0, "%s", err);
  CHECK(n == 8, "clamped: %d", n);
  /* errors */
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:x", 0, aggr, &n, err, sizeof err) == -1, "bad count accepted");
  CHECK(strstr(err, "bad entry") != NULL, "message: %s", err);
  CHECK(aggio__select_aggregators(8, node, 2, names, "", 0, aggr, &n, err, sizeof err) == -1, "empty list accepted");
  CHECK(aggio__select_aggregators(8, node, 2, names, "other:1", 0, aggr, &n, err, sizeof err) == -1,
        "list matching no host accepted");
  CHECK(aggio__select_aggregators(8, node, 2, names, "*:0", 0, aggr, &n, err, sizeof err) == -1, "zero aggregators accepted");
}

static void test_emulated(void) {
  /* 8 ranks into 3 nodes: sizes 3, 3, 2 */
  int want[8] = {0, 0, 0, 1, 1, 1, 2, 2};
  for (int i = 0; i < 8; i++)
    CHECK(aggio__emulated_node(i, 8, 3) == want[i], "rank %d -> %d", i, aggio__emulated_node(i, 8, 3));
  CHECK(aggio__emulated_node(3, 4, 0) == 0, "k=0 is one node");
  CHECK(aggio__emulated_node(3, 4, 9) == 3, "k>n is one rank per node");
}

static void test_domains(void) {
  int64_t s[4], e[4];
  aggio__file_domains(0, 1000, 4, 0, s, e);
  CHECK(s[0] == 0 && e[0] == 250 && s[1] == 250 && e[3] == 1000, "even split %lld %lld", (long long)e[0], (long long)e[3]);
  /* aligned: interior boundaries are multiples of 4096 */
  aggio__file_domains(100, 100 + 4 * 10000, 4, 4096, s, e);
  for (int i = 0; i < 4; i++) {
    CHECK(i == 0 || s[i] == e[i - 1], "contiguous at %d", i);
    CHECK(i == 3 || e[i] % 4096 == 0, "boundary %d = %lld aligned", i, (long long)e[i]);
  }
  CHECK(s[0] == 100 && e[3] == 40100, "ends kept: %lld %lld", (long long)s[0], (long long)e[3]);
  /* smaller than one stripe per aggregator: some domains empty, none shared */
  aggio__file_domains(0, 5000, 4, 4096, s, e);
  int64_t covered = 0;
  for (int i = 0; i < 4; i++) {
    CHECK(e[i] >= s[i], "domain %d well-formed", i);
    covered += e[i] - s[i];
    CHECK(s[i] % 4096 == 0 || s[i] == 0, "start %lld aligned", (long long)s[i]);
  }
  CHECK(covered == 5000, "covered %lld", (long long)covered);
  CHECK(aggio__domain_of(4500, 4, s, e) >= 0, "offset in a domain");
  int d = aggio__domain_of(4500, 4, s, e);
  CHECK(s[d] <= 4500 && 4500 < e[d], "domain_of right: %d", d);
  CHECK(aggio__domain_of(5000, 4, s, e) == -1, "past end");
  /* huge ranges do not overflow */
  aggio__file_domains(0, INT64_C(1) << 62, 3, 1 << 20, s, e);
  CHECK(e[2] == INT64_C(1) << 62 && e[0] > 0 && e[0] % (1 << 20) == 0, "huge split");
}

static void test_rounds(void) {
  int64_t s[2] = {100, 5000}, e[2] = {5000, 9000};
  /* cb = 2048: domain 0 [100,5000) spans windows [0,2048),[2048,4096),[4096,6144) */
  CHECK(aggio__round_count(2, s, e, 2048) == 3, "rounds = %lld", (long long)aggio__round_count(2, s, e, 2048));
  int64_t lo, hi;
  aggio__round_window(100, 5000, 2048, 0, &lo, &hi);
  CHECK(lo == 100 && hi == 2048, "w0 [%lld,%lld)", (long long)lo, (long long)hi);
  aggio__round_window(100, 5000, 2048, 2, &lo, &hi);
  CHECK(lo == 4096 && hi == 5000, "w2 [%lld,%lld)", (long long)lo, (long long)hi);
  aggio__round_window(100, 5000, 2048, 3, &lo, &hi);
  CHECK(lo == hi, "past the end is empty");
  /* windows tile the domain exactly */
  int64_t total = 0;
  for (int k = 0; k < 10; k++) {
    aggio__round_window(5000, 9000, 2048, k, &lo, &hi);
    total += hi - lo;
  }
  CHECK(total == 4000, "tiles %lld", (long long)total);
}

static void test_round_size(void) {
  int64_t MiB = 1 << 20;
  CHECK(aggio__round_size(64 * MiB, 16 * MiB, 4096, 0) == 16 * MiB, "no pipeline: cb");
  CHECK(aggio__round_size(64 * MiB, 16 * MiB, 4096, 1) == 4 * MiB, "64 MiB domain -> 4 MiB rounds");
  CHECK(aggio__round_size(1024 * MiB, 16 * MiB, 4096, 1) == 16 * MiB, "large domain keeps cb");
  CHECK(aggio__round_size(1 * MiB, 16 * MiB, 4096, 1) == 4 * MiB, "floor of 4 MiB");
  CHECK(aggio__round_size(1 * MiB, 65536, 4096, 1) == 65536, "never above cb");
  CHECK(aggio__round_size(100 * MiB, 16 * MiB, 1 << 20, 1) % (1 << 20) == 0, "aligned");
}

static void test_clip_coverage(void) {
  struct aggio__extents a = {0}, b = {0}, out = {0}, runs = {0};
  aggio__extents_push(&a, 0, 10);
  aggio__extents_push(&a, 20, 10);
  aggio__extents_push(&a, 40, 30);
  size_t cur = 0;
  aggio__clip(&a, &cur, 5, 45, &out);
  CHECK(out.n == 3 && out.v[0].off == 5 && out.v[0].len == 5 && out.v[2].off == 40 && out.v[2].len == 5,
        "clip n=%zu", out.n);
  CHECK(cur == 2, "cursor keeps the straddling range: %zu", cur);
  aggio__extents_clear(&out);
  aggio__clip(&a, &cur, 45, 100, &out);
  CHECK(out.n == 1 && out.v[0].off == 45 && out.v[0].len == 25, "second window");
  CHECK(cur == 3, "cursor at end: %zu", cur);
  /* coverage merges touching and overlapping ranges of several lists */
  aggio__extents_push(&b, 10, 10);
  aggio__extents_push(&b, 35, 10);
  struct aggio__extents lists[2] = {a, b};
  CHECK(aggio__coverage(lists, 2, &runs) == 0, "coverage");
  CHECK(runs.n == 2 && runs.v[0].off == 0 && runs.v[0].len == 30 && runs.v[1].off == 35 &&
            runs.v[1].len == 35, "runs n=%zu", runs.n);
  CHECK(aggio__extents_bytes(&runs) == 65, "bytes %lld", (long long)aggio__extents_bytes(&runs));
  aggio__extents_free(&a);
  aggio__extents_free(&b);
  aggio__extents_free(&out);
  aggio__extents_free(&runs);
}

static void test_rmw(void) {
  struct aggio__extents one = {0}, many = {0}, sparse = {0};
  aggio__extents_push(&one, 0, 4096);
  for (int i = 0; i < 100; i++)
    aggio__extents_push(&many, i * 1000, 900); /* small runs, small holes */
  aggio__extents_push(&sparse, 0, 100);
  aggio__extents_push(&sparse, 1000000, 100); /* holes far larger than data */
  CHECK(aggio__rmw_decide(&one, 0, 4096, 1) == 0, "one run never needs RMW");
  CHECK(aggio__rmw_decide(&many, 0, 100000, 2) == 1, "automatic: many small runs -> RMW");
  CHECK(aggio__rmw_decide(&many, 0, 100000, 0) == 0, "disable wins");
  CHECK(aggio__rmw_decide(&sparse, 0, 1000100, 2) == 0, "automatic: sparse -> runs");
  CHECK(aggio__rmw_decide(&sparse, 0, 1000100, 1) == 1, "enable wins");
  aggio__extents_free(&one);
  aggio__extents_free(&many);
  aggio__extents_free(&sparse);
}

/* The reduced summary of per-rank ranges [lo[r], hi[r]), each rank with
 * `pieces` ranges, as the engine's reduction builds it. */
static struct aggio__call_summary reduce_ranges(int n, const int64_t *lo, const int64_t *hi,
                                                int64_t pieces) {
  struct aggio__call_summary all, one;
  struct aggio__extents x = {0};
  aggio__summary_mine(&all, &x, 0, 0, 0);
  for (int r = 0; r < n; r++) {
    aggio__extents_clear(&x);
    if (hi[r] > lo[r]) {
      /* pieces ranges of equal share spanning [lo, hi) */
      int64_t step = (hi[r] - lo[r]) / pieces;
      for (int64_t k = 0; k < pieces; k++)
        aggio__extents_push(&x, lo[r] + k * step, k == pieces - 1 ? hi[r] - lo[r] - k * step : step / 2);
    }
    aggio__summary_mine(&one, &x, aggio__extents_bytes(&x), 0, 0);
    aggio__summary_merge(&one, &all);
  }
  aggio__extents_free(&x);
  return all;
}

static void test_summary_merge(void) {
  int64_t lo[3] = {100, 0, 0}, hi[3] = {200, 50, 0};
  struct aggio__call_summary s = reduce_ranges(3, lo, hi, 1);
  CHECK(s.lo == 0 && s.hi == 200, "range [%lld, %lld)", (long long)s.lo, (long long)s.hi);
  CHECK(s.ranks == 2 && s.pieces == 2 && s.most_pieces == 1, "ranks %lld pieces %lld",
        (long long)s.ranks, (long long)s.pieces);
  CHECK(s.bytes == 150, "bytes %lld", (long long)s.bytes);
  CHECK(!aggio__summary_interleaved(&s), "disjoint ranges do not interleave");
  int64_t lo2[2] = {0, 10}, hi2[2] = {100, 110};
  struct aggio__call_summary t = reduce_ranges(2, lo2, hi2, 1);
  CHECK(aggio__summary_interleaved(&t), "overlapping ranges interleave");
  /* errors: the most negative code wins, the lowest rank among equals */
  struct aggio__call_summary a = s, b = s;
  a.err = -7LL * ((int64_t)1 << 32) + 3;
  b.err = -7LL * ((int64_t)1 << 32) + 1;
  aggio__summary_merge(&a, &b);
  CHECK(b.err == -7LL * ((int64_t)1 << 32) + 1, "lowest failing rank");
  a.err = -11LL * ((int64_t)1 << 32) + 5;
  aggio__summary_merge(&a, &b);
  CHECK(b.err == a.err, "most negative code");
  a.flags = 1;
  b.flags = 2;
  aggio__summary_merge(&a, &b);
  CHECK(b.flags == 3, "flags are or-ed");
  /* the end of file reads done before the summary saw: the smallest */
  CHECK(s.eof == INT64_MAX, "no read saw an end of file: eof %lld", (long long)s.eof);
  a.eof = 4096;
  b.eof = INT64_MAX;
  aggio__summary_merge(&a, &b);
  CHECK(b.eof == 4096, "eof is the smallest (%lld)", (long long)b.eof);
}

/* The header sizes of a 64-bit build (the values only need to be plausible). */
#define HDR_FIXED 400
#define HDR_SLOT 600

static void geometry(int64_t budget, int64_t stripe, int64_t align, int64_t *block, int *n) {
  aggio__cache_geometry(budget, stripe, align, HDR_FIXED, HDR_SLOT, block, n);
}

static void test_cache_geometry(void) {
  int64_t block;
  int n;
  geometry(32 << 20, 0, 4096, &block, &n);
  /* 8 blocks would fill the budget and leave no room for the header */
  CHECK(block == 4 << 20 && n == 7, "default: %lld x %d", (long long)block, n);
  CHECK(aggio__cache_window_bytes(block, n, 4096, HDR_FIXED, HDR_SLOT) <= 32 << 20,
        "the window, header included, within the budget");
  geometry((32 << 20) + (64 << 10), 0, 4096, &block, &n);
  CHECK(block == 4 << 20 && n == 8, "room for the header: %lld x %d", (long long)block, n);
  geometry(32 << 20, 1 << 20, 4096, &block, &n);
  CHECK(block == 1 << 20 && n == 31, "stripe-sized blocks: %lld x %d", (long long)block, n);
  geometry(8192, 0, 4096, &block, &n);
  CHECK(block == 4096 && n == 2, "tiny budget: %lld x %d", (long long)block, n);
  geometry(10000, 0, 4096, &block, &n);
  CHECK(block == 4096 && n == 2, "odd budget: %lld x %d", (long long)block, n);
  geometry(4 << 20, 0, 1 << 20, &block, &n);
  CHECK(block == 1 << 20 && n == 2, "never below the direct-I/O unit: %lld x %d",
        (long long)block, n);
  CHECK(aggio__cache_window_bytes(1 << 20, 2, 1 << 20, HDR_FIXED, HDR_SLOT) == 4 << 20,
        "header and alignment rounded to the direct-I/O unit");
  geometry(1LL << 40, 0, 4096, &block, &n);
  CHECK(block == 4 << 20 && n == 1024, "at most 1024 slots: %lld x %d", (long long)block, n);
}

static struct aggio__auto_in auto_in(int is_write, int striped, int previous) {
  struct aggio__auto_in in = {.is_write = is_write, .cb = 2, .wb = 2, .wb_usable = 1,
                              .striped = striped, .nnodes = 1, .cache_bytes = 32 << 20,
                              .previous = previous};
  return in;
}

/* n ranks, each with one contiguous record of `rec` bytes per call,
 * adjacent (IOR's segmented layout with -t = -b). */
static struct aggio__call_summary records(int n, int64_t rec) {
  int64_t lo[64], hi[64];
  for (int r = 0; r < n; r++) {
    lo[r] = r * rec;
    hi[r] = lo[r] + rec;
  }
  return reduce_ranges(n, lo, hi, 1);
}

static void test_auto(void) {
  char why[256];
  struct aggio__auto_in in = auto_in(1, 0, -1);
  /* IO-500 ior-hard: one 47008-byte record per rank per call */
  struct aggio__call_summary hard = records(4, 47008);
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "ior-hard -> write-behind: %s", why);
  CHECK(strstr(why, "small requests") != NULL, "reason: %s", why);
  /* its reads: through the node cache, unless the program also reads the
   * file independently (HDF5, PnetCDF): then each rank reads its own;
   * writes keep the cache either way */
  in = auto_in(0, 0, -1);
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "ior-hard read -> write-behind's cache: %s", why);
  in.mixed_reads = 1;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "ior-hard read with independent reads mixed in -> independent: %s", why);
  CHECK(strstr(why, "also read independently") != NULL, "reason: %s", why);
  in = auto_in(1, 0, -1);
  in.mixed_reads = 1;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "ior-hard write with independent reads mixed in -> write-behind: %s", why);
  in = auto_in(1, 0, -1);
  /* without the cache, adjacent single records: independent on a local
   * disk, two-phase on a striped one (they share stripes) */
  in.wb = 0;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "write-behind disabled, local disk -> independent: %s", why);
  in.striped = 1;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "write-behind disabled, striped -> two_phase: %s", why);
  in = auto_in(1, 0, -1);
  in.wb_usable = 0;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "cache unusable -> independent: %s", why);
  /* small pieces interleaved in large calls (strided, 100 records a rank):
   * two-phase merges them within the call */
  int64_t slo[4], shi[4];
  for (int r = 0; r < 4; r++) {
    slo[r] = r * 47008;
    shi[r] = slo[r] + 100 * 4 * 47008;
  }
  struct aggio__call_summary strided = reduce_ranges(4, slo, shi, 100);
  in = auto_in(1, 0, -1);
  CHECK(aggio__auto_decide(&strided, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "18 MiB calls of interleaved records -> two_phase: %s", why);
  /* the same pieces in a small call stay in the cache */
  struct aggio__call_summary few = reduce_ranges(4, slo, shi, 10);
  few.bytes = 4 * 10 * 47008;
  few.pieces = 40;
  CHECK(aggio__auto_decide(&few, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "small interleaved call -> write-behind: %s", why);
  /* read with independent reads mixed in: the interleaved pieces go to
   * two-phase, as without the cache */
  in.is_write = 0;
  in.mixed_reads = 1;
  CHECK(aggio__auto_decide(&few, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "small interleaved read, mixed reads -> two_phase: %s", why);
  in.is_write = 1;
  in.mixed_reads = 0;
  /* several nodes on a striped file system: no node cache */
  in.striped = 1;
  in.nnodes = 4;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "ior-hard across nodes on a striped file system -> two_phase: %s", why);
  in.striped = 0;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "ior-hard across nodes on a local file system -> write-behind: %s", why);
  /* 1 MiB segments (the HPE case) and 256 KiB records: independent */
  in = auto_in(1, 0, -1);
  struct aggio__call_summary seg = records(4, 1 << 20);
  CHECK(aggio__auto_decide(&seg, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "1 MiB segments -> independent: %s", why);
  struct aggio__call_summary quarter = records(4, 256 << 10);
  CHECK(aggio__auto_decide(&quarter, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "256 KiB records -> independent: %s", why);
  /* large and interleaved on a striped file system: two-phase */
  int64_t ilo[2] = {0, 1 << 20}, ihi[2] = {64 << 20, 65 << 20};
  struct aggio__call_summary inter = reduce_ranges(2, ilo, ihi, 4);
  in = auto_in(1, 1, -1);
  CHECK(aggio__auto_decide(&inter, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "large interleaved striped -> two_phase: %s", why);
  in.striped = 0;
  CHECK(aggio__auto_decide(&inter, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "large interleaved on a local disk -> independent: %s", why);
  /* PnetCDF's merged record variables: 4 interleaved 256 KiB pieces a rank
   * per call.  One node, unstriped: each rank writes its own; striped, or
   * on several nodes: two-phase merges them; 128 KiB pieces: two-phase */
  int64_t rlo[4], rhi[4];
  for (int r = 0; r < 4; r++) {
    rlo[r] = (int64_t)r * (256 << 10);
    rhi[r] = rlo[r] + (int64_t)(3 * 4 + 1) * (256 << 10);
  }
  struct aggio__call_summary recs = reduce_ranges(4, rlo, rhi, 4);
  recs.bytes = 16 * (256 << 10);
  recs.pieces = 16;
  in = auto_in(1, 0, -1);
  in.wb = 0;
  CHECK(aggio__auto_decide(&recs, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "256 KiB interleaved pieces, one node, local disk -> independent: %s", why);
  CHECK(strstr(why, "interleave on one node") != NULL, "reason: %s", why);
  in.previous = AGGIO_AUTO_TWO_PHASE; /* hysteresis: stays below 512 KiB */
  CHECK(aggio__auto_decide(&recs, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "256 KiB pieces after two_phase stay two_phase: %s", why);
  in.previous = -1;
  in.nnodes = 2;
  CHECK(aggio__auto_decide(&recs, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "256 KiB interleaved pieces on two nodes -> two_phase: %s", why);
  in.nnodes = 1;
  in.striped = 1;
  CHECK(aggio__auto_decide(&recs, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "256 KiB interleaved pieces, striped -> two_phase: %s", why);
  in.striped = 0;
  recs.bytes = 16 * (128 << 10);
  CHECK(aggio__auto_decide(&recs, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "128 KiB interleaved pieces, one node -> two_phase: %s", why);
  /* node-local: several nodes of consecutive ranks, each rank 100 small
   * pieces inside its own region (a subarray's rows, hacc-soa within a
   * rank's block): the nodes' own aggregators merge them */
  int64_t blo[4], bhi[4];
  for (int r = 0; r < 4; r++) {
    blo[r] = (int64_t)r * (8 << 20);
    bhi[r] = blo[r] + (8 << 20);
  }
  struct aggio__call_summary own = reduce_ranges(4, blo, bhi, 100);
  in = auto_in(1, 0, -1);
  in.wb = 0;
  in.nnodes = 2;
  in.nl_usable = 1;
  in.nodes_blocked = 1;
  CHECK(aggio__auto_decide(&own, &in, why, sizeof why) == AGGIO_AUTO_NODE_LOCAL,
        "small pieces in nodes' own regions -> node_local: %s", why);
  CHECK(strstr(why, "nothing crosses nodes") != NULL, "reason: %s", why);
  in.subfiled = 1; /* a node's region spans every subfile: one writer each instead */
  in.striped = 1;
  CHECK(aggio__auto_decide(&own, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "a subfiled file -> two_phase: %s", why);
  in.subfiled = 0;
  in.striped = 0;
  in.nodes_blocked = 0; /* round-robin placement: the nodes interleave */
  CHECK(aggio__auto_decide(&own, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "round-robin nodes -> two_phase: %s", why);
  in.nodes_blocked = 1;
  in.nl_usable = 0; /* atomic mode, or its set-up refused */
  CHECK(aggio__auto_decide(&own, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "node_local unusable -> two_phase: %s", why);
  in.nl_usable = 1;
  in.nnodes = 1;
  CHECK(aggio__auto_decide(&own, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "one node -> two_phase: %s", why);
  in.nnodes = 2;
  CHECK(aggio__auto_decide(&strided, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "interleaved ranks across nodes (the fragmented case) -> two_phase: %s", why);
  CHECK(aggio__auto_decide(&seg, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "1 MiB segments stay independent (no copy at all): %s", why);
  /* hints */
  in = auto_in(1, 0, -1);
  in.cb = 1;
  CHECK(aggio__auto_decide(&seg, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "romio_cb_write=enable");
  in.cb = 0;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "romio_cb_write=disable");
  in.wb = 1;
  CHECK(aggio__auto_decide(&seg, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "aggio_write_behind=enable wins");
  in = auto_in(1, 0, -1);
  in.no_indep_rw = 1;
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_TWO_PHASE,
        "romio_no_indep_rw forces two_phase");
  /* hysteresis around 128 KiB: 200 KiB records stay in the cache once
   * there, 100 KiB records stay independent once there */
  struct aggio__call_summary mid = records(2, 200 << 10);
  in = auto_in(1, 0, -1);
  CHECK(aggio__auto_decide(&mid, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "200 KiB fresh -> independent: %s", why);
  in.previous = AGGIO_AUTO_WRITE_BEHIND;
  CHECK(aggio__auto_decide(&mid, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "200 KiB after write-behind stays: %s", why);
  struct aggio__call_summary low = records(2, 100 << 10);
  in.previous = -1;
  CHECK(aggio__auto_decide(&low, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "100 KiB fresh -> write-behind: %s", why);
  in.previous = AGGIO_AUTO_INDEPENDENT;
  CHECK(aggio__auto_decide(&low, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "100 KiB after independent stays: %s", why);
  /* reads follow the same rule */
  in = auto_in(0, 0, -1);
  CHECK(aggio__auto_decide(&hard, &in, why, sizeof why) == AGGIO_AUTO_WRITE_BEHIND,
        "small reads -> through the cache: %s", why);
  /* ranks without data do not count */
  int64_t nlo[2] = {0, 0}, nhi[2] = {0, 4 << 20};
  struct aggio__call_summary none = reduce_ranges(2, nlo, nhi, 1);
  CHECK(aggio__auto_decide(&none, &in, why, sizeof why) == AGGIO_AUTO_INDEPENDENT,
        "one reader, large -> independent: %s", why);
}

/* Which offered non-blocking operations merge: the longest prefix with
 * pairwise disjoint ranges, sorted by offset, empty ones anywhere. */
static void test_merge_prefix(void) {
#define R(lo, hi) (lo), -(int64_t)(hi)
  int order[8];
  const int64_t apart[] = {R(300, 400), R(0, 100), R(100, 200), R(INT64_MAX, 0)};
  CHECK(aggio__merge_prefix(apart, 4, order) == 4, "disjoint ranges all merge");
  CHECK(order[0] == 1 && order[1] == 2 && order[2] == 0 && order[3] == 3,
        "sorted by offset, empty last: %d %d %d %d", order[0], order[1], order[2], order[3]);
  const int64_t clash[] = {R(0, 100), R(200, 300), R(250, 260), R(400, 500)};
  CHECK(aggio__merge_prefix(clash, 4, order) == 2, "the third overlaps the second: stop");
  CHECK(order[0] == 0 && order[1] == 1, "prefix order %d %d", order[0], order[1]);
  const int64_t same[] = {R(0, 100), R(0, 100)};
  CHECK(aggio__merge_prefix(same, 2, order) == 1, "a rewrite of the same bytes does not merge");
  const int64_t touch[] = {R(100, 200), R(0, 100)};
  CHECK(aggio__merge_prefix(touch, 2, order) == 2 && order[0] == 1,
        "adjacent ranges merge, reordered");
#undef R
}

int main(void) {
  test_merge_prefix();
  test_summary_merge();
  test_cache_geometry();
  test_auto();
  test_aggregators();
  test_emulated();
  test_domains();
  test_rounds();
  test_round_size();
  test_clip_coverage();
  test_rmw();
  return test_summary();
}
