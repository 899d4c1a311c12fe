/*
 * strategy_independent.c - the reference strategy: collective calls behave
 * like independent ones, every rank issuing its own reads and writes.
 *
 * Read this file first when writing a new strategy.  A strategy receives one
 * rank's access (struct aggio__access: sorted file ranges plus a contiguous
 * data stream of the same length) and must:
 *   - move the bytes (writes: stream -> file; reads: file -> stream, with
 *     zeros past end of file);
 *   - move nothing when any rank's arguments were bad (acc->prep_error on
 *     that rank): the strategy's first collective must carry that error;
 *   - return this rank's outcome, and never leave a peer waiting: if it
 *     communicates, it completes every exchange even after a local failure.
 *     The caller (io.c) agrees on the outcome across ranks afterwards.
 * This one's only collective is that first agreement.  It is the
 * right choice when each rank's accesses are large and contiguous: then it is
 * file-per-process I/O into one file, and O_DIRECT takes it to the device.
 */
#include "internal.h"

static int independent_all(aggio_file fh, struct aggio__access *acc,
                           struct aggio__err *e) {
  /* A collective call: if any rank's arguments were bad, no rank writes. */
  if (aggio__agree(fh->comm, e) != 0)
    return e->code;
  if (fh->fd < 0 && acc->nbytes > 0) /* romio_no_indep_rw: file not open here */
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: the independent "
                       "strategy cannot run with romio_no_indep_rw=true", fh->rank);
  return aggio__independent_rw(fh, acc, e);
}

const struct aggio__strategy_ops aggio__strategy_independent = {
    .name = "independent",
    .write_all = independent_all,
    .read_all = independent_all,
};

/* For auto, which has already agreed on the arguments. */
int aggio__independent_agreed(aggio_file fh, struct aggio__access *acc,
                              struct aggio__err *e) {
  if (fh->fd < 0 && acc->nbytes > 0)
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: the independent "
                       "strategy cannot run with romio_no_indep_rw=true", fh->rank);
  return aggio__independent_rw(fh, acc, e);
}
