/*
 * info.c - the hints in effect for a file: gathered from the three sources
 * in their order of precedence (hints.h), checked to agree across ranks
 * where they must (as ROMIO's hint_fns.c does), displayed on request
 * (AGGIO_HINTS_DISPLAY=1, like MPICH_MPIIO_HINTS_DISPLAY), and returned as
 * an MPI_Info by aggio_file_get_info.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_name.h"
#include "info.h"

struct apply_ctx {
  struct aggio__hints *h;
  enum aggio__hint_source source;
  int first_wins; /* a key this source already set keeps its first value */
};

/* 1 when msg is already one of the "; "-separated warnings in list. */
static int has_warning(const char *list, const char *msg) {
  size_t m = strlen(msg);
  for (const char *p = list; (p = strstr(p, msg)) != NULL; p++) {
    int starts = p == list || (p - list >= 2 && p[-2] == ';' && p[-1] == ' ');
    if (starts && (p[m] == '\0' || (p[m] == ';' && p[m + 1] == ' ')))
      return 1;
  }
  return 0;
}

/* Keeps a warning with the hints (first ones win when they do not fit).
 * set_info and set_view apply the environment again on top of the new
 * info, so the same malformed value is met again: it is kept once. */
static void warn(struct aggio__hints *h, const char *fmt, const char *a, const char *b) {
  char msg[sizeof h->warnings];
  snprintf(msg, sizeof msg, fmt, a, b);
  if (has_warning(h->warnings, msg))
    return;
  size_t n = strlen(h->warnings);
  if (n + 4 >= sizeof h->warnings)
    return;
  if (n > 0) {
    memcpy(h->warnings + n, "; ", 3);
    n += 2;
  }
  snprintf(h->warnings + n, sizeof h->warnings - n, "%s", msg);
}

/* 1 when the source being applied has already set key. */
static int set_here(const struct apply_ctx *c, const char *key) {
  const struct aggio__hint_value *v = aggio__hint_slot(c->h, aggio__hint_find(key));
  return v && v->set == (int)c->source;
}

/* Malformed values keep the previous value, with a warning. */
static void apply_one(void *vctx, const char *key, const char *value) {
  struct apply_ctx *c = vctx;
  char msg[512];
  if (c->first_wins && set_here(c, key))
    return;
  if (aggio__hints_set(c->h, key, value, c->source, msg, sizeof msg) < 0)
    warn(c->h, "%s%s", msg, "");
}

/* The whole file and its length in *len; NULL with errno set when it
 * cannot be read (fopen succeeds on a directory: the read says EISDIR). */
static char *read_whole_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "r");
  if (!f)
    return NULL;
  size_t cap = 4096, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break; /* end of file or an error, told apart below */
    char *nb = realloc(buf, cap * 2);
    if (!nb) {
      free(buf);
      buf = NULL;
      errno = ENOMEM;
      break;
    }
    buf = nb;
    cap *= 2;
  }
  int failed = buf && ferror(f), saved = errno;
  fclose(f);
  if (failed) {
    free(buf);
    errno = saved ? saved : EIO;
    return NULL;
  }
  *len = n;
  return buf;
}

/* A hints file named by `var` (AGGIO_HINTS_FILE or ROMIO_HINTS). */
static void apply_file(struct apply_ctx *c, const char *var, const char *path) {
  char err[256], what[512];
  size_t len = 0;
  char *text = read_whole_file(path, &len);
  if (!text) {
    snprintf(what, sizeof what, "cannot read %s %.256s (%s)", var, path, strerror(errno));
    warn(c->h, "%s%s", what, "");
    return;
  }
  if (aggio__hints_parse_file(text, len, apply_one, c, err, sizeof err) != 0)
    warn(c->h, "%s: %s", path, err);
  free(text);
}

static void apply_info(struct apply_ctx *c, MPI_Info info) {
  if (info == MPI_INFO_NULL)
    return;
  int nkeys = 0;
  MPI_Info_get_nkeys(info, &nkeys);
  for (int i = 0; i < nkeys; i++) {
    char key[MPI_MAX_INFO_KEY + 1];
    char value[AGGIO_HINT_STRLEN + 1];
    int flag = 0;
    MPI_Info_get_nthkey(info, i, key);
    MPI_Info_get(info, key, AGGIO_HINT_STRLEN, value, &flag);
    if (flag)
      apply_one(c, key, value);
  }
}

/* Cray's switches take levels (MPICH_MPIIO_STATS=2 also writes CSV files
 * there); aggio's are on or off, so any positive level means on. */
static const char *cray_level(const char *v) {
  size_t n = strspn(v, "0123456789");
  if (n == 0 || v[n] != '\0')
    return v; /* not a level: parsed as a boolean, warned about if bad */
  return strspn(v, "0") == n ? "false" : "true";
}

/* MPICH_MPIIO_HINTS (first matching entry only, as Cray applies it) and
 * the Cray switches that are aliases of aggio's. */
static void apply_cray(struct apply_ctx *c, const char *path) {
  char err[256];
  const char *spec = getenv("MPICH_MPIIO_HINTS");
  if (spec && *spec &&
      aggio__hints_parse_cray(spec, path, apply_one, c, err, sizeof err) != 0)
    warn(c->h, "MPICH_MPIIO_HINTS: %s%s", err, "");
  static const struct {
    const char *env, *key;
  } alias[] = {{"MPICH_MPIIO_STATS", "aggio_stats"},
               {"MPICH_MPIIO_TIMERS", "aggio_timers"},
               {"MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY",
                "aggio_aggregator_placement_display"}};
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++) {
    const char *v = getenv(alias[i].env);
    if (v && *v)
      apply_one(c, alias[i].key, cray_level(v));
  }
}

static void apply_env(struct apply_ctx *c, const char *path) {
  char err[256];
  const char *spec = getenv("AGGIO_HINTS");
  if (spec && *spec &&
      aggio__hints_parse_env(spec, path, apply_one, c, err, sizeof err) != 0)
    warn(c->h, "AGGIO_HINTS: %s%s", err, "");
  /* Switches that have an environment variable of their own. */
  static const struct {
    const char *env, *key;
  } own[] = {{"AGGIO_EMULATE_NODES", "aggio_emulate_nodes"},
             {"AGGIO_STATS", "aggio_stats"},
             {"AGGIO_TIMERS", "aggio_timers"},
             {"AGGIO_AGGREGATOR_PLACEMENT_DISPLAY", "aggio_aggregator_placement_display"},
             {"AGGIO_TRACE", "aggio_trace"}};
  for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
    const char *v = getenv(own[i].env);
    if (v && *v)
      apply_one(c, own[i].key, v);
  }
}

/* The two hints files, above the defaults and below the program's info.
 * ROMIO reads its file below the program's MPI_Info (its
 * ADIOI_incorporate_system_hints adds only the keys the info lacks) and
 * keeps a key's first line (file_to_info_all skips keys already read):
 * MPICH's syshints test relies on both.  AGGIO_HINTS_FILE, aggio's own,
 * keeps the last, as AGGIO_HINTS does. */
static void apply_files(struct aggio__hints *h) {
  struct apply_ctx c = {h, AGGIO_HS_ROMIO_FILE, 1};
  const char *romio = getenv("ROMIO_HINTS");
  if (romio && *romio)
    apply_file(&c, "ROMIO_HINTS", romio);
  c = (struct apply_ctx){h, AGGIO_HS_FILE, 0};
  const char *file = getenv("AGGIO_HINTS_FILE");
  if (file && *file)
    apply_file(&c, "AGGIO_HINTS_FILE", file);
}

void aggio__hints_gather(struct aggio__hints *h, MPI_Info info, const char *path,
                         int rank, int with_defaults) {
  (void)rank;
  path = aggio__file_name_unprefixed(path); /* patterns match the path itself */
  if (with_defaults) {
    aggio__hints_defaults(h);
    apply_files(h);
  }
  struct apply_ctx c = {h, AGGIO_HS_INFO, 0};
  apply_info(&c, info);
  c.source = AGGIO_HS_CRAY;
  apply_cray(&c, path);
  c.source = AGGIO_HS_ENV;
  apply_env(&c, path);
  aggio__hints_romio_rules(h);
#ifdef AGGIO_SIMGRID
  aggio__hints_simulated(h);
#endif
}

#define AGGIO_MM_LEN 8192

/* "key=value;" for every hint that must match, in table order. */
static size_t must_match_string(const struct aggio__hints *h, char *out, size_t cap) {
  size_t n = 0;
  out[0] = '\0';
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    if (!d->must_match)
      continue;
    const struct aggio__hint_value *v =
        (const struct aggio__hint_value *)((const char *)h + d->offset);
    int w = snprintf(out + n, cap - n, "%s=%s;", d->key, v->str);
    if (w < 0 || (size_t)w >= cap - n)
      return cap;
    n += (size_t)w;
  }
  return n;
}

/* The must-match hints' values, compared and hashed where they lie: HDF5
 * and PnetCDF set a view for every dataset or record, and formatting the
 * "key=value;" string each time was a tenth of set_view's time. */
static const char *match_value(const struct aggio__hints *h, size_t i) {
  const struct aggio__hint_desc *d = &aggio__hint_table[i];
  return ((const struct aggio__hint_value *)((const char *)h + d->offset))->str;
}

int aggio__hints_match_equal(const struct aggio__hints *a, const struct aggio__hints *b) {
  for (size_t i = 0; i < aggio__hint_count; i++)
    if (aggio__hint_table[i].must_match && strcmp(match_value(a, i), match_value(b, i)) != 0)
      return 0;
  return 1;
}

#define FNV_START 1469598103934665603ULL

static uint64_t fnv1a_more(uint64_t x, const char *s) {
  for (; *s; s++)
    x = (x ^ (unsigned char)*s) * 1099511628211ULL;
  return x;
}

static uint64_t fnv1a(const char *s) { return fnv1a_more(FNV_START, s); }

/* The first "key=value;" entry where a and b differ, as "key: a vs b". */
static void first_difference(const char *a, const char *b, char *out, size_t cap) {
  while (*a && *b) {
    const char *ea = strchr(a, ';'), *eb = strchr(b, ';');
    if (!ea || !eb)
      break;
    if ((ea - a) != (eb - b) || strncmp(a, b, (size_t)(ea - a)) != 0) {
      const char *key_end = memchr(a, '=', (size_t)(ea - a));
      int klen = key_end ? (int)(key_end - a) : (int)(ea - a);
      const char *va = key_end ? key_end + 1 : ea;
      const char *vb = b + klen + 1 <= eb ? b + klen + 1 : eb;
      snprintf(out, cap, "%.*s (%.*s on one rank, %.*s on another)", klen, a,
               (int)(ea - va), va, (int)(eb - vb), vb);
      return;
    }
    a = ea + 1;
    b = eb + 1;
  }
  snprintf(out, cap, "(unknown)");
}

/* Every rank names the same hint: the first that differs between rank 0
 * and the lowest rank that disagrees with it, with both values. */
static void describe_mismatch(MPI_Comm comm, const char *mine, uint64_t hash, int rank,
                              struct aggio__err *e) {
  char root[AGGIO_MM_LEN], other[AGGIO_MM_LEN], what[2 * AGGIO_MM_LEN];
  uint64_t root_hash = hash;
  MPI_Bcast(&root_hash, 1, MPI_UINT64_T, 0, comm);
  int size, odd = hash != root_hash ? rank : INT32_MAX, first;
  MPI_Comm_size(comm, &size);
  MPI_Allreduce(&odd, &first, 1, MPI_INT, MPI_MIN, comm);
  snprintf(root, sizeof root, "%s", mine);
  snprintf(other, sizeof other, "%s", mine);
  MPI_Bcast(root, AGGIO_MM_LEN, MPI_CHAR, 0, comm);
  MPI_Bcast(other, AGGIO_MM_LEN, MPI_CHAR, first < size ? first : 0, comm);
  first_difference(root, other, what, sizeof what);
  aggio__fail(e, AGGIO_ERR_HINT_MISMATCH, "rank %d: hint %s differs between ranks: rank 0 "
              "and rank %d disagree", rank, what, first < size ? first : 0);
}

/* The hash of must_match_string's text, without writing it out. */
uint64_t aggio__hints_match_hash(const struct aggio__hints *h) {
  uint64_t x = FNV_START;
  for (size_t i = 0; i < aggio__hint_count; i++) {
    if (!aggio__hint_table[i].must_match)
      continue;
    x = fnv1a_more(x, aggio__hint_table[i].key);
    x = fnv1a_more(x, "=");
    x = fnv1a_more(x, match_value(h, i));
    x = fnv1a_more(x, ";");
  }
  return x;
}

int aggio__hints_mismatch(MPI_Comm comm, const struct aggio__hints *h, int rank,
                          struct aggio__err *e) {
  char buf[AGGIO_MM_LEN];
  must_match_string(h, buf, sizeof buf);
  describe_mismatch(comm, buf, fnv1a(buf), rank, e);
  return e->code;
}

int aggio__hints_check_same(MPI_Comm comm, const struct aggio__hints *h, int rank,
                            struct aggio__err *e) {
  uint64_t x = aggio__hints_match_hash(h);
  uint64_t lo, hi;
  MPI_Allreduce(&x, &lo, 1, MPI_UINT64_T, MPI_MIN, comm);
  MPI_Allreduce(&x, &hi, 1, MPI_UINT64_T, MPI_MAX, comm);
  if (lo == hi)
    return 0;
  return aggio__hints_mismatch(comm, h, rank, e);
}

static const char *value_text(const struct aggio__hint_value *v, char *buf,
                              size_t cap) {
  if (v->ignored[0])
    snprintf(buf, cap, "ignored: %s (%s)", v->str, v->ignored);
  else
    snprintf(buf, cap, "%s", v->str);
  return buf;
}

/* aggio_hints_from_<source> = the keys that source set, comma-separated,
 * for every source but the defaults that set any: where each hint in
 * effect came from, which matters once several variables disagree. */
static void sources_to_info(const struct aggio__hints *h, MPI_Info out) {
  for (int src = 1; src < AGGIO_HS_COUNT; src++) {
    char keys[MPI_MAX_INFO_VAL], name[64];
    size_t n = 0;
    keys[0] = '\0';
    for (size_t i = 0; i < aggio__hint_count; i++) {
      const struct aggio__hint_desc *d = &aggio__hint_table[i];
      const struct aggio__hint_value *v =
          (const struct aggio__hint_value *)((const char *)h + d->offset);
      if (v->set != src)
        continue;
      int w = snprintf(keys + n, sizeof keys - n, "%s%s", n ? "," : "", d->key);
      if (w < 0 || (size_t)w >= sizeof keys - n)
        break; /* bounded like every MPI_Info value */
      n += (size_t)w;
    }
    if (n == 0)
      continue;
    snprintf(name, sizeof name, "aggio_hints_from_%s", aggio__hint_source_name(src));
    MPI_Info_set(out, name, keys);
  }
}

/* Sets key to text, cut to what an MPI_Info value may hold; an empty
 * text is left out (MPI_Info values must not be empty). */
static void set_bounded(MPI_Info out, const char *key, const char *text) {
  char v[MPI_MAX_INFO_VAL];
  size_t n = strnlen(text, sizeof v - 1);
  if (n == 0)
    return;
  memcpy(v, text, n);
  v[n] = '\0';
  MPI_Info_set(out, key, v);
}

/* Appends "key=asked: reason" to list (used of cap) unless it does not
 * fit whole; "; " separates entries, so a reason's own "; " becomes ", ". */
static int append_ignored(char *list, size_t *used, size_t cap, const char *key,
                          const struct aggio__hint_value *v) {
  char entry[3 * AGGIO_HINT_STRLEN];
  int w = snprintf(entry, sizeof entry, "%s%s=%s: %s", *used ? "; " : "", key, v->str,
                   v->ignored);
  for (char *p = entry + (*used ? 2 : 0); (p = strstr(p, "; ")) != NULL; p++)
    *p = ',';
  if (w < 0 || (size_t)w >= cap - *used)
    return -1;
  memcpy(list + *used, entry, (size_t)w + 1);
  *used += (size_t)w;
  return 0;
}

/* aggio_hints_ignored: every hint aggio does not honour, with the value
 * asked and why, in table order.  One key for all of them, because a key
 * per hint ("aggio_ignored_cray_nocb_write_lock_mode") would pass Open
 * MPI's 36-character key limit.  Entries that do not fit in one MPI_Info
 * value are replaced by "..." (AGGIO_HINTS_DISPLAY=1 shows every one). */
static void ignored_to_info(const struct aggio__hints *h, MPI_Info out) {
  char list[MPI_MAX_INFO_VAL];
  size_t used = 0, room = sizeof list - 6; /* keeps room for "; ..." */
  list[0] = '\0';
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    const struct aggio__hint_value *v =
        (const struct aggio__hint_value *)((const char *)h + d->offset);
    if (v->ignored[0] && append_ignored(list, &used, room, d->key, v) != 0) {
      snprintf(list + used, sizeof list - used, "%s...", used ? "; " : "");
      break;
    }
  }
  set_bounded(out, "aggio_hints_ignored", list);
}

int aggio__hints_to_info(const struct aggio__hints *h, int naggr, MPI_Info *out) {
  if (MPI_Info_create(out) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    const struct aggio__hint_value *v =
        (const struct aggio__hint_value *)((const char *)h + d->offset);
    set_bounded(*out, d->key, aggio__hint_effective(d, v));
  }
  /* cb_nodes is the aggregator count in effect, as ROMIO reports it: the
   * hint is only a cap, and its default 0 means "as cb_config_list gives" */
  if (naggr > 0) {
    char n[16];
    snprintf(n, sizeof n, "%d", naggr);
    MPI_Info_set(*out, "cb_nodes", n);
  }
  ignored_to_info(h, *out);
  sources_to_info(h, *out);
  set_bounded(*out, "aggio_hint_warnings", h->warnings);
  return 0;
}

void aggio__hints_display(const struct aggio__hints *h, const char *path, FILE *out) {
  fprintf(out, "aggio hints for file \"%s\":\n", path);
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    const struct aggio__hint_value *v =
        (const struct aggio__hint_value *)((const char *)h + d->offset);
    char buf[2 * AGGIO_HINT_STRLEN + 16];
    fprintf(out, "  %-36s = %-24s [%s]\n", d->key,
            value_text(v, buf, sizeof buf), aggio__hint_source_name(v->set));
  }
  if (h->warnings[0])
    fprintf(out, "  warnings: %s\n", h->warnings);
  fflush(out);
}
