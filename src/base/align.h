/*
 * align.h - alignment arithmetic and aligned buffers, for every layer.
 */
#ifndef AGGIO_ALIGN_H
#define AGGIO_ALIGN_H

#include <stdint.h>

/* Portable ceil/floor for alignment (x and a non-negative; callers keep x
 * well below INT64_MAX - a). */
static inline int64_t aggio__round_down(int64_t x, int64_t a) {
  return a > 0 ? x - (((x % a) + a) % a) : x;
}
static inline int64_t aggio__round_up(int64_t x, int64_t a) {
  if (a <= 0 || x > INT64_MAX - a)
    return x;
  return aggio__round_down(x + a - 1, a);
}

/* Aligned allocation for aggregator and direct-I/O buffers (free with
 * free()); NULL on failure. */
void *aggio__alloc_aligned(int64_t len, int64_t align);

#endif
