/*
 * staging.c - the choice of the stage back end at open (staging.h).
 *
 * Staging wraps one ordinary POSIX file: the movers and `aggio stage
 * drain` write the final file with plain pwrite, so a subfiled file or the
 * null back end is not staged (the hint says so in MPI_File_get_info).
 * The stage holds each rank's own writes, so a staged file is written by
 * every rank (romio_no_indep_rw is ignored) through the independent
 * strategy.
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "stage_order.h"
#include "staging.h"

extern const struct aggio__storage_ops aggio__storage_posix, aggio__storage_null,
    aggio__storage_stage;

static void ignored(struct aggio__hint_value *h, const char *why) {
  snprintf(h->ignored, sizeof h->ignored, "%s", why);
}

/* The index of h's value among names, or `fallback` with h marked
 * ignored (a malformed value is a warning, as for most hints). */
static int choice(struct aggio__hint_value *h, const char *const *names, int n,
                  int fallback, const char *why) {
  for (int i = 0; i < n; i++)
    if (strcmp(h->str, names[i]) == 0)
      return i;
  ignored(h, why);
  return fallback;
}

static const char *const drains[] = {"background", "at_close", "none", "detach"}; /* enum */
static const char *const syncs[] = {"stage", "final"};                   /* 1: final */
static const char *const checksums[] = {"record", "data", "auto"};       /* 2: auto */

/* The open's session: rank 0's clock in microseconds, so that the
 * sessions of a stage directory sort by age (docs/staging.md). */
static void session_name(aggio_file fh) {
  long long us = 0;
  if (fh->rank == 0) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    us = (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
  }
  MPI_Bcast(&us, 1, MPI_LONG_LONG, 0, fh->comm);
  snprintf(fh->st.stage.session, sizeof fh->st.stage.session, "%016llx",
           (unsigned long long)us);
}

int aggio__staging_choose(aggio_file fh, struct aggio__err *e) {
  (void)e;
  fh->st.final_ops = NULL;
  if (fh->hints.stage_dir.str[0] == '\0')
    return 0;
  if (fh->st.ops != &aggio__storage_posix) {
    ignored(&fh->hints.stage_dir, fh->st.ops == &aggio__storage_null
                                      ? "the null back end stores nothing to stage"
                                      : "staging writes one ordinary file: this one is "
                                        "subfiled");
    return 0;
  }
  struct aggio__stage_conf *c = &fh->st.stage;
  snprintf(c->dir, sizeof c->dir, "%s", fh->hints.stage_dir.str);
  c->drain = choice(&fh->hints.stage_drain, drains, 4, AGGIO_STAGE_BACKGROUND,
                    "not background, at_close, none or detach: background used");
  c->sync_final = choice(&fh->hints.stage_sync, syncs, 2, 1,
                         "not final or stage: final used");
  int crc = choice(&fh->hints.stage_checksum, checksums, 3, 2,
                   "not data, record or auto: auto used");
  c->data_crc = crc == 2 ? -1 : crc; /* -1: auto, resolved by the back end */
  c->movers = 1;
  session_name(fh);
  if (fh->hints.no_indep_rw.num) {
    ignored(&fh->hints.no_indep_rw, "a staged file is written by every rank");
    fh->hints.no_indep_rw.num = 0;
  }
  fh->st.final_ops = &aggio__storage_posix;
  fh->st.ops = &aggio__storage_stage;
  return 0;
}

void aggio__staging_resolve(aggio_file fh) {
  if (!aggio__staged(fh))
    return;
  int on_node = 1;
  if (fh->topo.node_comm != MPI_COMM_NULL)
    MPI_Comm_size(fh->topo.node_comm, &on_node);
  int64_t m = fh->hints.stage_movers.num > 0 ? fh->hints.stage_movers.num : 1;
  int64_t mine = (m + on_node - 1) / on_node;
  fh->st.stage.movers = (int)(mine < 1 ? 1 : mine > 64 ? 64 : mine);
}

int aggio__staged(aggio_file fh) { return fh->st.final_ops != NULL; }

void aggio__staging_stats(aggio_file fh, FILE *f) {
  if (!aggio__staged(fh))
    return;
  fprintf(f, "  stage dir: %s\n  stage drain: %s\n", fh->st.stage.dir,
          drains[fh->st.stage.drain]);
}

const struct aggio__strategy_ops *
aggio__staging_strategy(aggio_file fh, const struct aggio__strategy_ops *wanted) {
  if (!aggio__staged(fh))
    return wanted;
  const struct aggio__strategy_ops *ind = aggio__strategy_at(fh, AGGIO_STRAT_INDEPENDENT);
  struct aggio__hint_value *h = &fh->hints.strategy;
  if (h->num != AGGIO_STRAT_AUTO && h->num != AGGIO_STRAT_INDEPENDENT)
    ignored(h, "a staged file is written by each rank into its node's stage: "
               "independent");
  return ind ? ind : wanted;
}

int64_t aggio__staging_report_unwritten(aggio_file fh, FILE *out) {
  char msg[AGGIO_ERRMSG_LEN + 2 * 4096];
  int64_t n = fh->st.ops->unwritten ? fh->st.ops->unwritten(&fh->st, msg, sizeof msg) : 0;
  if (n > 0)
    fprintf(out, "aggio: %s: %lld bytes of writes that had returned success could not be "
            "written to the file, which is incomplete: %s\n",
            fh->path, (long long)n, msg);
  return n;
}

/* ---- the newest write of each byte across ranks ------------------------------ */

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

int aggio__staging_order(aggio_file fh, enum aggio__stage_point at, struct aggio__err *e) {
  if (!aggio__staged(fh) || (at == AGGIO_STAGE_POINT_SYNC && !fh->st.stage.sync_final) ||
      (at == AGGIO_STAGE_POINT_CLOSE && (fh->st.stage.drain == AGGIO_STAGE_NONE ||
                                         fh->st.stage.drain == AGGIO_STAGE_DETACH)))
    return e->code;
  struct order o = {.fh = fh, .n = fh->nprocs};
  struct aggio__err mine = {0};
  o.failed = aggio__stage_settle(&fh->st, &mine) != 0;
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

int aggio__staging_below(aggio_file fh, int64_t size) {
  if (!aggio__staged(fh) || fh->st.write_through)
    return 0;
  int64_t end = aggio__stage_end(&fh->st), all = 0;
  MPI_Allreduce(&end, &all, 1, MPI_INT64_T, MPI_MAX, fh->comm);
  return all <= size;
}

/* ---- a drainer that outlives the program ---------------------------------------- */

static const char *drainer_path(void) {
  const char *env = getenv("AGGIO_STAGE_DRAINER");
  if (env && *env)
    return env;
  if (access(AGGIO_STAGE_DRAINER_INSTALLED, X_OK) == 0)
    return AGGIO_STAGE_DRAINER_INSTALLED;
  return access(AGGIO_STAGE_DRAINER_BUILT, X_OK) == 0 ? AGGIO_STAGE_DRAINER_BUILT : NULL;
}

void aggio__staging_hand_over(aggio_file fh, struct aggio__err *e) {
  if (!aggio__staged(fh) || fh->st.stage.drain != AGGIO_STAGE_DETACH ||
      (fh->amode & MPI_MODE_DELETE_ON_CLOSE))
    return;
  int on_node = 0; /* the node's stage directory is one: one drainer a node */
  if (fh->topo.node_comm != MPI_COMM_NULL)
    MPI_Comm_rank(fh->topo.node_comm, &on_node);
  struct aggio__err mine = {0};
  if (on_node == 0)
    aggio__stage_hand_over(&fh->st, drainer_path(), &mine);
  if (mine.code != 0 && e->code == 0)
    *e = mine;
}
