/*
 * staging_order.c - the newest write of each byte across a staged file's
 * ranks (staging.h, aggio__staging_order; docs/staging.md, "Writes of
 * different ranks to the same bytes").  The MPI half: every rank's
 * records cut into file domains and sent to their owners, the fixes the
 * owners plan (plan/stage_order.c) sent back to the ranks that write
 * them.  Every exchange agrees on failures first, so that no rank waits
 * in a collective another left.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "stage_order.h"
#include "staging.h"

/* One rank's part of the ordering: its records as pieces, what it sends
 * and receives (per rank counts, then the items), and whether anything
 * failed here. */
struct order {
  aggio_file fh;
  int n, failed;
  struct aggio__stage_piece *mine, *sent, *got;
  struct aggio__stage_fix *fixes, *todo;
  int64_t nmine, nsent, ngot, nfixes, ntodo;
  int64_t *scount, *rcount; /* items per rank */
  int *sc, *sd, *rc, *rd;   /* the same in bytes, and displacements (MPI's int) */
};

static int any(aggio_file fh, int failed) {
  int all = 0;
  MPI_Allreduce(&failed, &all, 1, MPI_INT, MPI_MAX, fh->comm);
  return all;
}

/* counts[r] items of `size` bytes as MPI's int counts and displacements;
 * -1 when they do not fit. */
static int byte_counts(const int64_t *count, int n, size_t size, int *c, int *d) {
  int64_t at = 0;
  for (int r = 0; r < n; r++) {
    if (count[r] < 0 || count[r] > (INT_MAX - at) / (int64_t)size)
      return -1;
    c[r] = (int)(count[r] * (int64_t)size);
    d[r] = (int)at;
    at += c[r];
  }
  return 0;
}

/* Sends o->scount[r] items (from `out`) to each rank r; *in gets what every
 * rank sent here (malloc'ed; *nin items).  Collective, its failures
 * agreed: 0, or -1 on every rank. */
static int exchange(struct order *o, const void *out, size_t size, void **in,
                    int64_t *nin) {
  aggio_file fh = o->fh;
  /* a rank that failed before sends -1s, so that every rank learns it here */
  for (int r = 0; o->failed && r < o->n; r++)
    o->scount[r] = -1;
  MPI_Alltoall(o->scount, 1, MPI_INT64_T, o->rcount, 1, MPI_INT64_T, fh->comm);
  int64_t total = 0;
  for (int r = 0; r < o->n; r++) {
    o->failed |= o->rcount[r] < 0;
    total += o->rcount[r] > 0 ? o->rcount[r] : 0;
  }
  *in = NULL;
  if (!o->failed && (byte_counts(o->scount, o->n, size, o->sc, o->sd) != 0 ||
                     byte_counts(o->rcount, o->n, size, o->rc, o->rd) != 0 ||
                     !(*in = aggio__malloc(fh, (size_t)(total ? total : 1) * size))))
    o->failed = 1;
  if (any(fh, o->failed)) {
    free(*in);
    *in = NULL;
    return -1;
  }
  MPI_Alltoallv(out, o->sc, o->sd, MPI_BYTE, *in, o->rc, o->rd, MPI_BYTE, fh->comm);
  *nin = total;
  return 0;
}

/* The file domains: [lo, hi) of every rank's records cut in n, each
 * record's pieces sent to their domains' owners, who find the bytes
 * written by several ranks and send each its share to write again. */
static int plan_fixes(struct order *o, int64_t lo, int64_t hi) {
  int64_t domain = (hi - lo + o->n - 1) / o->n;
  domain = domain > 0 ? domain : 1;
  if (!o->failed && aggio__stage_split(o->mine, o->nmine, lo, domain, o->n, &o->sent,
                                       &o->nsent, o->scount) != 0)
    o->failed = 1;
  void *got = NULL;
  if (exchange(o, o->sent, sizeof *o->sent, &got, &o->ngot) != 0)
    return -1;
  o->got = got;
  if (aggio__stage_conflicts(o->got, o->ngot, &o->fixes, &o->nfixes) != 0)
    o->failed = 1;
  memset(o->scount, 0, (size_t)o->n * sizeof *o->scount);
  for (int64_t i = 0; i < o->nfixes; i++) /* sorted by rank */
    o->scount[o->fixes[i].rank]++;
  void *todo = NULL;
  if (exchange(o, o->fixes, sizeof *o->fixes, &todo, &o->ntodo) != 0)
    return -1;
  o->todo = todo;
  return 0;
}

static void order_free(struct order *o) {
  void *p[] = {o->mine, o->sent, o->got, o->fixes, o->todo, o->scount,
               o->rcount, o->sc, o->sd, o->rc, o->rd};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
    free(p[i]);
}

/* This rank's records as pieces, their hull, and the buffers sized by
 * the number of ranks. */
static void order_prepare(struct order *o, int64_t *lo, int64_t *hi) {
  aggio_file fh = o->fh;
  struct aggio__stage_rec *r = NULL;
  int64_t n = aggio__stage_records(&fh->st, &r);
  o->nmine = n > 0 ? n : 0;
  o->mine = o->nmine ? aggio__malloc(fh, (size_t)o->nmine * sizeof *o->mine) : NULL;
  o->scount = aggio__calloc(fh, (size_t)o->n, sizeof *o->scount);
  o->rcount = aggio__calloc(fh, (size_t)o->n, sizeof *o->rcount);
  int **ints[] = {&o->sc, &o->sd, &o->rc, &o->rd};
  for (int i = 0; i < 4; i++)
    *ints[i] = aggio__calloc(fh, (size_t)o->n, sizeof(int));
  o->failed |= n < 0 || (o->nmine && !o->mine) || !o->scount || !o->rcount || !o->sc ||
               !o->sd || !o->rc || !o->rd;
  *lo = INT64_MAX, *hi = 0;
  for (int64_t i = 0; !o->failed && i < o->nmine; i++) {
    o->mine[i] = (struct aggio__stage_piece){r[i], fh->rank};
    int64_t a = (int64_t)r[i].offset, b = a + (int64_t)r[i].length;
    *lo = a < *lo ? a : *lo;
    *hi = b > *hi ? b : *hi;
  }
  free(r);
}

static void order_failed(aggio_file fh, const struct aggio__err *mine,
                         struct aggio__err *e) {
  struct aggio__err why = *mine;
  if (why.code == 0)
    aggio__fail(&why, AGGIO_ERR_IO, "rank %d: the staged writes of %s stay in %s: they "
                "could not be put in the file in the order they were made (a rank's "
                "movers failed, or memory ran out); aggio stage drain writes them",
                fh->rank, fh->path, fh->st.stage.dir);
  aggio__stage_fail(&fh->st, &why);
  if (e->code == 0)
    *e = why;
}

/* aggio_stage_merge=node: the node's first rank learns how many records
 * each rank of the node made, its movers move them all, and it tells the
 * others the outcome; then every rank counts its records as moved (or
 * fails, its records kept).  Collective over the node. */
static int node_settle(aggio_file fh, struct aggio__err *mine) {
  const struct aggio__stage_conf *c = &fh->st.stage;
  int64_t count = aggio__stage_count(&fh->st);
  MPI_Gather(&count, 1, MPI_INT64_T, c->node_counts, 1, MPI_INT64_T, 0, fh->topo.node_comm);
  struct aggio__err out = {0};
  if (c->node_ranks[0] == fh->rank)
    aggio__stage_node_settle(&fh->st, c->node_counts, &out);
  MPI_Bcast(&out, (int)sizeof out, MPI_BYTE, 0, fh->topo.node_comm);
  if (out.code != 0) {
    if (mine->code == 0)
      *mine = out;
    return -1;
  }
  aggio__stage_moved_all(&fh->st);
  return 0;
}

int aggio__staging_order(aggio_file fh, enum aggio__stage_point at, struct aggio__err *e) {
  if (!aggio__staged(fh) || (at == AGGIO_STAGE_POINT_SYNC && !fh->st.stage.sync_final) ||
      (at == AGGIO_STAGE_POINT_CLOSE && (fh->st.stage.drain == AGGIO_STAGE_NONE ||
                                         fh->st.stage.drain == AGGIO_STAGE_DETACH)))
    return e->code;
  struct order o = {.fh = fh, .n = fh->nprocs};
  struct aggio__err mine = {0};
  if (fh->st.stage.merge)
    o.failed = node_settle(fh, &mine) != 0;
  o.failed = o.failed || aggio__stage_settle(&fh->st, &mine) != 0;
  int64_t lo, hi;
  order_prepare(&o, &lo, &hi);
  /* failed, -lo, hi, and the highest and lowest ranks with records */
  int64_t v[5] = {o.failed, -lo, hi, o.nmine ? fh->rank : -1,
                  o.nmine ? -(int64_t)fh->rank : -(int64_t)INT_MAX}, all[5];
  MPI_Allreduce(v, all, 5, MPI_INT64_T, MPI_MAX, fh->comm);
  int writers = all[3] < 0 ? 0 : all[3] == -all[4] ? 1 : 2;
  int failed = all[0] != 0;
  if (!failed && writers > 1)
    failed = plan_fixes(&o, -all[1], all[2]) != 0;
  for (int64_t i = 0; !failed && i < o.ntodo; i++)
    if (aggio__stage_rewrite(&fh->st, o.todo[i].offset, o.todo[i].length, &mine) != 0)
      o.failed = 1;
  if (!failed && writers > 1)
    failed = any(fh, o.failed);
  if (failed)
    order_failed(fh, &mine, e);
  order_free(&o);
  return e->code;
}
