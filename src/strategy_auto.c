/*
 * strategy_auto.c - the default strategy: looks at what all ranks access in
 * this call and picks independent or two-phase I/O.
 *
 * The rule (documented in docs/strategies.md):
 *   romio_cb_write / romio_cb_read = enable  -> two_phase
 *                                  = disable -> independent
 *   automatic (aggio__auto_decide in plan.c, pure and unit-tested):
 *     two_phase if the average request is small (< AGGIO_AUTO_SMALL: many
 *       small pieces gain from being merged into large aligned writes; with
 *       hysteresis: 2x the threshold to leave two_phase, 1/2 to enter it), or
 *       the ranks' ranges interleave on a striped file system (stripe lock
 *       contention), or romio_no_indep_rw is set;
 *     independent otherwise (large requests: that is file-per-process I/O
 *       into one file, and an aggregator would only add a copy).
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int striped(aggio_file fh) {
  return fh->hints.striping_unit.num > 0 || strcmp(fh->fstype, "lustre") == 0 ||
         strcmp(fh->fstype, "gpfs") == 0 || strcmp(fh->fstype, "beegfs") == 0;
}

static const struct aggio__strategy_ops *choose(aggio_file fh, int is_write,
                                                const struct aggio__summary *all,
                                                char *why, size_t whylen) {
  int cb = (int)(is_write ? fh->hints.cb_write.num : fh->hints.cb_read.num);
  /* Every rank holds the same previous choice: it came from the same
   * gathered summaries. */
  fh->auto_previous = aggio__auto_decide(all, fh->nprocs, cb,
                                         (int)fh->hints.no_indep_rw.num,
                                         striped(fh), fh->auto_previous, why, whylen);
  return fh->auto_previous ? &aggio__strategy_two_phase : &aggio__strategy_independent;
}

static int auto_all(aggio_file fh, struct aggio__access *acc, struct aggio__err *e) {
  if (aggio__gather_summary(fh, acc, fh->summary, e) != 0)
    return e->code;
  for (int r = 0; r < fh->nprocs; r++)
    if (fh->summary[r].error)
      return e->code; /* a rank's arguments were bad: nobody moves data */
  char why[128];
  const struct aggio__strategy_ops *s = choose(fh, acc->is_write, fh->summary,
                                               why, sizeof why);
  fh->strategy_used = s->name;
  if (fh->stats)
    snprintf(fh->stats->auto_choice, sizeof fh->stats->auto_choice, "%s: %s",
             s->name, why);
  if (s == &aggio__strategy_two_phase)
    return aggio__two_phase_run(fh, acc, fh->summary, e);
  return aggio__independent_agreed(fh, acc, e);
}

const struct aggio__strategy_ops aggio__strategy_auto = {
    .name = "auto",
    .write_all = auto_all,
    .read_all = auto_all,
};
