/*
 * fuzz_check.h - what the fuzz targets share: an assertion that stops the
 * run (libFuzzer then saves the input that broke it), and the checks that
 * every hint in a struct aggio__hints is well formed, whatever the input.
 */
#ifndef AGGIO_FUZZ_CHECK_H
#define AGGIO_FUZZ_CHECK_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hints.h"

#define FUZZ_ASSERT(cond)                                                          \
  do {                                                                             \
    if (!(cond)) {                                                                 \
      fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      abort();                                                                     \
    }                                                                              \
  } while (0)

/* 1 when s holds a NUL within n bytes (a C string that fits). */
static inline int fuzz_fits(const char *s, size_t n) { return memchr(s, '\0', n) != NULL; }

/* The range a parsed value of each kind must be in. */
static inline int fuzz_num_ok(enum aggio__hint_kind kind, int64_t num) {
  switch (kind) {
  case AGGIO_HK_TRISTATE: return num >= 0 && num <= 2;
  case AGGIO_HK_BOOL: return num == 0 || num == 1;
  case AGGIO_HK_STRATEGY: return num >= AGGIO_STRAT_AUTO && num <= AGGIO_STRAT_NODE_LOCAL;
  case AGGIO_HK_INT: return num >= 0 && num <= INT_MAX;
  case AGGIO_HK_SIZE: return num >= 0;
  case AGGIO_HK_STRING: return num == 0;
  }
  return 0;
}

/* Every hint: its texts are C strings of the right size, its number in
 * range, and its canonical text parses back to the same number and text. */
static inline void fuzz_check_hints(struct aggio__hints *h) {
  FUZZ_ASSERT(fuzz_fits(h->warnings, sizeof h->warnings));
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    struct aggio__hint_value *v = aggio__hint_slot(h, d);
    FUZZ_ASSERT(fuzz_fits(v->str, sizeof v->str) && fuzz_fits(v->ignored, sizeof v->ignored));
    FUZZ_ASSERT(fuzz_num_ok(d->kind, v->num));
    FUZZ_ASSERT(v->set >= AGGIO_HS_DEFAULT && v->set <= AGGIO_HS_ENV);
    int64_t again = -1;
    char canon[AGGIO_HINT_STRLEN];
    FUZZ_ASSERT(aggio__hint_parse_value(d->kind, v->str, &again, canon, sizeof canon, NULL,
                                        0) == 0);
    FUZZ_ASSERT(again == v->num && strcmp(canon, v->str) == 0);
  }
  FUZZ_ASSERT(h->cb_buffer_size.num >= 4096);
  FUZZ_ASSERT(h->cb_config_list.str[0] != '\0');
}

/* Applies one pair as aggio__hints_set would from any source, and checks
 * its outcome: applied, not a hint, or refused with a reason and the
 * previous value kept. */
static inline void fuzz_apply(struct aggio__hints *h, const char *key, const char *value,
                              enum aggio__hint_source source) {
  char warn[512] = "";
  const struct aggio__hint_desc *d = aggio__hint_find(key);
  struct aggio__hint_value before;
  if (d)
    before = *aggio__hint_slot(h, d);
  int rc = aggio__hints_set(h, key, value, source, warn, sizeof warn);
  FUZZ_ASSERT(rc == -1 || rc == 0 || rc == 1);
  FUZZ_ASSERT((rc == 1) == (d == NULL));
  if (rc == -1) {
    FUZZ_ASSERT(warn[0] != '\0' && fuzz_fits(warn, sizeof warn));
    FUZZ_ASSERT(memcmp(&before, aggio__hint_slot(h, d), sizeof before) == 0);
  }
}

#endif
