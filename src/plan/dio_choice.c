/*
 * dio_choice.c - page cache or direct I/O for one file's mid-sized
 * independent writes, by measurement (dio_choice.h says why).
 */
#include "dio_choice.h"

/* Weight of a new sample in a way's running time per byte: a few requests
 * move it, one slow request does not. */
#define NEW_WEIGHT 0.25
/* A request this many times slower than its way's running time is a
 * change, not noise (buffered 1 MiB requests: 0.5 ms, then 13 ms). */
#define SLOWED 10.0
/* A try that took this many times the faster way's time lost by far. */
#define FAR 4.0

int aggio__dio_measured(int64_t len) {
  return len >= AGGIO_DIO_CHOICE_MIN && len < AGGIO_DIO_CHOICE_MAX;
}

/* The way that has been faster; the page cache until direct was measured. */
static int faster(const struct aggio__dio_choice *c) {
  double cache = c->ns_per_byte[AGGIO_WAY_CACHE], direct = c->ns_per_byte[AGGIO_WAY_DIRECT];
  if (cache == 0 || direct == 0)
    return AGGIO_WAY_CACHE;
  return direct < cache ? AGGIO_WAY_DIRECT : AGGIO_WAY_CACHE;
}

static int interval(const struct aggio__dio_choice *c) {
  return c->interval > 0 ? c->interval : AGGIO_DIO_PROBE_FIRST;
}

int aggio__dio_pick(struct aggio__dio_choice *c, int64_t len, int *probe) {
  *probe = 0;
  if (!aggio__dio_measured(len))
    return len >= AGGIO_DIO_CHOICE_MAX ? AGGIO_WAY_DIRECT : AGGIO_WAY_CACHE;
  int way = faster(c);
  /* direct is tried right after the first cached request: the first
   * requests of a large write are where waiting for the interval costs */
  int first = c->ns_per_byte[AGGIO_WAY_DIRECT] == 0;
  if (c->ns_per_byte[AGGIO_WAY_CACHE] > 0 && (first || ++c->since_probe > interval(c))) {
    c->since_probe = 0;
    *probe = 1;
    way = !way;
  }
  return way;
}

void aggio__dio_learn(struct aggio__dio_choice *c, int way, int probe, int64_t len,
                      int64_t ns) {
  if (!aggio__dio_measured(len) || ns < 0 || (way != AGGIO_WAY_CACHE && way != AGGIO_WAY_DIRECT))
    return;
  int before = faster(c);
  double sample = (double)ns / (double)len, *avg = &c->ns_per_byte[way];
  /* the faster way slowed down sharply: try the other at the next request
   * rather than after the interval (the page cache's writers are held
   * all at once when the kernel starts to hold them) */
  if (!probe && way == before && *avg > 0 && sample > SLOWED * *avg)
    c->since_probe = interval(c);
  /* a try of the slower way replaces its old value: that one may be long
   * out of date.  Otherwise a sample counts at most SLOWED / 2 times the
   * average: a writer descheduled in the middle of one request (more ranks
   * than cores) must not turn the choice, a lasting slow-down still does
   * within a few requests (0.5 ms to 5 ms in four) */
  double cap = SLOWED / 2 * *avg;
  if (*avg == 0 || probe)
    *avg = sample;
  else
    *avg = (1 - NEW_WEIGHT) * *avg + NEW_WEIGHT * (sample < cap ? sample : cap);
  if (probe) { /* lost (again): try less often; won: the ways swap */
    int lost = faster(c) == before;
    int next = !lost || c->interval == 0 ? AGGIO_DIO_PROBE_FIRST : 2 * c->interval;
    /* lost by far: no use trying soon (a try of direct among cached
     * requests holds up a collective call of every rank: HDF5's 1 MiB
     * requests at 8 ranks lost 15 % to tries every 8 to 64 requests); a
     * sharp change brings the next try forward anyway, and a slowing
     * faster way is compared with the loser's last time without a try */
    if (lost && *avg > FAR * c->ns_per_byte[before])
      next = AGGIO_DIO_PROBE_MOST;
    c->interval = next > AGGIO_DIO_PROBE_MOST ? AGGIO_DIO_PROBE_MOST : next;
  }
}
