/*
 * strategy_node_local.c - node-local aggregation: every node writes (and
 * reads) its own ranks' data through K aggregators of its own, fed through
 * shared memory; no file data crosses nodes, only each rank's offset list
 * within its node and one small summary per rank across them.  After the
 * HPE paper "MPI-IO Local Aggregation as Collective Buffering" (Cray
 * MPICH's local aggregation) with its future work: K aggregators per node
 * (cb_config_list *:K or aggio_node_aggregators), each coalescing a
 * contiguous share of the node's bytes into few large writes.
 *
 * One call, on every rank (the plan is pure code, node_plan.c):
 *   1. the node's ranks gather each other's offset lists (allgather of the
 *      counts, a node agreement once the memory is there, allgatherv);
 *   2. each computes the same plan: the union of the node's ranges, split
 *      into K byte-balanced shares cut at stripe boundaries, packed into
 *      rounds of each aggregator's buffer, and its own copies;
 *   3. one allgather over the file's ranks of a 6-number summary per rank
 *      (error, the node's span, runs, aggregators, active ones): the
 *      set-up's agreement, and the statistics' view of fragmentation;
 *   4. round by round, inside each node only: ranks copy their bytes into
 *      the aggregators' shared buffers, a node barrier, the aggregators
 *      write each piece (one pwrite per contiguous run, O_DIRECT where it
 *      pays) from the I/O threads while the next round fills the
 *      other of their two buffers (aggio_pipeline); reads are the mirror
 *      image and stop at end of file;
 *   5. the outcome is agreed over the file's ranks.
 * Holes are never written: an aggregator writes only the runs its node's
 * ranks cover, so bytes of other nodes or of nobody stay as they are (no
 * read-modify-write is ever needed).  In atomic mode the calls run as
 * independent ones (which lock each rank's range), since an aggregator
 * writes pieces of several ranks.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "node_plan.h"
#include "shm.h"

#define PAGE 4096
/* The per-rank summary of step 3. */
enum { NS_ERR, NS_LO, NS_HI, NS_RUNS, NS_K, NS_ACTIVE, NS_COUNT };

/* ---- per-file state: the node's aggregators and their shared buffers --------- */

/* At the start of each aggregator's part of the window: where the file
 * ended in the reads into each buffer (reads copy nothing past it). */
struct nl_header {
  int64_t eof[2];
};

struct nl_file {
  struct aggio__shm shm; /* the aggregators' buffers on this node (shm.h) */
  int *flags;          /* [2 node_size]: set-up, each node rank's aggregator and opened flags */
  int *local;          /* [node_size]: set-up, the node ranks chosen */
  int node_rank, node_size;
  int k;               /* aggregators of this node */
  int *world;          /* [k] their ranks in fh->comm */
  char **part;         /* [k] each one's header page as this rank maps it */
  int me;              /* my index among them, or -1 */
  int64_t slot;        /* bytes of each of an aggregator's two buffers */
  int64_t align;       /* packing alignment (direct I/O), 1: none */
  int64_t page;        /* memory alignment of the buffers */
  int64_t cut;         /* share boundaries: stripe or block */
  int *fb_counts;      /* [node_size] stand-ins for a call without memory, */
  int64_t *fb_sums;    /* [NS_COUNT * (nprocs + 1)] so it still takes part */
};

static void nl_fini(aggio_file fh, void *state) {
  struct nl_file *f = state;
  (void)fh;
  if (!f)
    return;
  aggio__shm_free(&f->shm);
  free(f->flags);
  free(f->local);
  free(f->world);
  free(f->part);
  free(f->fb_counts);
  free(f->fb_sums);
  free(f);
}

static char *align_up(char *p, int64_t a) {
  uintptr_t u = (uintptr_t)p, m = (uintptr_t)a;
  return (char *)((u + m - 1) / m * m);
}

/* Chooses the node's aggregators (the same on every rank of the node, with
 * no allocation that could fail on one rank alone): flagged are the file's
 * aggregators, which alone have the file open under romio_no_indep_rw. */
static int choose(aggio_file fh, struct nl_file *f, const int *flags, int *local,
                  struct aggio__err *e) {
  int n = f->node_size;
  int *flagged = f->world; /* scratch until the ranks are translated below */
  for (int i = 0; i < n; i++)
    flagged[i] = flags[2 * i];
  f->k = aggio__nl_aggregators(n, flagged, (int)fh->hints.node_aggregators.num, local);
  f->me = -1;
  for (int j = 0; j < f->k; j++) {
    if (local[j] == f->node_rank)
      f->me = j;
    if (!flags[2 * local[j] + 1])
      return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: node_local: an aggregator of "
                         "this node did not open the file (romio_no_indep_rw=true opens it "
                         "only on cb_config_list's aggregators; aggio_node_aggregators "
                         "asks for more)", fh->rank);
  }
  MPI_Group world, node;
  MPI_Comm_group(fh->comm, &world);
  MPI_Comm_group(fh->topo.node_comm, &node);
  MPI_Group_translate_ranks(node, f->k, local, world, f->world);
  MPI_Group_free(&world);
  MPI_Group_free(&node);
  return 0;
}

/* Each aggregator's part of the node memory: a header page and two
 * buffers, on pages of their own, so that the K aggregators never share a
 * page: they fill and write in parallel. */
static size_t part_bytes(const struct nl_file *f) {
  return (size_t)(3 * f->page + 2 * f->slot);
}

static int nl_flags(struct aggio__op *op);
static int nl_chosen(struct aggio__op *op);
static int nl_mapped(struct aggio__op *op);

static struct nl_file *file_state(aggio_file fh) {
  return fh->strategy_state[AGGIO_STRAT_NODE_LOCAL];
}

/* Set-up, in non-blocking steps: this rank's memory (agreed first: a rank
 * without it could not take part in the node's collectives), which node
 * ranks aggregate (every rank of the node says whether it is one of the
 * file's aggregators and has the file open), then the aggregators'
 * buffers in node memory (shm.h). */
static int nl_setup(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct nl_file *f = aggio__calloc(fh, 1, sizeof *f);
  fh->strategy_state[AGGIO_STRAT_NODE_LOCAL] = f;
  if (f) {
    MPI_Comm_rank(fh->topo.node_comm, &f->node_rank);
    MPI_Comm_size(fh->topo.node_comm, &f->node_size);
    /* Hints and the probed file system are the same on every rank, so
     * every rank of a node packs alike. */
    f->align = fh->hints.direct_io.num != AGGIO_DISABLE && fh->st.dio_align > 1 ? fh->st.dio_align : 1;
    f->page = fh->st.dio_align > PAGE ? fh->st.dio_align : PAGE;
    int64_t cb = fh->hints.cb_buffer_size.num < (1 << 30) ? fh->hints.cb_buffer_size.num
                                                          : (1 << 30);
    f->slot = aggio__round_up(cb > 2 * f->page ? cb : 2 * f->page, f->page);
    f->cut = fh->hints.striping_unit.num > 0 ? fh->hints.striping_unit.num : fh->st.block;
    size_t n = (size_t)f->node_size;
    f->fb_counts = aggio__calloc(fh, n, sizeof *f->fb_counts);
    f->fb_sums = aggio__calloc(fh, NS_COUNT * ((size_t)fh->nprocs + 1), sizeof *f->fb_sums);
    f->flags = aggio__malloc(fh, 2 * n * sizeof *f->flags);
    f->local = aggio__malloc(fh, n * sizeof *f->local);
    f->world = aggio__malloc(fh, n * sizeof *f->world);
    f->part = aggio__calloc(fh, n, sizeof *f->part);
  }
  if (!f || !f->fb_counts || !f->fb_sums || !f->flags || !f->local || !f->world || !f->part)
    aggio__op_note(op, AGGIO_ERR_NOMEM, "node_local set-up");
  return aggio__op_agree_then(op, nl_flags, AGGIO_P_PLAN);
}

static int nl_flags(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct nl_file *f = file_state(fh);
  f->flags[2 * f->node_rank] = fh->topo.my_aggr_index >= 0;
  f->flags[2 * f->node_rank + 1] = fh->st.opened;
  aggio__then(op, nl_chosen, AGGIO_P_PLAN);
  return aggio__op_allgather(op, MPI_IN_PLACE, f->flags, 2, MPI_INT, fh->topo.node_comm,
                             AGGIO_P_PLAN);
}

/* The node's aggregators are chosen alike on every rank of the node (so
 * the node makes its memory, or not, as one); other nodes go their own
 * way, and the engine's agreement over the file's ranks follows. */
static int nl_chosen(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct nl_file *f = file_state(fh);
  if (choose(fh, f, f->flags, f->local, &op->err) != 0)
    return aggio__setup_done(op);
  if (fh->hints.node_shm.num == AGGIO_DISABLE) {
    aggio__fail(&op->err, AGGIO_ERR_UNSUPPORTED, "rank %d: node_local needs shared memory on "
                "each node (aggio_node_shm=disable)", fh->rank);
    return aggio__setup_done(op);
  }
  if (aggio__fault(fh->faults, AGGIO_FAULT_ALLOC))
    aggio__op_note(op, AGGIO_ERR_NOMEM, "node_local: the node's memory (injected)");
  return aggio__shm_make(op, &f->shm, fh->topo.node_comm, (size_t)f->k * part_bytes(f),
                         nl_mapped, AGGIO_P_PLAN);
}

static int nl_mapped(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct nl_file *f = file_state(fh);
  if (!f->shm.base)
    aggio__fail(&op->err, AGGIO_ERR_NOMEM, "rank %d: node_local: the node's shared memory "
                "could not be made", fh->rank);
  for (int j = 0; f->shm.base && j < f->k; j++)
    f->part[j] = align_up(f->shm.base + (size_t)j * part_bytes(f), f->page);
  return aggio__setup_done(op);
}

/* ---- per-operation state -------------------------------------------------------- */

struct nl;

/* One of an aggregator's two buffers and the write it may have in flight:
 * pieces [p0, p1) of the plan, written by the I/O threads. */
struct nl_slot {
  struct aggio__batch batch;
  struct aggio__job job;
  struct nl *t;
  size_t p0, p1;
  int s;
};

struct nl {
  aggio_file fh;
  struct nl_file *f;
  struct nl_slot slot[2];
  int pipeline;                   /* writes on the I/O threads */
  int *counts, *displs;           /* [node_size]: int64s of each rank's list */
  int64_t *all;                   /* the node's offset lists */
  struct aggio__extents *lists;   /* [node_size] views into `all` */
  struct aggio__extents runs;     /* their union */
  struct aggio__nl_plan plan;
  struct aggio__nl_move *moves;   /* my copies, by round */
  size_t nmoves, mcur, pcur;      /* next copy, next piece of mine */
  int64_t *sums;                  /* [NS_COUNT * (nprocs + 1)]: mine last */
  int64_t round;
};

static void nl_free(struct aggio__op *op) {
  struct nl *t = op->sdata;
  if (!t)
    return;
  aggio__extents_free(&t->runs);
  aggio__nl_plan_free(&t->plan);
  free(t->counts);
  free(t->displs);
  free(t->all);
  free(t->lists);
  free(t->moves);
  free(t->sums);
  free(t);
}

static int node_counts(struct aggio__op *op);

static int nl_start(struct aggio__op *op) {
  aggio_file fh = op->fh;
  if (fh->atomic) /* an aggregator writes several ranks' pieces: not atomic per rank */
    return aggio__strategy_at(fh, AGGIO_STRAT_INDEPENDENT)->start(op);
  struct nl_file *f = file_state(fh);
  struct nl *t = aggio__calloc(fh, 1, sizeof *t);
  op->sdata = t;
  op->sdata_free = nl_free;
  if (t) {
    t->fh = fh;
    t->f = f;
    t->pipeline = fh->hints.pipeline.num != AGGIO_DISABLE;
    for (int s = 0; s < 2; s++) {
      t->slot[s].t = t;
      t->slot[s].s = s;
    }
    t->counts = aggio__calloc(fh, (size_t)f->node_size, sizeof *t->counts);
    t->displs = aggio__calloc(fh, (size_t)f->node_size, sizeof *t->displs);
    t->lists = aggio__calloc(fh, (size_t)f->node_size, sizeof *t->lists);
    t->sums = aggio__calloc(fh, NS_COUNT * ((size_t)fh->nprocs + 1), sizeof *t->sums);
  }
  if (!t || !t->counts || !t->displs || !t->lists || !t->sums)
    aggio__op_note(op, AGGIO_ERR_NOMEM, "node_local set-up");
  if (op->acc.file.n > (size_t)(INT32_MAX / 2))
    aggio__op_note(op, AGGIO_ERR_OVERFLOW, "node_local offset list");
  return aggio__then(op, node_counts, AGGIO_P_PLAN);
}

/* A rank without its arrays takes part with the file's stand-ins. */
static int ok_call(const struct aggio__op *op) { return op->err.code == 0; }
static int *counts_of(struct aggio__op *op) {
  struct nl *t = op->sdata;
  return t && t->counts ? t->counts : file_state(op->fh)->fb_counts;
}
static int64_t *sums_of(struct aggio__op *op) {
  struct nl *t = op->sdata;
  return t && t->sums ? t->sums : file_state(op->fh)->fb_sums;
}

static int node_reserve(struct aggio__op *op);

/* 1. Each rank's list length, to its node. */
static int node_counts(struct aggio__op *op) {
  int *c = counts_of(op);
  int nf = file_state(op->fh)->node_rank;
  c[nf] = ok_call(op) ? (int)(2 * op->acc.file.n) : 0;
  aggio__then(op, node_reserve, AGGIO_P_PLAN);
  return aggio__op_allgather(op, MPI_IN_PLACE, c, 1, MPI_INT, op->fh->topo.node_comm,
                             AGGIO_P_PLAN);
}

static int node_gather(struct aggio__op *op);

/* The memory for the node's lists, then a node agreement: a rank without
 * it must not be sent any. */
static int node_reserve(struct aggio__op *op) {
  struct nl *t = op->sdata;
  struct nl_file *f = file_state(op->fh);
  if (ok_call(op)) {
    int64_t total = 0;
    for (int i = 0; i < f->node_size; i++) {
      t->displs[i] = (int)total;
      total += t->counts[i];
      if (total > INT32_MAX)
        break;
    }
    if (total > INT32_MAX)
      aggio__op_note(op, AGGIO_ERR_OVERFLOW, "node_local: the node's offset lists");
    else if (!(t->all = aggio__malloc(op->fh, (size_t)(total ? total : 1) * sizeof *t->all)))
      aggio__op_note(op, AGGIO_ERR_NOMEM, "node_local: the node's offset lists");
  }
  op->agreed[0] = aggio__err_encode(op->err.code, op->fh->rank);
  aggio__then(op, node_gather, AGGIO_P_PLAN);
  return aggio__op_allreduce(op, MPI_IN_PLACE, op->agreed, 1, MPI_INT64_T, MPI_MIN,
                             op->fh->topo.node_comm, AGGIO_P_AGREE);
}

static int node_plan(struct aggio__op *op);
static int summarize(struct aggio__op *op);

static int node_gather(struct aggio__op *op) {
  struct nl *t = op->sdata;
  aggio__err_decode(op->agreed[0], op->fh->rank, &op->err);
  if (!ok_call(op)) /* the node stops here; the summary tells the others */
    return aggio__then(op, summarize, AGGIO_P_AGREE);
  _Static_assert(sizeof(struct aggio__extent) == 2 * sizeof(int64_t), "extents are int64 pairs");
  aggio__then(op, node_plan, AGGIO_P_PLAN);
  return aggio__op_allgatherv(op, op->acc.file.v, (int)(2 * op->acc.file.n), t->all,
                              t->counts, t->displs, MPI_INT64_T, op->fh->topo.node_comm,
                              AGGIO_P_PLAN);
}

/* 2. The node's plan and my copies. */
static int make_plan(struct aggio__op *op) {
  struct nl *t = op->sdata;
  struct nl_file *f = t->f;
  for (int i = 0; i < f->node_size; i++)
    t->lists[i] = (struct aggio__extents){
        .v = (struct aggio__extent *)(t->all + t->displs[i]), .n = (size_t)t->counts[i] / 2};
  int rc = aggio__coverage(t->lists, f->node_size, &t->runs);
  if (rc == 0)
    rc = aggio__nl_plan_make(&t->runs, f->k, f->slot, f->align, f->cut, &t->plan);
  if (rc == 0)
    rc = aggio__nl_moves(&t->plan, &op->acc.file, &t->moves, &t->nmoves);
  if (rc == 0 && f->me >= 0)
    t->pcur = t->plan.first[f->me];
  return rc;
}

static int node_plan(struct aggio__op *op) {
  if (ok_call(op))
    aggio__op_note(op, make_plan(op), "node_local planning");
  return aggio__then(op, summarize, AGGIO_P_PLAN);
}

static int nodes_agreed(struct aggio__op *op);

/* 3. Every rank's summary to every rank: the agreement on the set-up. */
static int summarize(struct aggio__op *op) {
  struct nl *t = op->sdata;
  aggio_file fh = op->fh;
  int64_t *s = sums_of(op), *mine = s + NS_COUNT * (size_t)fh->nprocs;
  memset(mine, 0, NS_COUNT * sizeof *mine);
  /* a failure the node agreed on (op->agreed[0]) keeps its own rank: the
   * rank that failed is the one every rank names */
  mine[NS_ERR] = op->agreed[0] != 0 ? op->agreed[0] : aggio__err_encode(op->err.code, fh->rank);
  if (ok_call(op)) {
    const struct aggio__nl_plan *p = &t->plan;
    mine[NS_LO] = p->lo;
    mine[NS_HI] = p->hi;
    mine[NS_RUNS] = p->runs;
    mine[NS_K] = p->k;
    for (int j = 0; j < p->k; j++)
      mine[NS_ACTIVE] += p->rounds[j] > 0;
  }
  aggio__then(op, nodes_agreed, AGGIO_P_AGREE);
  return aggio__op_allgather(op, mine, s, NS_COUNT, MPI_INT64_T, fh->comm, AGGIO_P_AGREE);
}

/* Statistics of the call: Cray's "aggregators active" over all nodes, the
 * aggregator's rounds, and whether this node's data interleaves with other
 * nodes' (counted once per node, by its first rank). */
static void count_call(struct aggio__op *op, const int64_t *s) {
  aggio_file fh = op->fh;
  struct nl *t = op->sdata;
  struct aggio__stats *st = fh->obs.stats;
  int64_t *spans = calloc(2 * (size_t)fh->topo.nnodes, sizeof *spans), k = 0, active = 0;
  char *seen = calloc((size_t)fh->topo.nnodes, 1);
  for (int r = 0; spans && seen && r < fh->nprocs; r++) {
    int nd = fh->topo.node_of_rank[r];
    if (seen[nd]) /* every rank of a node sent the node's numbers */
      continue;
    seen[nd] = 1;
    spans[2 * nd] = s[NS_COUNT * r + NS_LO];
    spans[2 * nd + 1] = s[NS_COUNT * r + NS_HI];
    k += s[NS_COUNT * r + NS_K];
    active += s[NS_COUNT * r + NS_ACTIVE];
  }
  if (!seen) {
    free(spans);
    spans = NULL;
  }
  free(seen);
  if (spans && active > 0)
    st->c[aggio__active_bucket((int)active, (int)k)]++;
  int me = t->f->me;
  if (me >= 0 && t->plan.rounds[me] > 0) {
    st->c[AGGIO_C_AGGR_ACTIVE]++;
    st->c[AGGIO_C_COLL_ROUNDS] += t->plan.nrounds;
  }
  if (spans && t->f->node_rank == 0 &&
      aggio__nl_fragmented(spans, fh->topo.nnodes, fh->topo.node_of_rank[fh->rank],
                           t->plan.runs, t->plan.k))
    st->c[AGGIO_C_NODE_LOCAL_FRAGMENTED]++;
  free(spans); /* statistics only: without memory they are left out */
}

static int round_prepare(struct aggio__op *op);

static int nodes_agreed(struct aggio__op *op) {
  int64_t *s = sums_of(op), worst = 0;
  for (int r = 0; r < op->fh->nprocs; r++)
    worst = s[NS_COUNT * r + NS_ERR] < worst ? s[NS_COUNT * r + NS_ERR] : worst;
  if (worst != 0) /* every rank saw the same summaries: all stop here */
    return aggio__op_fail_agreed(op, worst);
  if (op->fh->obs.stats)
    count_call(op, s);
  return aggio__then(op, round_prepare, AGGIO_P_PLAN);
}

/* ---- 4. the rounds, within each node ---------------------------------------------- */

static struct nl_header *header_of(const struct nl_file *f, int j) {
  return (struct nl_header *)f->part[j];
}
/* Buffer s (round % 2) of aggregator j. */
static char *data_of(const struct nl_file *f, int j, int64_t round) {
  return f->part[j] + f->page + (round % 2) * f->slot;
}

/* My pieces of this round, one by one: the aggregator's own I/O. */
static int my_piece(struct nl *t, const struct aggio__nl_piece **pc) {
  int me = t->f->me;
  size_t end = me >= 0 ? t->plan.first[me + 1] : 0;
  if (me < 0 || t->pcur >= end || t->plan.v[t->pcur].round != t->round)
    return 0;
  *pc = &t->plan.v[t->pcur++];
  return 1;
}

/* Reads this round's pieces into my buffer; a short read is the end of
 * the file, and the header tells the node's ranks where it is. */
static void read_pieces(struct aggio__op *op, struct nl *t) {
  const struct aggio__nl_piece *pc;
  int64_t *eof = &header_of(t->f, t->f->me)->eof[t->round % 2];
  *eof = INT64_MAX;
  while (my_piece(t, &pc)) {
    int64_t got = 0;
    if (!ok_call(op) || *eof != INT64_MAX)
      continue; /* past the end of the file, or after a failure: nothing to read */
    aggio__pread(op->fh, data_of(t->f, t->f->me, t->round) + pc->pos, pc->len, pc->off, &got,
                 AGGIO_IO_AGGREGATOR, &op->err);
    if (ok_call(op) && got < pc->len) {
      *eof = pc->off + got;
      aggio__op_saw_eof(op, pc->off + got);
    }
  }
}

/* Writes a slot's pieces (on an I/O thread when pipelining). */
static void write_slot(struct nl_slot *sl, struct aggio__err *e) {
  struct nl *t = sl->t;
  int me = t->f->me;
  for (size_t q = sl->p0; q < sl->p1 && e->code == 0; q++) {
    const struct aggio__nl_piece *pc = &t->plan.v[q];
    aggio__pwrite(t->fh, data_of(t->f, me, sl->s) + pc->pos, pc->len, pc->off,
                  AGGIO_IO_AGGREGATOR | AGGIO_IO_DIRECT_OK, e);
  }
}

static void write_job(struct aggio__job *job, struct aggio__err *e) {
  write_slot((struct nl_slot *)((char *)job - offsetof(struct nl_slot, job)), e);
}

/* This round's pieces go out from its buffer: queued on the file's I/O
 * threads (waited for before the buffer is filled again, two rounds on),
 * or written here. */
static void write_pieces(struct aggio__op *op, struct nl *t) {
  const struct aggio__nl_piece *pc;
  struct nl_slot *sl = &t->slot[t->round % 2];
  sl->p0 = t->pcur;
  while (my_piece(t, &pc))
    ;
  sl->p1 = t->pcur;
  if (!ok_call(op) || sl->p1 == sl->p0)
    return; /* after a failure: keep the rounds, write nothing */
  struct aggio__pool *p = t->pipeline ? aggio__file_pool(op->fh) : NULL;
  sl->job.run = write_job;
  if (p && aggio__pool_submit(p, &sl->job, &sl->batch) == 0)
    return;
  write_slot(sl, &op->err);
}

/* A slot's write has finished: its outcome becomes the call's. */
static void slot_collect(struct aggio__op *op, struct nl_slot *sl) {
  if (sl->batch.err.code != 0 && op->err.code == 0)
    op->err = sl->batch.err;
  sl->batch.err.code = 0;
}

static int slot_free(struct aggio__op *op) {
  struct nl *t = op->sdata;
  return aggio__batch_done(op->fh->pool, &t->slot[t->round % 2].batch);
}

static void slot_wait(struct aggio__op *op) {
  struct nl *t = op->sdata;
  aggio__batch_wait(op->fh->pool, &t->slot[t->round % 2].batch);
}

static int drained(struct aggio__op *op) {
  struct nl *t = op->sdata;
  return aggio__batch_done(op->fh->pool, &t->slot[0].batch) &&
         aggio__batch_done(op->fh->pool, &t->slot[1].batch);
}

static void drain_wait(struct aggio__op *op) {
  struct nl *t = op->sdata;
  aggio__batch_wait(op->fh->pool, &t->slot[0].batch);
  aggio__batch_wait(op->fh->pool, &t->slot[1].batch);
}

static int round_copy(struct aggio__op *op);

static int round_ready(struct aggio__op *op);
static int finish(struct aggio__op *op);

/* Round k starts once the aggregator's buffer k % 2 is written out (two
 * rounds ago); after the last round, once every write is. */
static int round_prepare(struct aggio__op *op) {
  struct nl *t = op->sdata;
  if (t->round >= t->plan.nrounds) {
    aggio__then(op, finish, AGGIO_P_AGREE);
    return aggio__op_await(op, drained, drain_wait, AGGIO_P_IO_WAIT);
  }
  aggio__then(op, round_ready, AGGIO_P_PLAN);
  if (t->f->me < 0)
    return AGGIO_STEP_NEXT;
  return aggio__op_await(op, slot_free, slot_wait, AGGIO_P_IO_WAIT);
}

static int finish(struct aggio__op *op) {
  struct nl *t = op->sdata;
  slot_collect(op, &t->slot[0]);
  slot_collect(op, &t->slot[1]);
  return aggio__then(op, aggio__step_agree_outcome, AGGIO_P_AGREE);
}

static int round_ready(struct aggio__op *op) {
  struct nl *t = op->sdata;
  slot_collect(op, &t->slot[t->round % 2]);
  if (!op->acc.is_write && t->f->me >= 0)
    read_pieces(op, t);
  /* reads: the buffers are filled; writes: they may be filled */
  aggio__then(op, round_copy, AGGIO_P_EXCHANGE);
  return aggio__op_barrier(op, op->fh->topo.node_comm, AGGIO_P_WAIT);
}

/* Copies one move; reads copy nothing past the end of the file. */
static void copy_move(struct aggio__op *op, struct nl *t, const struct aggio__nl_move *m) {
  char *buf = data_of(t->f, m->aggr, m->round) + m->pos, *stream = op->acc.stream + m->spos;
  int64_t len = m->len;
  if (op->acc.is_write) {
    memcpy(buf, stream, (size_t)len);
  } else {
    int64_t eof = header_of(t->f, m->aggr)->eof[m->round % 2];
    if (m->off >= eof)
      len = 0;
    else if (m->off + len > eof)
      len = eof - m->off;
    if (len > 0)
      memcpy(stream, buf, (size_t)len);
  }
  aggio__count_moved(op->fh, t->f->world[m->aggr], len);
}

static int round_io(struct aggio__op *op);

static int round_copy(struct aggio__op *op) {
  struct nl *t = op->sdata;
  for (; t->mcur < t->nmoves && t->moves[t->mcur].round == t->round; t->mcur++)
    copy_move(op, t, &t->moves[t->mcur]);
  /* writes: every rank's bytes must be in before the aggregators write.
   * Reads need no barrier here: an aggregator reads into this buffer again
   * two rounds on, after the next round's barrier, which every rank
   * reaches only once it has copied this round's bytes out. */
  aggio__then(op, round_io, op->acc.is_write ? AGGIO_P_WRITE : AGGIO_P_PLAN);
  if (!op->acc.is_write)
    return AGGIO_STEP_NEXT;
  return aggio__op_barrier(op, op->fh->topo.node_comm, AGGIO_P_WAIT);
}

static int round_io(struct aggio__op *op) {
  struct nl *t = op->sdata;
  if (op->acc.is_write && t->f->me >= 0)
    write_pieces(op, t);
  t->round++;
  return aggio__then(op, round_prepare, AGGIO_P_PLAN);
}

const struct aggio__strategy_ops aggio__strategy_node_local = {
    .name = "node_local",
    .id = AGGIO_STRAT_NODE_LOCAL,
    .setup = nl_setup,
    .fini = nl_fini,
    .start = nl_start,
};
