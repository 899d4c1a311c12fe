/*
 * fuzz_hints_env.c - libFuzzer target for the AGGIO_HINTS parser (Cray
 * MPICH_MPIIO_HINTS syntax, aggio__hints_parse_env), with every pair it
 * reports applied to a set of hints as open does; then the same text as
 * MPICH_MPIIO_HINTS (aggio__hints_parse_cray: first matching entry only),
 * which must find the same syntax errors and report no more pairs.
 *
 * Input: the variable's text, then optionally a newline and the path of the
 * file being opened (patterns are matched against it).  A NUL byte ends the
 * text, as it would in the environment.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "hints.h"

struct env_ctx {
  struct aggio__hints hints;
  size_t spec_len;
  int pairs;
};

/* A pair is made of the spec's own characters: a non-empty key without the
 * separators, trimmed, and a value no longer than the spec. */
static void on_pair(void *vctx, const char *key, const char *value) {
  struct env_ctx *c = vctx;
  FUZZ_ASSERT(key && value);
  size_t k = strlen(key), v = strlen(value);
  FUZZ_ASSERT(k > 0 && k + v <= c->spec_len);
  FUZZ_ASSERT(strpbrk(key, ":,=") == NULL);
  FUZZ_ASSERT(!isspace((unsigned char)key[0]) && !isspace((unsigned char)key[k - 1]));
  c->pairs++;
  fuzz_apply(&c->hints, key, value, AGGIO_HS_ENV);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *spec = malloc(size + 1);
  if (!spec)
    return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  char *nl = strchr(spec, '\n');
  const char *path = "/scratch/run/ckpt_0001.h5";
  if (nl) {
    *nl = '\0';
    path = nl + 1;
  }
  static struct env_ctx c; /* large: not on the stack */
  aggio__hints_defaults(&c.hints);
  c.spec_len = strlen(spec);
  c.pairs = 0;
  char err[256];
  int rc = aggio__hints_parse_env(spec, path, on_pair, &c, err, sizeof err);
  FUZZ_ASSERT(rc == 0 || rc == -1);
  FUZZ_ASSERT(fuzz_fits(err, sizeof err));
  FUZZ_ASSERT((rc == 0) == (err[0] == '\0')); /* an error always says why */
  fuzz_check_hints(&c.hints);
  int env_pairs = c.pairs;
  aggio__hints_defaults(&c.hints);
  c.pairs = 0;
  char cray_err[256];
  int cray_rc = aggio__hints_parse_cray(spec, path, on_pair, &c, cray_err, sizeof cray_err);
  FUZZ_ASSERT(cray_rc == rc && strcmp(cray_err, err) == 0); /* one syntax */
  FUZZ_ASSERT(c.pairs <= env_pairs);
  fuzz_check_hints(&c.hints);
  free(spec);
  return 0;
}
