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
 *     the summary carries n and its reduction takes the MIN;
 *   - one more reduction brings each offered operation's range over all
 *     ranks; the longest prefix whose ranges do not overlap merges, so that
 *     no byte is written by two of them (MPI's order between them would
 *     otherwise be lost) and the merged ranges stay sorted;
 *   - the carrier (the first) then takes the merged access, summarizes it
 *     again and runs the chosen strategy as any operation.
 * Everything after the first reduction is decided from agreed values.  A
 * rank that cannot allocate the merged access fails the merged operation
 * on every rank (the second summary agrees the error), so no rank's later
 * operations get out of step.
 */
#include <stdlib.h>
#include <string.h>

#include "engine.h"

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

int aggio__merge_step(struct aggio__op *op) {
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

/* The merged access of the carrier: every merged operation's ranges and
 * data, in offset order.  Local; 0 or AGGIO_ERR_NOMEM. */
static int build(struct aggio__op *op, struct aggio__merge *g) {
  struct aggio__access x = {.is_write = op->acc.is_write};
  for (int k = 0; k < g->m; k++)
    x.nbytes += g->ops[k]->acc.nbytes;
  x.stream = x.nbytes > 0 ? malloc((size_t)x.nbytes) : NULL;
  if (x.nbytes > 0 && !x.stream)
    return AGGIO_ERR_NOMEM;
  int64_t spos = 0;
  for (int k = 0; k < g->m; k++) {
    int i = g->order[k];
    const struct aggio__access *a = &g->ops[i]->acc;
    g->spos[i] = spos;
    for (size_t e = 0; e < a->file.n; e++)
      if (aggio__extents_push(&x.file, a->file.v[e].off, a->file.v[e].len) != 0) {
        aggio__extents_free(&x.file);
        free(x.stream);
        return AGGIO_ERR_NOMEM;
      }
    if (x.is_write && a->nbytes > 0)
      memcpy(x.stream + spos, a->stream, (size_t)a->nbytes);
    spos += a->nbytes;
  }
  g->own = op->acc;
  op->acc = x;
  g->built = 1;
  return 0;
}

static int merge_decide(struct aggio__op *op) {
  struct aggio__merge *g = op->merge;
  if (op->err.code != 0) /* the reduction failed: the outcome says so */
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  g->m = aggio__merge_prefix(g->ranges, g->n, g->order);
  op->merge = NULL; /* the second summary offers nothing */
  if (g->m <= 1) {
    op->merge = g;
    g->m = 1;
    return aggio__then(op, aggio__step_choose, AGGIO_P_PLAN);
  }
  int rc = build(op, g);
  op->merge = g;
  if (rc != 0)
    aggio__fail(&op->err, rc, "rank %d: out of memory merging %d operations", op->fh->rank,
                g->m);
  g->n = 1; /* mine.mergeable of the second summary */
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
    aggio__extents_free(&x->file);
    free(x->stream);
    op->acc = g->own;
    g->built = 0;
  }
  return g->m;
}
