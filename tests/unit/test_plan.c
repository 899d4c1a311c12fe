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

static void test_auto(void) {
  char why[192];
  /* IOR-hard: 47008-byte records, ranks interleaved */
  struct aggio__summary hard[4];
  for (int r = 0; r < 4; r++)
    hard[r] = (struct aggio__summary){r * 47008, r * 47008 + 100 * 4 * 47008, 100 * 47008, 100, 0};
  CHECK(aggio__auto_decide(hard, 4, 2, 0, 0, -1, why, sizeof why) == 1, "small interleaved -> two_phase: %s", why);
  CHECK(strstr(why, "small requests") != NULL, "reason: %s", why);
  /* HACC SoA: 9 large pieces per rank, interleaved ranges */
  struct aggio__summary soa[4];
  for (int r = 0; r < 4; r++)
    soa[r] = (struct aggio__summary){r * (16 << 20), 9 * 4 * (16 << 20), 9 * (16 << 20), 9, 0};
  CHECK(aggio__auto_decide(soa, 4, 2, 0, 0, -1, why, sizeof why) == 0, "large on local disk -> independent: %s", why);
  CHECK(aggio__auto_decide(soa, 4, 2, 0, 1, -1, why, sizeof why) == 1, "large interleaved striped -> two_phase: %s", why);
  /* one block per rank, disjoint: independent even when striped */
  struct aggio__summary seg[4];
  for (int r = 0; r < 4; r++)
    seg[r] = (struct aggio__summary){(int64_t)r << 26, ((int64_t)r + 1) << 26, 1 << 26, 1, 0};
  CHECK(aggio__auto_decide(seg, 4, 2, 0, 1, -1, why, sizeof why) == 0, "disjoint blocks -> independent: %s", why);
  /* hints force either way */
  CHECK(aggio__auto_decide(seg, 4, 1, 0, 0, -1, why, sizeof why) == 1, "romio_cb_write=enable");
  CHECK(aggio__auto_decide(hard, 4, 0, 0, 0, -1, why, sizeof why) == 0, "romio_cb_write=disable");
  CHECK(aggio__auto_decide(seg, 4, 2, 1, 0, -1, why, sizeof why) == 1, "romio_no_indep_rw forces two_phase");
  /* hysteresis: 1.5 MiB requests stay with two_phase once chosen, and
   * 0.75 MiB requests stay independent once chosen */
  struct aggio__summary mid[2] = {{0, 3 << 19, 3 << 19, 1, 0}, {3 << 19, 3 << 20, 3 << 19, 1, 0}};
  CHECK(aggio__auto_decide(mid, 2, 2, 0, 0, -1, why, sizeof why) == 0, "1.5 MiB fresh -> independent");
  CHECK(aggio__auto_decide(mid, 2, 2, 0, 0, 1, why, sizeof why) == 1, "1.5 MiB after two_phase stays");
  struct aggio__summary low[2] = {{0, 3 << 18, 3 << 18, 1, 0}, {3 << 18, 3 << 19, 3 << 18, 1, 0}};
  CHECK(aggio__auto_decide(low, 2, 2, 0, 0, -1, why, sizeof why) == 1, "0.75 MiB fresh -> two_phase");
  CHECK(aggio__auto_decide(low, 2, 2, 0, 0, 0, why, sizeof why) == 0, "0.75 MiB after independent stays");
  CHECK(aggio__auto_decide(hard, 4, 2, 0, 0, 0, why, sizeof why) == 1, "tiny requests leave independent");
  /* ranks without data do not count */
  struct aggio__summary none[2] = {{0, 0, 0, 0, 0}, {0, 1 << 22, 1 << 22, 1, 0}};
  CHECK(aggio__auto_decide(none, 2, 2, 0, 1, -1, why, sizeof why) == 0, "one writer, large -> independent");
}

int main(void) {
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
