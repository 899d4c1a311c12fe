/*
 * subfile_map.c - the arithmetic and the text of a subfiled file's layout
 * (subfile_map.h, docs/subfiling.md).
 *
 * Logical stripe i = off / S lies in subfile i mod M, as its stripe i / M:
 * RAID-0 over files.  With S the size of each rank's block and M the rank
 * count, a segmented writer's blocks all fall into its own subfile.
 */
#include "subfile_map.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void aggio__subfile_piece(const struct aggio__subfile_map *m, int64_t off, int64_t len, int *k,
                          int64_t *sub_off, int64_t *n) {
  int64_t stripe = off / m->stripe, within = off % m->stripe;
  *k = (int)(stripe % m->count);
  *sub_off = (stripe / m->count) * m->stripe + within;
  *n = m->stripe - within < len ? m->stripe - within : len;
}

int64_t aggio__subfile_share(const struct aggio__subfile_map *m, int k, int64_t size) {
  int64_t row = m->stripe * m->count; /* one stripe of every subfile */
  int64_t rest = size % row - (int64_t)k * m->stripe;
  rest = rest < 0 ? 0 : rest > m->stripe ? m->stripe : rest;
  return size / row * m->stripe + rest;
}

int64_t aggio__subfile_logical_end(const struct aggio__subfile_map *m, int k, int64_t sub_size) {
  if (sub_size <= 0)
    return 0;
  int64_t last = sub_size - 1;
  return (last / m->stripe * m->count + k) * m->stripe + last % m->stripe + 1;
}

int aggio__subfile_name(const char *base, int k, int count, char *out, size_t outlen) {
  int n = snprintf(out, outlen, "%s.subfile.%d.of.%d", base, k, count);
  return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

/* Lines 2-4 speak to a person who opened the layout with another tool. */
static const char intro[] =
    "This is the layout of one logical file that aggio stored as several subfiles.\n"
    "Read it through aggio (aggio-run PROGRAM, or libaggio), or make the single\n"
    "file with: aggio subfile join THIS_FILE [OUT]\n";

char *aggio__subfile_layout_text(const struct aggio__subfile_map *m, const char *base) {
  size_t cap = 512 + (size_t)m->count * (strlen(base) + 64), len = 0;
  char *t = malloc(cap), name[4096];
  if (!t)
    return NULL;
  len += (size_t)snprintf(t + len, cap - len, "%s%d\n%sstripe_size %" PRId64 "\nsubfiles %d\n",
                          AGGIO_SUBFILE_MAGIC, AGGIO_SUBFILE_FORMAT, intro, m->stripe,
                          m->count);
  for (int k = 0; k < m->count; k++) {
    if (aggio__subfile_name(base, k, m->count, name, sizeof name) != 0) {
      free(t);
      return NULL;
    }
    len += (size_t)snprintf(t + len, cap - len, "subfile %d %s\n", k, name);
  }
  snprintf(t + len, cap - len, "end\n");
  return t;
}

int aggio__subfile_is_layout(const char *text) {
  return strncmp(text, AGGIO_SUBFILE_MAGIC, strlen(AGGIO_SUBFILE_MAGIC)) == 0;
}

void aggio__subfile_names_free(char **names, int count) {
  if (!names)
    return;
  for (int i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

/* The next line of *p (without its '\n') in line[], *p moved past it; -1
 * at the end of the text or for a line longer than line[]. */
static int next_line(const char **p, char *line, size_t cap) {
  const char *end = strchr(*p, '\n');
  if (!**p || !end || (size_t)(end - *p) >= cap)
    return -1;
  memcpy(line, *p, (size_t)(end - *p));
  line[end - *p] = '\0';
  *p = end + 1;
  return 0;
}

/* "key VALUE" with VALUE a whole decimal number in [lo, hi]. */
static int number_line(const char *line, const char *key, int64_t lo, int64_t hi, int64_t *v) {
  size_t n = strlen(key);
  if (strncmp(line, key, n) != 0 || line[n] != ' ')
    return -1;
  char *end;
  errno = 0;
  long long x = strtoll(line + n + 1, &end, 10);
  if (errno || end == line + n + 1 || *end || x < lo || x > hi)
    return -1;
  *v = x;
  return 0;
}

static int bad(char *err, size_t errlen, const char *what, int line) {
  snprintf(err, errlen, "not a valid subfiled layout (format %d): %s at line %d",
           AGGIO_SUBFILE_FORMAT, what, line);
  return -1;
}

/* "subfile K NAME" for the expected K: NAME copied out. */
static int subfile_line(const char *line, int k, char **name) {
  char want[32];
  int n = snprintf(want, sizeof want, "subfile %d ", k);
  const char *s = line + n;
  if (strncmp(line, want, (size_t)n) != 0 || !*s || strchr(s, '/') || strcmp(s, ".") == 0 ||
      strcmp(s, "..") == 0)
    return -1;
  *name = strdup(s);
  return *name ? 0 : -1;
}

int aggio__subfile_layout_parse(const char *text, struct aggio__subfile_map *m, char ***names,
                                char *err, size_t errlen) {
  char line[4200];
  const char *p = text;
  int64_t version, stripe, count;
  *names = NULL;
  if (!aggio__subfile_is_layout(text))
    return bad(err, errlen, "no \"" AGGIO_SUBFILE_MAGIC "N\" first line", 1);
  if (next_line(&p, line, sizeof line) != 0 ||
      number_line(line, "aggio subfiled file, format", 0, INT32_MAX, &version) != 0)
    return bad(err, errlen, "a malformed first line", 1);
  if (version != AGGIO_SUBFILE_FORMAT) {
    snprintf(err, errlen, "subfiled layout of format %lld: this aggio reads format %d",
             (long long)version, AGGIO_SUBFILE_FORMAT);
    return -1;
  }
  for (int i = 2; i <= 4; i++)
    if (next_line(&p, line, sizeof line) != 0)
      return bad(err, errlen, "the text ends", i);
  if (next_line(&p, line, sizeof line) != 0 ||
      number_line(line, "stripe_size", 1, AGGIO_SUBFILE_STRIPE_MAX, &stripe) != 0)
    return bad(err, errlen, "no \"stripe_size S\" (1 to 2^40)", 5);
  if (next_line(&p, line, sizeof line) != 0 ||
      number_line(line, "subfiles", 1, AGGIO_SUBFILE_MAX, &count) != 0)
    return bad(err, errlen, "no \"subfiles M\" (1 to 65536)", 6);
  char **v = calloc((size_t)count, sizeof *v);
  if (!v)
    return bad(err, errlen, "out of memory", 6);
  for (int k = 0; k < count; k++)
    if (next_line(&p, line, sizeof line) != 0 || subfile_line(line, k, &v[k]) != 0) {
      aggio__subfile_names_free(v, (int)count);
      return bad(err, errlen, "no valid \"subfile K NAME\"", 7 + k);
    }
  if (next_line(&p, line, sizeof line) != 0 || strcmp(line, "end") != 0) {
    aggio__subfile_names_free(v, (int)count);
    return bad(err, errlen, "no \"end\"", 7 + (int)count);
  }
  m->stripe = stripe;
  m->count = (int)count;
  *names = v;
  return 0;
}
