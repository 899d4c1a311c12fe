/*
 * fuzz_hint_value.c - libFuzzer target for hint values: what MPI_Info
 * values (and the two text formats, after splitting) go through,
 * aggio__hint_parse_value for each kind and aggio__hints_set for each hint.
 *
 * Input: byte 0 picks the kind and the size of the canonical-text buffer,
 * byte 1 the hint; the rest is the value (a NUL byte ends it, as in an
 * MPI_Info value).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "hints.h"

/* Parses value as kind into a canonical-text buffer of canon_len bytes
 * (heap-allocated to that size, so that an overrun is caught), and checks
 * the outcome: in range, and the canonical text parses back to itself. */
static void check_value(enum aggio__hint_kind kind, const char *value, size_t canon_len) {
  char *canon = malloc(canon_len);
  char err[200] = "";
  int64_t num = -7;
  if (!canon)
    return;
  int rc = aggio__hint_parse_value(kind, value, &num, canon, canon_len, err, sizeof err);
  FUZZ_ASSERT(rc == 0 || rc == -1);
  FUZZ_ASSERT(fuzz_fits(err, sizeof err));
  if (rc == -1) {
    FUZZ_ASSERT(err[0] != '\0');
  } else {
    FUZZ_ASSERT(fuzz_fits(canon, canon_len) && fuzz_num_ok(kind, num));
    int64_t again = -7;
    char back[AGGIO_HINT_STRLEN];
    FUZZ_ASSERT(aggio__hint_parse_value(kind, canon, &again, back, sizeof back, NULL, 0) == 0);
    FUZZ_ASSERT(again == num && strcmp(back, canon) == 0);
  }
  free(canon);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  static const enum aggio__hint_kind kinds[] = {AGGIO_HK_TRISTATE, AGGIO_HK_BOOL,
                                                AGGIO_HK_INT,      AGGIO_HK_SIZE,
                                                AGGIO_HK_STRING,   AGGIO_HK_STRATEGY};
  enum aggio__hint_kind kind = kinds[data[0] % 6];
  size_t canon_len = (data[0] & 0x80) ? 1 + (data[0] >> 3) % 16 : AGGIO_HINT_STRLEN;
  const struct aggio__hint_desc *d = &aggio__hint_table[data[1] % aggio__hint_count];
  char *value = malloc(size - 1);
  if (!value)
    return 0;
  memcpy(value, data + 2, size - 2);
  value[size - 2] = '\0';
  check_value(kind, value, canon_len);
  static struct aggio__hints h;
  aggio__hints_defaults(&h);
  fuzz_apply(&h, d->key, value, AGGIO_HS_INFO);
  fuzz_check_hints(&h);
  free(value);
  return 0;
}
