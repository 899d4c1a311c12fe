/*
 * hints.c - the hint table generated from AGGIO_HINT_LIST, value parsing
 * (one small parser per kind, each producing a number and a canonical text),
 * and the two string formats hints arrive in besides MPI_Info: AGGIO_HINTS
 * (Cray MPICH_MPIIO_HINTS syntax) and hints files (ROMIO_HINTS syntax);
 * and the values replaced once every source is applied (ROMIO's rule
 * between hints, the SimGrid build's).  Pure C: no MPI, no printing;
 * errors come back as text for the caller.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* fnmatch */
#endif

#include "hints.h"

#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the table -------------------------------------------------------------- */

const struct aggio__hint_desc aggio__hint_table[] = {
#define AGGIO__HINT_DESC(field, k, kd, df, mm, dc)                                    \
  {.key = k, .kind = kd, .def = df, .must_match = mm, .doc = dc,                       \
   .offset = offsetof(struct aggio__hints, field)},
    AGGIO_HINT_LIST(AGGIO__HINT_DESC)
#undef AGGIO__HINT_DESC
};

const size_t aggio__hint_count = sizeof aggio__hint_table / sizeof aggio__hint_table[0];

const struct aggio__hint_desc *aggio__hint_find(const char *key) {
  if (!key)
    return NULL;
  for (size_t i = 0; i < aggio__hint_count; i++)
    if (strcmp(aggio__hint_table[i].key, key) == 0)
      return &aggio__hint_table[i];
  return NULL;
}

struct aggio__hint_value *aggio__hint_slot(struct aggio__hints *h,
                                           const struct aggio__hint_desc *d) {
  if (!h || !d)
    return NULL;
  return (struct aggio__hint_value *)((char *)h + d->offset);
}

void aggio__hints_defaults(struct aggio__hints *h) {
  memset(h, 0, sizeof *h);
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    struct aggio__hint_value *v = aggio__hint_slot(h, d);
    /* Defaults are checked by the unit test; a bad one leaves num 0 and
     * the default text as written. */
    if (aggio__hint_parse_value(d->kind, d->def, &v->num, v->str, sizeof v->str, NULL, 0))
      snprintf(v->str, sizeof v->str, "%s", d->def);
    v->set = AGGIO_HS_DEFAULT;
  }
}

const char *aggio__hint_effective(const struct aggio__hint_desc *d,
                                  const struct aggio__hint_value *v) {
  int numeric = d->kind == AGGIO_HK_INT || d->kind == AGGIO_HK_SIZE;
  return numeric && v->ignored[0] ? d->def : v->str;
}

const char *aggio__hint_source_name(int source) {
  static const char *const names[AGGIO_HS_COUNT] = {
      "default", "ROMIO_HINTS", "AGGIO_HINTS_FILE", "MPI_Info", "MPICH_MPIIO_HINTS",
      "AGGIO_HINTS"};
  return source > 0 && source < AGGIO_HS_COUNT ? names[source] : names[0];
}

/* ---- small text helpers ----------------------------------------------------- */

static int is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Narrows [*b, *e) to exclude leading and trailing white space. */
static void trim_span(const char **b, const char **e) {
  while (*b < *e && is_space(**b))
    (*b)++;
  while (*e > *b && is_space((*e)[-1]))
    (*e)--;
}

/* ASCII case-insensitive comparison of the span [b, e) with word. */
static int span_is(const char *b, const char *e, const char *word) {
  size_t n = (size_t)(e - b);
  if (strlen(word) != n)
    return 0;
  for (size_t i = 0; i < n; i++) {
    char c = b[i];
    if (c >= 'A' && c <= 'Z')
      c = (char)(c - 'A' + 'a');
    if (c != word[i])
      return 0;
  }
  return 1;
}

/* Copies [b, e) into dst (NUL-terminated); dst has room for e - b + 1. */
static char *span_copy(char *dst, const char *b, const char *e) {
  memcpy(dst, b, (size_t)(e - b));
  dst[e - b] = '\0';
  return dst;
}

static void put_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void put_err(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  if (!err || errlen == 0)
    return;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

/* ---- value parsers, one per kind ------------------------------------------- */

/* A word list entry: accepted spelling -> number. */
struct word {
  const char *text;
  int64_t num;
};

static const struct word tristate_words[] = {
    {"enable", AGGIO_ENABLE},    {"disable", AGGIO_DISABLE}, {"automatic", AGGIO_AUTOMATIC},
    {"auto", AGGIO_AUTOMATIC},   {"true", AGGIO_ENABLE},     {"false", AGGIO_DISABLE},
    {"yes", AGGIO_ENABLE},       {"no", AGGIO_DISABLE},      {"1", AGGIO_ENABLE},
    {"0", AGGIO_DISABLE},        {NULL, 0}};
static const char *const tristate_canon[] = {"disable", "enable", "automatic"};

static const struct word bool_words[] = {
    {"true", 1}, {"false", 0}, {"enable", 1}, {"disable", 0}, {"yes", 1},
    {"no", 0},   {"1", 1},     {"0", 0},      {NULL, 0}};
static const char *const bool_canon[] = {"false", "true"};

/* Looks the span up in a word list; 0 and *num on success, -1 if absent. */
static int parse_word(const struct word *w, const char *b, const char *e, int64_t *num) {
  for (; w->text; w++)
    if (span_is(b, e, w->text)) {
      *num = w->num;
      return 0;
    }
  return -1;
}

/* Decimal digits only, at most `max`.  0, or -1 (not a number) / -2 (too big). */
static int parse_digits(const char *b, const char *e, int64_t max, int64_t *num) {
  int64_t v = 0;
  if (b == e)
    return -1;
  for (; b < e; b++) {
    if (*b < '0' || *b > '9')
      return -1;
    int d = *b - '0';
    if (v > (max - d) / 10)
      return -2;
    v = v * 10 + d;
  }
  *num = v;
  return 0;
}

/* Binary multiplier of a size suffix letter, or 0 if it is not one. */
static int64_t size_multiplier(char c) {
  switch (c) {
  case 'k': case 'K': return INT64_C(1) << 10;
  case 'm': case 'M': return INT64_C(1) << 20;
  case 'g': case 'G': return INT64_C(1) << 30;
  default: return 0;
  }
}

static int parse_size(const char *b, const char *e, int64_t *num) {
  int64_t mult = 1;
  if (e > b && size_multiplier(e[-1])) {
    mult = size_multiplier(e[-1]);
    e--;
  }
  int rc = parse_digits(b, e, INT64_MAX / mult, num);
  if (rc == 0)
    *num *= mult;
  return rc;
}

static int parse_string(const char *value, char *canon, size_t canon_len, char *err,
                        size_t errlen) {
  size_t n = strlen(value);
  if (n >= canon_len) {
    put_err(err, errlen, "value is %zu characters long, more than %zu", n,
            canon_len ? canon_len - 1 : 0);
    return -1;
  }
  memcpy(canon, value, n + 1);
  return 0;
}

/* Parses the trimmed span for a non-string kind: 0, or -1/-2 as parse_digits. */
static int parse_span(enum aggio__hint_kind kind, const char *b, const char *e, int64_t *num) {
  switch (kind) {
  case AGGIO_HK_TRISTATE: return parse_word(tristate_words, b, e, num);
  case AGGIO_HK_BOOL: return parse_word(bool_words, b, e, num);
  case AGGIO_HK_STRATEGY: {
    int id = aggio__strategy_lookup(b, (int)(e - b));
    *num = id;
    return id < 0 ? -1 : 0;
  }
  case AGGIO_HK_INT: return parse_digits(b, e, INT_MAX, num);
  case AGGIO_HK_SIZE: return parse_size(b, e, num);
  default: return -1;
  }
}

static const char *kind_expect(enum aggio__hint_kind kind) {
  switch (kind) {
  case AGGIO_HK_TRISTATE: return "not enable, disable or automatic";
  case AGGIO_HK_BOOL: return "not true or false";
  case AGGIO_HK_STRATEGY: return "not a strategy";
  case AGGIO_HK_INT: return "not a non-negative integer";
  case AGGIO_HK_SIZE: return "not a size";
  default: return "not valid";
  }
}

/* Writes the canonical text of a parsed non-string value; -1 if it does
 * not fit in len. */
static int canon_text(enum aggio__hint_kind kind, int64_t num, char *canon, size_t len) {
  char text[32];
  switch (kind) {
  case AGGIO_HK_TRISTATE: snprintf(text, sizeof text, "%s", tristate_canon[num]); break;
  case AGGIO_HK_BOOL: snprintf(text, sizeof text, "%s", bool_canon[num]); break;
  case AGGIO_HK_STRATEGY: snprintf(text, sizeof text, "%s", aggio__strategy_name((int)num)); break;
  default: snprintf(text, sizeof text, "%lld", (long long)num); break;
  }
  if (!canon || strlen(text) >= len)
    return -1;
  memcpy(canon, text, strlen(text) + 1);
  return 0;
}

int aggio__hint_parse_value(enum aggio__hint_kind kind, const char *value, int64_t *num,
                            char *canon, size_t canon_len, char *err, size_t errlen) {
  int64_t v = 0;
  if (!value) {
    put_err(err, errlen, "no value");
    return -1;
  }
  if (kind == AGGIO_HK_STRING) {
    if (parse_string(value, canon, canon_len, err, errlen))
      return -1;
    if (num)
      *num = 0;
    return 0;
  }
  const char *b = value, *e = value + strlen(value);
  trim_span(&b, &e);
  int rc = parse_span(kind, b, e, &v);
  if (rc == -2) {
    put_err(err, errlen, "\"%.64s\" is too large", value);
    return -1;
  }
  if (rc) {
    int strat = kind == AGGIO_HK_STRATEGY; /* then the names follow */
    put_err(err, errlen, "\"%.64s\" is %s%s%s%s", value, kind_expect(kind),
            strat ? " (" : "", strat ? aggio__strategy_names() : "", strat ? ")" : "");
    return -1;
  }
  if (canon_text(kind, v, canon, canon_len)) {
    put_err(err, errlen, "no room for the canonical text of \"%.64s\"", value);
    return -1;
  }
  if (num)
    *num = v;
  return 0;
}

/* ---- setting one hint ------------------------------------------------------- */

#define AGGIO__MIN_CB_BUFFER 4096

/* Checks beyond the value's kind, for particular hints. */
static int validate(const struct aggio__hint_desc *d, int64_t num, const char *canon,
                    char *err, size_t errlen) {
  if (strcmp(d->key, "cb_buffer_size") == 0 && num < AGGIO__MIN_CB_BUFFER) {
    put_err(err, errlen, "\"%s\" is below the minimum %d", canon, AGGIO__MIN_CB_BUFFER);
    return -1;
  }
  if (strncmp(d->key, "cray_", 5) == 0 && strstr(d->key, "lock_mode") && num > 2) {
    put_err(err, errlen, "\"%s\" is not 0 (normal), 1 (group lock) or 2 (lock ahead)",
            canon);
    return -1;
  }
  if (strcmp(d->key, "cray_cb_nodes_multiplier") == 0 && num < 1) {
    put_err(err, errlen, "\"%s\" is below 1", canon);
    return -1;
  }
  if (strcmp(d->key, "cb_config_list") == 0 && canon[0] == '\0') {
    put_err(err, errlen, "the value is empty");
    return -1;
  }
  return 0;
}

static void warn_kept(const struct aggio__hint_desc *d, const struct aggio__hint_value *v,
                      const char *why, char *warn, size_t warnlen) {
  if (d->kind == AGGIO_HK_STRING)
    put_err(warn, warnlen, "hint %s: %s; keeping \"%s\"", d->key, why, v->str);
  else
    put_err(warn, warnlen, "hint %s: %s; keeping %s", d->key, why, v->str);
}

/* Parses and validates `value` for hint d (current value v); on failure
 * writes the "keeping ..." warning and returns -1. */
static int prepare(const struct aggio__hint_desc *d, const struct aggio__hint_value *v,
                   const char *value, int64_t *num, char *canon, char *warn, size_t warnlen) {
  char why[160];
  if (aggio__hint_parse_value(d->kind, value, num, canon, AGGIO_HINT_STRLEN, why, sizeof why) ||
      validate(d, *num, canon, why, sizeof why)) {
    warn_kept(d, v, why, warn, warnlen);
    return -1;
  }
  return 0;
}

static void store(struct aggio__hint_value *v, int64_t num, const char *canon,
                  enum aggio__hint_source source) {
  v->num = num;
  memcpy(v->str, canon, AGGIO_HINT_STRLEN);
  v->set = (int)source;
  v->ignored[0] = '\0'; /* the file-system layer re-decides for the new value */
}

int aggio__hints_set(struct aggio__hints *h, const char *key, const char *value,
                     enum aggio__hint_source source, char *warn, size_t warnlen) {
  const struct aggio__hint_desc *d = aggio__hint_find(key);
  if (!d)
    return 1;
  struct aggio__hint_value *v = aggio__hint_slot(h, d);
  char canon[AGGIO_HINT_STRLEN];
  int64_t num = 0;
  if (prepare(d, v, value, &num, canon, warn, warnlen))
    return -1;
  store(v, num, canon, source);
  return 0;
}

/* ---- values replaced after every source --------------------------------------- */

/* Sets v to (num, text); a value the user chose otherwise stays visible
 * as ignored, with why. */
static void force(struct aggio__hint_value *v, int64_t num, const char *text,
                  const char *why) {
  int asked_otherwise = v->set != AGGIO_HS_DEFAULT && strcmp(v->str, text) != 0;
  char was[AGGIO_HINT_STRLEN];
  memcpy(was, v->str, sizeof was);
  v->num = num;
  snprintf(v->str, sizeof v->str, "%s", text);
  v->ignored[0] = '\0';
  if (asked_otherwise)
    snprintf(v->ignored, sizeof v->ignored, "asked %.100s; %s", was, why);
}

/* ROMIO's ADIOI_GEN_SetInfo (adio/common/ad_hints.c) reads
 * romio_no_indep_rw after romio_cb_read and, when it is true, sets
 * romio_cb_read to enable, whichever source gave either: only aggregators
 * open the file, so reads must go through them.  aggio's auto rule reads
 * that way already (aggio__auto_decide); this makes get_info say so, as
 * ROMIO's does (MPICH's syshints test reads enable back).  romio_cb_write
 * stays as asked: with romio_no_indep_rw=true, disable selects node-local
 * writing, Cray's local aggregation (aggio__select_write_path). */
void aggio__hints_romio_rules(struct aggio__hints *h) {
  if (h->no_indep_rw.num && h->cb_read.num == AGGIO_DISABLE)
    force(&h->cb_read, AGGIO_ENABLE, "enable",
          "romio_no_indep_rw=true: only aggregators have the file open, so collective "
          "reads go through them, as in ROMIO");
}

/* ---- the simulated build ----------------------------------------------------- */

void aggio__hints_simulated(struct aggio__hints *h) {
  static const char threads[] = "the SimGrid build runs no I/O threads";
  static const char shm[] = "the SimGrid build has no shared memory between ranks";
  force(&h->storage, 0, "null", "the SimGrid build simulates no file I/O");
  force(&h->pipeline, AGGIO_DISABLE, "disable", threads);
  force(&h->write_behind, AGGIO_DISABLE, "disable", threads);
  force(&h->node_shm, AGGIO_DISABLE, "disable", shm);
  force(&h->direct_io, AGGIO_DISABLE, "disable", "the SimGrid build simulates no file I/O");
  /* SMPI's MPI_Win_lock_all and unlock_all take every rank's lock one by
   * one: ranks² simulated calls at every open and close (42 s of a 2,048-rank
   * run's 72 s), for a pointer the simulated programs never move */
  force(&h->shared_fp, AGGIO_DISABLE, "disable",
        "the SimGrid build makes no shared file pointer window");
  if (h->strategy.num == AGGIO_STRAT_WRITE_BEHIND)
    force(&h->strategy, AGGIO_STRAT_AUTO, "auto", threads);
  if (h->strategy.num == AGGIO_STRAT_NODE_LOCAL) /* hands data over in node memory */
    force(&h->strategy, AGGIO_STRAT_AUTO, "auto", shm);
}

/* ---- AGGIO_HINTS (Cray MPICH_MPIIO_HINTS syntax) ---------------------------- */
/*
 * spec    := entry { ',' entry }
 * entry   := pattern ':' pair { ':' pair }
 * pair    := key '=' value
 * value   := text without ':' or ','  |  '#' text without '#' '#'
 *
 * A value that needs ':' or ',' (cb_config_list) is enclosed in '#', as Cray
 * sites write it: MPICH_MPIIO_HINTS="*:cb_config_list=#*:2#:cb_nodes=8".
 * White space around every token is dropped; an entry that is all white
 * space (a trailing comma) is skipped.  The first error is kept (with its
 * character position, counting from 1) and parsing goes on past it, so good
 * pairs still arrive.
 */

struct env_scan {
  const char *s;    /* the whole spec */
  size_t i;         /* cursor */
  const char *path; /* file being opened */
  aggio__hint_cb cb;
  void *ctx;
  char *key, *val; /* scratch, each strlen(spec) + 1 */
  int entry;       /* 1-based entry number */
  int failed;
  char *err;
  size_t errlen;
  int first_only;  /* MPICH_MPIIO_HINTS: only the first matching entry */
  int reported;    /* an entry matched (and its pairs went out) */
  int pending;     /* key/val hold a pair not yet reported (it may continue) */
  int continues;   /* the last pair was an unquoted cb_config_list */
};

static void env_error(struct env_scan *sc, size_t pos, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void env_error(struct env_scan *sc, size_t pos, const char *fmt, ...) {
  char what[200];
  va_list ap;
  if (sc->failed++)
    return;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  put_err(sc->err, sc->errlen, "entry %d, character %zu: %s", sc->entry, pos + 1, what);
}

/* Advances to the next ':', ',' or end; returns that character. */
static char env_skip_field(struct env_scan *sc) {
  while (sc->s[sc->i] && sc->s[sc->i] != ':' && sc->s[sc->i] != ',')
    sc->i++;
  return sc->s[sc->i];
}

/* Does the pattern match the path or its basename? */
static int env_matches(const char *pattern, const char *path) {
  if (!path)
    path = "";
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  return fnmatch(pattern, path, 0) == 0 || fnmatch(pattern, base, 0) == 0;
}

/* Reads a '#'-quoted value starting at the '#'; 0, or -1 after an error. */
static int env_quoted(struct env_scan *sc, const char **vb, const char **ve) {
  size_t open = sc->i;
  const char *close = strchr(sc->s + open + 1, '#');
  if (!close) {
    env_error(sc, open, "unterminated '#' quote");
    sc->i = strlen(sc->s);
    return -1;
  }
  *vb = sc->s + open + 1;
  *ve = close;
  sc->i = (size_t)(close - sc->s) + 1;
  while (is_space(sc->s[sc->i]))
    sc->i++;
  if (sc->s[sc->i] && sc->s[sc->i] != ':' && sc->s[sc->i] != ',') {
    env_error(sc, sc->i, "text after the closing '#'");
    env_skip_field(sc);
    return -1;
  }
  return 0;
}

/* Reports the pair held back in key/val, if any. */
static void env_flush(struct env_scan *sc) {
  if (sc->pending)
    sc->cb(sc->ctx, sc->key, sc->val);
  sc->pending = 0;
}

/* Cray sites write cb_config_list=*:8 without quotes: the ':' then ends
 * the pair early and "8" arrives as a field without '='.  Right after an
 * unquoted cb_config_list (the one hint whose value holds ':'), such a
 * field continues the value instead of being an error. */
static int env_continue(struct env_scan *sc, const char *kb, const char *ke) {
  if (!sc->continues || kb == ke || sc->s[sc->i] == '=')
    return 0;
  if (sc->pending) {
    size_t n = strlen(sc->val);
    sc->val[n] = ':';
    span_copy(sc->val + n + 1, kb, ke);
  }
  return 1;
}

/* Reads one key=value pair at the cursor; holds it back for reporting if
 * `matched` (a continuation may follow). */
static void env_pair(struct env_scan *sc, int matched) {
  size_t start = sc->i;
  const char *kb = sc->s + start;
  while (sc->s[sc->i] && strchr(":,=", sc->s[sc->i]) == NULL)
    sc->i++;
  const char *ke = sc->s + sc->i;
  trim_span(&kb, &ke);
  if (env_continue(sc, kb, ke))
    return;
  sc->continues = 0;
  if (sc->s[sc->i] != '=') {
    if (kb == ke)
      env_error(sc, start, "empty field (expected key=value)");
    else
      env_error(sc, start, "\"%.*s\" has no '='", (int)(ke - kb), kb);
    return;
  }
  sc->i++;
  while (is_space(sc->s[sc->i]))
    sc->i++;
  const char *vb = sc->s + sc->i, *ve;
  int quoted = *vb == '#';
  if (quoted) {
    if (env_quoted(sc, &vb, &ve))
      return;
  } else {
    env_skip_field(sc);
    ve = sc->s + sc->i;
  }
  trim_span(&vb, &ve);
  if (kb == ke) {
    env_error(sc, start, "empty key");
    return;
  }
  sc->continues = !quoted && span_is(kb, ke, "cb_config_list");
  if (!matched)
    return;
  env_flush(sc);
  span_copy(sc->key, kb, ke);
  span_copy(sc->val, vb, ve);
  sc->pending = 1;
}

/* Reads one entry at the cursor, up to (not past) the ',' ending it. */
static void env_entry(struct env_scan *sc) {
  size_t start = sc->i;
  const char *pb = sc->s + start;
  char stop = env_skip_field(sc);
  const char *pe = sc->s + sc->i;
  trim_span(&pb, &pe);
  if (pb == pe && stop != ':')
    return; /* nothing at all: skipped */
  int matched = 0;
  if (pb == pe)
    env_error(sc, start, "empty pattern");
  else
    matched = env_matches(span_copy(sc->key, pb, pe), sc->path);
  if (stop != ':') {
    env_error(sc, start, "pattern \"%.*s\" has no key=value pairs", (int)(pe - pb), pb);
    return;
  }
  if (sc->first_only && sc->reported)
    matched = 0; /* syntax still checked */
  sc->continues = 0;
  while (sc->s[sc->i] == ':') {
    sc->i++;
    env_pair(sc, matched);
  }
  env_flush(sc);
  sc->reported |= matched;
}

static int parse_env(const char *spec, const char *path, aggio__hint_cb cb, void *ctx,
                     int first_only, char *err, size_t errlen) {
  put_err(err, errlen, "%s", "");
  if (!spec || !cb)
    return 0;
  size_t len = strlen(spec);
  char *scratch = malloc(2 * (len + 1));
  if (!scratch) {
    put_err(err, errlen, "out of memory");
    return -1;
  }
  struct env_scan sc = {.s = spec, .path = path, .cb = cb, .ctx = ctx, .key = scratch,
                        .val = scratch + len + 1, .err = err, .errlen = errlen,
                        .first_only = first_only};
  for (;;) {
    sc.entry++;
    env_entry(&sc);
    if (spec[sc.i] != ',')
      break;
    sc.i++;
  }
  free(scratch);
  return sc.failed ? -1 : 0;
}

int aggio__hints_parse_env(const char *spec, const char *path, aggio__hint_cb cb, void *ctx,
                           char *err, size_t errlen) {
  return parse_env(spec, path, cb, ctx, 0, err, errlen);
}

int aggio__hints_parse_cray(const char *spec, const char *path, aggio__hint_cb cb,
                            void *ctx, char *err, size_t errlen) {
  return parse_env(spec, path, cb, ctx, 1, err, errlen);
}

/* ---- hints files (ROMIO_HINTS syntax) --------------------------------------- */
/*
 * One "key value" per line: the key is the first word, the value the rest
 * of the line without surrounding white space.  Lines whose first non-blank
 * character is '#' are comments; as in ROMIO, a '#' later in a line is part
 * of the value.  Blank lines are skipped; a key without a value, or a line
 * holding a NUL byte (a binary file, or a text editor's accident), is an
 * error (the first is reported) and the other lines still count.
 */

/* Handles one line [b, e); returns 0, or -1 if it is malformed. */
static int file_line(const char *b, const char *e, char *scratch, aggio__hint_cb cb,
                     void *ctx, int lineno, char *err, size_t errlen, int failed) {
  trim_span(&b, &e);
  if (b == e || *b == '#')
    return 0;
  const char *ke = b;
  while (ke < e && !is_space(*ke))
    ke++;
  const char *vb = ke, *ve = e;
  trim_span(&vb, &ve);
  if (vb == ve) {
    if (!failed)
      put_err(err, errlen, "line %d: \"%.*s\" has no value", lineno, (int)(ke - b), b);
    return -1;
  }
  char *key = span_copy(scratch, b, ke);
  char *val = span_copy(scratch + (ke - b) + 1, vb, ve);
  cb(ctx, key, val);
  return 0;
}

int aggio__hints_parse_file(const char *text, size_t len, aggio__hint_cb cb, void *ctx,
                            char *err, size_t errlen) {
  put_err(err, errlen, "%s", "");
  if (!text || !cb)
    return 0;
  char *scratch = malloc(len + 2);
  if (!scratch) {
    put_err(err, errlen, "out of memory");
    return -1;
  }
  int failed = 0, lineno = 0;
  const char *b = text, *end = text + len;
  while (b < end) {
    const char *e = memchr(b, '\n', (size_t)(end - b));
    if (!e)
      e = end;
    lineno++;
    if (memchr(b, '\0', (size_t)(e - b))) {
      if (!failed)
        put_err(err, errlen, "line %d holds a NUL byte (not a text file?); line skipped",
                lineno);
      failed = 1;
    } else if (file_line(b, e, scratch, cb, ctx, lineno, err, errlen, failed)) {
      failed = 1;
    }
    b = e < end ? e + 1 : e;
  }
  free(scratch);
  return failed ? -1 : 0;
}
