/*
 * one_round.c - a collective call that the file's history predicts to run
 * independently (plan/one_round.h) does its I/O before its summary, and
 * the summary then carries the outcome: one agreement instead of two.
 *
 * Why it is safe whatever the other ranks guessed (docs/engine.md, "One
 * round"): the summary carries each rank's error after its I/O, and a flag
 * set by every rank that did no I/O first; every rank computes the same
 * choice from it, and then
 *   - every rank's I/O ran first and the call runs independently, with
 *     nothing another strategy holds to write out first: the summary's
 *     error (and end of file, for reads) is the agreed outcome: done;
 *   - it runs independently but some ranks' I/O did not run first: those
 *     do it now, and all agree on the outcome, as any independent call;
 *   - it does not run independently (another strategy, or held data first
 *     goes to the file): the call goes on as any, and the I/O that ran
 *     first runs again within it (the same bytes: for a write, the file
 *     holds them twice over in turn, and held data written out in between
 *     is covered again; for a read, the buffer is filled again).
 * Every rank makes the same collectives in each case: the rounds are the
 * summary, and then the strategy's, as without the guess.  The I/O itself
 * is the data path's step (independent_io.c, aggio__step_io_first), which
 * call.c puts before the summary when aggio__one_round_guess says so.
 * Only blocking calls guess (a non-blocking call's I/O belongs on the I/O
 * threads), and not in atomic mode (where the independent path locks).
 */
#include "engine.h"

static struct aggio__call_shape shape_of(const struct aggio__op *op) {
  return (struct aggio__call_shape){.is_write = op->acc.is_write,
                                    .bytes = op->acc.nbytes,
                                    .pieces = (int64_t)op->acc.file.n};
}

static int may_guess(const struct aggio__op *op) {
  aggio_file fh = op->fh;
  return op->blocking && !op->merge && op->err.code == 0 && !fh->atomic && fh->st.opened &&
         fh->hints.one_round.num != AGGIO_DISABLE;
}

static void count(aggio_file fh, int counter) {
  if (fh->obs.stats)
    fh->obs.stats->c[counter]++;
}

int aggio__one_round_guess(const struct aggio__op *op) {
  struct aggio__call_shape now = shape_of(op);
  if (!may_guess(op) || !aggio__one_round_predict(&op->fh->one_round, &now))
    return 0;
  count(op->fh, AGGIO_C_IO_FIRST);
  return 1;
}

int aggio__one_round_after(struct aggio__op *op, int flush) {
  aggio_file fh = op->fh;
  int independent = op->strategy->id == AGGIO_STRAT_INDEPENDENT && !flush;
  struct aggio__call_shape now = shape_of(op);
  aggio__one_round_learn(&fh->one_round, &now, independent, op->io_first && !independent);
  if (!op->io_first)
    return AGGIO_ONE_ROUND_ON;
  if (!independent) { /* the strategy runs the I/O again, from the start */
    op->io_first = 0;
    op->eof = INT64_MAX;
    count(fh, AGGIO_C_ONE_ROUND_REDONE);
    return AGGIO_ONE_ROUND_ON;
  }
  if (op->sum.flags & AGGIO_SF_NOT_IO_FIRST)
    return AGGIO_ONE_ROUND_AGREE;
  if (op->sum.eof < op->eof)
    op->eof = op->sum.eof;
  count(fh, AGGIO_C_ONE_ROUND);
  return AGGIO_ONE_ROUND_DONE;
}
