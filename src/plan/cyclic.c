/*
 * cyclic.c - stripe-cyclic file domains and their domain space (cyclic.h).
 *
 * File offset off lies in stripe i = off / unit, of group g = i mod G and
 * row i / G.  Its domain-space offset is
 *     (g * rows + (i / G - row0)) * unit + off mod unit,
 * so that group g owns [g * rows * unit, (g + 1) * rows * unit), in file
 * order.  rows is fixed per call, from the call's range: the domain space
 * of one call is never used by another.
 */
#include "cyclic.h"

#include <string.h>

#define DEFAULT_UNIT (1 << 20) /* as a new subfiled file's stripe, and Lustre's */

void aggio__cyclic_init(struct aggio__cyclic *c, int64_t unit, int groups, int64_t lo,
                        int64_t hi) {
  c->unit = unit > 0 && groups >= 1 ? unit : 0;
  c->groups = groups >= 1 ? groups : 1;
  c->row0 = 0;
  c->rows = 0;
  if (!c->unit)
    return;
  if (hi <= lo)
    hi = lo + 1; /* an empty call still has one row: its domains are empty */
  int64_t row_bytes = c->unit * c->groups;
  c->row0 = lo / row_bytes;
  c->rows = (hi - 1) / row_bytes - c->row0 + 1;
}

int64_t aggio__cyclic_to_domain(const struct aggio__cyclic *c, int64_t off, int *group) {
  if (!c->unit) {
    *group = 0;
    return off;
  }
  int64_t i = off / c->unit;
  int g = (int)(i % c->groups);
  *group = g;
  return ((int64_t)g * c->rows + (i / c->groups - c->row0)) * c->unit + off % c->unit;
}

int64_t aggio__cyclic_to_file(const struct aggio__cyclic *c, int64_t v) {
  if (!c->unit)
    return v;
  int64_t q = v / c->unit;
  int64_t g = q / c->rows, r = q % c->rows;
  return ((r + c->row0) * c->groups + g) * c->unit + v % c->unit;
}

int64_t aggio__cyclic_run(const struct aggio__cyclic *c, int64_t off, int64_t len) {
  if (!c->unit)
    return len;
  int64_t left = c->unit - off % c->unit;
  return left < len ? left : len;
}

/* The first stripe at or after stripe a, and the last at or before stripe
 * b, of group g. */
static int64_t first_of(int64_t a, int64_t g, int64_t n) { return a + ((g - a % n) % n + n) % n; }
static int64_t last_of(int64_t b, int64_t g, int64_t n) { return b - ((b % n - g) % n + n) % n; }

void aggio__cyclic_domains(const struct aggio__cyclic *c, int64_t lo, int64_t hi, int naggr,
                           int64_t *start, int64_t *end) {
  int64_t u = c->unit, n = c->groups;
  for (int g = 0; g < naggr; g++) {
    int64_t empty = (g < n ? g : n) * c->rows * u;
    start[g] = end[g] = empty;
    if (g >= n || hi <= lo)
      continue;
    int64_t i = first_of(lo / u, g, n), j = last_of((hi - 1) / u, g, n);
    if (i > j)
      continue;
    int64_t a = i * u > lo ? i * u : lo;
    int64_t b = (j + 1) * u < hi ? (j + 1) * u : hi;
    int grp;
    start[g] = aggio__cyclic_to_domain(c, a, &grp);
    end[g] = aggio__cyclic_to_domain(c, b - 1, &grp) + 1;
  }
}

int aggio__cyclic_groups(int naggr, int m) {
  if (naggr < 1)
    return 1;
  if (m <= 0)
    return naggr;
  if (naggr >= m) /* every aggregator busy, each on one subfile */
    return naggr / m * m;
  for (int g = naggr; g > 1; g--)
    if (m % g == 0)
      return g;
  return 1;
}

int aggio__cb_domains_known(const char *h) {
  return strcmp(h, "automatic") == 0 || strcmp(h, "auto") == 0 ||
         strcmp(h, "contiguous") == 0 || strcmp(h, "stripe_cyclic") == 0;
}

int64_t aggio__cyclic_unit(const char *h, int atomic, int subfiles, int64_t subfile_stripe,
                           int64_t striping_unit) {
  if (atomic || strcmp(h, "contiguous") == 0)
    return 0;
  if (subfiles > 0 && subfile_stripe > 0)
    return subfile_stripe;
  if (strcmp(h, "stripe_cyclic") != 0)
    return 0;
  return striping_unit > 0 ? striping_unit : DEFAULT_UNIT;
}
