/*
 * exchange_two_sided.c - the two-phase strategy's message exchange
 * (two_phase.h): in each round, ranks on the aggregator's node (emulated
 * node included) copy into its buffer through a shared-memory window made
 * once per file (one copy instead of two); the others send one message per
 * aggregator, described by MPI derived types on both sides so that nothing
 * is packed twice.  Node barriers say when a shared buffer may be filled
 * and when it is full.  Reads are the mirror image and stop at end of file.
 */
#include <stdlib.h>
#include <string.h>

#include "two_phase.h"

#define TP_TAG 0x2a61

/* ---- per file: the node's shared memory ---------------------------------------------- */

/* Each same-node aggregator's part of the node memory, in aggregator
 * order, each a whole number of pages: the same layout on every rank of
 * the node, from what every rank knows (fh->topo.aggr, the hints). */
static size_t part_bytes(const struct tp_file *f) {
  return (size_t)aggio__round_up(tp_buffers_bytes(f), 4096);
}

static int on_my_node(aggio_file fh, int r) {
  return fh->topo.node_of_rank[r] == fh->topo.node_of_rank[fh->rank];
}

static size_t node_bytes(aggio_file fh, const struct tp_file *f) {
  size_t n = 0;
  for (int i = 0; i < fh->topo.naggr; i++)
    n += on_my_node(fh, fh->topo.aggr[i]) ? part_bytes(f) : 0;
  return n;
}

static int mapped(struct aggio__op *op);

/* Set-up: the node's aggregator buffers in node memory made without
 * blocking (shm.h); with aggio_node_shm=disable, or a node without an
 * aggregator, none (messages only). */
static int ts_setup(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = aggio__tp_file(fh);
  if (fh->hints.node_shm.num == AGGIO_DISABLE || node_bytes(fh, f) == 0)
    return aggio__then(op, f->exchange_ready, AGGIO_P_PLAN);
  return aggio__shm_make(op, &f->shm, fh->topo.node_comm, node_bytes(fh, f), mapped,
                         AGGIO_P_PLAN);
}

/* Every rank of the node mapped it, or none keeps it (refused node
 * memory: messages, and private buffers). */
static int mapped(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = aggio__tp_file(fh);
  size_t at = 0;
  for (int i = 0; f->shm.base && i < fh->topo.naggr; i++) {
    if (!on_my_node(fh, fh->topo.aggr[i]))
      continue;
    f->peer[i] = tp_page_align(f->shm.base + at, f->align);
    at += part_bytes(f);
  }
  if (f->shm.base && fh->topo.my_aggr_index >= 0)
    f->own = f->peer[fh->topo.my_aggr_index];
  return aggio__then(op, f->exchange_ready, AGGIO_P_PLAN);
}

static void ts_close(aggio_file fh, struct tp_file *f) {
  (void)fh;
  aggio__shm_free(&f->shm);
}

/* ---- one round ------------------------------------------------------------------------ */

/* Posts one message of n blocks (blens/disps relative to base). */
static int post(struct tp *t, char *base, int n, int peer, int is_send) {
  MPI_Request *r = aggio__op_request(t->op);
  if (!r)
    return AGGIO_ERR_NOMEM;
  MPI_Comm c = t->fh->comm;
  int rc;
  if (n == 1) {
    char *p = base + t->disps[0];
    rc = is_send ? MPI_Isend(p, t->blens[0], MPI_BYTE, peer, TP_TAG, c, r)
                 : MPI_Irecv(p, t->blens[0], MPI_BYTE, peer, TP_TAG, c, r);
  } else {
    MPI_Datatype *ty = &t->types[t->ntypes++];
    MPI_Type_create_hindexed(n, t->blens, t->disps, MPI_BYTE, ty);
    MPI_Type_commit(ty);
    rc = is_send ? MPI_Isend(base, 1, *ty, peer, TP_TAG, c, r)
                 : MPI_Irecv(base, 1, *ty, peer, TP_TAG, c, r);
  }
  return rc == MPI_SUCCESS ? 0 : AGGIO_ERR_MPI;
}

/* Buffer s of aggregator i as this rank reaches it through shared memory,
 * or NULL (other node, or shared memory off); its header in *hdr. */
static char *peer_buffer(const struct tp *t, int i, int s, struct tp_header **hdr) {
  if (!t->shm || !t->f->peer[i])
    return NULL;
  *hdr = (struct tp_header *)t->f->peer[i];
  return t->f->peer[i] + t->f->align + s * t->f->slot;
}

/* 1 if rank r reaches my buffers through shared memory. */
static int same_node(const struct tp *t, int r) {
  aggio_file fh = t->fh;
  return t->shm && fh->topo.node_of_rank[r] == fh->topo.node_of_rank[fh->rank];
}

/* Where this rank's parts for one aggregator go in a round. */
struct parts {
  char *peer;             /* the aggregator's buffer in shared memory, or NULL */
  struct tp_header *hdr;
  int s, is_write, n;     /* n: blocks of the message so far */
  int64_t lo;
};

/* One part: copied through shared memory (reads stop at the end of the data
 * the aggregator found), or one more block of the message. */
static int one_part(struct tp *t, void *ctx, int64_t a, int64_t b, int64_t spos) {
  struct parts *p = ctx;
  char *stream = t->op->acc.stream;
  if (p->peer && p->is_write) {
    memcpy(tp_buf_at(t, p->peer, p->lo, a), stream + spos, (size_t)(b - a));
    return 0;
  }
  if (p->peer) {
    if (b > p->hdr->valid_end[p->s])
      b = p->hdr->valid_end[p->s];
    if (b > a)
      memcpy(stream + spos, tp_buf_at(t, p->peer, p->lo, a), (size_t)(b - a));
    return 0;
  }
  if (aggio__tp_scratch(t, (size_t)p->n + 1) != 0)
    return AGGIO_ERR_NOMEM;
  t->disps[p->n] = (MPI_Aint)spos;
  t->blens[p->n] = (int)(b - a);
  p->n++;
  return 0;
}

/* This rank's side of round k: for each aggregator, the stream bytes of my
 * pieces inside that aggregator's window, copied through shared memory when
 * the aggregator shares the node, else sent (or received) as one message. */
static int move_mine(struct tp *t, int is_write) {
  for (int i = 0; i < t->naggr; i++) {
    int64_t hi;
    struct parts p = {.s = (int)(t->k % 2), .is_write = is_write};
    p.peer = peer_buffer(t, i, p.s, &p.hdr);
    int64_t moved = aggio__tp_my_parts(t, i, &p.lo, &hi, one_part, &p);
    if (moved < 0)
      return (int)moved;
    aggio__count_moved(t->fh, t->fh->topo.aggr[i],
                       moved); /* my side counts each byte once */
    if (p.n > 0 && post(t, t->op->acc.stream, p.n, t->fh->topo.aggr[i], is_write) != 0)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

/* Messages with the ranks that cannot reach the buffer through shared
 * memory.  Reads send only what lies before end of file: the receiver's
 * type is then filled as far as the data goes, in stream order. */
static int post_theirs(struct tp *t, struct slot *sl, int is_send) {
  int64_t end = is_send ? sl->hdr->valid_end[t->k % 2] : INT64_MAX;
  for (int r = 0; r < t->fh->nprocs; r++) {
    struct aggio__extents *w = &t->window[r];
    if (w->n == 0 || same_node(t, r))
      continue;
    if (aggio__tp_scratch(t, w->n) != 0)
      return AGGIO_ERR_NOMEM;
    int n = 0;
    for (size_t j = 0; j < w->n && w->v[j].off < end; j++) {
      int64_t len = w->v[j].off + w->v[j].len <= end ? w->v[j].len : end - w->v[j].off;
      t->disps[n] = (MPI_Aint)(w->v[j].off - sl->lo);
      t->blens[n++] = (int)len;
    }
    if (n == 0) { /* nothing before end of file: an empty message still pairs */
      t->disps[0] = 0;
      t->blens[0] = 0;
      n = 1;
    }
    if (post(t, tp_buf_at(t, sl->buf, sl->lo, sl->lo), n, r, is_send) != 0)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

static int ts_post(struct aggio__op *op);
static int ts_received(struct aggio__op *op);

/* Same-node ranks may use the buffer once its aggregator has prepared it. */
static int ts_round(struct aggio__op *op) {
  struct tp *t = op->sdata;
  aggio__then(op, ts_post, AGGIO_P_EXCHANGE);
  if (!t->shm)
    return AGGIO_STEP_NEXT;
  return aggio__op_barrier(op, op->fh->topo.node_comm, AGGIO_P_WAIT);
}

static int ts_post(struct aggio__op *op) {
  struct tp *t = op->sdata;
  int is_write = op->acc.is_write;
  if (t->me >= 0)
    aggio__op_note(op, post_theirs(t, &t->slot[t->k % 2], !is_write),
                   is_write ? "receive" : "send");
  aggio__op_note(op, move_mine(t, is_write), is_write ? "send" : "receive");
  aggio__then(op, ts_received, AGGIO_P_EXCHANGE);
  return aggio__op_await_requests(op, AGGIO_P_EXCHANGE);
}

static int ts_received(struct aggio__op *op) {
  struct tp *t = op->sdata;
  for (int i = 0; i < t->ntypes; i++)
    MPI_Type_free(&t->types[i]);
  t->ntypes = 0;
  aggio__then(op, t->f->round_moved, AGGIO_P_WRITE);
  if (!t->shm || !op->acc.is_write)
    return AGGIO_STEP_NEXT;
  /* every same-node rank has copied in */
  return aggio__op_barrier(op, op->fh->topo.node_comm, AGGIO_P_WAIT);
}

const struct aggio__exchange_ops aggio__exchange_two_sided = {
    .name = "two_sided",
    .setup = ts_setup,
    .close = ts_close,
    .round = ts_round,
};
