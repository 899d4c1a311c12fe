/*
 * strategy_independent.c - the reference strategy: a collective call
 * behaves like independent ones, every rank reading and writing its own
 * ranges: the data path every independent call takes
 * (src/core/independent_io.c).
 *
 * Read this file first when writing a new strategy.  The engine (engine.h)
 * hands `start` an operation whose arguments every rank has agreed on (one
 * reduction of a summary: no rank gets here when another's arguments were
 * bad), and the strategy then:
 *   - sets op->next to its first step, each step a small function that
 *     posts work (collectives through aggio__op_allreduce and friends,
 *     messages into aggio__op_request, file I/O through the storage edge or
 *     the I/O pool) and names the step that continues once that work
 *     completes, returning AGGIO_STEP_PENDING, or AGGIO_STEP_NEXT to run
 *     the next step at once;
 *   - moves the bytes: writes stream -> file; reads file -> stream,
 *     stopping at end of file (bytes past it stay as the user left them:
 *     aggio__op_saw_eof records where the file ended);
 *   - never leaves a peer waiting: after a local failure (aggio__op_note)
 *     it still completes every exchange peers expect;
 *   - ends with aggio__step_agree_outcome, so that every rank returns the
 *     same outcome (a strategy that keeps data between calls, like
 *     write-behind, may return earlier and report failures at the next
 *     collective call instead).
 * This strategy has no per-file state, no exchange and nothing to flush:
 * its table below leaves those slots NULL.  It is the right choice when each
 * rank's requests are large: then it is file-per-process I/O into one file.
 */
#include "engine.h"

static int independent_start(struct aggio__op *op) {
  aggio_file fh = op->fh;
  if (!fh->st.opened && op->acc.nbytes > 0) /* romio_no_indep_rw: file not open here */
    aggio__fail(&op->err, AGGIO_ERR_UNSUPPORTED, "rank %d: the independent strategy "
                "cannot run with romio_no_indep_rw=true", fh->rank);
  return aggio__then(op, aggio__independent_io,
                     op->acc.is_write ? AGGIO_P_WRITE : AGGIO_P_READ);
}

const struct aggio__strategy_ops aggio__strategy_independent = {
    .name = "independent",
    .id = AGGIO_STRAT_INDEPENDENT,
    .start = independent_start,
};
