/*
 * tp_common.c - what the two-phase strategy's parts share (two_phase.h):
 * posting a message in the step's request slots, the scratch arrays, the
 * rounds' memory, and a rank's pieces in an aggregator's window.  Below the
 * strategy, the exchanges and the offset exchange, which all use it.
 */
#include <stdlib.h>

#include "two_phase.h"

int aggio__tp_post(struct tp *t, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   int is_send) {
  MPI_Request *r = aggio__op_request(t->op);
  if (!r)
    return AGGIO_ERR_NOMEM;
  MPI_Comm c = t->fh->comm;
  int rc = is_send ? MPI_Isend(buf, count, type, peer, tag, c, r)
                   : MPI_Irecv(buf, count, type, peer, tag, c, r);
  return rc == MPI_SUCCESS ? 0 : AGGIO_ERR_MPI;
}

int aggio__tp_scratch(struct tp *t, size_t n) {
  if (n <= t->scratch_cap)
    return 0;
  int *b = realloc(t->blens, n * sizeof *b);
  if (!b)
    return AGGIO_ERR_NOMEM;
  t->blens = b;
  MPI_Aint *d = realloc(t->disps, n * sizeof *d);
  if (!d)
    return AGGIO_ERR_NOMEM;
  t->disps = d;
  MPI_Aint *td = realloc(t->tdisps, n * sizeof *td);
  if (!td)
    return AGGIO_ERR_NOMEM;
  t->tdisps = td;
  t->scratch_cap = n;
  return 0;
}

/* A kept state's request slots, enough for any call, lent to this one. */
static int lend_requests(struct tp *t, int n) {
  if (!t->req) {
    t->req = aggio__malloc(t->fh, (size_t)n * sizeof *t->req);
    t->stat = aggio__malloc(t->fh, (size_t)n * sizeof *t->stat);
    if (!t->req || !t->stat) {
      free(t->req);
      free(t->stat);
      t->req = NULL;
      t->stat = NULL;
      return AGGIO_ERR_NOMEM;
    }
    t->req_cap = n;
  }
  aggio__op_lend_requests(t->op, t->req, t->stat, t->req_cap);
  return 0;
}

/* Every scratch array and request slot the rounds will use, before the
 * agreement that precedes them: after it, a local failure (a refused
 * write, a full disk) no longer stops the exchanges. */
int aggio__tp_reserve_rounds(struct tp *t, size_t total, size_t most, int active) {
  aggio_file fh = t->fh;
  size_t notes = 4 * (size_t)t->naggr + (t->me >= 0 ? 2 * (size_t)fh->nprocs : 0);
  if (t->keep) { /* the bounds, in memory the file keeps (plan/tp_keep.h) */
    total = (size_t)t->bound.total;
    most = (size_t)t->bound.most;
  }
  if (!t->note) /* its size never changes */
    t->note = aggio__malloc(fh, notes * sizeof *t->note);
  if (!t->note || aggio__extents_reserve(&t->slot[0].runs, total) != 0 ||
      aggio__extents_reserve(&t->slot[1].runs, total) != 0)
    return AGGIO_ERR_NOMEM;
  /* a round posts at most two requests per aggregator and per active rank
   * (the RMA exchange's notices); every rank may be active */
  int slots = 2 * t->naggr + 2 * active + 2;
  int rc = t->keep ? lend_requests(t, 2 * t->naggr + 2 * fh->nprocs + 2)
                   : aggio__op_reserve_requests(t->op, slots);
  return rc != 0 ? AGGIO_ERR_NOMEM : aggio__tp_scratch(t, most + 1);
}

int64_t aggio__tp_my_parts(struct tp *t, int i, int64_t *lo, int64_t *hi,
                           aggio__tp_part_fn fn, void *ctx) {
  struct piece_list *l = &t->mine[i];
  int64_t moved = 0;
  aggio__round_window(t->fd_lo[i], t->fd_hi[i], t->cb, t->k, lo, hi);
  while (l->cursor < l->n && l->v[l->cursor].off + l->v[l->cursor].len <= *lo)
    l->cursor++;
  for (size_t j = l->cursor; j < l->n && l->v[j].off < *hi; j++) {
    int64_t a = l->v[j].off > *lo ? l->v[j].off : *lo;
    int64_t b = l->v[j].off + l->v[j].len < *hi ? l->v[j].off + l->v[j].len : *hi;
    int rc = fn ? fn(t, ctx, a, b, l->v[j].spos + (a - l->v[j].off)) : 0;
    if (rc != 0)
      return rc;
    moved += b - a;
  }
  return moved;
}
