/*
 * rng.h - the tests' deterministic random numbers (splitmix64): the same
 * sequence on every rank and every machine for a given seed.
 */
#ifndef AGGIO_TEST_RNG_H
#define AGGIO_TEST_RNG_H

#include <stdint.h>

typedef struct {
  uint64_t s;
} rng_t;

static inline uint64_t rng_next(rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Uniform in [lo, hi]. */
static inline int64_t rng_range(rng_t *r, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

#endif
