/*
 * file_ops.c - what blocking calls do to the strategies' per-file state,
 * every rank having entered the call: make state whose set-up blocks (an
 * RMA window) at open and when hints change, flush every strategy's held
 * data and agree on it (sync, close, set_size, ...), say at finalize what
 * could not be written; and the size of the file as a rank must see it.  Above the engine and the request scheduler
 * (it runs operations to completion and agrees).
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"
#include "open_files.h"
#include "staging.h"

int aggio__strategy_prepare(aggio_file fh, const struct aggio__strategy_ops *s,
                            struct aggio__err *e) {
  if (!s->setup || aggio__ready(fh, s->id))
    return 0;
  struct aggio__op op;
  struct aggio__stats *stats = fh->obs.stats;
  fh->obs.stats = NULL; /* its time is the calling call's, counted there */
  memset(&op, 0, sizeof op);
  aggio__op_init(&op, fh, 1, 1);
  op.entered = 1; /* the calling blocking call has entered on every rank */
  op.setting_up = s;
  aggio__then(&op, s->setup, AGGIO_P_OPEN);
  aggio__op_wait(&op);
  aggio__op_free(&op);
  fh->obs.stats = stats;
  if (op.err.code != 0)
    *e = op.err;
  return op.err.code;
}

void aggio__strategies_prepare(aggio_file fh) {
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (!s || !s->setup_blocks || !s->setup_blocks(fh) ||
        (fh->strategy != s && !(fh->strategy->id == AGGIO_STRAT_AUTO &&
                                aggio__strategy_auto_may(s->id))))
      continue;
    struct aggio__err e = {0};
    aggio__strategy_prepare(fh, s, &e); /* a failure leaves it unmade: auto avoids it */
  }
}

int aggio__flush_all(aggio_file fh, struct aggio__err *e) {
  int had = e->code != 0;
  aggio__flush_local(fh, e);
  /* what the flush gave is a deferred failure: reported if chosen */
  int64_t mine = !had && e->code ? aggio__err_encode(e->code, fh->rank) : 0;
  aggio__deferred_agreed(fh, mine, aggio__agree_encoded(fh->comm, e));
  fh->coll_end = 0; /* every node's held data is in the file now */
  return e->code;
}

int aggio__flush_store(aggio_file fh, struct aggio__err *e) {
  if (!fh->st.ops->flush)
    return e->code;
  aggio__staging_order(fh, AGGIO_STAGE_POINT_FLUSH, e); /* collective */
  if (e->code == 0)
    fh->st.ops->flush(&fh->st, e);
  return aggio__agree(fh->comm, e);
}

int64_t aggio__report_unwritten(aggio_file fh, FILE *out) {
  int64_t total = 0;
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (!s || !s->unwritten || !aggio__ready(fh, i))
      continue;
    char msg[AGGIO_ERRMSG_LEN];
    int speaker = 0;
    int64_t n = s->unwritten(fh, fh->strategy_state[i], msg, sizeof msg, &speaker);
    if (n > 0 && speaker)
      fprintf(out, "aggio: %s: %lld bytes of collective writes that had returned success "
              "could not be written to the file, which is incomplete: %s\n", fh->path,
              (long long)n, msg);
    total += n;
  }
  return total;
}

int aggio__file_size(aggio_file fh, MPI_Offset *size, struct aggio__err *e) {
  int64_t n = 0, held = 0;
  /* what this rank wrote may still be in its node's cache, or in the
   * cache of another handle of the file; and every rank that took part in
   * a collective write sees at least the end it agreed on, wherever the
   * data waits (fh->coll_end: ROMIO and OMPIO, which write through, show
   * it, and HDF5 compares sizes across ranks).  The caches are asked
   * before the file: bytes an I/O thread writes out between the two
   * questions are then seen by one of them (asked the other way round,
   * the file could answer before the write and the cache after it). */
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (aggio__ready(fh, i) && s->held_end) {
      int64_t end = s->held_end(fh, fh->strategy_state[i]);
      held = end > held ? end : held;
    }
  }
  int64_t twins = aggio__files_twins_end(fh);
  held = twins > held ? twins : held;
  if (aggio__store_size(&fh->st, &n, e) != 0)
    return e->code;
  n = held > n ? held : n;
  int64_t agreed_end = __atomic_load_n(&fh->coll_end, __ATOMIC_RELAXED);
  n = agreed_end > n ? agreed_end : n;
  *size = (MPI_Offset)n;
  return 0;
}
