/*
 * stage_merge.c - the next run a node's movers take (stage_merge.h).
 */
#include <stddef.h>

#include "stage_merge.h"

static int overlaps(const struct aggio__merge_range *busy, int nbusy,
                    const struct aggio__merge_rec *r) {
  for (int i = 0; i < nbusy; i++)
    if (r->offset < busy[i].hi && busy[i].lo < r->offset + r->length)
      return 1;
  return 0;
}

/* Writer w's next record not in the run yet, or NULL. */
static const struct aggio__merge_rec *head(const struct aggio__merge_queue *q, int w,
                                           const int64_t *taken) {
  return taken[w] < q[w].n ? &q[w].rec[taken[w]] : NULL;
}

/* The writer whose head starts the run: the lowest offset free of busy
 * ranges, or -1. */
static int first_writer(const struct aggio__merge_queue *q, int nwriters,
                        const struct aggio__merge_range *busy, int nbusy,
                        const int64_t *taken) {
  int best = -1;
  for (int w = 0; w < nwriters; w++) {
    const struct aggio__merge_rec *r = head(q, w, taken);
    if (r && !overlaps(busy, nbusy, r) &&
        (best < 0 || r->offset < head(q, best, taken)->offset))
      best = w;
  }
  return best;
}

/* The writer whose head starts at `end` and fits in `room` bytes, or -1.
 * Of several (two writers' records over the same bytes), the lowest: the
 * other waits for a later run, and the sync's ordering step settles
 * which write the file keeps. */
static int next_writer(const struct aggio__merge_queue *q, int nwriters,
                       const struct aggio__merge_range *busy, int nbusy,
                       const int64_t *taken, int64_t end, int64_t room) {
  for (int w = 0; w < nwriters; w++) {
    const struct aggio__merge_rec *r = head(q, w, taken);
    if (r && r->offset == end && r->length <= room && !overlaps(busy, nbusy, r))
      return w;
  }
  return -1;
}

int64_t aggio__stage_merge_run(const struct aggio__merge_queue *q, int nwriters,
                               const struct aggio__merge_range *busy, int nbusy,
                               int64_t max, int *order, int64_t cap, int64_t *taken) {
  for (int w = 0; w < nwriters; w++)
    taken[w] = 0;
  int w = cap > 0 ? first_writer(q, nwriters, busy, nbusy, taken) : -1;
  if (w < 0)
    return 0;
  const struct aggio__merge_rec *r = head(q, w, taken);
  int64_t n = 0, end = r->offset + r->length, bytes = r->length;
  order[n++] = w;
  taken[w]++;
  while (n < cap && bytes < max &&
         (w = next_writer(q, nwriters, busy, nbusy, taken, end, max - bytes)) >= 0) {
    r = head(q, w, taken);
    order[n++] = w;
    taken[w]++;
    end += r->length;
    bytes += r->length;
  }
  return n;
}
