/*
 * fuzz_hints_file.c - libFuzzer target for the hints-file parser
 * (AGGIO_HINTS_FILE, ROMIO_HINTS syntax, aggio__hints_parse_file), with
 * every pair applied to a set of hints as open does.
 *
 * Input: the file's bytes, NUL bytes included.  They are copied into a
 * buffer of exactly that size, so that AddressSanitizer catches a read past
 * the length the parser is given.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "hints.h"

struct file_ctx {
  struct aggio__hints hints;
  size_t len;
};

/* Keys are one word; values are trimmed and not empty. */
static void on_pair(void *vctx, const char *key, const char *value) {
  struct file_ctx *c = vctx;
  FUZZ_ASSERT(key && value);
  size_t k = strlen(key), v = strlen(value);
  FUZZ_ASSERT(k > 0 && v > 0 && k + v < c->len);
  for (size_t i = 0; i < k; i++)
    FUZZ_ASSERT(!isspace((unsigned char)key[i]) && key[i] != '\n');
  FUZZ_ASSERT(key[0] != '#');
  FUZZ_ASSERT(!isspace((unsigned char)value[0]) && !isspace((unsigned char)value[v - 1]));
  FUZZ_ASSERT(strchr(value, '\n') == NULL);
  fuzz_apply(&c->hints, key, value, AGGIO_HS_FILE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size ? size : 1);
  if (!text)
    return 0;
  memcpy(text, data, size);
  static struct file_ctx c;
  aggio__hints_defaults(&c.hints);
  c.len = size;
  char err[256];
  int rc = aggio__hints_parse_file(text, size, on_pair, &c, err, sizeof err);
  FUZZ_ASSERT(rc == 0 || rc == -1);
  FUZZ_ASSERT(fuzz_fits(err, sizeof err));
  FUZZ_ASSERT((rc == 0) == (err[0] == '\0'));
  FUZZ_ASSERT(rc == -1 || memchr(text, '\0', size) == NULL); /* a NUL is an error */
  fuzz_check_hints(&c.hints);
  free(text);
  return 0;
}
