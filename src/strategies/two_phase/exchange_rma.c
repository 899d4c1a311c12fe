/*
 * exchange_rma.c - the two-phase strategy's one-sided exchange
 * (aggio_exchange=rma), after TAPIOCA (Tessier et al.): every aggregator
 * exposes its two buffers in one MPI-3 RMA window over the file's
 * communicator, made once per file at the strategy's first operation and
 * freed at close; in round k the ranks MPI_Put their pieces into buffer
 * k % 2 while the aggregator's I/O threads write buffer (k - 1) % 2 out.
 * Reads are the mirror image: the aggregator reads its window into the
 * buffer and the ranks MPI_Get their pieces from it.
 *
 * Synchronisation, per round, between each aggregator and the ranks that
 * have bytes in its window that round (the pairs both sides know from the
 * offset exchange), in a passive-target epoch held for the window's life
 * (MPI_Win_lock_all with MPI_MODE_NOCHECK: no lock traffic at all):
 *   1. ready: the aggregator, once its buffer is free (its previous write
 *      done) and prepared (holes or the read window read in, then
 *      MPI_Win_sync), sends each of those ranks a notice of two int64: the
 *      buffer's displacement in the window and, for reads, where the data
 *      it found ends (end of file);
 *   2. the rank puts (gets) its pieces, MPI_Win_flush, then sends a done
 *      notice; the aggregator waits for every done notice, MPI_Win_sync,
 *      and its buffer holds the round (or may be refilled).
 * Why this and not the other MPI-3 mechanisms:
 *   - fences (MPI_Win_fence) are collective over every rank of the file
 *     each round, including the ranks without data in it, and block: a
 *     non-blocking collective (aggio_file_iwrite_all) could not progress
 *     them step by step;
 *   - PSCW (post/start/complete/wait with the round's senders as groups)
 *     synchronises exactly these pairs, but MPI_Win_start and
 *     MPI_Win_complete may block until the target has posted, and a target
 *     posts only when its own program calls into aggio: inside a
 *     non-blocking operation that is a wait on another rank's application,
 *     which can deadlock against the application's own messages; and its
 *     handshake carries no data, so reads would need one more exchange to
 *     learn where the file ends (ranks must not copy bytes past it into the
 *     user's buffer);
 *   - passive target with flushes and notices costs the same two small
 *     messages per pair and round as PSCW's handshake (its post and
 *     complete), the notices are ordinary non-blocking messages the engine
 *     already waits on, the only blocking call (MPI_Win_flush) waits for
 *     the MPI library's own progress and never for the peer's program, and
 *     the ready notice carries the end of file.
 * A rank's pieces in its own aggregator's buffer are copied with memcpy.
 * Same-node ranks put too (the MPI library maps a node's RMA onto shared
 * memory itself), so this exchange makes no node window of its own.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "two_phase.h"

#define RMA_READY_TAG 0x2a62
#define RMA_DONE_TAG 0x2a63

/* ---- per file: the window ------------------------------------------------------------- */

enum rma_refusal { RMA_OK = 0, RMA_SEPARATE = 1, RMA_REFUSED = 2 };

static int local_refusal(aggio_file fh, struct tp_file *f, int allocated) {
  if (!allocated || aggio__fault(fh->faults, AGGIO_FAULT_RMA_WINDOW) != 0)
    return RMA_REFUSED;
  /* Loads and stores on the buffers beside RMA need the unified model
   * (public and private copies are one memory), which MPI_Win_sync orders. */
  int *model = NULL, flag = 0;
  MPI_Win_get_attr(f->rma_win, MPI_WIN_MODEL, &model, &flag);
  return flag && *model != MPI_WIN_UNIFIED ? RMA_SEPARATE : RMA_OK;
}

/* Set-up, in a blocking operation only (two_phase.h: MPI makes windows in
 * blocking form only, and every rank of the file is in this call):
 * aggregators expose a header page and two buffers, the other ranks
 * nothing.  The ranks agree (MAXLOC of the refusal) before using it, so
 * that all of them fall back together; a window is freed only when every
 * rank holds one (MPI_Win_free is collective: a rank without one would
 * leave the others waiting), else it stays until MPI_Finalize. */
static int rma_setup(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = aggio__tp_file(fh);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "same_disp_unit", "true");
  MPI_Aint bytes = fh->topo.my_aggr_index >= 0 ? (MPI_Aint)tp_buffers_bytes(f) : 0;
  char *base = NULL;
  int ok = MPI_Win_allocate(bytes, 1, info, fh->comm, &base, &f->rma_win) == MPI_SUCCESS;
  MPI_Info_free(&info);
  if (!ok)
    f->rma_win = MPI_WIN_NULL;
  else
    MPI_Win_set_errhandler(f->rma_win, MPI_ERRORS_RETURN);
  int mine[2] = {local_refusal(fh, f, ok), fh->rank}, all[2] = {RMA_REFUSED, 0};
  int held = ok, all_held = 0;
  if (MPI_Allreduce(mine, all, 1, MPI_2INT, MPI_MAXLOC, fh->comm) != MPI_SUCCESS ||
      MPI_Allreduce(&held, &all_held, 1, MPI_INT, MPI_MIN, fh->comm) != MPI_SUCCESS)
    all[0] = RMA_REFUSED;
  if (all[0] != RMA_OK) {
    if (all_held)
      MPI_Win_free(&f->rma_win);
    f->rma_win = MPI_WIN_NULL;
    f->refused = 1;
    snprintf(f->why, sizeof f->why, "aggio_exchange=rma: %s on rank %d; two_sided",
             all[0] == RMA_SEPARATE ? "the RMA window has the separate memory model"
                                    : "the RMA window could not be made",
             all[1]);
    return aggio__then(op, f->exchange_ready, AGGIO_P_PLAN);
  }
  MPI_Win_lock_all(MPI_MODE_NOCHECK, f->rma_win);
  f->rma_base = base;
  if (fh->topo.my_aggr_index >= 0)
    f->own = tp_page_align(base, f->align);
  return aggio__then(op, f->exchange_ready, AGGIO_P_PLAN);
}

static void rma_close(aggio_file fh, struct tp_file *f) {
  (void)fh;
  if (f->rma_win == MPI_WIN_NULL)
    return;
  MPI_Win_unlock_all(f->rma_win);
  MPI_Win_free(&f->rma_win);
  f->rma_base = NULL;
}

/* ---- one round ------------------------------------------------------------------------ */

/* The notices (t->note): per aggregator i, 4 entries from 4 i: the ready
 * notice it sent me (end of its data, displacement of the window's first
 * byte), and 1 in the third when I have bytes in its window this round;
 * then per rank r, 2 entries from 4 naggr + 2 r: the ready notice I send r. */
static int64_t *notice_from(struct tp *t, int i) { return &t->note[4 * i]; }
static int64_t *notice_to(struct tp *t, int r) { return &t->note[4 * t->naggr + 2 * r]; }

static int post_notice(struct tp *t, int64_t *buf, int count, int peer, int tag, int send) {
  return aggio__tp_post(t, buf, count, MPI_INT64_T, peer, tag, send);
}

/* The aggregator's ready notices to the ranks with bytes in its window. */
static int send_ready(struct tp *t) {
  aggio_file fh = t->fh;
  struct slot *sl = &t->slot[t->k % 2];
  int64_t end = t->op->acc.is_write ? INT64_MAX : sl->hdr->valid_end[t->k % 2];
  int64_t disp = tp_buf_at(t, sl->buf, sl->lo, sl->lo) - t->f->rma_base;
  int rc = 0;
  MPI_Win_sync(t->f->rma_win); /* what the aggregator read in, before anyone gets it */
  for (int r = 0; r < fh->nprocs; r++) {
    if (r == fh->rank || t->window[r].n == 0)
      continue;
    int64_t *n = notice_to(t, r);
    n[0] = end;
    n[1] = disp;
    if (rc == 0)
      rc = post_notice(t, n, 2, r, RMA_READY_TAG, 1);
  }
  return rc;
}

/* Receives for the ready notices of the aggregators I have bytes for. */
static int await_ready(struct tp *t) {
  int rc = 0;
  for (int i = 0; i < t->naggr; i++) {
    int64_t lo, hi, *n = notice_from(t, i);
    n[2] = aggio__tp_my_parts(t, i, &lo, &hi, NULL, NULL) > 0;
    if (n[2] && t->fh->topo.aggr[i] != t->fh->rank && rc == 0)
      rc = post_notice(t, n, 2, t->fh->topo.aggr[i], RMA_READY_TAG, 0);
  }
  return rc;
}

static int rma_move(struct aggio__op *op);

/* Step 1: the aggregator's buffer is ready; every rank learns where. */
static int rma_round(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t->me >= 0)
    aggio__op_note(op, send_ready(t), "ready notice");
  aggio__op_note(op, await_ready(t), "ready notice");
  aggio__then(op, rma_move, AGGIO_P_EXCHANGE);
  return aggio__op_await_requests(op, AGGIO_P_EXCHANGE);
}

/* My parts for one aggregator: copied when it is this rank, else blocks
 * of one put or get (stream displacements, window displacements). */
struct parts {
  int64_t end, disp; /* from the aggregator's ready notice */
  char *own;         /* my own buffer when I am the aggregator, else NULL */
  int64_t lo;
  int n, is_write;
};

static int one_part(struct tp *t, void *ctx, int64_t a, int64_t b, int64_t spos) {
  struct parts *p = ctx;
  char *stream = t->op->acc.stream;
  if (!p->is_write && b > p->end)
    b = p->end; /* past the end of file: the user's bytes stay as they were */
  if (b <= a)
    return 0;
  if (p->own && p->is_write)
    memcpy(tp_buf_at(t, p->own, p->lo, a), stream + spos, (size_t)(b - a));
  else if (p->own)
    memcpy(stream + spos, tp_buf_at(t, p->own, p->lo, a), (size_t)(b - a));
  if (p->own)
    return 0;
  if (aggio__tp_scratch(t, (size_t)p->n + 1) != 0)
    return AGGIO_ERR_NOMEM;
  t->disps[p->n] = (MPI_Aint)spos;
  t->tdisps[p->n] = (MPI_Aint)(p->disp + (a - p->lo));
  t->blens[p->n] = (int)(b - a);
  p->n++;
  return 0;
}

/* One MPI_Put (MPI_Get) of n blocks to (from) the aggregator's window: a
 * derived type on each side when there are several, kept until the flush. */
static int transfer(struct tp *t, int n, int target, int is_write) {
  char *stream = t->op->acc.stream;
  MPI_Win w = t->f->rma_win;
  if (n == 1) {
    char *p = stream + t->disps[0];
    int c = t->blens[0];
    return (is_write ? MPI_Put(p, c, MPI_BYTE, target, t->tdisps[0], c, MPI_BYTE, w)
                     : MPI_Get(p, c, MPI_BYTE, target, t->tdisps[0], c, MPI_BYTE, w)) ==
                   MPI_SUCCESS
               ? 0
               : AGGIO_ERR_MPI;
  }
  MPI_Datatype *mem = &t->types[t->ntypes++], *win = &t->types[t->ntypes++];
  MPI_Type_create_hindexed(n, t->blens, t->disps, MPI_BYTE, mem);
  MPI_Type_create_hindexed(n, t->blens, t->tdisps, MPI_BYTE, win);
  MPI_Type_commit(mem);
  MPI_Type_commit(win);
  return (is_write ? MPI_Put(stream, 1, *mem, target, 0, 1, *win, w)
                   : MPI_Get(stream, 1, *mem, target, 0, 1, *win, w)) == MPI_SUCCESS
             ? 0
             : AGGIO_ERR_MPI;
}

/* This rank's side of the round: its parts into (out of) every aggregator
 * it has bytes for; then the flush that completes them at the targets. */
static int move_mine(struct tp *t, int is_write) {
  aggio_file fh = t->fh;
  int rc = 0, moved_any = 0;
  for (int i = 0; i < t->naggr; i++) {
    int64_t hi;
    const int64_t *ready = notice_from(t, i);
    struct parts p = {.end = ready[0], .disp = ready[1], .is_write = is_write};
    if (!ready[2])
      continue;
    if (fh->topo.aggr[i] == fh->rank) { /* my own buffer: no notice came */
      struct slot *sl = &t->slot[t->k % 2];
      p.own = sl->buf;
      p.end = is_write ? INT64_MAX : sl->hdr->valid_end[t->k % 2];
    }
    int64_t moved = aggio__tp_my_parts(t, i, &p.lo, &hi, one_part, &p);
    if (moved < 0) {
      rc = rc ? rc : (int)moved;
      continue;
    }
    aggio__count_moved(fh, fh->topo.aggr[i], moved);
    if (p.n > 0) { /* also after an earlier failure, as two_sided sends */
      int trc = transfer(t, p.n, fh->topo.aggr[i], is_write);
      rc = rc ? rc : trc;
      moved_any = 1;
    }
  }
  /* Remote completion at every target at once: per-target flushes would
   * wait for each in turn. */
  if (moved_any && MPI_Win_flush_all(t->f->rma_win) != MPI_SUCCESS && rc == 0)
    rc = AGGIO_ERR_MPI;
  return rc;
}

/* Done notices: mine to the aggregators I had bytes for (after the flush),
 * and the aggregator's receives from the ranks it sent ready to.  Sent and
 * received whatever failed before, so that no peer waits. */
static int post_done(struct tp *t) {
  aggio_file fh = t->fh;
  int rc = 0;
  for (int i = 0; i < t->naggr; i++)
    if (notice_from(t, i)[2] && fh->topo.aggr[i] != fh->rank && rc == 0)
      rc = post_notice(t, notice_from(t, i), 0, fh->topo.aggr[i], RMA_DONE_TAG, 1);
  for (int r = 0; t->me >= 0 && r < fh->nprocs; r++)
    if (r != fh->rank && t->window[r].n > 0 && rc == 0)
      rc = post_notice(t, notice_to(t, r), 0, r, RMA_DONE_TAG, 0);
  return rc;
}

static int rma_moved(struct aggio__op *op);

/* Step 2: the puts (gets), then the done notices. */
static int rma_move(struct aggio__op *op) {
  struct tp *t = op->sdata;
  int is_write = op->acc.is_write;
  aggio__op_note(op, move_mine(t, is_write), is_write ? "put" : "get");
  aggio__op_note(op, post_done(t), "done notice");
  aggio__then(op, rma_moved, AGGIO_P_EXCHANGE);
  return aggio__op_await_requests(op, AGGIO_P_EXCHANGE);
}

/* Step 3: every rank with bytes for my buffer is done with it. */
static int rma_moved(struct aggio__op *op) {
  struct tp *t = op->sdata;
  for (int i = 0; i < t->ntypes; i++)
    MPI_Type_free(&t->types[i]);
  t->ntypes = 0;
  if (t->me >= 0)
    MPI_Win_sync(t->f->rma_win); /* the puts, before the write reads the buffer */
  return aggio__then(op, t->f->round_moved, AGGIO_P_WRITE);
}

const struct aggio__exchange_ops aggio__exchange_rma = {
    .name = "rma",
    .setup = rma_setup,
    .close = rma_close,
    .round = rma_round,
    .blocking_setup = 1,
};
