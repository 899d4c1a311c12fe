/*
 * test_cray.c - unit tests of the Cray/ROMIO environment (no MPI):
 * MPICH_MPIIO_HINTS as Cray applies it (first matching entry, unquoted
 * cb_config_list), the seeds' hint strings parsed to the intended settings
 * and write path (aggio__select_write_path), cray_cb_nodes_multiplier
 * (aggio__cb_multiply, then the aggregators it gives), the lock-mode
 * hints' values and their "ignored" reasons off Lustre, and the order of
 * the hint sources.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "hints.h"
#include "lustre_lock.h"
#include "plan.h"

/* ---- helpers ---------------------------------------------------------------- */

/* Applies every pair a parser reports to the hints, counting failures. */
struct apply {
  struct aggio__hints h;
  enum aggio__hint_source source;
  int pairs, bad, unknown;
};

static void apply_pair(void *ctx, const char *key, const char *value) {
  struct apply *a = ctx;
  char warn[256];
  int rc = aggio__hints_set(&a->h, key, value, a->source, warn, sizeof warn);
  a->pairs++;
  a->bad += rc < 0;
  a->unknown += rc > 0;
}

/* Parses `spec` as MPICH_MPIIO_HINTS for `path` on top of the defaults. */
static int cray(const char *spec, const char *path, struct apply *a, char *err, size_t errlen) {
  memset(a, 0, sizeof *a);
  aggio__hints_defaults(&a->h);
  a->source = AGGIO_HS_CRAY;
  return aggio__hints_parse_cray(spec, path, apply_pair, a, err, errlen);
}

/* ---- MPICH_MPIIO_HINTS ---------------------------------------------------- */

static void test_first_match_wins(void) {
  struct apply a;
  char err[200];
  const char *spec = "*.h5:cb_nodes=2:striping_factor=8,*:cb_nodes=4:romio_cb_read=enable";
  CHECK(cray(spec, "/lus/run/out.h5", &a, err, sizeof err) == 0, "parse: %s", err);
  CHECK(a.h.cb_nodes.num == 2 && a.h.striping_factor.num == 8, "first entry applied");
  CHECK(a.h.cb_read.set == AGGIO_HS_DEFAULT, "second matching entry not applied (Cray)");
  CHECK(a.pairs == 2, "only the first entry's pairs (%d)", a.pairs);

  CHECK(cray(spec, "/lus/run/out.dat", &a, err, sizeof err) == 0, "parse: %s", err);
  CHECK(a.h.cb_nodes.num == 4 && a.h.cb_read.num == AGGIO_ENABLE && a.pairs == 2,
        "a file the first pattern misses takes the next one");
  CHECK(a.h.cb_nodes.set == AGGIO_HS_CRAY, "source recorded as MPICH_MPIIO_HINTS");

  /* AGGIO_HINTS keeps its own rule: every matching entry, later wins. */
  memset(&a, 0, sizeof a);
  aggio__hints_defaults(&a.h);
  a.source = AGGIO_HS_ENV;
  CHECK(aggio__hints_parse_env(spec, "/lus/run/out.h5", apply_pair, &a, err, sizeof err) == 0 &&
            a.pairs == 4 && a.h.cb_nodes.num == 4,
        "AGGIO_HINTS applies every matching entry (%d pairs)", a.pairs);

  /* Entries after the first match are still checked for syntax. */
  CHECK(cray("*:cb_nodes=2,*:oops", "f", &a, err, sizeof err) == -1 && a.h.cb_nodes.num == 2,
        "syntax error after the match reported, match kept");
}

static void test_unquoted_cb_config_list(void) {
  struct apply a;
  char err[200];
  CHECK(cray("*:cb_config_list=*:8", "f", &a, err, sizeof err) == 0, "parse: %s", err);
  CHECK(strcmp(a.h.cb_config_list.str, "*:8") == 0, "cb_config_list \"%s\"",
        a.h.cb_config_list.str);

  CHECK(cray("*:cb_config_list=*:8:romio_cb_write=enable:cb_nodes=16", "f", &a, err,
             sizeof err) == 0, "parse: %s", err);
  CHECK(strcmp(a.h.cb_config_list.str, "*:8") == 0 && a.h.cb_write.num == AGGIO_ENABLE &&
            a.h.cb_nodes.num == 16 && a.pairs == 3,
        "value continues, next pairs kept (\"%s\", %d pairs)", a.h.cb_config_list.str, a.pairs);

  CHECK(cray("*:cb_config_list=*:*,x*:cb_nodes=1", "f", &a, err, sizeof err) == 0 &&
            strcmp(a.h.cb_config_list.str, "*:*") == 0,
        "continuation ends at ','");

  CHECK(cray("*:cb_config_list=#*:4#:cb_nodes=2", "f", &a, err, sizeof err) == 0 &&
            strcmp(a.h.cb_config_list.str, "*:4") == 0 && a.h.cb_nodes.num == 2,
        "the quoted form still works");

  /* Only cb_config_list continues: a stray field elsewhere is an error. */
  CHECK(cray("*:romio_cb_write=enable:8", "f", &a, err, sizeof err) == -1 &&
            strstr(err, "\"8\""),
        "no continuation after other keys: %s", err);
  CHECK(cray("*:cb_config_list=#*:2#:4", "f", &a, err, sizeof err) == -1,
        "no continuation after a quoted value");
}

/* ---- the seeds' strings ------------------------------------------------------- */

static void test_seed_local_aggregation(void) {
  struct apply a;
  char err[200], why[200];
  /* HPE seed, local aggregation as collective buffering (Cray MPICH). */
  const char *seed = "*:romio_cb_write=disable:cray_nocb_write_lock_mode=1:"
                     "romio_cb_read=disable:romio_ds_write=disable:romio_no_indep_rw=true";
  CHECK(cray(seed, "/lus/flash/ior.dat", &a, err, sizeof err) == 0, "parse: %s", err);
  CHECK(a.pairs == 5 && a.bad == 0 && a.unknown == 0, "5 known pairs (%d, %d bad, %d unknown)",
        a.pairs, a.bad, a.unknown);
  CHECK(a.h.cb_write.num == AGGIO_DISABLE && a.h.cb_read.num == AGGIO_DISABLE,
        "collective buffering off");
  CHECK(a.h.cray_nocb_write_lock_mode.num == 1, "group lock for writes without cb");
  CHECK(a.h.ds_write.num == AGGIO_DISABLE && a.h.no_indep_rw.num == 1, "ds off, no indep rw");
  int path = aggio__select_write_path(&a.h, why, sizeof why);
  CHECK(path == AGGIO_PATH_NODE_LOCAL, "node-local writing (%d: %s)", path, why);
  CHECK(strstr(why, "romio_no_indep_rw") != NULL, "why: %s", why);
}

static void test_seed_variants(void) {
  struct apply a;
  char err[200];
  /* The same run with collective buffering on: Cray's default path. */
  CHECK(cray("*:romio_cb_write=enable:cray_cb_write_lock_mode=1:cray_cb_nodes_multiplier=2",
             "f", &a, err, sizeof err) == 0 && a.bad == 0, "parse: %s", err);
  CHECK(a.h.cray_cb_write_lock_mode.num == 1 && a.h.cray_cb_nodes_multiplier.num == 2,
        "lock mode and multiplier");
  CHECK(aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_TWO_PHASE, "two-phase");

  /* Lock ahead. */
  CHECK(cray("*:cray_cb_write_lock_mode=2", "f", &a, err, sizeof err) == 0 &&
            a.h.cray_cb_write_lock_mode.num == 2 &&
            aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_AUTO,
        "lock ahead does not choose a path");

  /* Collective buffering off, independent writes allowed: every rank writes. */
  CHECK(cray("*:romio_cb_write=disable:romio_ds_write=disable", "f", &a, err, sizeof err) == 0 &&
            aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_INDEPENDENT,
        "independent");

  /* romio_no_indep_rw alone: only aggregators open, collective buffering. */
  CHECK(cray("*:romio_no_indep_rw=true", "f", &a, err, sizeof err) == 0 &&
            aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_TWO_PHASE,
        "no_indep_rw alone is two-phase");

  /* The explicit strategy wins over every combination. */
  CHECK(cray("*:romio_cb_write=disable:romio_no_indep_rw=true:aggio_strategy=two_phase", "f",
             &a, err, sizeof err) == 0 &&
            aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_TWO_PHASE,
        "aggio_strategy decides");
  CHECK(cray("*:aggio_write_behind=enable", "f", &a, err, sizeof err) == 0 &&
            aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_WRITE_BEHIND,
        "write-behind");
  aggio__hints_defaults(&a.h);
  CHECK(aggio__select_write_path(&a.h, NULL, 0) == AGGIO_PATH_AUTO, "defaults: auto");

  /* ORNL seed: eight aggregators per node, as MPICH_MPIIO_HINTS writes it
   * unquoted, and in a ROMIO_HINTS file. */
  CHECK(cray("*:cb_config_list=*:8", "f", &a, err, sizeof err) == 0 &&
            strcmp(a.h.cb_config_list.str, "*:8") == 0,
        "cb_config_list *:8 from MPICH_MPIIO_HINTS");
  const char *file = "# ORNL: eight aggregators per node\ncb_config_list *:8\n"
                     "romio_cb_write enable\n";
  memset(&a, 0, sizeof a);
  aggio__hints_defaults(&a.h);
  a.source = AGGIO_HS_ROMIO_FILE;
  CHECK(aggio__hints_parse_file(file, strlen(file), apply_pair, &a, err, sizeof err) == 0 &&
            strcmp(a.h.cb_config_list.str, "*:8") == 0 && a.h.cb_write.num == AGGIO_ENABLE &&
            a.h.cb_config_list.set == AGGIO_HS_ROMIO_FILE,
        "the same in a ROMIO_HINTS file");
}

static void test_cray_values(void) {
  struct aggio__hints h;
  char warn[256];
  aggio__hints_defaults(&h);
  CHECK(h.cray_cb_nodes_multiplier.num == 1 && h.cray_cb_write_lock_mode.num == 0 &&
            h.cray_nocb_write_lock_mode.num == 0,
        "defaults: multiplier 1, normal locking");
  CHECK(aggio__hints_set(&h, "cray_cb_write_lock_mode", "3", AGGIO_HS_INFO, warn,
                         sizeof warn) == -1 && strstr(warn, "lock ahead") &&
            h.cray_cb_write_lock_mode.num == 0,
        "mode 3 refused, value kept: %s", warn);
  CHECK(aggio__hints_set(&h, "cray_nocb_write_lock_mode", "2", AGGIO_HS_INFO, warn,
                         sizeof warn) == 0 && h.cray_nocb_write_lock_mode.num == 2,
        "mode 2 accepted");
  CHECK(aggio__hints_set(&h, "cray_cb_nodes_multiplier", "0", AGGIO_HS_INFO, warn,
                         sizeof warn) == -1 && h.cray_cb_nodes_multiplier.num == 1,
        "multiplier 0 refused: %s", warn);
}

/* ---- the multiplier ------------------------------------------------------------- */

static void expect_multiply(const char *config, int cb_nodes, int mult, int nprocs,
                            const char *want, int want_cb) {
  char out[256], err[200] = "";
  int cb = -7;
  int rc = aggio__cb_multiply(config, cb_nodes, mult, nprocs, out, sizeof out, &cb, err,
                              sizeof err);
  CHECK(rc == 0 && strcmp(out, want) == 0 && cb == want_cb,
        "\"%s\" x%d (cb_nodes %d, %d ranks): rc %d \"%s\" cb_nodes %d, want \"%s\" %d (%s)",
        config, mult, cb_nodes, nprocs, rc, out, cb, want, want_cb, err);
}

static void test_multiplier(void) {
  expect_multiply("*:1", 0, 1, 64, "*:1", 0);
  expect_multiply("*:1", 0, 4, 64, "*:4", 0);
  expect_multiply("*", 8, 2, 64, "*:2", 16);
  expect_multiply("*:*", 0, 3, 64, "*:*", 0);
  expect_multiply("n01:2,n02, *:1", 0, 3, 64, "n01:6,n02:3,*:3", 0);
  expect_multiply("*:8", 12, 4, 16, "*:16", 16); /* capped by the ranks */
  char out[8], err[200];
  int cb;
  CHECK(aggio__cb_multiply("*:x", 0, 2, 4, out, sizeof out, &cb, err, sizeof err) == -1 &&
            strstr(err, "bad entry"),
        "malformed list: %s", err);
  CHECK(aggio__cb_multiply("node0001:2", 0, 2, 4, out, sizeof out, &cb, err, sizeof err) == -1,
        "too long for the output");

  /* What the multiplied list selects: 2 nodes x 4 ranks, one aggregator
   * per node times 2 gives two per node, spread over each node's ranks. */
  int node_of_rank[8] = {0, 0, 0, 0, 1, 1, 1, 1}, aggr[8], naggr = 0;
  const char *names[2] = {"a", "b"};
  char cfg[64];
  CHECK(aggio__cb_multiply("*:1", 0, 2, 8, cfg, sizeof cfg, &cb, err, sizeof err) == 0, "x2");
  CHECK(aggio__select_aggregators(8, node_of_rank, 2, names, cfg, cb, aggr, &naggr, err,
                                  sizeof err) == 0 && naggr == 4,
        "4 aggregators (%d)", naggr);
  CHECK(naggr == 4 && aggr[0] == 0 && aggr[1] == 2 && aggr[2] == 4 && aggr[3] == 6,
        "two per node, spread: %d %d %d %d", aggr[0], aggr[1], aggr[2], aggr[3]);
  /* cb_nodes=1 (Cray's "*:*" rule) times 3: three aggregators, nodes taking turns. */
  CHECK(aggio__cb_multiply("*:*", 1, 3, 8, cfg, sizeof cfg, &cb, err, sizeof err) == 0 &&
            cb == 3 &&
            aggio__select_aggregators(8, node_of_rank, 2, names, cfg, cb, aggr, &naggr, err,
                                      sizeof err) == 0 && naggr == 3,
        "cb_nodes multiplied (%d aggregators)", naggr);
}

/* ---- lock modes off Lustre -------------------------------------------------------- */

static void test_lock_modes_marked(void) {
  struct aggio__hints h;
  aggio__hints_defaults(&h);
  CHECK(aggio__lock_modes_mark(&h, "ext4") == 0 && !h.cray_cb_write_lock_mode.ignored[0],
        "mode 0 is never ignored");
  aggio__hints_set(&h, "cray_cb_write_lock_mode", "1", AGGIO_HS_CRAY, NULL, 0);
  aggio__hints_set(&h, "cray_nocb_write_lock_mode", "2", AGGIO_HS_CRAY, NULL, 0);
  CHECK(aggio__lock_modes_mark(&h, "ext4") == 0, "no group lock off Lustre");
  CHECK(strstr(h.cray_cb_write_lock_mode.ignored, "needs Lustre") &&
            strstr(h.cray_nocb_write_lock_mode.ignored, "needs Lustre"),
        "ignored: needs Lustre (\"%s\", \"%s\")", h.cray_cb_write_lock_mode.ignored,
        h.cray_nocb_write_lock_mode.ignored);
  CHECK(h.cray_cb_write_lock_mode.num == 1, "the value stays");

  aggio__hints_set(&h, "cray_cb_write_lock_mode", "1", AGGIO_HS_CRAY, NULL, 0);
  int lock = aggio__lock_modes_mark(&h, "lustre");
  if (aggio__lustre_locks_built()) {
    CHECK(lock == 1 && !h.cray_cb_write_lock_mode.ignored[0], "group lock on Lustre");
  } else {
    CHECK(lock == 0 && strstr(h.cray_cb_write_lock_mode.ignored, "needs Lustre") &&
              strstr(h.cray_cb_write_lock_mode.ignored, "headers"),
          "built without Lustre headers: %s", h.cray_cb_write_lock_mode.ignored);
    CHECK(aggio__lustre_group_lock(0, 1, 1) == ENOTSUP, "no ioctl in this build");
  }
  CHECK(strstr(h.cray_nocb_write_lock_mode.ignored, "lock ahead") ||
            strstr(h.cray_nocb_write_lock_mode.ignored, "needs Lustre"),
        "lock ahead on Lustre says why: %s", h.cray_nocb_write_lock_mode.ignored);
  CHECK(aggio__lustre_group_id("/lus/a") == aggio__lustre_group_id("/lus/a") &&
            aggio__lustre_group_id("/lus/a") != 0,
        "group id: the same for one path, never 0");
}

/* ---- sources ---------------------------------------------------------------------- */

static void test_source_order(void) {
  static const char *const want[] = {"default", "ROMIO_HINTS", "AGGIO_HINTS_FILE", "MPI_Info",
                                     "MPICH_MPIIO_HINTS", "AGGIO_HINTS"};
  CHECK(AGGIO_HS_COUNT == 6, "six sources");
  for (int i = 0; i < AGGIO_HS_COUNT; i++)
    CHECK(strcmp(aggio__hint_source_name(i), want[i]) == 0, "source %d: %s", i,
          aggio__hint_source_name(i));
  CHECK(strcmp(aggio__hint_source_name(99), "default") == 0, "unknown source");
  CHECK(AGGIO_HS_ROMIO_FILE < AGGIO_HS_FILE && AGGIO_HS_FILE < AGGIO_HS_INFO &&
            AGGIO_HS_INFO < AGGIO_HS_CRAY && AGGIO_HS_CRAY < AGGIO_HS_ENV,
        "precedence order");
}

int main(void) {
  test_first_match_wins();
  test_unquoted_cb_config_list();
  test_seed_local_aggregation();
  test_seed_variants();
  test_cray_values();
  test_multiplier();
  test_lock_modes_marked();
  test_source_order();
  return test_summary();
}
