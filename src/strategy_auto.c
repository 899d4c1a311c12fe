/*
 * strategy_auto.c - the default strategy: looks at what all ranks access in
 * this call and picks independent or two-phase I/O.
 *
 * The rule (documented in docs/strategies.md):
 *   romio_cb_write / romio_cb_read = enable  -> two_phase
 *                                  = disable -> independent
 *   automatic:
 *     two_phase if the ranks' accessed ranges interleave (one rank's range
 *       overlaps another's: strided, IOR-hard, HACC SoA), or if the average
 *       request is small (< AGGIO_AUTO_SMALL bytes: many small pieces gain
 *       from being merged into large writes), or romio_no_indep_rw is set;
 *     independent otherwise (each rank owns one large disjoint region: that
 *       is file-per-process I/O into one file, and going through an
 *       aggregator would only add a copy).
 */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

/* Requests smaller than this on average are worth aggregating. */
#define AGGIO_AUTO_SMALL (1 << 20)

static int cmp_lo(const void *a, const void *b) {
  const struct aggio__summary *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* 1 if the [lo, hi) ranges of ranks with data overlap. */
static int interleaved(const struct aggio__summary *all, int n) {
  struct aggio__summary *v = malloc((size_t)n * sizeof *v);
  if (!v)
    return 1; /* cannot tell: aggregate, which is always correct */
  int m = 0, found = 0;
  for (int r = 0; r < n; r++)
    if (all[r].nbytes > 0)
      v[m++] = all[r];
  qsort(v, (size_t)m, sizeof *v, cmp_lo);
  for (int i = 1; i < m && !found; i++)
    found = v[i].lo < v[i - 1].hi;
  free(v);
  return found;
}

static const struct aggio__strategy_ops *choose(aggio_file fh, int is_write,
                                                const struct aggio__summary *all,
                                                char *why, size_t whylen) {
  int cb = (int)(is_write ? fh->hints.cb_write.num : fh->hints.cb_read.num);
  if (cb == AGGIO_ENABLE || fh->hints.no_indep_rw.num) {
    snprintf(why, whylen, "collective buffering forced by hints");
    return &aggio__strategy_two_phase;
  }
  if (cb == AGGIO_DISABLE) {
    snprintf(why, whylen, "collective buffering disabled by hints");
    return &aggio__strategy_independent;
  }
  int64_t bytes = 0, pieces = 0;
  for (int r = 0; r < fh->nprocs; r++) {
    bytes += all[r].nbytes;
    pieces += all[r].npieces;
  }
  int64_t avg = pieces ? bytes / pieces : 0;
  if (interleaved(all, fh->nprocs)) {
    snprintf(why, whylen, "ranks' ranges interleave (avg request %lld bytes)",
             (long long)avg);
    return &aggio__strategy_two_phase;
  }
  if (pieces > 0 && avg < AGGIO_AUTO_SMALL) {
    snprintf(why, whylen, "small requests (avg %lld bytes < %d)", (long long)avg,
             AGGIO_AUTO_SMALL);
    return &aggio__strategy_two_phase;
  }
  snprintf(why, whylen, "disjoint large ranges (avg request %lld bytes)",
           (long long)avg);
  return &aggio__strategy_independent;
}

static int auto_all(aggio_file fh, struct aggio__access *acc, struct aggio__err *e) {
  if (aggio__gather_summary(fh, acc, fh->summary, e) != 0)
    return e->code;
  char why[128];
  const struct aggio__strategy_ops *s = choose(fh, acc->is_write, fh->summary,
                                               why, sizeof why);
  if (fh->stats)
    snprintf(fh->stats->auto_choice, sizeof fh->stats->auto_choice, "%s: %s",
             s->name, why);
  if (s == &aggio__strategy_two_phase)
    return aggio__two_phase_run(fh, acc, fh->summary, e);
  return s->write_all == NULL ? 0 : (acc->is_write ? s->write_all(fh, acc, e)
                                                   : s->read_all(fh, acc, e));
}

const struct aggio__strategy_ops aggio__strategy_auto = {
    .name = "auto",
    .write_all = auto_all,
    .read_all = auto_all,
};
