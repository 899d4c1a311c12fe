/*
 * strategy_two_phase.c - two-phase collective buffering (Thakur, Gropp and
 * Lusk, "Data sieving and collective I/O in ROMIO", 1999), as a chain of
 * engine steps (engine.h) in the manner of ROMIO's ad_iwrite_coll.c.
 *
 * Set-up: the agreed summary gives the accessed range, split into one file
 * domain per aggregator (plan.c); each rank tells each aggregator which
 * byte ranges of its domain it accesses (tp_offsets.c: a sparse exchange,
 * one short message per rank and aggregator in the common case).
 * Then, round by round, every aggregator takes one window of its domain:
 * for writes it reads the window first when holes between the pieces are
 * small (read-modify-write keeps the bytes in holes), the ranks send their
 * bytes for that window (MPI derived types on both sides, nothing packed
 * twice) and the aggregator writes the covered runs; reads are the mirror
 * image and stop at end of file.  The aggregator's buffer is laid out so
 * that aligned file offsets fall on aligned memory, for direct I/O.
 *
 * How a round's bytes travel is the exchange method's business
 * (two_phase.h, chosen per file by aggio_exchange): messages and same-node
 * shared-memory copies (exchange_two_sided.c), or one-sided puts and gets
 * (exchange_rma.c).  Each aggregator has two buffers and one is written by
 * the I/O threads (pool.h) while the next round fills the other
 * (pipelining, as in Tessier et al.'s TAPIOCA).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "two_phase.h"
#include "vec.h"

#define PAGE 4096

/* ---- per-file state: the aggregators' buffers and the exchange --------------------- */

/* Buffer size from the hints alone, the same on every rank and every call:
 * message block lengths are int, so at most 1 GiB. */
static int64_t buffer_bytes(aggio_file fh) {
  int64_t cb = fh->hints.cb_buffer_size.num;
  return cb < (1 << 30) ? cb : (1 << 30);
}

static int64_t buffer_align(aggio_file fh) {
  return fh->st.dio_align > PAGE ? fh->st.dio_align : PAGE;
}

static void tp_destroy(struct tp *t);

static void tp_fini(aggio_file fh, void *state) {
  struct tp_file *f = state;
  if (!f)
    return;
  tp_destroy(f->kept);
  if (f->x)
    f->x->close(fh, f);
  free(f->private_buf);
  free(f->peer);
  aggio__tp_offsets_close(f);
  free(f);
}

/* The exchange the hint asks for: automatic is two_sided until a
 * measurement shows where rma pays (docs/strategies.md).  RMA windows
 * exist only in blocking form: a first two-phase operation that is
 * non-blocking sets up two_sided, saying so. */
static const struct aggio__exchange_ops *wanted_exchange(struct aggio__op *op, char *why,
                                                         size_t whylen) {
  const char *h = op->fh->hints.exchange.str;
  if (strcmp(h, "rma") == 0 && op->blocking)
    return &aggio__exchange_rma;
  if (strcmp(h, "rma") == 0)
    snprintf(why, whylen, "aggio_exchange=rma: the file's first two-phase operation was "
             "non-blocking, and MPI makes RMA windows only in blocking calls; two_sided");
  else if (strcmp(h, "two_sided") != 0 && strcmp(h, "automatic") != 0 && strcmp(h, "auto") != 0)
    snprintf(why, whylen, "aggio_exchange \"%.60s\" is not two_sided, rma or automatic; "
             "two_sided", h);
  return &aggio__exchange_two_sided;
}

static int tp_exchange(struct aggio__op *op);
static int tp_exchange_ready(struct aggio__op *op);
static int tp_round_moved(struct aggio__op *op);
static int tp_rounds(struct aggio__op *op);
static int tp_begin(struct aggio__op *op);

/* Set-up, first step: what every rank needs of its own (the offset
 * exchange's memory, the peer table), agreed before any rank makes node
 * memory or windows with the others (a rank without its memory could not
 * take part).  Then the exchange method's own set-up, then the buffers. */
static int tp_setup(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = aggio__calloc(fh, 1, sizeof *f);
  fh->strategy_state[AGGIO_STRAT_TWO_PHASE] = f;
  int rc = f ? aggio__tp_offsets_open(fh, f) : AGGIO_ERR_NOMEM;
  if (f) {
    f->held = (struct aggio__tp_bound){-1, -1}; /* nothing held yet */
    f->exchange_ready = tp_exchange_ready;
    f->round_moved = tp_round_moved;
    f->rounds = tp_rounds;
    f->begin = tp_begin;
  }
  if (rc == 0) {
    f->rma_win = MPI_WIN_NULL;
    f->align = buffer_align(fh);
    f->slot = aggio__round_up(buffer_bytes(fh) + f->align, f->align);
    f->peer = aggio__calloc(fh, (size_t)fh->topo.naggr, sizeof *f->peer);
    rc = f->peer ? 0 : AGGIO_ERR_NOMEM;
  }
  aggio__op_note(op, rc, "two-phase set-up");
  return aggio__op_agree_then(op, tp_exchange, AGGIO_P_PLAN);
}

static int tp_exchange(struct aggio__op *op) {
  struct tp_file *f = aggio__tp_file(op->fh);
  f->x = wanted_exchange(op, f->why, sizeof f->why);
  return aggio__then(op, f->x->setup, AGGIO_P_PLAN);
}

/* The exchange is set up (or refused: two_sided instead, which always
 * works); aggregators without buffers from it get private ones. */
static int tp_exchange_ready(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = aggio__tp_file(fh);
  if (f->refused) {
    f->refused = 0;
    f->x = &aggio__exchange_two_sided;
    return aggio__then(op, f->x->setup, AGGIO_P_PLAN);
  }
  if (!f->own && fh->topo.my_aggr_index >= 0) {
    f->private_buf = aggio__alloc_aligned(tp_buffers_bytes(f), f->align);
    if (!f->private_buf)
      aggio__fail(&op->err, AGGIO_ERR_NOMEM, "rank %d: out of memory for the aggregator "
                  "buffers", fh->rank);
    f->own = f->private_buf;
  }
  pthread_mutex_lock(&fh->info_lock); /* get_info may read them meanwhile */
  snprintf(fh->exchange_used, sizeof fh->exchange_used, "%s", f->x->name);
  snprintf(fh->exchange_why, sizeof fh->exchange_why, "%s", f->why);
  pthread_mutex_unlock(&fh->info_lock);
  return aggio__setup_done(op);
}

/* ---- per-operation state ---------------------------------------------------------- */

static int piece_push(struct piece_list *l, int64_t off, int64_t len, int64_t spos) {
  return aggio__vec_push(l, ((struct piece){off, len, spos}));
}

/* The MPI types of the last round, freed (a call's last round keeps its own
 * until the call ends). */
static void free_types(struct tp *t) {
  for (int i = 0; i < t->ntypes; i++)
    MPI_Type_free(&t->types[i]);
  t->ntypes = 0;
}

static void tp_destroy(struct tp *t) {
  if (!t)
    return;
  free_types(t);
  for (int i = 0; t->mine && i < t->naggr; i++)
    free(t->mine[i].v);
  for (int r = 0; t->theirs && r < t->fh->nprocs; r++)
    aggio__extents_free(&t->theirs[r]);
  for (int r = 0; t->window && r < t->fh->nprocs; r++)
    aggio__extents_free(&t->window[r]);
  aggio__extents_free(&t->slot[0].runs);
  aggio__extents_free(&t->slot[1].runs);
  void *arrays[] = {t->fd_lo,  t->fd_hi, t->mine,   t->theirs, t->their_cursor,
                    t->window, t->types, t->blens,  t->disps,  t->tdisps,
                    t->note,   t->req,   t->stat};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    free(arrays[i]);
  free(t);
}

/* The kept state after a call: its lists emptied, their memory kept. */
static void tp_reset(struct tp *t) {
  free_types(t);
  for (int i = 0; t->mine && i < t->naggr; i++)
    t->mine[i].n = t->mine[i].cursor = 0;
  for (int r = 0; t->theirs && r < t->fh->nprocs; r++)
    aggio__extents_clear(&t->theirs[r]);
  for (int r = 0; t->window && r < t->fh->nprocs; r++)
    aggio__extents_clear(&t->window[r]);
  if (t->their_cursor)
    memset(t->their_cursor, 0, (size_t)t->fh->nprocs * sizeof *t->their_cursor);
  for (int s = 0; s < 2; s++) {
    struct slot *sl = &t->slot[s];
    aggio__extents_clear(&sl->runs);
    sl->lo = 0;
    sl->rmw = 0;
    memset(&sl->batch, 0, sizeof sl->batch);
    memset(&sl->job, 0, sizeof sl->job);
  }
  t->op = NULL;
  t->cb = t->nrounds = t->k = 0;
  t->setup_failed = t->keep = t->fast = 0;
}

static void tp_free(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t && t == t->f->kept)
    tp_reset(t);
  else
    tp_destroy(t);
}

/* ---- set-up ------------------------------------------------------------------------ */

/* Splits my ranges at the domain boundaries. */
static int split_mine(struct tp *t) {
  const struct aggio__extents *f = &t->op->acc.file;
  int64_t spos = 0;
  int d = 0;
  for (size_t i = 0; i < f->n; i++) {
    int64_t off = f->v[i].off, len = f->v[i].len;
    while (len > 0) {
      while (d < t->naggr - 1 && (t->fd_hi[d] <= off || t->fd_lo[d] == t->fd_hi[d]))
        d++;
      int64_t take = t->fd_hi[d] - off;
      if (take > len || d == t->naggr - 1)
        take = len;
      if (piece_push(&t->mine[d], off, take, spos) != 0)
        return AGGIO_ERR_NOMEM;
      off += take;
      spos += take;
      len -= take;
    }
  }
  return 0;
}

/* The same with stripe-cyclic domains: one piece per stripe, at its
 * domain-space offset; a group's pieces keep file order, so each list
 * stays sorted. */
static int split_mine_cyclic(struct tp *t) {
  const struct aggio__extents *f = &t->op->acc.file;
  int64_t spos = 0;
  for (size_t i = 0; i < f->n; i++) {
    int64_t off = f->v[i].off, len = f->v[i].len;
    while (len > 0) {
      int g;
      int64_t v = aggio__cyclic_to_domain(&t->cyc, off, &g);
      int64_t take = aggio__cyclic_run(&t->cyc, off, len);
      if (piece_push(&t->mine[g], v, take, spos) != 0)
        return AGGIO_ERR_NOMEM;
      off += take;
      spos += take;
      len -= take;
    }
  }
  return 0;
}

/* ---- the file, seen from the domain space ------------------------------------------ */

/* Writes len bytes at domain-space offset v: one write with contiguous
 * domains, one per stripe piece with cyclic ones (consecutive pieces of
 * a group are consecutive in its subfile). */
static int tp_pwrite(struct tp *t, const char *buf, int64_t len, int64_t v, int flags,
                     struct aggio__err *e) {
  int rc = 0;
  while (rc == 0 && len > 0) {
    int64_t n = aggio__cyclic_run(&t->cyc, v, len);
    rc = aggio__pwrite(t->fh, buf, n, aggio__cyclic_to_file(&t->cyc, v), flags, e);
    buf += n;
    v += n;
    len -= n;
  }
  return rc;
}

/* Reads up to len bytes at domain-space offset v.  A short piece is the
 * end of file: the group's later pieces lie further on, so *got counts
 * the bytes before it, and *eof is its file offset (INT64_MAX when none). */
static int tp_pread(struct tp *t, char *buf, int64_t len, int64_t v, int64_t *got,
                    int64_t *eof, struct aggio__err *e) {
  *got = 0;
  *eof = INT64_MAX;
  while (len > 0) {
    int64_t n = aggio__cyclic_run(&t->cyc, v, len), g = 0;
    int64_t off = aggio__cyclic_to_file(&t->cyc, v);
    int rc = aggio__pread(t->fh, buf, n, off, &g, AGGIO_IO_AGGREGATOR, e);
    if (rc != 0)
      return rc;
    *got += g;
    if (g < n) {
      *eof = off + g;
      return 0;
    }
    buf += n;
    v += n;
    len -= n;
  }
  return 0;
}

static void buffers_of(struct tp *t) {
  struct tp_file *f = t->f;
  char *base = f->own;
  if (t->me < 0)
    return;
  for (int s = 0; s < 2; s++) {
    t->slot[s].hdr = (struct tp_header *)base;
    t->slot[s].buf = base ? base + f->align + s * f->slot : NULL;
  }
}

/* The stripe of this call's cyclic domains and their group count (G,
 * cyclic.h), or 0: contiguous domains.  Every rank has the same hints,
 * atomic mode and layout, so every rank makes the same choice. */
static int64_t call_unit(struct tp *t, int *groups) {
  aggio_file fh = t->fh;
  *groups = aggio__cyclic_groups(fh->topo.naggr, fh->st.subfiles);
  return aggio__cyclic_unit(fh->hints.cb_domains.str, fh->atomic, fh->st.subfiles,
                            fh->st.subfile_stripe, fh->hints.striping_unit.num);
}

/* The arrays sized by ranks and aggregators, made by the first call that
 * can (a kept state keeps them: plan/tp_keep.h). */
static int make_arrays(struct tp *t) {
  aggio_file fh = t->fh;
  int A = t->naggr, P = t->me >= 0 ? fh->nprocs : 0;
  if (!t->fd_lo)
    t->fd_lo = aggio__malloc(fh, (size_t)A * sizeof *t->fd_lo);
  if (!t->fd_hi)
    t->fd_hi = aggio__malloc(fh, (size_t)A * sizeof *t->fd_hi);
  if (!t->mine)
    t->mine = aggio__calloc(fh, (size_t)A, sizeof *t->mine);
  if (!t->types)
    t->types = aggio__malloc(fh, (size_t)(2 * A + P) * sizeof *t->types);
  if (!t->fd_lo || !t->fd_hi || !t->mine || !t->types)
    return AGGIO_ERR_NOMEM;
  if (P > 0) {
    if (!t->theirs)
      t->theirs = aggio__calloc(fh, (size_t)P, sizeof *t->theirs);
    if (!t->their_cursor)
      t->their_cursor = aggio__calloc(fh, (size_t)P, sizeof *t->their_cursor);
    if (!t->window)
      t->window = aggio__calloc(fh, (size_t)P, sizeof *t->window);
    if (!t->theirs || !t->their_cursor || !t->window)
      return AGGIO_ERR_NOMEM;
  }
  return 0;
}

/* Whether this call keeps its lists, and whether it fits what every rank
 * already holds (plan/tp_keep.h): from agreed values only, so that every
 * rank decides alike.  Cyclic domains split a range at every stripe, which
 * the summary does not bound: they never keep. */
static void decide_keep(struct tp *t) {
  const struct aggio__call_summary *s = &t->op->sum;
  const struct aggio__tp_sizes sz = {sizeof(struct piece), sizeof(struct aggio__extent),
                                     sizeof(int) + 2 * sizeof(MPI_Aint)};
  t->keep = t == t->f->kept && t->unit == 0 &&
            aggio__tp_keep_bound(s->pieces, s->most_pieces, t->fh->nprocs, t->naggr, &sz,
                                 &t->bound);
  t->fast = t->keep && aggio__tp_keep_fits(&t->f->held, &t->bound);
}

/* The file domains of the call's range (O(aggregators): made again each
 * call, nothing to keep). */
static void make_domains(struct tp *t) {
  aggio_file fh = t->fh;
  const struct aggio__call_summary *s = &t->op->sum;
  aggio__cyclic_init(&t->cyc, t->unit, t->groups, s->lo, s->hi);
  if (t->unit > 0) {
    aggio__cyclic_domains(&t->cyc, s->lo, s->hi, t->naggr, t->fd_lo, t->fd_hi);
  } else {
    int64_t align = fh->hints.striping_unit.num > 0 ? fh->hints.striping_unit.num : fh->st.block;
    aggio__file_domains(s->lo, s->hi, t->naggr, align, t->fd_lo, t->fd_hi);
  }
}

static void count_domains(struct tp *t) {
  struct aggio__stats *st = t->fh->obs.stats;
  int A = t->naggr, active = 0;
  if (!st)
    return;
  aggio__stats_set_domains(st, A, t->fd_lo, t->fd_hi);
  aggio__stats_set_cyclic(st, t->unit, t->groups);
  for (int i = 0; i < A; i++)
    active += t->fd_hi[i] > t->fd_lo[i];
  if (active > 0)
    st->c[aggio__active_bucket(active, A)]++;
}

/* Everything the call needs that does not depend on other ranks: domains,
 * my pieces, the aggregator's per-rank lists and the buffers.  A kept
 * call reserves each of my lists to the call's bound first: a later call
 * that fits then pushes without growing them. */
static int plan_call(struct tp *t) {
  int rc = make_arrays(t);
  if (rc != 0)
    return rc;
  t->unit = call_unit(t, &t->groups);
  decide_keep(t);
  make_domains(t);
  int64_t largest = 0;
  for (int i = 0; i < t->naggr; i++)
    largest = t->fd_hi[i] - t->fd_lo[i] > largest ? t->fd_hi[i] - t->fd_lo[i] : largest;
  t->cb = aggio__round_size(largest, buffer_bytes(t->fh), t->f->align, t->pipeline);
  t->nrounds = aggio__round_count(t->naggr, t->fd_lo, t->fd_hi, t->cb);
  count_domains(t);
  for (int i = 0; t->keep && i < t->naggr; i++)
    if (aggio__vec_reserve(&t->mine[i], (size_t)t->bound.most) != 0)
      return AGGIO_ERR_NOMEM;
  return t->unit > 0 ? split_mine_cyclic(t) : split_mine(t);
}

static int round_begin(struct aggio__op *op);

/* With aggio_placement_scope=call the aggregators are placed first
 * (tp_place.c), which goes on with tp_begin. */
static int tp_start(struct aggio__op *op) {
  if (op->fh->topo.call_place)
    return aggio__then(op, aggio__tp_place_call, AGGIO_P_PLAN);
  return aggio__then(op, tp_begin, AGGIO_P_PLAN);
}

/* The call's state: the file's kept one, made by its first call (not
 * with aggregators placed per call, which may remake the file's state). */
static struct tp *take_state(aggio_file fh) {
  struct tp_file *f = aggio__tp_file(fh);
  if (f->kept)
    return f->kept;
  struct tp *t = aggio__calloc(fh, 1, sizeof *t);
  if (t && !fh->topo.call_place)
    f->kept = t;
  return t;
}

static int tp_begin(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp *t = take_state(fh);
  op->sdata = t;
  op->sdata_free = tp_free;
  if (!t) {
    /* This rank still takes part in the set-up's collectives, contributing
     * nothing; the set-up agreement then stops every rank. */
    aggio__op_note(op, AGGIO_ERR_NOMEM, "two-phase set-up");
    return aggio__then(op, aggio__tp_offsets, AGGIO_P_PLAN);
  }
  t->op = op;
  t->fh = fh;
  t->f = fh->strategy_state[AGGIO_STRAT_TWO_PHASE];
  t->naggr = fh->topo.naggr;
  t->me = fh->topo.my_aggr_index;
  t->shm = t->f->shm.base != NULL;
  t->pipeline = fh->hints.pipeline.num != AGGIO_DISABLE && !fh->atomic;
  for (int s = 0; s < 2; s++)
    t->slot[s].t = t;
  buffers_of(t);
  aggio__op_note(op, plan_call(t), "two-phase planning");
  return aggio__then(op, aggio__tp_offsets, AGGIO_P_PLAN);
}

static void count_rounds(struct tp *t) {
  struct aggio__stats *s = t->fh->obs.stats;
  if (s && t->me >= 0 && t->fd_hi[t->me] > t->fd_lo[t->me]) {
    s->c[AGGIO_C_AGGR_ACTIVE]++;
    s->c[AGGIO_C_COLL_ROUNDS] += t->nrounds;
  }
}

static int tp_rounds(struct aggio__op *op) {
  struct tp *t = op->sdata;
  count_rounds(t);
  t->k = 0;
  return aggio__then(op, round_begin, AGGIO_P_PLAN);
}

/* ---- one round ------------------------------------------------------------------------ */

/* The aggregator's window of round k: every rank's ranges clipped to it,
 * and the covered runs. */
static int plan_window(struct tp *t, struct slot *sl) {
  int64_t lo, hi;
  aggio__round_window(t->fd_lo[t->me], t->fd_hi[t->me], t->cb, t->k, &lo, &hi);
  for (int r = 0; r < t->fh->nprocs; r++) {
    aggio__extents_clear(&t->window[r]);
    if (aggio__clip(&t->theirs[r], &t->their_cursor[r], lo, hi, &t->window[r]) != 0)
      return AGGIO_ERR_NOMEM;
  }
  sl->lo = lo;
  return aggio__coverage(t->window, t->fh->nprocs, &sl->runs);
}

static int64_t span_lo(const struct slot *sl) { return sl->runs.v[0].off; }
static int64_t span_hi(const struct slot *sl) {
  return sl->runs.v[sl->runs.n - 1].off + sl->runs.v[sl->runs.n - 1].len;
}

static void count_gaps(struct tp *t, const struct slot *sl) {
  struct aggio__stats *s = t->fh->obs.stats;
  if (!s || sl->runs.n < 2)
    return;
  const struct aggio__extent *v = sl->runs.v;
  s->c[AGGIO_C_WRITE_GAPS] += (int64_t)sl->runs.n - 1;
  for (size_t i = 1; i < sl->runs.n; i++)
    s->c[AGGIO_C_WRITE_GAP_BYTES] += v[i].off - (v[i - 1].off + v[i - 1].len);
}

/* Read-modify-write: the span is read into the buffer before the data
 * arrives, so that the holes keep the file's bytes (zeros past its end).
 * Only where no write of the program can land in a hole meanwhile
 * (AGGIO_SF_CONCURRENT), unless romio_ds_write=enable asks for it
 * regardless: otherwise the stale bytes read would be written back over
 * it (a write that had returned, lost). */
static int read_holes(struct tp *t, struct slot *sl) {
  int ds = (int)t->fh->hints.ds_write.num;
  if (ds == AGGIO_AUTOMATIC && (t->op->sum.flags & AGGIO_SF_CONCURRENT))
    ds = AGGIO_DISABLE;
  sl->rmw = sl->runs.n > 1 && aggio__rmw_decide(&sl->runs, sl->lo, sl->lo, ds);
  count_gaps(t, sl);
  if (!sl->rmw)
    return 0;
  int64_t a = span_lo(sl), b = span_hi(sl), got = 0;
  char *p = tp_buf_at(t, sl->buf, sl->lo, a);
  if (t->fh->obs.stats) {
    t->fh->obs.stats->c[AGGIO_C_RMW_COUNT]++;
    t->fh->obs.stats->c[AGGIO_C_RMW_BYTES] += b - a;
  }
  /* atomic mode has contiguous domains: the span is the file's */
  if (t->fh->atomic && t->fh->st.ops->lock(&t->fh->st, a, b - a, 1, &t->op->err) != 0)
    return t->op->err.code;
  int64_t eof;
  int rc = tp_pread(t, p, b - a, a, &got, &eof, &t->op->err);
  if (rc == 0 && got < b - a)
    memset(p + got, 0, (size_t)(b - a - got));
  return rc;
}

/* The file write of one slot, on an I/O thread when pipelining. */
static int write_slot(struct slot *sl, struct aggio__err *e) {
  struct tp *t = sl->t;
  int flags = AGGIO_IO_AGGREGATOR | AGGIO_IO_DIRECT_OK;
  int rc = 0;
  if (sl->rmw) {
    rc = tp_pwrite(t, tp_buf_at(t, sl->buf, sl->lo, span_lo(sl)), span_hi(sl) - span_lo(sl),
                   span_lo(sl), flags, e);
    if (t->fh->atomic) {
      struct aggio__err ue = {0};
      t->fh->st.ops->lock(&t->fh->st, span_lo(sl), span_hi(sl) - span_lo(sl), -1, &ue);
    }
    return rc;
  }
  for (size_t i = 0; rc == 0 && i < sl->runs.n; i++) {
    const struct aggio__extent *x = &sl->runs.v[i];
    rc = tp_pwrite(t, tp_buf_at(t, sl->buf, sl->lo, x->off), x->len, x->off, flags, e);
  }
  return rc;
}

static void write_job(struct aggio__job *job, struct aggio__err *e) {
  struct slot *sl = (struct slot *)((char *)job - offsetof(struct slot, job));
  write_slot(sl, e);
}

/* Queues the slot's write on the I/O threads (or writes it here
 * when not pipelining, or when no thread can start). */
static void slot_write(struct tp *t, struct slot *sl) {
  if (t->op->err.code != 0 || sl->runs.n == 0)
    return; /* after a failure, keep exchanging but write nothing */
  struct aggio__pool *p = t->pipeline ? aggio__file_pool(t->fh) : NULL;
  sl->job.run = write_job;
  if (p && aggio__pool_submit(p, &sl->job, &sl->batch) == 0)
    return; /* waited for when the slot is next needed, or in drain */
  write_slot(sl, &t->op->err);
}

/* ---- the rounds as steps ------------------------------------------------------------- */

static int slot_test(struct aggio__op *op) {
  struct tp *t = op->sdata;
  return aggio__batch_done(t->fh->pool, &t->slot[t->k % 2].batch);
}

static void slot_block(struct aggio__op *op) {
  struct tp *t = op->sdata;
  aggio__batch_wait(t->fh->pool, &t->slot[t->k % 2].batch);
}

/* Takes a finished slot write's outcome. */
static void slot_collect(struct tp *t, struct slot *sl) {
  if (sl->batch.err.code != 0 && t->op->err.code == 0)
    t->op->err = sl->batch.err;
  sl->batch.err.code = 0;
}

static int round_prepare(struct aggio__op *op);
static int read_window(struct tp *t, struct slot *sl);
static int drain(struct aggio__op *op);

/* Round k starts once the aggregator's buffer k % 2 is written out. */
static int round_begin(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t->k >= t->nrounds)
    return aggio__then(op, drain, AGGIO_P_IO_WAIT);
  aggio__then(op, round_prepare, AGGIO_P_PLAN);
  if (t->me < 0)
    return AGGIO_STEP_NEXT;
  return aggio__op_await(op, slot_test, slot_block, AGGIO_P_IO_WAIT);
}

/* The aggregator plans its window and fills its buffer where it must (a
 * write with small holes reads them first; a read reads the window); then
 * the exchange moves the round's bytes (two_phase.h). */
static int round_prepare(struct aggio__op *op) {
  struct tp *t = op->sdata;
  struct slot *sl = &t->slot[t->k % 2];
  if (t->me >= 0) {
    slot_collect(t, sl);
    aggio__op_note(op, plan_window(t, sl), "two-phase planning");
    if (op->acc.is_write && op->err.code == 0)
      read_holes(t, sl);
    if (!op->acc.is_write)
      read_window(t, sl);
  }
  return aggio__then(op, t->f->x->round, AGGIO_P_EXCHANGE);
}

/* The round's bytes are in the aggregators' buffers (or the ranks'
 * streams): the aggregator's write goes to the I/O threads while the next
 * round fills its other buffer. */
static int tp_round_moved(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t->me >= 0 && op->acc.is_write)
    slot_write(t, &t->slot[t->k % 2]);
  t->k++;
  return aggio__then(op, round_begin, AGGIO_P_PLAN);
}

/* Reads the window's runs into the slot, stopping at end of file. */
static int read_window(struct tp *t, struct slot *sl) {
  int s = (int)(t->k % 2);
  sl->hdr->valid_end[s] = INT64_MAX;
  if (t->op->err.code != 0 || sl->runs.n == 0)
    return 0;
  int whole = aggio__rmw_decide(&sl->runs, sl->lo, sl->lo, (int)t->fh->hints.ds_read.num);
  struct aggio__extent span = {span_lo(sl), span_hi(sl) - span_lo(sl)};
  const struct aggio__extent *v = whole ? &span : sl->runs.v;
  size_t n = whole ? 1 : sl->runs.n;
  for (size_t i = 0; i < n; i++) {
    int64_t got = 0, eof;
    int rc = tp_pread(t, tp_buf_at(t, sl->buf, sl->lo, v[i].off), v[i].len, v[i].off, &got,
                      &eof, &t->op->err);
    if (rc != 0)
      return rc;
    if (got < v[i].len) {
      sl->hdr->valid_end[s] = v[i].off + got; /* domain space, as the exchange's offsets */
      aggio__op_saw_eof(t->op, eof);
      return 0;
    }
  }
  return 0;
}

/* After the last round: the writes still in flight, then the outcome. */
static int drained(struct aggio__op *op) {
  struct tp *t = op->sdata;
  return aggio__batch_done(t->fh->pool, &t->slot[0].batch) &&
         aggio__batch_done(t->fh->pool, &t->slot[1].batch);
}

static void drain_block(struct aggio__op *op) {
  struct tp *t = op->sdata;
  aggio__batch_wait(t->fh->pool, &t->slot[0].batch);
  aggio__batch_wait(t->fh->pool, &t->slot[1].batch);
}

static int agree(struct aggio__op *op) {
  struct tp *t = op->sdata;
  slot_collect(t, &t->slot[0]);
  slot_collect(t, &t->slot[1]);
  return aggio__then(op, aggio__step_agree_outcome, AGGIO_P_AGREE);
}

static int drain(struct aggio__op *op) {
  aggio__then(op, agree, AGGIO_P_AGREE);
  return aggio__op_await(op, drained, drain_block, AGGIO_P_IO_WAIT);
}

/* One-sided exchange windows exist only in blocking form (two_phase.h). */
static int tp_setup_blocks(aggio_file fh) { return strcmp(fh->hints.exchange.str, "rma") == 0; }

const struct aggio__strategy_ops aggio__strategy_two_phase = {
    .name = "two_phase",
    .id = AGGIO_STRAT_TWO_PHASE,
    .setup = tp_setup,
    .fini = tp_fini,
    .setup_blocks = tp_setup_blocks,
    .start = tp_start,
};
