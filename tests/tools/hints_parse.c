/*
 * hints_parse.c - a command-line front end to aggio's own hint parsers
 * (src/plan/hints.c), so that other tools' tests can check that a hint string
 * they emit is read by aggio as intended: the Python report tool parses
 * every AGGIO_HINTS / MPICH_MPIIO_HINTS line and hints file it prints
 * through this program.  Not installed.
 *
 *   aggio_hints_parse env SPEC PATH   AGGIO_HINTS syntax, for file PATH
 *   aggio_hints_parse cray SPEC PATH  MPICH_MPIIO_HINTS: the same syntax, the
 *                                     first matching entry only (Cray's rule)
 *   aggio_hints_parse file FILE       hints file (ROMIO_HINTS syntax)
 *
 * Prints one line per key/value pair the parser reports:
 *   KEY <tab> VALUE <tab> ok CANONICAL | unknown | bad REASON
 * (each value checked by aggio__hints_set, as the library does at open).
 * Exit status: 0 parsed, 1 syntax error (message on stderr), 2 usage.
 */
#include "hints.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct check {
  struct aggio__hints hints;
};

static void print_pair(void *ctx, const char *key, const char *value) {
  struct check *c = ctx;
  char warn[300] = "";
  int rc = aggio__hints_set(&c->hints, key, value, AGGIO_HS_ENV, warn, sizeof warn);
  printf("%s\t%s\t", key, value);
  if (rc == 0) {
    const struct aggio__hint_desc *d = aggio__hint_find(key);
    printf("ok %s\n", aggio__hint_slot(&c->hints, d)->str);
  } else if (rc == 1) {
    printf("unknown\n");
  } else {
    printf("bad %s\n", warn);
  }
}

static char *read_all(const char *path, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 4096, len = 0;
  char *text = malloc(cap);
  size_t n;
  while (text && (n = fread(text + len, 1, cap - len - 1, f)) > 0) {
    len += n;
    if (len + 1 == cap) {
      char *bigger = realloc(text, cap *= 2);
      if (!bigger)
        free(text);
      text = bigger;
    }
  }
  fclose(f);
  if (text)
    text[len] = '\0';
  *out_len = len;
  return text;
}

int main(int argc, char **argv) {
  struct check c;
  char err[300];
  int rc;
  aggio__hints_defaults(&c.hints);
  if (argc == 4 && strcmp(argv[1], "env") == 0) {
    rc = aggio__hints_parse_env(argv[2], argv[3], print_pair, &c, err, sizeof err);
  } else if (argc == 4 && strcmp(argv[1], "cray") == 0) {
    rc = aggio__hints_parse_cray(argv[2], argv[3], print_pair, &c, err, sizeof err);
  } else if (argc == 3 && strcmp(argv[1], "file") == 0) {
    size_t len = 0;
    char *text = read_all(argv[2], &len);
    if (!text) {
      fprintf(stderr, "aggio_hints_parse: cannot read %s\n", argv[2]);
      return 1;
    }
    rc = aggio__hints_parse_file(text, len, print_pair, &c, err, sizeof err);
    free(text);
  } else {
    fprintf(stderr, "usage: %s env SPEC PATH | cray SPEC PATH | file FILE\n", argv[0]);
    return 2;
  }
  if (rc) {
    fprintf(stderr, "aggio_hints_parse: %s\n", err);
    return 1;
  }
  return 0;
}
