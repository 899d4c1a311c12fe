/*
 * verify.c - the data aggio-bench writes, derived from (file offset, seed)
 * so that any byte of any file can be checked without keeping the expected
 * file: the 8-byte word at offset 8k is splitmix64(k ^ mix(seed)), stored
 * little-endian whatever the machine; unaligned starts and ends take the
 * bytes they need from their word.
 */
#include <string.h>

#include "bench.h"

static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t bench_file_seed(uint64_t seed, int fpp, int file_rank) {
  return fpp ? mix64(seed ^ (0xf11e0000ull + (uint64_t)file_rank)) : seed;
}

static void word_bytes(uint64_t w, unsigned char b[8]) {
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(w >> (8 * i));
}

void bench_fill(unsigned char *buf, int64_t off, int64_t len, uint64_t seed) {
  uint64_t key = mix64(seed);
  unsigned char b[8];
  while (len > 0 && (off & 7)) { /* unaligned head */
    word_bytes(mix64((uint64_t)(off >> 3) ^ key), b);
    int64_t i = off & 7, n = 8 - i < len ? 8 - i : len;
    memcpy(buf, b + i, (size_t)n);
    buf += n;
    off += n;
    len -= n;
  }
  for (; len >= 8; buf += 8, off += 8, len -= 8) {
    word_bytes(mix64((uint64_t)(off >> 3) ^ key), b);
    memcpy(buf, b, 8);
  }
  if (len > 0) { /* tail */
    word_bytes(mix64((uint64_t)(off >> 3) ^ key), b);
    memcpy(buf, b, (size_t)len);
  }
}

int64_t bench_check(const unsigned char *buf, int64_t off, int64_t len,
                    uint64_t seed, int64_t *first_bad) {
  enum { CHUNK = 64 * 1024 };
  unsigned char want[CHUNK];
  int64_t bad = 0;
  while (len > 0) {
    int64_t n = len < CHUNK ? len : CHUNK;
    bench_fill(want, off, n, seed);
    if (memcmp(want, buf, (size_t)n)) {
      for (int64_t i = 0; i < n; i++)
        if (want[i] != buf[i]) {
          if (!bad) *first_bad = off + i;
          bad++;
        }
    }
    buf += n;
    off += n;
    len -= n;
  }
  return bad;
}
