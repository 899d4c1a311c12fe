/*
 * stats.c - statistics counters, phase timers and aggregator placement
 * display.  (Placeholder until the observability work lands.)
 */
#include <stdlib.h>

#include "internal.h"

struct aggio__stats *aggio__stats_new(int timers) {
  struct aggio__stats *s = calloc(1, sizeof *s);
  if (s)
    s->timers = timers;
  return s;
}

void aggio__placement_display(struct aggio_file_s *fh) { (void)fh; }

void aggio__stats_close(struct aggio_file_s *fh) {
  free(fh->stats);
  fh->stats = NULL;
}
