/*
 * test_registry.c - the strategies come from one list (strategies.def):
 * the registry's objects sit at their ids with the list's names, a file's
 * table is the registry's, every
 * spelling the list gives finds its strategy, and through the public API
 * each spelling of aggio_strategy runs that strategy (aggio_strategy_selected
 * after a collective write); an unknown name is set aside (as ROMIO sets
 * aside a malformed hint) with a warning (aggio_hint_warnings) that lists
 * the names it could have been.
 *
 * aggio-test-ranks: 1 2
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "registry.h"

static int rank;
static char path[512];

static void registry_matches_list(void) {
  const struct aggio__strategy_ops *const *reg = aggio__strategy_registry();
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = reg[i];
    const char *name = aggio__strategy_name(i);
    CHECK(s && name, "strategy %d: object %p, name %s", i, (const void *)s, name ? name : "-");
    if (!s || !name)
      continue;
    CHECK(s->id == i, "strategy %s has id %d at position %d", s->name, s->id, i);
    CHECK(strcmp(s->name, name) == 0, "position %d: object %s, list %s", i, s->name, name);
    CHECK(aggio__strategy_lookup(name, (int)strlen(name)) == i, "lookup of %s", name);
    CHECK(strstr(aggio__strategy_names(), name) != NULL, "%s missing from the names \"%s\"",
          name, aggio__strategy_names());
  }
  CHECK(aggio__strategy_lookup("Two-Phase", 9) == AGGIO_STRAT_TWO_PHASE, "spellings, any case");
  CHECK(aggio__strategy_lookup("two_phasex", 10) == -1, "an unknown name");
  CHECK(!aggio__strategy_auto_may(AGGIO_STRAT_AUTO) &&
            aggio__strategy_auto_may(AGGIO_STRAT_TWO_PHASE),
        "auto chooses strategies, not itself");
}

/* Opens with aggio_strategy=spelling, writes collectively, and returns the
 * strategy the write ran (aggio_strategy_selected) in sel and the warnings
 * about malformed hints (aggio_hint_warnings) in ign. */
static int run_with(const char *spelling, char *sel, char *ign, int len) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", spelling);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  if (rc != 0)
    return rc;
  CHECK(fh->strategies == aggio__strategy_registry() &&
            aggio__strategy_at(fh, AGGIO_NSTRATEGIES) == NULL &&
            aggio__strategy_at(fh, -1) == NULL,
        "the file's table is the registry's, and ids out of range give no strategy");
  char buf[64];
  memset(buf, 'a' + rank, sizeof buf);
  rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * 64, buf, 64, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_Info used;
  int flag = 0;
  sel[0] = ign[0] = '\0';
  if (rc == 0 && aggio_file_get_info(fh, &used) == 0) {
    MPI_Info_get(used, "aggio_strategy_selected", len - 1, sel, &flag);
    MPI_Info_get(used, "aggio_hint_warnings", len - 1, ign, &flag);
    MPI_Info_free(&used);
  }
  int crc = aggio_file_close(&fh);
  return rc ? rc : crc;
}

static void every_spelling_runs(void) {
  static const struct {
    const char *spelling, *runs;
  } cases[] = {{"independent", "independent"}, {"two-phase", "two_phase"},
               {"twophased", NULL},            {"TwoPhase", "two_phase"},
               {"write-behind", "write_behind"}, {"node_local", "node_local"}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char sel[MPI_MAX_INFO_VAL + 1], ign[MPI_MAX_INFO_VAL + 1];
    int rc = run_with(cases[k].spelling, sel, ign, (int)sizeof sel);
    CHECK(rc == 0, "aggio_strategy=%s: %s", cases[k].spelling, aggio_error_message());
    if (!cases[k].runs) { /* not a name of the list: a warning */
      CHECK(strstr(ign, "aggio_strategy") && strstr(ign, "two_phase") &&
                strstr(ign, "node_local"),
            "aggio_strategy=%s: no warning names the hint and the strategies: \"%s\"",
            cases[k].spelling, ign);
      continue;
    }
    CHECK(strcmp(sel, cases[k].runs) == 0, "aggio_strategy=%s ran %s, not %s",
          cases[k].spelling, sel, cases[k].runs);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/registry.%d", test_dir(), id);
  registry_matches_list();
  every_spelling_runs();
  return test_finish_mpi(path);
}
