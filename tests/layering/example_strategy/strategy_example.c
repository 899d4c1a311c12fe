/*
 * strategy_example.c - the strategy docs/architecture.md adds in "Adding a
 * strategy", as tests/layering/add_strategy.cmake adds it to a copy of the
 * sources: this folder (src/strategies/example/) plus one line in
 * src/plan/strategies.def, nothing else.  It runs every collective call as
 * independent I/O and counts the calls it ran in its per-file state, made
 * by a set-up step like any strategy's.
 */
#include <stdlib.h>

#include "engine.h"

struct example_file {
  long calls;
};

static int example_setup(struct aggio__op *op) {
  struct example_file *f = aggio__calloc(op->fh, 1, sizeof *f);
  op->fh->strategy_state[AGGIO_STRAT_EXAMPLE] = f;
  if (!f)
    aggio__op_note(op, AGGIO_ERR_NOMEM, "example set-up");
  return aggio__setup_done(op);
}

static void example_fini(aggio_file fh, void *state) {
  (void)fh;
  free(state);
}

static int example_start(struct aggio__op *op) {
  struct example_file *f = op->fh->strategy_state[AGGIO_STRAT_EXAMPLE];
  f->calls++;
  return aggio__then(op, aggio__independent_io,
                     op->acc.is_write ? AGGIO_P_WRITE : AGGIO_P_READ);
}

const struct aggio__strategy_ops aggio__strategy_example = {
    .name = "example",
    .id = AGGIO_STRAT_EXAMPLE,
    .setup = example_setup,
    .fini = example_fini,
    .start = example_start,
};

/* For the test program: the calls the strategy ran on the file. */
long aggio_example_calls(aggio_file fh);
__attribute__((visibility("default"))) long aggio_example_calls(aggio_file fh) {
  struct example_file *f = fh->strategy_state[AGGIO_STRAT_EXAMPLE];
  return f ? f->calls : -1;
}
