/*
 * test_dio_choice.c - page cache or direct for mid-sized independent
 * writes (src/plan/dio_choice.h): the fixed rule outside 1-4 MiB, direct
 * tried right after the first cached request, the faster way kept, the
 * slower one tried less often each time it loses (at once the least often
 * when it lost by far), a sharp slow-down of the faster way trying the
 * other at once, and a change of the device's behaviour followed both ways.
 */
#include <stdint.h>

#include "dio_choice.h"
#include "harness.h"

#define MIB (1 << 20)

/* Sends `n` requests of 1 MiB, each taking cache_ms or direct_ms by the way
 * chosen; counts the direct ones. */
static int run(struct aggio__dio_choice *c, int n, double cache_ms, double direct_ms) {
  int direct = 0;
  for (int i = 0; i < n; i++) {
    int probe, way = aggio__dio_pick(c, MIB, &probe);
    double ms = way == AGGIO_WAY_DIRECT ? direct_ms : cache_ms;
    direct += way == AGGIO_WAY_DIRECT;
    aggio__dio_learn(c, way, probe, MIB, (int64_t)(ms * 1e6));
  }
  return direct;
}

static void check_fixed(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  int probe;
  CHECK(aggio__dio_pick(&c, 4 * MIB, &probe) == AGGIO_WAY_DIRECT && !probe,
        "4 MiB and more: direct, not a try");
  CHECK(aggio__dio_pick(&c, MIB - 1, &probe) == AGGIO_WAY_CACHE && !probe,
        "under 1 MiB: the page cache");
  aggio__dio_learn(&c, AGGIO_WAY_DIRECT, 0, 64 * MIB, 1000);
  aggio__dio_learn(&c, AGGIO_WAY_CACHE, 0, 4096, 1000);
  CHECK(c.ns_per_byte[0] == 0 && c.ns_per_byte[1] == 0,
        "requests outside 1-4 MiB teach nothing");
}

static void check_first(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  int probe;
  CHECK(aggio__dio_pick(&c, MIB, &probe) == AGGIO_WAY_CACHE && !probe,
        "nothing measured: the page cache first");
  aggio__dio_learn(&c, AGGIO_WAY_CACHE, 0, MIB, 500000);
  CHECK(aggio__dio_pick(&c, MIB, &probe) == AGGIO_WAY_DIRECT && probe,
        "direct is tried at the second request");
}

/* The page cache fast (0.5 ms) and direct slow (4 ms, lost by far): direct
 * tried at the second request, then only every AGGIO_DIO_PROBE_MOST + 1. */
static void check_cache_wins(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  int direct = run(&c, 1000, 0.5, 4.0);
  int expect = 1 + (1000 - 2) / (AGGIO_DIO_PROBE_MOST + 1);
  CHECK(direct == expect, "cache faster by far: %d of 1000 requests direct, expected %d",
        direct, expect);
  CHECK(c.interval == AGGIO_DIO_PROBE_MOST, "tries at the cap: every %d", c.interval);
}

/* Close (0.5 against 1.5 ms): the tries come after 8, 16, 32, ... requests. */
static void check_close(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  int direct = run(&c, 1000, 0.5, 1.5);
  /* tries at requests 2, 11, 28, 61, 126, 255, then every 257 */
  int expect = 6 + (1000 - 255) / 257;
  CHECK(direct == expect, "cache a little faster: %d of 1000 requests direct, expected %d",
        direct, expect);
}

static void check_direct_wins(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  int direct = run(&c, 1000, 13.0, 5.0);
  CHECK(direct >= 1000 - 1 - 8 - 1000 / AGGIO_DIO_PROBE_MOST,
        "direct faster (the kernel holding the cache's writers): %d of 1000 direct", direct);
}

/* The cache fast, then held (0.5 -> 25 ms): one slow request brings the
 * next try of direct forward though the interval had reached its cap, and
 * within a few requests direct takes over (one slow request alone moves
 * the cache's average only so far).  Then the cache recovers: its next
 * try (at the cap: it had lost by far) sees it and the ways swap back. */
static void check_change(void) {
  struct aggio__dio_choice c = {{0, 0}, 0, 0};
  run(&c, 500, 0.5, 4.0);
  CHECK(c.interval == AGGIO_DIO_PROBE_MOST, "direct tried at the cap (%d)", c.interval);
  int probe, way = aggio__dio_pick(&c, MIB, &probe);
  aggio__dio_learn(&c, way, probe, MIB, 25000000);
  CHECK(c.ns_per_byte[AGGIO_WAY_CACHE] * MIB < 2e6,
        "one slow request: the cache's average stays under direct's (%.2f ms)",
        c.ns_per_byte[AGGIO_WAY_CACHE] * MIB / 1e6);
  CHECK(aggio__dio_pick(&c, MIB, &probe) == AGGIO_WAY_DIRECT && probe,
        "the slow request brings the try of direct forward");
  aggio__dio_learn(&c, AGGIO_WAY_DIRECT, probe, MIB, 4000000);
  int direct = run(&c, 10, 25.0, 4.0);
  CHECK(direct >= 4, "direct takes over within a few slow requests: %d of 10", direct);
  direct = run(&c, 100, 25.0, 4.0);
  CHECK(direct >= 95, "then direct kept: %d of 100", direct);
  direct = run(&c, 300, 0.5, 4.0); /* the cache had lost by far: tried within 257 */
  CHECK(direct <= AGGIO_DIO_PROBE_MOST + 1,
        "the cache recovered: taken back after a try (%d of 300 direct)", direct);
  direct = run(&c, 100, 0.5, 4.0);
  CHECK(direct <= 10, "and kept: %d of 100 direct", direct);
}

int main(void) {
  check_fixed();
  check_first();
  check_cache_wins();
  check_close();
  check_direct_wins();
  check_change();
  return test_summary();
}
