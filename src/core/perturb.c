/*
 * perturb.c - schedule perturbation for the test suite.
 * AGGIO_TEST_PERTURB=seed:percent:max_us makes percent % of the engine's
 * steps start after a random delay of up to max_us microseconds, drawn
 * differently on each rank and thread (the seed mixed with the rank), so
 * that the random-program tests (tests/gen) meet orders of events that a
 * quiet machine never produces: a rank late into a collective, a progress
 * pass that runs just after another rank left its starting call.  Unset,
 * it costs one test per step.
 * AGGIO_TEST_TIMING=factor scales the timing windows of non-blocking
 * starts (aggio__test_timing).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static unsigned long long seed;
static int percent;
static long max_us;

static void parse(void) {
  const char *v = getenv("AGGIO_TEST_PERTURB");
  if (!v || !*v)
    return;
  if (sscanf(v, "%llu:%d:%ld", &seed, &percent, &max_us) != 3 || percent <= 0 || max_us <= 0)
    percent = 0;
}

/* xorshift64*: a thread's own stream. */
static unsigned long long next(unsigned long long *x) {
  *x ^= *x >> 12;
  *x ^= *x << 25;
  *x ^= *x >> 27;
  return *x * 2685821657736338717ULL;
}

void aggio__perturb(aggio_file fh) {
  static _Thread_local unsigned long long state;
  pthread_once(&once, parse);
  if (percent <= 0)
    return;
  if (state == 0)
    state = (seed + 1) * 0x9e3779b97f4a7c15ULL ^ ((unsigned long long)fh->rank << 32) ^
            (unsigned long long)(uintptr_t)&state;
  unsigned long long r = next(&state);
  if ((int)(r % 100) < percent)
    usleep((useconds_t)((r >> 8) % (unsigned long long)max_us));
}

static pthread_once_t timing_once = PTHREAD_ONCE_INIT;
static double timing = 1.0;

static void parse_timing(void) {
  const char *v = getenv("AGGIO_TEST_TIMING");
  double f;
  if (v && sscanf(v, "%lf", &f) == 1 && f > 0)
    timing = f;
}

double aggio__test_timing(void) {
  pthread_once(&timing_once, parse_timing);
  return timing;
}
