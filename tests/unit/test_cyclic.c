/*
 * test_cyclic.c - stripe-cyclic file domains (src/plan/cyclic.h) against a
 * byte-by-byte reference: for every call range, every byte of [lo, hi) lies
 * in the domain of the group that owns its stripe, the map to the domain
 * space and back is the identity, a group's bytes keep their file order,
 * domains do not overlap, and the group count never gives a subfile two
 * writers.
 */
#include <stdint.h>
#include <stdlib.h>

#include "cyclic.h"
#include "harness.h"

static void check_range(int64_t unit, int groups, int naggr, int64_t lo, int64_t hi) {
  struct aggio__cyclic c;
  aggio__cyclic_init(&c, unit, groups, lo, hi);
  int64_t start[16], end[16], bad = 0, seen = 0;
  aggio__cyclic_domains(&c, lo, hi, naggr, start, end);
  int64_t *last = calloc((size_t)naggr, sizeof *last);
  for (int g = 0; g < naggr; g++)
    last[g] = -1;
  for (int64_t b = lo; b < hi; b++) {
    int g;
    int64_t v = aggio__cyclic_to_domain(&c, b, &g);
    bad += g != (int)((b / unit) % groups);          /* the stripe's owner */
    bad += aggio__cyclic_to_file(&c, v) != b;        /* the inverse */
    bad += v < start[g] || v >= end[g];              /* in its domain */
    bad += v <= last[g];                             /* file order kept */
    bad += v % unit != b % unit;                     /* alignment kept */
    bad += aggio__cyclic_run(&c, b, hi - b) != (unit - b % unit < hi - b ? unit - b % unit
                                                                          : hi - b);
    last[g] = v;
  }
  for (int g = 0; g < naggr; g++) {
    seen += end[g] - start[g];
    bad += end[g] < start[g] || (g > 0 && start[g] < end[g - 1]);
  }
  bad += seen != (hi > lo ? hi - lo : 0); /* domains hold the range, no more */
  CHECK(bad == 0, "unit %lld G %d A %d [%lld, %lld): %lld wrong", (long long)unit, groups, naggr,
        (long long)lo, (long long)hi, (long long)bad);
  free(last);
}

static void check_identity(void) {
  struct aggio__cyclic c;
  aggio__cyclic_init(&c, 0, 4, 100, 1000);
  int g;
  CHECK(aggio__cyclic_to_domain(&c, 123, &g) == 123 && g == 0 &&
            aggio__cyclic_to_file(&c, 456) == 456 && aggio__cyclic_run(&c, 7, 99) == 99,
        "unit 0 is the identity");
}

/* With G from aggio__cyclic_groups, stripe i's writer is i mod G and its
 * subfile i mod M.  Fewer aggregators than subfiles: no subfile has two
 * writers.  As many or more: every aggregator writes one subfile, and at
 * most M - 1 aggregators stay idle. */
static void check_groups(int naggr, int m) {
  int G = aggio__cyclic_groups(naggr, m);
  int owner[64], wrote[64];
  int bad = G < 1 || G > naggr || (naggr >= m && G <= naggr - m);
  for (int k = 0; k < 64; k++)
    owner[k] = wrote[k] = -1;
  for (int i = 0; i < 4 * 64 && !bad; i++) {
    int k = i % m, g = i % G;
    if (naggr < m && owner[k] >= 0 && owner[k] != g)
      bad = 1; /* a subfile with two writers */
    if (naggr >= m && wrote[g] >= 0 && wrote[g] != k)
      bad = 1; /* an aggregator in two subfiles */
    owner[k] = g;
    wrote[g] = k;
  }
  CHECK(!bad, "aggregators %d subfiles %d: G %d", naggr, m, G);
}

int main(void) {
  const int64_t units[] = {1, 3, 8, 4096};
  const int groups[] = {1, 2, 3, 5};
  for (size_t u = 0; u < 4; u++)
    for (size_t g = 0; g < 4; g++) {
      int64_t row = units[u] * groups[g];
      const int64_t los[] = {0, 1, units[u] - 1, units[u], row, 7 * row + 2};
      const int64_t lens[] = {0, 1, units[u], row - 1, row + 1, 3 * row + 5};
      for (size_t a = 0; a < 6; a++)
        for (size_t b = 0; b < 6; b++)
          if (lens[b] <= 70000) {
            check_range(units[u], groups[g], groups[g], los[a], los[a] + lens[b]);
            check_range(units[u], groups[g], groups[g] + 2, los[a], los[a] + lens[b]);
          }
    }
  check_identity();
  for (int a = 1; a <= 12; a++)
    for (int m = 1; m <= 12; m++)
      check_groups(a, m);
  CHECK(aggio__cyclic_groups(4, 4) == 4 && aggio__cyclic_groups(8, 4) == 8 &&
            aggio__cyclic_groups(16, 4) == 16 && aggio__cyclic_groups(7, 3) == 6 &&
            aggio__cyclic_groups(2, 4) == 2 && aggio__cyclic_groups(6, 9) == 3 &&
            aggio__cyclic_groups(3, 4) == 2 && aggio__cyclic_groups(5, 0) == 5 &&
            aggio__cyclic_groups(4, 7) == 1,
        "group counts");
  CHECK(aggio__cyclic_unit("automatic", 0, 0, 0, 65536) == 0 &&
            aggio__cyclic_unit("automatic", 0, 3, 4096, 65536) == 4096 &&
            aggio__cyclic_unit("bogus", 0, 3, 4096, 0) == 4096 &&
            aggio__cyclic_unit("automatic", 1, 3, 4096, 0) == 0 &&
            aggio__cyclic_unit("contiguous", 0, 3, 4096, 0) == 0 &&
            aggio__cyclic_unit("stripe_cyclic", 0, 0, 0, 65536) == 65536 &&
            aggio__cyclic_unit("stripe_cyclic", 0, 0, 0, 0) == (1 << 20) &&
            aggio__cb_domains_known("stripe_cyclic") && !aggio__cb_domains_known("cyclic"),
        "aggio_cb_domains");
  return test_summary();
}
