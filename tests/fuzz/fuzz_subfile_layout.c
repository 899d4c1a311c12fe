/*
 * fuzz_subfile_layout.c - libFuzzer target for a subfiled file's layout
 * parser (aggio__subfile_layout_parse, src/plan/subfile_map.c): the layout
 * is a file anyone may edit, and every rank reads it at open.
 *
 * Input: the file's bytes, NUL-terminated as the back end reads them.
 * Checks: the outcome is 0 or -1 with a message exactly when -1; an
 * accepted layout has 1 to 65536 subfiles, a stripe of 1 to 2^40 bytes and
 * names that are plain file names; the layout aggio writes for it parses
 * back to the same map; and its arithmetic on a few offsets is consistent
 * (each piece inside one stripe, the shares of a size add up to it and give
 * it back), without overflow (UBSan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "subfile_map.h"

static void check_arithmetic(const struct aggio__subfile_map *m, uint64_t salt) {
  int64_t size = (int64_t)(salt % ((uint64_t)1 << 40)), total = 0, end = 0;
  for (int k = 0; k < m->count && k < 64; k++) {
    int64_t share = aggio__subfile_share(m, k, size);
    FUZZ_ASSERT(share >= 0 && share <= size);
    total += share;
    int64_t e = aggio__subfile_logical_end(m, k, share);
    end = e > end ? e : end;
  }
  if (m->count <= 64)
    FUZZ_ASSERT(total == size && end == size);
  int k;
  int64_t sub_off, n;
  aggio__subfile_piece(m, size, m->stripe, &k, &sub_off, &n);
  FUZZ_ASSERT(k >= 0 && k < m->count && sub_off >= 0 && n >= 1 && n <= m->stripe);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > (1 << 20))
    return 0;
  char *text = malloc(size + 1), err[256] = "", **names = NULL;
  if (!text)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  struct aggio__subfile_map m = {0, 0};
  int rc = aggio__subfile_layout_parse(text, &m, &names, err, sizeof err);
  FUZZ_ASSERT(rc == 0 || rc == -1);
  FUZZ_ASSERT(fuzz_fits(err, sizeof err));
  FUZZ_ASSERT((rc == 0) == (err[0] == '\0'));
  if (rc == 0) {
    FUZZ_ASSERT(m.count >= 1 && m.count <= AGGIO_SUBFILE_MAX && names);
    FUZZ_ASSERT(m.stripe >= 1 && m.stripe <= AGGIO_SUBFILE_STRIPE_MAX);
    for (int k = 0; k < m.count; k++)
      FUZZ_ASSERT(names[k][0] && !strchr(names[k], '/'));
    char *again = aggio__subfile_layout_text(&m, "f");
    struct aggio__subfile_map back = {0, 0};
    char **names2 = NULL;
    FUZZ_ASSERT(again && aggio__subfile_layout_parse(again, &back, &names2, err, sizeof err) == 0);
    FUZZ_ASSERT(back.stripe == m.stripe && back.count == m.count);
    aggio__subfile_names_free(names2, back.count);
    free(again);
    uint64_t salt = 0;
    memcpy(&salt, data, size < sizeof salt ? size : sizeof salt);
    check_arithmetic(&m, salt);
    aggio__subfile_names_free(names, m.count);
  } else {
    FUZZ_ASSERT(names == NULL);
  }
  free(text);
  return 0;
}
