/*
 * strategy_write_behind.c - collective writes that return once their data
 * is in the node cache (cache.h), and collective reads served from it.
 *
 * IO-500's ior-hard writes one 47008-byte record per rank per collective
 * call, thousands of calls.  Handling each call alone means one small
 * write per call and per aggregator; here consecutive calls' data
 * accumulates in the cache's blocks, and a block is written when it is
 * whole: one large aligned write (direct I/O where the file system allows
 * it), by the aggregators' I/O threads while the application goes on.
 * Reads load whole blocks, and the blocks after them ahead of the reader.
 *
 * A write costs one reduction (the summary, which also reports any earlier
 * deferred failure) and a copy into shared memory; it does not agree on its
 * own outcome: a block that fails to reach the file later is reported by
 * the next collective call, sync or close on every rank
 * (docs/strategies.md, "When write-behind reports errors").  MPI's consistency rules are kept by the
 * hooks below: sync, close, set_size, atomic mode and a switch to another
 * strategy flush the cache (engine.c, file.c); an independent access first
 * flushes or forgets the blocks it touches on its own node; a collective
 * write forgets the other nodes' loaded copies of the range it writes.
 */
#include <stdlib.h>

#include "cache.h"
#include "engine.h"

struct wb_file {
  struct aggio__cache *cache;
  int64_t blocking_writes; /* blocking collective writes through the cache
                            * (the same count on every rank) */
};

/* More than one cache holds this file's data: one per node, or one per
 * rank without shared memory. */
static int several_caches(aggio_file fh) {
  return fh->hints.node_shm.num == AGGIO_DISABLE ? fh->nprocs > 1 : fh->topo.nnodes > 1;
}

static struct aggio__cache *cache_of(aggio_file fh) {
  struct wb_file *f = fh->strategy_state[AGGIO_STRAT_WRITE_BEHIND];
  return f ? f->cache : NULL;
}

struct aggio__cache *aggio__write_behind_cache(aggio_file fh) {
  return aggio__ready(fh, AGGIO_STRAT_WRITE_BEHIND) ? cache_of(fh) : NULL;
}

/* ---- per-file state ----------------------------------------------------------------- */

/* Aggregators of this rank's node; 0 when none was chosen there. */
static int node_aggregators(aggio_file fh) {
  int n = 0;
  for (int i = 0; i < fh->topo.naggr; i++)
    n += fh->topo.node_of_rank[fh->topo.aggr[i]] == fh->topo.node_of_rank[fh->rank];
  return n;
}

/* The I/O threads run in the node's aggregators (or in the node's first
 * rank when cb_config_list chose none there). */
static int is_host(aggio_file fh, int naggr_here) {
  if (fh->hints.node_shm.num == AGGIO_DISABLE)
    return 1; /* a cache of one rank */
  if (naggr_here > 0)
    return fh->topo.my_aggr_index >= 0;
  int me;
  MPI_Comm_rank(fh->topo.node_comm, &me);
  return me == 0;
}

static int wb_window(struct aggio__op *op);

static void wb_fini(aggio_file fh, void *state) {
  struct wb_file *f = state;
  (void)fh;
  if (!f)
    return;
  aggio__cache_free(f->cache);
  free(f);
}

/* The cache of this rank's node (or its own, without shared memory): its
 * memory agreed first (a rank without it could not take part in making
 * the window), then the window in non-blocking steps (cache.h); the
 * engine agrees on the outcome afterwards. */
static int wb_setup(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct wb_file *f = aggio__calloc(fh, 1, sizeof *f);
  fh->strategy_state[AGGIO_STRAT_WRITE_BEHIND] = f;
  int naggr_here = node_aggregators(fh);
  int64_t per_aggr = fh->hints.write_behind_size.num > 0 ? fh->hints.write_behind_size.num
                                                         : 2 * fh->hints.cb_buffer_size.num;
  int64_t budget = per_aggr * (naggr_here > 0 ? naggr_here : 1);
  int64_t block, hdr_fixed, hdr_per_slot;
  int nslots, nranks = 1;
  if (fh->hints.node_shm.num != AGGIO_DISABLE)
    MPI_Comm_size(fh->topo.node_comm, &nranks);
  aggio__cache_header(nranks, &hdr_fixed, &hdr_per_slot);
  aggio__cache_geometry(budget, fh->hints.striping_unit.num, fh->st.dio_align, hdr_fixed,
                        hdr_per_slot, &block, &nslots);
  if (f)
    f->cache = aggio__cache_alloc(fh, block, nslots, is_host(fh, naggr_here),
                                  1e-3 * (double)fh->hints.write_behind_delay.num);
  if (!f || !f->cache)
    aggio__op_note(op, AGGIO_ERR_NOMEM, "write-behind set-up");
  return aggio__op_agree_then(op, wb_window, AGGIO_P_PLAN);
}

static int wb_window(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct wb_file *f = fh->strategy_state[AGGIO_STRAT_WRITE_BEHIND];
  MPI_Comm comm =
      fh->hints.node_shm.num == AGGIO_DISABLE ? MPI_COMM_SELF : fh->topo.node_comm;
  return aggio__cache_make_window(op, f->cache, comm, aggio__setup_done);
}

/* ---- writes -------------------------------------------------------------------------- */

/* Time the step spent waiting for blocks counts as waiting for I/O. */
static void lend_waits(struct aggio__op *op, struct aggio__cache *c) {
  aggio__op_reassign(op, AGGIO_P_IO_WAIT, aggio__cache_take_waited(c));
}

/* Where a write stands in its ranges: a non-blocking one copies what fits
 * and goes on when the node's I/O threads free blocks. */
struct wb_cursor {
  size_t i;      /* range */
  int64_t done;  /* bytes of it copied */
  int64_t spos;  /* stream position of the range */
};

static void free_cursor(struct aggio__op *op) { free(op->sdata); }

/* Copies ranges from the cursor on; 1 when all are in the cache. */
static int copy_ranges(struct aggio__op *op, int may_wait) {
  struct aggio__cache *c = cache_of(op->fh);
  struct wb_cursor *k = op->sdata;
  const struct aggio__access *acc = &op->acc;
  for (; k->i < acc->file.n; k->i++, k->done = 0) {
    const struct aggio__extent *x = &acc->file.v[k->i];
    k->done += aggio__cache_put_some(c, x->off + k->done, x->len - k->done,
                                     acc->stream + k->spos + k->done, may_wait);
    if (k->done < x->len)
      return 0;
    k->spos += x->len;
  }
  return 1;
}

static int copy_more(struct aggio__op *op) { return copy_ranges(op, 0); }
static void copy_rest(struct aggio__op *op) { copy_ranges(op, 1); }

/* A blocking write's data is all in the cache: the node's other ranks
 * may read it from now on (aggio__cache_quiesce). */
static int wb_written(struct aggio__op *op) {
  struct wb_file *f = op->fh->strategy_state[AGGIO_STRAT_WRITE_BEHIND];
  lend_waits(op, f->cache);
  if (op->blocking) {
    f->blocking_writes++;
    aggio__cache_copied(f->cache);
  }
  return aggio__then(op, NULL, AGGIO_P_EXCHANGE);
}

/* Copies this rank's ranges into its node's cache.  Loaded copies of the
 * range that other nodes write go stale first. */
static int wb_write(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct aggio__cache *c = cache_of(fh);
  if (several_caches(fh))
    aggio__cache_forget(c, op->sum.lo, op->sum.hi);
  struct wb_cursor first = {0}, *k = op->blocking ? NULL : calloc(1, sizeof *k);
  op->sdata = k ? (void *)k : (void *)&first; /* without memory: blocking */
  if (!k || copy_ranges(op, 0)) {
    if (!k)
      copy_ranges(op, 1);
    op->sdata = k;
    op->sdata_free = k ? free_cursor : NULL;
    return wb_written(op);
  }
  op->sdata_free = free_cursor;
  aggio__then(op, wb_written, AGGIO_P_EXCHANGE);
  return aggio__op_await(op, copy_more, copy_rest, AGGIO_P_IO_WAIT);
}

/* ---- reads ---------------------------------------------------------------------------- */

static int wb_read(struct aggio__op *op) {
  struct aggio__cache *c = cache_of(op->fh);
  const struct aggio__access *acc = &op->acc;
  int64_t spos = 0;
  for (size_t i = 0; op->err.code == 0 && i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    int64_t eof = INT64_MAX;
    if (aggio__cache_get(c, x->off, x->len, acc->stream + spos, &eof, &op->err) != 0)
      break;
    if (eof != INT64_MAX) {
      aggio__op_saw_eof(op, eof);
      break;
    }
    spos += x->len;
  }
  lend_waits(op, c);
  return aggio__then(op, aggio__step_agree_outcome, AGGIO_P_AGREE);
}

/* Written data still held by any node reaches the file before any node
 * loads blocks that may hold it; all agree that it did. */
static int write_out_then_read(struct aggio__op *op) {
  struct aggio__cache *c = cache_of(op->fh);
  struct aggio__err held = {0};
  aggio__cache_flush(c, 0);
  aggio__cache_error(c, &held);
  aggio__op_deferred(op, &held);
  lend_waits(op, c);
  return aggio__op_agree_then(op, wb_read, AGGIO_P_EXCHANGE);
}

/* Several nodes, and some hold written data where this call writes: that
 * data reaches the file before any node takes the new data, so that the
 * later call's bytes win whichever node's cache is written out first (as
 * they do with two-phase I/O, which MPI does not require without a sync). */
static int settle_then_write(struct aggio__op *op) {
  struct aggio__cache *c = cache_of(op->fh);
  struct aggio__err held = {0};
  aggio__cache_settle(c, op->sum.lo, op->sum.hi - op->sum.lo, 1);
  aggio__cache_error(c, &held);
  aggio__op_deferred(op, &held);
  lend_waits(op, c);
  return aggio__op_agree_then(op, wb_write, AGGIO_P_EXCHANGE);
}

static int wb_start(struct aggio__op *op) {
  const struct aggio__call_summary *s = &op->sum;
  /* A rank wrote on its own since: loaded copies may be stale, on other
   * nodes, and on this one too where a block was loaded ahead while that
   * write was under way (its own settle had dropped the copy before).  MPI
   * asks for a sync before they must be seen; two-phase I/O shows them at
   * once, and so does this. */
  if (s->flags & AGGIO_SF_INDEPENDENT)
    aggio__cache_forget(cache_of(op->fh), 0, INT64_MAX);
  if (op->acc.is_write && several_caches(op->fh) && s->held_lo < s->hi && s->lo < s->held_hi)
    return aggio__then(op, settle_then_write, AGGIO_P_IO_WAIT);
  if (op->acc.is_write)
    return aggio__then(op, wb_write, AGGIO_P_EXCHANGE);
  if (op->sum.flags & AGGIO_SF_CACHE_DIRTY)
    return aggio__then(op, write_out_then_read, AGGIO_P_IO_WAIT);
  return aggio__then(op, wb_read, AGGIO_P_EXCHANGE);
}

/* ---- consistency hooks ------------------------------------------------------------------- */

static void wb_contribute(aggio_file fh, void *state, struct aggio__call_summary *mine,
                          struct aggio__err *e) {
  struct wb_file *f = state;
  (void)fh;
  aggio__cache_held(f->cache, &mine->flags, &mine->held_lo, &mine->held_hi);
  aggio__cache_error(f->cache, e);
}

static void wb_reported(aggio_file fh, void *state) {
  struct wb_file *f = state;
  (void)fh;
  aggio__cache_reported(f->cache);
}

static int wb_flush(aggio_file fh, void *state, struct aggio__err *e) {
  struct wb_file *f = state;
  (void)fh;
  aggio__cache_flush(f->cache, 1);
  return aggio__cache_error(f->cache, e);
}

static int wb_before_independent(aggio_file fh, void *state, const struct aggio__access *acc,
                                 struct aggio__err *e) {
  struct wb_file *f = state;
  (void)fh;
  aggio__cache_quiesce(f->cache, f->blocking_writes);
  for (size_t i = 0; i < acc->file.n; i++)
    aggio__cache_settle(f->cache, acc->file.v[i].off, acc->file.v[i].len, acc->is_write);
  /* A read after written data of this node failed to reach the file
   * fails with that failure: the bytes it would return may be the old
   * ones, and MPI promises a process its own writes.  The failure stays
   * unreported, for the next collective call to report on every rank. */
  if (!acc->is_write)
    aggio__cache_error(f->cache, e);
  return e->code;
}

/* A small blocking independent access, held by the node cache, after
 * every rank of the node has copied in its part of the collective writes
 * before it (the order of an access to the file after them):
 * - a write joins the cache, and what other nodes' caches hold is ordered
 *   with it as with a write to the file (MPI's sync rule for bytes written
 *   by other processes; a later collective write over those bytes settles
 *   the other caches first, wb_start);
 * - a read of bytes the cache holds loaded is copied from it (HDF5 reads
 *   a dataset's object header just before the collective read of its
 *   data, whose blocks read-ahead has loaded); else it goes to the file. */
static int wb_hold_independent(aggio_file fh, void *state, const struct aggio__access *acc) {
  struct wb_file *f = state;
  (void)fh;
  aggio__cache_quiesce(f->cache, f->blocking_writes);
  int64_t spos = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    if (acc->is_write)
      aggio__cache_put(f->cache, x->off, x->len, acc->stream + spos);
    else if (!aggio__cache_peek(f->cache, x->off, x->len, acc->stream + spos))
      return 0;
    spos += x->len;
  }
  return 1;
}

static int64_t wb_unwritten(aggio_file fh, void *state, char *msg, size_t len, int *speaker) {
  struct wb_file *f = state;
  (void)fh;
  return aggio__cache_unwritten(f->cache, msg, len, speaker);
}

static int64_t wb_held_end(aggio_file fh, void *state) {
  struct wb_file *f = state;
  int64_t flags = 0, lo = INT64_MAX, hi = 0;
  (void)fh;
  aggio__cache_held(f->cache, &flags, &lo, &hi);
  return hi;
}

const struct aggio__strategy_ops aggio__strategy_write_behind = {
    .name = "write_behind",
    .id = AGGIO_STRAT_WRITE_BEHIND,
    .setup = wb_setup,
    .fini = wb_fini,
    .start = wb_start,
    .contribute = wb_contribute,
    .reported = wb_reported,
    .flush = wb_flush,
    .before_independent = wb_before_independent,
    .hold_independent = wb_hold_independent,
    .held_end = wb_held_end,
    .unwritten = wb_unwritten,
};
