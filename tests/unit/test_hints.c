/*
 * test_hints.c - unit tests of hints.c: the table against AGGIO_HINT_LIST,
 * value parsing for every kind, aggio__hints_set's return codes and kept
 * values, the SimGrid build's forced hints, the AGGIO_HINTS (Cray
 * MPICH_MPIIO_HINTS) syntax and hints files.
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "hints.h"

/* ---- helpers ---------------------------------------------------------------- */

/* Collects the pairs a parser reports. */
struct pairs {
  int n;
  char key[16][64];
  char val[16][256];
};

static void collect(void *ctx, const char *key, const char *value) {
  struct pairs *p = ctx;
  if (p->n >= 16)
    return;
  snprintf(p->key[p->n], sizeof p->key[0], "%s", key);
  snprintf(p->val[p->n], sizeof p->val[0], "%s", value);
  p->n++;
}

static int has_pair(const struct pairs *p, int i, const char *key, const char *value) {
  return i < p->n && strcmp(p->key[i], key) == 0 && strcmp(p->val[i], value) == 0;
}

/* Parses `value` as `kind`; returns the parser's code, fills num/canon. */
static int pv(enum aggio__hint_kind kind, const char *value, int64_t *num, char *canon) {
  char err[200];
  *num = -99;
  canon[0] = '\0';
  return aggio__hint_parse_value(kind, value, num, canon, AGGIO_HINT_STRLEN, err, sizeof err);
}

/* Checks that `value` parses to num and canonical text. */
static void expect_ok(enum aggio__hint_kind kind, const char *value, int64_t num,
                      const char *canon) {
  int64_t got;
  char text[AGGIO_HINT_STRLEN];
  int rc = pv(kind, value, &got, text);
  CHECK(rc == 0, "kind %d \"%s\": rc %d", (int)kind, value, rc);
  CHECK(got == num, "kind %d \"%s\": num %lld, want %lld", (int)kind, value, (long long)got,
        (long long)num);
  CHECK(strcmp(text, canon) == 0, "kind %d \"%s\": canon \"%s\", want \"%s\"", (int)kind,
        value, text, canon);
}

static void expect_bad(enum aggio__hint_kind kind, const char *value) {
  int64_t got;
  char text[AGGIO_HINT_STRLEN], err[200] = "";
  int rc = aggio__hint_parse_value(kind, value, &got, text, sizeof text, err, sizeof err);
  CHECK(rc == -1, "kind %d \"%s\" accepted", (int)kind, value);
  CHECK(err[0] != '\0', "kind %d \"%s\": no reason given", (int)kind, value);
}

/* ---- the table and defaults ------------------------------------------------- */

static void test_table_matches_list(void) {
  size_t n = 0;
#define COUNT(field, key, kind, def, mm, doc) n++;
  AGGIO_HINT_LIST(COUNT)
#undef COUNT
  CHECK(aggio__hint_count == n, "count %zu, list has %zu", aggio__hint_count, n);
  size_t i = 0;
#define SAME(field, k, kd, df, mm, dc)                                                   \
  CHECK(strcmp(aggio__hint_table[i].key, k) == 0, "entry %zu key %s", i, k);            \
  CHECK(aggio__hint_table[i].kind == kd && aggio__hint_table[i].must_match == mm,       \
        "entry %zu kind/must_match", i);                                                \
  CHECK(strcmp(aggio__hint_table[i].def, df) == 0, "entry %zu default", i);             \
  CHECK(aggio__hint_table[i].offset == offsetof(struct aggio__hints, field),            \
        "entry %zu offset", i);                                                         \
  i++;
  AGGIO_HINT_LIST(SAME)
#undef SAME
}

static void test_defaults(void) {
  struct aggio__hints h;
  memset(&h, 0x5a, sizeof h);
  aggio__hints_defaults(&h);
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    struct aggio__hint_value *v = aggio__hint_slot(&h, d);
    int64_t num;
    char canon[AGGIO_HINT_STRLEN];
    CHECK(pv(d->kind, d->def, &num, canon) == 0, "default of %s does not parse", d->key);
    CHECK(v->num == num, "%s: default num %lld", d->key, (long long)v->num);
    CHECK(strcmp(v->str, canon) == 0, "%s: default text \"%s\"", d->key, v->str);
    CHECK(strcmp(v->str, d->def) == 0, "%s: default \"%s\" is not canonical", d->key, d->def);
    CHECK(v->set == AGGIO_HS_DEFAULT && v->ignored[0] == '\0', "%s: set/ignored", d->key);
    char warn[300] = "";
    int rc = aggio__hints_set(&h, d->key, d->def, AGGIO_HS_INFO, warn, sizeof warn);
    CHECK(rc == 0, "%s: setting the default fails: %s", d->key, warn);
  }
  CHECK(h.cb_write.num == AGGIO_AUTOMATIC, "cb_write default");
  CHECK(h.cb_buffer_size.num == 16777216, "cb_buffer_size default");
  CHECK(h.strategy.num == AGGIO_STRAT_AUTO, "strategy default");
  CHECK(h.trace_memory.num == 67108864, "trace_memory default");
  CHECK(strcmp(h.cb_config_list.str, "*:1") == 0, "cb_config_list default");
  CHECK(strcmp(h.trace.str, "") == 0, "trace default");
}

static void test_find_and_slot(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  const struct aggio__hint_desc *d = aggio__hint_find("cb_nodes");
  CHECK(d && d->kind == AGGIO_HK_INT, "find cb_nodes");
  CHECK(aggio__hint_slot(&h, d) == &h.cb_nodes, "slot of cb_nodes");
  d = aggio__hint_find("aggio_aggregator_placement_display");
  CHECK(d && aggio__hint_slot(&h, d) == &h.placement_display, "slot of placement_display");
  CHECK(aggio__hint_find("CB_NODES") == NULL, "find is case-sensitive");
  CHECK(aggio__hint_find("cb_node") == NULL, "no prefix match");
  CHECK(aggio__hint_find("") == NULL && aggio__hint_find(NULL) == NULL, "empty/NULL key");
  CHECK(aggio__hint_slot(&h, NULL) == NULL, "slot of NULL");
}

/* ---- values ----------------------------------------------------------------- */

static void test_tristate(void) {
  const enum aggio__hint_kind k = AGGIO_HK_TRISTATE;
  expect_ok(k, "enable", AGGIO_ENABLE, "enable");
  expect_ok(k, "disable", AGGIO_DISABLE, "disable");
  expect_ok(k, "automatic", AGGIO_AUTOMATIC, "automatic");
  expect_ok(k, "auto", AGGIO_AUTOMATIC, "automatic");
  expect_ok(k, "true", AGGIO_ENABLE, "enable");
  expect_ok(k, "false", AGGIO_DISABLE, "disable");
  expect_ok(k, "yes", AGGIO_ENABLE, "enable");
  expect_ok(k, "no", AGGIO_DISABLE, "disable");
  expect_ok(k, "1", AGGIO_ENABLE, "enable");
  expect_ok(k, "0", AGGIO_DISABLE, "disable");
  expect_ok(k, "ENABLE", AGGIO_ENABLE, "enable");
  expect_ok(k, "  Disable\t", AGGIO_DISABLE, "disable");
  expect_bad(k, "");
  expect_bad(k, "enabled");
  expect_bad(k, "2");
  expect_bad(k, "en able");
  expect_bad(k, "automatically");
}

static void test_bool(void) {
  const enum aggio__hint_kind k = AGGIO_HK_BOOL;
  expect_ok(k, "true", 1, "true");
  expect_ok(k, "false", 0, "false");
  expect_ok(k, "enable", 1, "true");
  expect_ok(k, "disable", 0, "false");
  expect_ok(k, "yes", 1, "true");
  expect_ok(k, "no", 0, "false");
  expect_ok(k, "1", 1, "true");
  expect_ok(k, "0", 0, "false");
  expect_ok(k, "TRUE", 1, "true");
  expect_bad(k, "automatic");
  expect_bad(k, "auto");
  expect_bad(k, "");
  expect_bad(k, "truee");
}

static void test_int(void) {
  const enum aggio__hint_kind k = AGGIO_HK_INT;
  expect_ok(k, "0", 0, "0");
  expect_ok(k, "8", 8, "8");
  expect_ok(k, " 42 ", 42, "42");
  expect_ok(k, "007", 7, "7");
  expect_ok(k, "2147483647", 2147483647, "2147483647");
  expect_bad(k, "2147483648");
  expect_bad(k, "99999999999999999999999");
  expect_bad(k, "-1");
  expect_bad(k, "+1");
  expect_bad(k, "");
  expect_bad(k, "   ");
  expect_bad(k, "4k");
  expect_bad(k, "1.5");
  expect_bad(k, "0x10");
  expect_bad(k, "1 2");
}

static void test_size(void) {
  const enum aggio__hint_kind k = AGGIO_HK_SIZE;
  expect_ok(k, "0", 0, "0");
  expect_ok(k, "4096", 4096, "4096");
  expect_ok(k, "4k", 4096, "4096");
  expect_ok(k, "4K", 4096, "4096");
  expect_ok(k, "4m", 4194304, "4194304");
  expect_ok(k, "16M", 16777216, "16777216");
  expect_ok(k, "2g", INT64_C(2147483648), "2147483648");
  expect_ok(k, "3G", INT64_C(3221225472), "3221225472");
  expect_ok(k, " 1m ", 1048576, "1048576");
  expect_ok(k, "9223372036854775807", INT64_MAX, "9223372036854775807");
  expect_ok(k, "8589934591g", INT64_C(8589934591) << 30, "9223372035781033984");
  expect_bad(k, "9223372036854775808");
  expect_bad(k, "8589934592g");
  expect_bad(k, "12q");
  expect_bad(k, "k");
  expect_bad(k, "");
  expect_bad(k, "-4k");
  expect_bad(k, "4 k");
  expect_bad(k, "4kb");
  expect_bad(k, "4t");
  expect_bad(k, "1.5m");
}

static void test_strategy(void) {
  const enum aggio__hint_kind k = AGGIO_HK_STRATEGY;
  expect_ok(k, "auto", AGGIO_STRAT_AUTO, "auto");
  expect_ok(k, "automatic", AGGIO_STRAT_AUTO, "auto");
  expect_ok(k, "independent", AGGIO_STRAT_INDEPENDENT, "independent");
  expect_ok(k, "two_phase", AGGIO_STRAT_TWO_PHASE, "two_phase");
  expect_ok(k, "two-phase", AGGIO_STRAT_TWO_PHASE, "two_phase");
  expect_ok(k, "twophase", AGGIO_STRAT_TWO_PHASE, "two_phase");
  expect_ok(k, "Two_Phase", AGGIO_STRAT_TWO_PHASE, "two_phase");
  expect_bad(k, "two phase");
  expect_ok(k, "node_local", AGGIO_STRAT_NODE_LOCAL, "node_local");
  expect_ok(k, "node-local", AGGIO_STRAT_NODE_LOCAL, "node_local");
  expect_bad(k, "nodelocal");
  expect_bad(k, "");
}

static void test_string(void) {
  const enum aggio__hint_kind k = AGGIO_HK_STRING;
  expect_ok(k, "", 0, "");
  expect_ok(k, "n01:2,n02:*", 0, "n01:2,n02:*");
  expect_ok(k, " keep spaces ", 0, " keep spaces ");
  char longest[AGGIO_HINT_STRLEN], toolong[AGGIO_HINT_STRLEN + 1];
  memset(longest, 'a', sizeof longest - 1);
  longest[sizeof longest - 1] = '\0';
  memset(toolong, 'b', sizeof toolong - 1);
  toolong[sizeof toolong - 1] = '\0';
  expect_ok(k, longest, 0, longest);
  expect_bad(k, toolong);
  /* A smaller canonical buffer limits the length too. */
  char small[4], err[100];
  int64_t num;
  CHECK(aggio__hint_parse_value(k, "abcd", &num, small, sizeof small, err, sizeof err) == -1,
        "string longer than canon_len");
  CHECK(aggio__hint_parse_value(k, "abc", &num, small, sizeof small, err, sizeof err) == 0 &&
            strcmp(small, "abc") == 0,
        "string that just fits");
}

static void test_parse_value_edges(void) {
  int64_t num;
  char canon[AGGIO_HINT_STRLEN], err[8];
  CHECK(aggio__hint_parse_value(AGGIO_HK_INT, NULL, &num, canon, sizeof canon, NULL, 0) == -1,
        "NULL value");
  /* err may be NULL, or short: the message is cut, never overrun. */
  CHECK(aggio__hint_parse_value(AGGIO_HK_SIZE, "zz", &num, canon, sizeof canon, NULL, 0) == -1,
        "NULL err");
  char tiny[4];
  CHECK(aggio__hint_parse_value(AGGIO_HK_SIZE, "1k", &num, tiny, sizeof tiny, NULL, 0) == -1,
        "canonical \"1024\" does not fit in 4 bytes");
  CHECK(aggio__hint_parse_value(AGGIO_HK_SIZE, "999", &num, tiny, sizeof tiny, NULL, 0) == 0 &&
            strcmp(tiny, "999") == 0,
        "canonical text that just fits");
  memset(err, 'x', sizeof err);
  CHECK(aggio__hint_parse_value(AGGIO_HK_SIZE, "zz", &num, canon, sizeof canon, err,
                                sizeof err) == -1 &&
            strlen(err) == sizeof err - 1,
        "short err buffer: \"%s\"", err);
}

/* ---- setting hints ---------------------------------------------------------- */

static void test_set_codes(void) {
  struct aggio__hints h;
  char warn[300];
  aggio__hints_defaults(&h);

  warn[0] = '\0';
  CHECK(aggio__hints_set(&h, "cb_buffer_size", "4m", AGGIO_HS_INFO, warn, sizeof warn) == 0,
        "valid size");
  CHECK(h.cb_buffer_size.num == 4194304 && strcmp(h.cb_buffer_size.str, "4194304") == 0,
        "cb_buffer_size now %s", h.cb_buffer_size.str);
  CHECK(h.cb_buffer_size.set == AGGIO_HS_INFO, "source recorded");
  CHECK(warn[0] == '\0', "no warning on success: %s", warn);

  CHECK(aggio__hints_set(&h, "no_such_hint", "1", AGGIO_HS_INFO, warn, sizeof warn) == 1,
        "unknown key -> 1");
  CHECK(aggio__hints_set(&h, "striping_unit", "1m", AGGIO_HS_FILE, NULL, 0) == 0,
        "NULL warn ok");
  CHECK(h.striping_unit.num == 1048576 && h.striping_unit.set == AGGIO_HS_FILE, "file source");
  CHECK(aggio__hints_set(&h, "romio_cb_write", "auto", AGGIO_HS_ENV, NULL, 0) == 0 &&
            h.cb_write.num == AGGIO_AUTOMATIC && h.cb_write.set == AGGIO_HS_ENV,
        "env source");
  CHECK(aggio__hints_set(&h, "aggio_strategy", "two-phase", AGGIO_HS_ENV, NULL, 0) == 0 &&
            strcmp(h.strategy.str, "two_phase") == 0,
        "strategy canonical");
  CHECK(aggio__hints_set(&h, "aggio_trace", "/tmp/t.trace", AGGIO_HS_INFO, NULL, 0) == 0 &&
            strcmp(h.trace.str, "/tmp/t.trace") == 0,
        "string copied");
  CHECK(aggio__hints_set(&h, "aggio_trace", "", AGGIO_HS_INFO, NULL, 0) == 0 &&
            h.trace.str[0] == '\0',
        "empty trace allowed");
}

static void test_set_malformed_keeps_value(void) {
  struct aggio__hints h;
  char warn[300];
  aggio__hints_defaults(&h);

  warn[0] = '\0';
  CHECK(aggio__hints_set(&h, "cb_buffer_size", "12q", AGGIO_HS_ENV, warn, sizeof warn) == -1,
        "malformed -> -1");
  CHECK(strcmp(warn, "hint cb_buffer_size: \"12q\" is not a size; keeping 16777216") == 0,
        "warning text: %s", warn);
  CHECK(h.cb_buffer_size.num == 16777216 && h.cb_buffer_size.set == AGGIO_HS_DEFAULT,
        "value and source kept");

  CHECK(aggio__hints_set(&h, "cb_buffer_size", "1m", AGGIO_HS_INFO, NULL, 0) == 0, "set 1m");
  CHECK(aggio__hints_set(&h, "cb_buffer_size", "4095", AGGIO_HS_ENV, warn, sizeof warn) == -1,
        "below 4096 -> -1");
  CHECK(strstr(warn, "minimum 4096") && strstr(warn, "keeping 1048576"), "warning: %s", warn);
  CHECK(h.cb_buffer_size.num == 1048576 && h.cb_buffer_size.set == AGGIO_HS_INFO,
        "previous (non-default) value kept");
  CHECK(aggio__hints_set(&h, "cb_buffer_size", "4096", AGGIO_HS_ENV, NULL, 0) == 0 &&
            h.cb_buffer_size.num == 4096,
        "4096 is the minimum");
  CHECK(aggio__hints_set(&h, "cb_buffer_size", "0", AGGIO_HS_ENV, NULL, 0) == -1, "0 buffer");

  CHECK(aggio__hints_set(&h, "cb_config_list", "", AGGIO_HS_INFO, warn, sizeof warn) == -1,
        "empty cb_config_list");
  CHECK(strstr(warn, "keeping \"*:1\"") != NULL, "string kept, quoted: %s", warn);
  CHECK(aggio__hints_set(&h, "cb_config_list", "#weird but non-empty", AGGIO_HS_INFO, NULL,
                         0) == 0,
        "cb_config_list syntax is the planner's business");

  CHECK(aggio__hints_set(&h, "romio_cb_read", "maybe", AGGIO_HS_INFO, warn, sizeof warn) ==
            -1,
        "bad tristate");
  CHECK(strstr(warn, "hint romio_cb_read:") == warn && strstr(warn, "keeping automatic"),
        "tristate warning: %s", warn);
  CHECK(aggio__hints_set(&h, "cb_nodes", "-3", AGGIO_HS_INFO, warn, sizeof warn) == -1 &&
            h.cb_nodes.num == 0,
        "negative int");
  CHECK(aggio__hints_set(&h, "cb_nodes", "3000000000", AGGIO_HS_INFO, warn, sizeof warn) ==
            -1,
        "int overflow");
  CHECK(strstr(warn, "too large") != NULL, "overflow warning: %s", warn);
  CHECK(aggio__hints_set(&h, "cb_nodes", NULL, AGGIO_HS_INFO, warn, sizeof warn) == -1,
        "NULL value");

  char toolong[AGGIO_HINT_STRLEN + 10];
  memset(toolong, 'p', sizeof toolong - 1);
  toolong[sizeof toolong - 1] = '\0';
  CHECK(aggio__hints_set(&h, "aggio_trace", toolong, AGGIO_HS_INFO, warn, sizeof warn) == -1,
        "string too long");
  CHECK(h.trace.str[0] == '\0', "trace kept empty");
}

static void test_set_clears_ignored(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  snprintf(h.striping_factor.ignored, sizeof h.striping_factor.ignored, "no striping here");
  CHECK(aggio__hints_set(&h, "striping_factor", "x", AGGIO_HS_INFO, NULL, 0) == -1 &&
            h.striping_factor.ignored[0] != '\0',
        "malformed set leaves ignored alone");
  CHECK(aggio__hints_set(&h, "striping_factor", "4", AGGIO_HS_INFO, NULL, 0) == 0 &&
            h.striping_factor.ignored[0] == '\0',
        "new value clears ignored");
}

/* The value in effect: a numeric hint not honoured is its default (what
 * aggio applies instead), a text one keeps what was asked. */
static void test_effective(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  const struct aggio__hint_desc *sf = aggio__hint_find("striping_factor");
  const struct aggio__hint_desc *io = aggio__hint_find("aggio_direct_io");
  aggio__hints_set(&h, "striping_factor", "8", AGGIO_HS_INFO, NULL, 0);
  aggio__hints_set(&h, "aggio_direct_io", "enable", AGGIO_HS_INFO, NULL, 0);
  CHECK(strcmp(aggio__hint_effective(sf, &h.striping_factor), "8") == 0,
        "honoured: the value set");
  snprintf(h.striping_factor.ignored, sizeof h.striping_factor.ignored, "no striping");
  snprintf(h.direct_io.ignored, sizeof h.direct_io.ignored, "refused");
  CHECK(strcmp(aggio__hint_effective(sf, &h.striping_factor), "0") == 0,
        "ignored number: the default, %s", aggio__hint_effective(sf, &h.striping_factor));
  CHECK(strcmp(aggio__hint_effective(io, &h.direct_io), "enable") == 0,
        "ignored text: kept, %s", aggio__hint_effective(io, &h.direct_io));
}

/* The SimGrid build's hints: defaults forced quietly, a user's other
 * choice kept visible as ignored, and what needs no forcing left alone. */
static void test_simulated(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  aggio__hints_simulated(&h);
  CHECK(strcmp(h.storage.str, "null") == 0 && h.storage.ignored[0] == '\0',
        "default storage: %s (%s)", h.storage.str, h.storage.ignored);
  CHECK(h.pipeline.num == AGGIO_DISABLE && h.pipeline.ignored[0] == '\0', "pipeline");
  CHECK(h.node_shm.num == AGGIO_DISABLE && strcmp(h.node_shm.str, "disable") == 0, "node_shm");
  CHECK(h.write_behind.num == AGGIO_DISABLE && h.direct_io.num == AGGIO_DISABLE,
        "write_behind, direct_io");
  CHECK(h.strategy.num == AGGIO_STRAT_AUTO && h.strategy.ignored[0] == '\0', "strategy auto");

  aggio__hints_defaults(&h);
  CHECK(aggio__hints_set(&h, "aggio_storage", "posix", AGGIO_HS_INFO, NULL, 0) == 0 &&
            aggio__hints_set(&h, "aggio_pipeline", "enable", AGGIO_HS_ENV, NULL, 0) == 0 &&
            aggio__hints_set(&h, "aggio_strategy", "write_behind", AGGIO_HS_INFO, NULL, 0) == 0 &&
            aggio__hints_set(&h, "aggio_node_shm", "disable", AGGIO_HS_INFO, NULL, 0) == 0,
        "set");
  aggio__hints_simulated(&h);
  CHECK(strcmp(h.storage.str, "null") == 0 && strstr(h.storage.ignored, "asked posix"),
        "storage: %s (%s)", h.storage.str, h.storage.ignored);
  CHECK(h.pipeline.num == AGGIO_DISABLE && strstr(h.pipeline.ignored, "asked enable") &&
            strstr(h.pipeline.ignored, "no I/O threads"),
        "pipeline: %s (%s)", h.pipeline.str, h.pipeline.ignored);
  CHECK(h.strategy.num == AGGIO_STRAT_AUTO && strstr(h.strategy.ignored, "asked write_behind"),
        "strategy: %s (%s)", h.strategy.str, h.strategy.ignored);
  CHECK(h.node_shm.ignored[0] == '\0', "node_shm asked disable: nothing ignored (%s)",
        h.node_shm.ignored);

  aggio__hints_defaults(&h);
  CHECK(aggio__hints_set(&h, "aggio_strategy", "two_phase", AGGIO_HS_INFO, NULL, 0) == 0, "set");
  aggio__hints_simulated(&h);
  CHECK(h.strategy.num == AGGIO_STRAT_TWO_PHASE && h.strategy.ignored[0] == '\0',
        "two_phase stays: %s", h.strategy.str);
  CHECK(aggio__hints_set(&h, "aggio_strategy", "node_local", AGGIO_HS_INFO, NULL, 0) == 0, "set");
  aggio__hints_simulated(&h);
  CHECK(h.strategy.num == AGGIO_STRAT_AUTO && strstr(h.strategy.ignored, "shared memory"),
        "node_local: %s (%s)", h.strategy.str, h.strategy.ignored);
}

/* ROMIO's data-sieving buffer sizes: known keys, ROMIO's defaults, values
 * kept as set (aggio has no such buffer but reports them, as ROMIO does). */
static void test_romio_buffer_keys(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  const struct aggio__hint_desc *rd = aggio__hint_find("ind_rd_buffer_size");
  const struct aggio__hint_desc *wr = aggio__hint_find("ind_wr_buffer_size");
  CHECK(rd && wr && rd->must_match && wr->must_match, "both are hints, same on all ranks");
  CHECK(h.ind_rd_buffer_size.num == 4194304 && h.ind_wr_buffer_size.num == 524288,
        "ROMIO's defaults: %s, %s", h.ind_rd_buffer_size.str, h.ind_wr_buffer_size.str);
  CHECK(aggio__hints_set(&h, "ind_rd_buffer_size", "49", AGGIO_HS_ROMIO_FILE, NULL, 0) == 0 &&
            rd && strcmp(aggio__hint_effective(rd, &h.ind_rd_buffer_size), "49") == 0,
        "49 reported as 49: %s", h.ind_rd_buffer_size.str);
  CHECK(aggio__hints_set(&h, "ind_wr_buffer_size", "1m", AGGIO_HS_INFO, NULL, 0) == 0 &&
            h.ind_wr_buffer_size.num == 1048576,
        "sizes take suffixes: %s", h.ind_wr_buffer_size.str);
}

/* ROMIO's rule: romio_no_indep_rw=true makes romio_cb_read enable, what
 * was asked kept as ignored; romio_cb_write=disable stays (node-local). */
static void test_romio_rules(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  aggio__hints_set(&h, "romio_cb_read", "disable", AGGIO_HS_INFO, NULL, 0);
  aggio__hints_set(&h, "romio_cb_write", "disable", AGGIO_HS_INFO, NULL, 0);
  aggio__hints_romio_rules(&h);
  CHECK(h.cb_read.num == AGGIO_DISABLE && h.cb_read.ignored[0] == '\0',
        "without romio_no_indep_rw, disable stays: %s", h.cb_read.str);
  aggio__hints_set(&h, "romio_no_indep_rw", "true", AGGIO_HS_ROMIO_FILE, NULL, 0);
  aggio__hints_romio_rules(&h);
  CHECK(h.cb_read.num == AGGIO_ENABLE && strcmp(h.cb_read.str, "enable") == 0,
        "romio_no_indep_rw=true: cb_read %s", h.cb_read.str);
  CHECK(strstr(h.cb_read.ignored, "asked disable") &&
            strstr(h.cb_read.ignored, "romio_no_indep_rw=true"),
        "why: %s", h.cb_read.ignored);
  CHECK(h.cb_read.set == AGGIO_HS_INFO, "the source stays MPI_Info");
  CHECK(h.cb_write.num == AGGIO_DISABLE && h.cb_write.ignored[0] == '\0',
        "cb_write=disable stays (node-local): %s", h.cb_write.str);
  aggio__hints_romio_rules(&h);
  CHECK(h.cb_read.num == AGGIO_ENABLE && strstr(h.cb_read.ignored, "asked disable"),
        "applied again (set_info): unchanged, %s", h.cb_read.ignored);
  aggio__hints_defaults(&h);
  aggio__hints_set(&h, "romio_no_indep_rw", "true", AGGIO_HS_INFO, NULL, 0);
  aggio__hints_romio_rules(&h);
  CHECK(h.cb_read.num == AGGIO_AUTOMATIC && h.cb_read.ignored[0] == '\0',
        "automatic is left to the auto rule: %s", h.cb_read.str);
}

/* ---- AGGIO_HINTS ------------------------------------------------------------ */

static int env(const char *spec, const char *path, struct pairs *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  return aggio__hints_parse_env(spec, path, collect, p, err, errlen);
}

static void test_env_basic(void) {
  struct pairs p;
  char err[200] = "junk";
  int rc = env("*:romio_cb_write=enable:cb_nodes=4", "/scratch/out.dat", &p, err, sizeof err);
  CHECK(rc == 0 && err[0] == '\0', "rc %d err %s", rc, err);
  CHECK(p.n == 2 && has_pair(&p, 0, "romio_cb_write", "enable") &&
            has_pair(&p, 1, "cb_nodes", "4"),
        "pairs in order (%d)", p.n);

  rc = env(" * : cb_nodes = 4 : striping_unit= 1m ", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2 && has_pair(&p, 0, "cb_nodes", "4") &&
            has_pair(&p, 1, "striping_unit", "1m"),
        "white space trimmed (%d)", p.n);

  rc = env("", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 0, "empty spec");
  rc = aggio__hints_parse_env(NULL, "f", collect, &p, err, sizeof err);
  CHECK(rc == 0, "NULL spec");
  rc = env("*:a=1,", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1, "trailing comma tolerated");
  rc = env("*:aggio_trace=", "f", &p, err, sizeof err);
  CHECK(rc == 0 && has_pair(&p, 0, "aggio_trace", ""), "empty value delivered");
  rc = env("*:a=1", NULL, &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1, "NULL path: '*' still matches");
}

static void test_env_patterns(void) {
  struct pairs p;
  char err[200];
  const char *spec = "*.h5:striping_factor=8,/scratch/run1/*:cb_nodes=2,"
                     "restart.*:romio_cb_read=disable,*:aggio_stats=true";
  int rc = env(spec, "/scratch/run1/restart.0001", &p, err, sizeof err);
  CHECK(rc == 0, "rc %d: %s", rc, err);
  CHECK(p.n == 3 && has_pair(&p, 0, "cb_nodes", "2") &&
            has_pair(&p, 1, "romio_cb_read", "disable") &&
            has_pair(&p, 2, "aggio_stats", "true"),
        "full path, basename and '*' match; .h5 skipped (%d)", p.n);

  rc = env(spec, "/home/me/data.h5", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2 && has_pair(&p, 0, "striping_factor", "8") &&
            has_pair(&p, 1, "aggio_stats", "true"),
        "basename glob (%d)", p.n);

  rc = env(spec, "relative.h5", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2, "path without directory (%d)", p.n);

  rc = env("out-[0-9]?.dat:cb_nodes=1", "/x/out-42.dat", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1, "bracket and ? globs");
  rc = env("out-[0-9]?.dat:cb_nodes=1", "/x/out-x2.dat", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 0, "bracket glob mismatch");

  /* A '*' in a pattern matches '/' too: "/scratch/" plus '*' covers subdirectories. */
  rc = env("/scratch/*:cb_nodes=1", "/scratch/a/b/c", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1, "'*' crosses '/'");

  /* Order is kept, so a caller applying pairs in order lets the later win. */
  rc = env("*:cb_nodes=2,out*:cb_nodes=6", "/x/out", &p, err, sizeof err);
  CHECK(p.n == 2 && has_pair(&p, 0, "cb_nodes", "2") && has_pair(&p, 1, "cb_nodes", "6"),
        "order preserved");
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  for (int i = 0; i < p.n; i++)
    aggio__hints_set(&h, p.key[i], p.val[i], AGGIO_HS_ENV, NULL, 0);
  CHECK(h.cb_nodes.num == 6, "later entry wins when applied in order");
}

static void test_env_quoting(void) {
  struct pairs p;
  char err[200];
  int rc = env("*:cb_config_list=#*:2#:cb_nodes=8", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2 && has_pair(&p, 0, "cb_config_list", "*:2") &&
            has_pair(&p, 1, "cb_nodes", "8"),
        "'#' quotes ':' (%d, %s)", p.n, err);

  rc = env("*:cb_config_list=#n01:2,n02:*#,*.h5:striping_factor=4", "a.h5", &p, err,
           sizeof err);
  CHECK(rc == 0 && p.n == 2 && has_pair(&p, 0, "cb_config_list", "n01:2,n02:*") &&
            has_pair(&p, 1, "striping_factor", "4"),
        "'#' quotes ',' (%d)", p.n);

  rc = env("*:cb_config_list= #*:*# ,x:a=1", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1 && has_pair(&p, 0, "cb_config_list", "*:*"),
        "space around quotes");

  /* As written at sites: newlines inside the variable. */
  rc = env("path*:cb_config_list=#*:2#\n   :romio_cb_read=enable\n   :cb_nodes=32", "path_x",
           &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 3 && has_pair(&p, 2, "cb_nodes", "32"), "multi-line (%d)", p.n);

  rc = env("*:striping_unit=1m#x", "f", &p, err, sizeof err);
  CHECK(rc == 0 && has_pair(&p, 0, "striping_unit", "1m#x"), "'#' inside a value is text");

  rc = env("*:cb_config_list=#*:2", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 0 && strstr(err, "unterminated"), "unterminated quote: %s", err);

  rc = env("*:cb_config_list=#*:2#x:cb_nodes=3", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 1 && has_pair(&p, 0, "cb_nodes", "3"),
        "text after closing '#' rejected, next pair kept (%d)", p.n);
  CHECK(strstr(err, "closing") != NULL, "err: %s", err);
}

static void test_env_malformed(void) {
  struct pairs p;
  char err[200];
  int rc = env("*:cb_nodes:romio_cb_write=enable", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 1 && has_pair(&p, 0, "romio_cb_write", "enable"),
        "missing '=' (%d)", p.n);
  CHECK(strstr(err, "cb_nodes") && strstr(err, "'='") && strstr(err, "character 3"),
        "err names key and position: %s", err);

  rc = env("*:=4:cb_nodes=2", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 1 && has_pair(&p, 0, "cb_nodes", "2"), "empty key (%d)", p.n);
  CHECK(strstr(err, "empty key") != NULL, "err: %s", err);

  rc = env(":cb_nodes=4,*:cb_nodes=5", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 1 && has_pair(&p, 0, "cb_nodes", "5"),
        "empty pattern: its pairs dropped, next entry kept (%d)", p.n);
  CHECK(strstr(err, "empty pattern") && strstr(err, "entry 1"), "err: %s", err);

  rc = env("*:a=1,justapattern,*:b=2", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 2 && has_pair(&p, 1, "b", "2"), "pattern without pairs");
  CHECK(strstr(err, "entry 2") && strstr(err, "character 7"), "err: %s", err);

  rc = env("*:a=1::b=2:", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 2, "empty fields are errors, pairs kept (%d)", p.n);

  rc = env("*:a=1,,*:b=2", "f", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2, "empty entry skipped");

  /* The first error is the one reported. */
  rc = env("*:x:y", "f", &p, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "\"x\""), "first error kept: %s", err);

  /* Errors are found even in entries that do not match the file. */
  rc = env("nomatch:oops", "f", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 0, "syntax checked when not matching");

  /* A NULL err is allowed. */
  memset(&p, 0, sizeof p);
  CHECK(aggio__hints_parse_env("*:x", "f", collect, &p, NULL, 0) == -1, "NULL err");
}

/* ---- hints files ------------------------------------------------------------ */

static int file(const char *text, struct pairs *p, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  return aggio__hints_parse_file(text, strlen(text), collect, p, err, errlen);
}

static void test_file(void) {
  struct pairs p;
  char err[200] = "junk";
  const char *text = "# site hints\n"
                     "cb_nodes 32\n"
                     "\n"
                     "   \t\n"
                     "  # indented comment\n"
                     "cb_config_list n01,n11,n21:2\n"
                     "striping_unit\t 4m  \r\n"
                     "aggio_trace /tmp/a b c";
  int rc = file(text, &p, err, sizeof err);
  CHECK(rc == 0 && err[0] == '\0', "rc %d: %s", rc, err);
  CHECK(p.n == 4 && has_pair(&p, 0, "cb_nodes", "32") &&
            has_pair(&p, 1, "cb_config_list", "n01,n11,n21:2") &&
            has_pair(&p, 2, "striping_unit", "4m") &&
            has_pair(&p, 3, "aggio_trace", "/tmp/a b c"),
        "pairs (%d)", p.n);

  rc = file("cb_nodes 4\nromio_cb_write\nstriping_factor 2\nlonely\n", &p, err, sizeof err);
  CHECK(rc == -1 && p.n == 2 && has_pair(&p, 1, "striping_factor", "2"),
        "key without value: error, other lines kept (%d)", p.n);
  CHECK(strstr(err, "line 2") && strstr(err, "romio_cb_write"), "first bad line: %s", err);

  rc = file("cb_nodes 4 # four\n", &p, err, sizeof err);
  CHECK(rc == 0 && has_pair(&p, 0, "cb_nodes", "4 # four"),
        "trailing '#' is part of the value, as in ROMIO");

  rc = file("", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 0, "empty file");
  rc = file("\n\n# only comments\n", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 0, "only comments");
  rc = file("a 1\n\nb 2", &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 2, "no final newline");
  CHECK(aggio__hints_parse_file(NULL, 0, collect, &p, err, sizeof err) == 0, "NULL text");
}

/* A NUL byte does not end the file: its line is an error, later lines count;
 * the text need not be NUL-terminated. */
static void test_file_nul_and_length(void) {
  struct pairs p;
  char err[200];
  static const char text[] = "cb_nodes 4\nstriping_unit 1m\0junk\nstriping_factor 2\n";
  memset(&p, 0, sizeof p);
  int rc = aggio__hints_parse_file(text, sizeof text - 1, collect, &p, err, sizeof err);
  CHECK(rc == -1 && strstr(err, "line 2") && strstr(err, "NUL"), "NUL reported: %s", err);
  CHECK(p.n == 2 && has_pair(&p, 0, "cb_nodes", "4") && has_pair(&p, 1, "striping_factor", "2"),
        "the line with the NUL is skipped, the next one applies (%d pairs)", p.n);
  memset(&p, 0, sizeof p);
  char unterminated[] = {'c', 'b', '_', 'n', 'o', 'd', 'e', 's', ' ', '7', 'X'};
  rc = aggio__hints_parse_file(unterminated, 10, collect, &p, err, sizeof err);
  CHECK(rc == 0 && p.n == 1 && has_pair(&p, 0, "cb_nodes", "7"),
        "only len bytes are read (%d pairs)", p.n);
}

/* All three sources applied in precedence order, as open does. */
static void test_precedence(void) {
  struct aggio__hints h;
  struct pairs p;
  char err[200];
  aggio__hints_defaults(&h);
  file("cb_nodes 2\nstriping_unit 1m\nromio_cb_write disable\n", &p, err, sizeof err);
  for (int i = 0; i < p.n; i++)
    aggio__hints_set(&h, p.key[i], p.val[i], AGGIO_HS_FILE, NULL, 0);
  aggio__hints_set(&h, "cb_nodes", "4", AGGIO_HS_INFO, NULL, 0);
  aggio__hints_set(&h, "romio_cb_write", "enable", AGGIO_HS_INFO, NULL, 0);
  env("*:romio_cb_write=automatic", "/x", &p, err, sizeof err);
  for (int i = 0; i < p.n; i++)
    aggio__hints_set(&h, p.key[i], p.val[i], AGGIO_HS_ENV, NULL, 0);
  CHECK(h.striping_unit.num == 1048576 && h.striping_unit.set == AGGIO_HS_FILE, "file");
  CHECK(h.cb_nodes.num == 4 && h.cb_nodes.set == AGGIO_HS_INFO, "info over file");
  CHECK(h.cb_write.num == AGGIO_AUTOMATIC && h.cb_write.set == AGGIO_HS_ENV, "env over info");
  CHECK(h.cb_read.set == AGGIO_HS_DEFAULT, "untouched stays default");
}

int main(void) {
  test_table_matches_list();
  test_defaults();
  test_find_and_slot();
  test_tristate();
  test_bool();
  test_int();
  test_size();
  test_strategy();
  test_string();
  test_parse_value_edges();
  test_set_codes();
  test_set_malformed_keeps_value();
  test_set_clears_ignored();
  test_effective();
  test_simulated();
  test_romio_buffer_keys();
  test_romio_rules();
  test_env_basic();
  test_env_patterns();
  test_env_quoting();
  test_env_malformed();
  test_file();
  test_file_nul_and_length();
  test_precedence();
  return test_summary();
}
