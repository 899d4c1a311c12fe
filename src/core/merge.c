/*
 * merge.c - non-blocking collective operations started back to back on one
 * file run as one operation: one summary, one exchange, one agreement,
 * instead of one each.  PnetCDF does this before it calls MPI-IO (a
 * put_vara_all per variable, one ncmpi_wait_all); here the library does it
 * for any caller of aggio_file_iwrite_at_all and friends.
 *
 * Which operations merge must be the same on every rank, whatever each
 * rank's progress timing was:
 *   - the request layer offers the first unstarted collective operation of
 *     a file with the small ones queued behind it (op->merge, n offered);
 *     the summary carries n (MIN and MAX over the ranks) and describes all
 *     n operations together;
 *   - one more reduction brings each offered operation's range over all
 *     ranks; the longest prefix whose ranges do not overlap merges, so that
 *     no byte is written by two of them (MPI's order between them would
 *     otherwise be lost) and the merged ranges stay sorted;
 *   - the carrier (the first) then takes the merged access and runs the
 *     chosen strategy as any operation.  When every rank offered the same
 *     n and all n merge, the first summary described exactly that access;
 *     otherwise the carrier summarizes its access again.  A merged
 *     operation costs two reductions where n operations cost n.
 * Everything after the first reduction is decided from agreed values, and
 * the memory of the merged access is reserved before the offer (a rank
 * without it offers nothing), so no rank's operations get out of step.
 */
#include <stdlib.h>
#include <string.h>

#include "merge.h"

/* Range of an access: [lo, hi), or lo = INT64_MAX when empty. */
static void range_of(const struct aggio__access *acc, int64_t *lo, int64_t *hi) {
  const struct aggio__extents *f = &acc->file;
  *lo = INT64_MAX;
  *hi = 0;
  if (f->n > 0 && acc->nbytes > 0) {
    *lo = f->v[0].off;
    *hi = f->v[f->n - 1].off + f->v[f->n - 1].len;
  }
}

static int merge_decide(struct aggio__op *op);

static void merge_mine(const struct aggio__op *op, struct aggio__call_summary *s) {
  const struct aggio__merge *g = op->merge;
  s->mergeable = s->offered_max = g->n;
  if (op->err.code != 0)
    return;
  int64_t lo = INT64_MAX, hi = 0, bytes = 0, pieces = 0;
  for (int i = 0; i < g->n; i++) {
    int64_t a, b;
    range_of(&g->ops[i]->acc, &a, &b);
    if (a >= b)
      continue;
    lo = a < lo ? a : lo;
    hi = b > hi ? b : hi;
    bytes += g->ops[i]->acc.nbytes;
    pieces += (int64_t)g->ops[i]->acc.file.n;
  }
  if (bytes == 0)
    return;
  s->lo = lo;
  s->hi = hi;
  s->bytes = bytes;
  s->pieces = s->most_pieces = pieces;
  s->span = hi - lo;
  s->ranks = 1;
}

static int merge_step(struct aggio__op *op) {
  struct aggio__merge *g = op->merge;
  g->n = (int)op->sum.mergeable; /* no more than this rank offered */
  for (int i = 0; i < g->n; i++) {
    int64_t lo, hi;
    range_of(&g->ops[i]->acc, &lo, &hi);
    g->ranges[2 * i] = lo;
    g->ranges[2 * i + 1] = -hi;
  }
  aggio__then(op, merge_decide, AGGIO_P_PLAN);
  return aggio__op_allreduce(op, MPI_IN_PLACE, g->ranges, 2 * g->n, MPI_INT64_T, MPI_MIN,
                             op->fh->comm, AGGIO_P_AGREE);
}

struct aggio__merge *aggio__merge_new(struct aggio__op **ops, int n) {
  struct aggio__merge *g = calloc(1, sizeof *g);
  if (!g)
    return NULL;
  g->ops = malloc((size_t)n * sizeof *g->ops);
  g->ranges = malloc((size_t)n * 2 * sizeof *g->ranges);
  g->order = malloc((size_t)n * sizeof *g->order);
  g->spos = malloc((size_t)n * sizeof *g->spos);
  int64_t bytes = 0;
  size_t pieces = 0;
  for (int i = 0; i < n; i++) {
    bytes += ops[i]->acc.nbytes;
    pieces += ops[i]->acc.file.n;
  }
  g->x.stream = bytes > 0 ? malloc((size_t)bytes) : NULL;
  if (!g->ops || !g->ranges || !g->order || !g->spos || (bytes > 0 && !g->x.stream) ||
      aggio__extents_reserve(&g->x.file, pieces) != 0) {
    aggio__merge_free(g);
    return NULL;
  }
  memcpy(g->ops, ops, (size_t)n * sizeof *ops);
  g->n = n;
  g->mine = merge_mine;
  g->step = merge_step;
  return g;
}

void aggio__merge_free(struct aggio__merge *g) {
  if (!g)
    return;
  free(g->ops);
  free(g->ranges);
  free(g->order);
  free(g->spos);
  free(g->x.stream);
  aggio__extents_free(&g->x.file);
  free(g);
}

/* The carrier takes the merged access: every merged operation's ranges
 * and data, in offset order, in the memory aggio__merge_new reserved (so
 * that nothing here can fail on one rank alone). */
static void build(struct aggio__op *op, struct aggio__merge *g) {
  struct aggio__access *x = &g->x;
  x->is_write = op->acc.is_write;
  x->nbytes = 0;
  for (int k = 0; k < g->m; k++) {
    int i = g->order[k];
    const struct aggio__access *a = &g->ops[i]->acc;
    g->spos[i] = x->nbytes;
    for (size_t e = 0; e < a->file.n; e++)
      aggio__extents_push(&x->file, a->file.v[e].off, a->file.v[e].len);
    if (x->is_write && a->nbytes > 0)
      memcpy(x->stream + x->nbytes, a->stream, (size_t)a->nbytes);
    x->nbytes += a->nbytes;
  }
  g->own = op->acc;
  op->acc = *x;
  g->built = 1;
}

static int merge_decide(struct aggio__op *op) {
  struct aggio__merge *g = op->merge;
  if (op->err.code != 0) /* the reduction failed: the outcome says so */
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  g->m = aggio__merge_prefix(g->ranges, g->n, g->order);
  /* the summary described all n together on every rank exactly when each
   * offered n (MIN = MAX) */
  int exact = g->m == g->n && op->sum.mergeable == op->sum.offered_max;
  g->decided = 1;
  if (g->m <= 1)
    g->m = 1;
  else
    build(op, g);
  if (exact)
    return aggio__then(op, aggio__step_choose, AGGIO_P_PLAN);
  return aggio__then(op, aggio__step_summarize, AGGIO_P_AGREE);
}

int aggio__merge_finish(struct aggio__op *op) {
  struct aggio__merge *g = op->merge;
  if (!g || g->m <= 1)
    return 1;
  struct aggio__access *x = &op->acc;
  for (int i = 0; i < g->m; i++) {
    struct aggio__op *o = g->ops[i];
    struct aggio__access *a = i == 0 ? &g->own : &o->acc;
    /* a read gives each operation its bytes before end of file; the
     * user's bytes past it stay as they were */
    if (g->built && !x->is_write && op->err.code == 0 && x->stream && a->nbytes > 0)
      memcpy(a->stream, x->stream + g->spos[i], (size_t)aggio__access_before_eof(a, op->eof));
    if (i > 0) {
      o->err = op->err;
      o->eof = op->eof;
      o->next = NULL;
    }
  }
  if (g->built) {
    op->acc = g->own; /* g->x stays g's, freed with it */
    g->built = 0;
  }
  return g->m;
}
