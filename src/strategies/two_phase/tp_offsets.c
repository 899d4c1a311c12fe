/*
 * tp_offsets.c - the two-phase set-up exchange (two_phase.h): each rank
 * tells each aggregator which byte ranges of its file domain it accesses.
 *
 * Sparse, and combined per node, so that it costs nodes x aggregators
 * messages between nodes rather than ranks².  An MPI_Alltoall of counts and
 * an MPI_Alltoallv of the lists (as ROMIO does) pair every rank with every
 * other: in SimGrid that made a 2,048-rank simulated write take hours, and
 * at scale it is P² small messages on a real network too.  Even one
 * message per rank and aggregator (P x A) proved the bottleneck of the
 * simulated set-up at 1,024 ranks (SIMULATION.md).  Instead:
 *   1. every rank writes, for each aggregator, one short record: how many
 *      pieces it has in that domain and the first TP_INLINE of them; the
 *      node's first rank gathers its node's records (MPI_Gather on the
 *      node's communicator, in shared memory) and sends each aggregator one
 *      message, the node's column of records (a strided type, so nothing
 *      is packed); each aggregator receives one message per node.  One
 *      record or block per rank per call (ior-hard, checkpoints, HACC)
 *      needs nothing more;
 *   2. once every rank has reserved the memory for the lists (an
 *      agreement), the pieces past the first TP_INLINE follow in a second
 *      message, straight from rank to aggregator, only between the pairs
 *      that have them, from the sender's piece list into the aggregator's
 *      extent list.
 * Step 1 uses only memory made when the file first ran two-phase (an
 * agreed allocation), so a rank whose call could not allocate still joins
 * it, with empty records, and the agreement after it stops every rank.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "two_phase.h"

#define TP_FIRST_TAG 0x2a64
#define TP_REST_TAG 0x2a65

/* Aggregators receive the records node by node: rank r's is at slot
 * slot_of[r], its node's records in node-rank order (which is rank order:
 * nodes.c splits with the ranks as keys). */
static int64_t *inbox_of(const struct tp_file *f, int r) {
  return f->inbox + (size_t)f->slot_of[r] * TP_MSG;
}

/* ---- per file ------------------------------------------------------------------------- */

/* An aggregator's map of the records: each node's first slot and first
 * rank, and each rank's slot. */
static int map_slots(aggio_file fh, struct tp_file *f) {
  int N = fh->topo.nnodes, P = fh->nprocs;
  f->node_first = aggio__calloc(fh, (size_t)N + 1, sizeof *f->node_first);
  f->node_leader = aggio__malloc(fh, (size_t)N * sizeof *f->node_leader);
  f->slot_of = aggio__malloc(fh, (size_t)P * sizeof *f->slot_of);
  if (!f->node_first || !f->node_leader || !f->slot_of)
    return AGGIO_ERR_NOMEM;
  for (int k = 0; k < N; k++)
    f->node_leader[k] = -1;
  for (int r = 0; r < P; r++) { /* counts, then prefix sums, then slots */
    int k = fh->topo.node_of_rank[r];
    f->node_first[k + 1]++;
    if (f->node_leader[k] < 0)
      f->node_leader[k] = r;
  }
  for (int k = 0; k < N; k++)
    f->node_first[k + 1] += f->node_first[k];
  for (int r = 0; r < P; r++)
    f->slot_of[r] = f->node_first[fh->topo.node_of_rank[r]]++;
  for (int k = N; k > 0; k--) /* the increments moved each first to the next node's */
    f->node_first[k] = f->node_first[k - 1];
  f->node_first[0] = 0;
  return 0;
}

/* The node's first rank: the gathered records, and the strided type of
 * one aggregator's column of them. */
static int make_column(aggio_file fh, struct tp_file *f) {
  size_t n = (size_t)f->node_size * fh->topo.naggr * TP_MSG;
  f->gathered = aggio__malloc(fh, n * sizeof *f->gathered);
  if (!f->gathered)
    return AGGIO_ERR_NOMEM;
  if (MPI_Type_vector(f->node_size, TP_MSG, fh->topo.naggr * TP_MSG, MPI_INT64_T,
                      &f->column_type) != MPI_SUCCESS ||
      MPI_Type_commit(&f->column_type) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  return 0;
}

/* The (off, len) of each struct piece, stepping over spos: the rest of a
 * piece list leaves without being packed.  The aggregator receives the
 * same count of (off, len) pairs (pair_type): a count of int64 would
 * overflow an int at 2^30 pieces, where the sender's count still fits, and
 * the message would never match. */
static int make_piece_type(struct tp_file *f) {
  if (MPI_Type_contiguous(2, MPI_INT64_T, &f->pair_type) != MPI_SUCCESS ||
      MPI_Type_commit(&f->pair_type) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  int rc = MPI_Type_create_resized(f->pair_type, 0, (MPI_Aint)sizeof(struct piece),
                                   &f->piece_type);
  if (rc != MPI_SUCCESS || MPI_Type_commit(&f->piece_type) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  return 0;
}

int aggio__tp_offsets_open(aggio_file fh, struct tp_file *f) {
  int A = fh->topo.naggr, aggr = fh->topo.my_aggr_index >= 0;
  f->piece_type = f->pair_type = f->column_type = MPI_DATATYPE_NULL;
  MPI_Comm_rank(fh->topo.node_comm, &f->node_rank);
  MPI_Comm_size(fh->topo.node_comm, &f->node_size);
  int nreq = (f->node_rank == 0 ? A : 0) + (aggr ? fh->topo.nnodes : 0);
  /* zeroed: the records' unused pieces travel too */
  f->outbox = aggio__calloc(fh, (size_t)A * TP_MSG, sizeof *f->outbox);
  f->plan_req = aggio__malloc(fh, ((size_t)nreq + 1) * sizeof *f->plan_req);
  f->plan_stat = aggio__malloc(fh, ((size_t)nreq + 1) * sizeof *f->plan_stat);
  if (!f->outbox || !f->plan_req || !f->plan_stat)
    return AGGIO_ERR_NOMEM;
  if (aggr) {
    f->inbox = aggio__malloc(fh, (size_t)fh->nprocs * TP_MSG * sizeof *f->inbox);
    int rc = f->inbox ? map_slots(fh, f) : AGGIO_ERR_NOMEM;
    if (rc != 0)
      return rc;
  }
  if (f->node_rank == 0) {
    int rc = make_column(fh, f);
    if (rc != 0)
      return rc;
  }
  return make_piece_type(f);
}

void aggio__tp_offsets_close(struct tp_file *f) {
  if (f->piece_type != MPI_DATATYPE_NULL)
    MPI_Type_free(&f->piece_type);
  if (f->pair_type != MPI_DATATYPE_NULL)
    MPI_Type_free(&f->pair_type);
  if (f->column_type != MPI_DATATYPE_NULL)
    MPI_Type_free(&f->column_type);
  void *arrays[] = {f->outbox, f->gathered, f->inbox, f->slot_of, f->node_first,
                    f->node_leader, f->plan_req, f->plan_stat};
  for (size_t i = 0; i < sizeof arrays / sizeof arrays[0]; i++)
    free(arrays[i]);
}

/* ---- step 1: counts and the first pieces, through the node's first rank ------------- */

static struct tp_file *file_of(struct aggio__op *op) {
  return op->fh->strategy_state[AGGIO_STRAT_TWO_PHASE];
}

/* My record for aggregator i: the count, then the first pieces; empty
 * after a failure (the agreement will stop every rank). */
static void fill_record(struct aggio__op *op, struct tp_file *f, int i) {
  struct tp *t = op->sdata;
  int64_t *m = f->outbox + (size_t)i * TP_MSG;
  const struct piece_list *l = t && op->err.code == 0 ? &t->mine[i] : NULL;
  size_t n = l ? l->n : 0, k = n < TP_INLINE ? n : TP_INLINE;
  m[0] = (int64_t)n;
  for (size_t j = 0; j < k; j++) {
    m[1 + 2 * j] = l->v[j].off;
    m[2 + 2 * j] = l->v[j].len;
  }
}

static int firsts_done(struct aggio__op *op) {
  struct tp_file *f = file_of(op);
  int flag = 1;
  if (f->plan_nreq > 0 &&
      MPI_Testall(f->plan_nreq, f->plan_req, &flag, f->plan_stat) != MPI_SUCCESS) {
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Testall");
    flag = 1;
  }
  if (flag)
    f->plan_nreq = 0;
  return flag;
}

static void firsts_block(struct aggio__op *op) {
  struct tp_file *f = file_of(op);
  if (f->plan_nreq > 0 &&
      MPI_Waitall(f->plan_nreq, f->plan_req, f->plan_stat) != MPI_SUCCESS)
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Waitall");
  f->plan_nreq = 0;
}

static int post_columns(struct aggio__op *op);

int aggio__tp_offsets(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = file_of(op);
  for (int i = 0; i < fh->topo.naggr; i++)
    fill_record(op, f, i);
  int count = fh->topo.naggr * TP_MSG;
  aggio__then(op, post_columns, AGGIO_P_PLAN);
  return aggio__op_gather(op, f->outbox, f->gathered, count, MPI_INT64_T, 0,
                          fh->topo.node_comm, AGGIO_P_PLAN);
}

static int reserve_lists(struct aggio__op *op);

/* The node's first rank sends each aggregator its column; aggregators
 * receive one per node. */
static int post_columns(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct tp_file *f = file_of(op);
  int n = 0, bad = 0;
  for (int k = 0; fh->topo.my_aggr_index >= 0 && k < fh->topo.nnodes; k++) {
    int first = f->node_first[k], count = (f->node_first[k + 1] - first) * TP_MSG;
    bad |= MPI_Irecv(f->inbox + (size_t)first * TP_MSG, count, MPI_INT64_T,
                     f->node_leader[k], TP_FIRST_TAG, fh->comm, &f->plan_req[n++]) !=
           MPI_SUCCESS;
  }
  for (int i = 0; f->node_rank == 0 && i < fh->topo.naggr; i++)
    bad |=
        MPI_Isend(f->gathered + (size_t)i * TP_MSG, 1, f->column_type, fh->topo.aggr[i],
                  TP_FIRST_TAG, fh->comm, &f->plan_req[n++]) != MPI_SUCCESS;
  f->plan_nreq = n;
  if (bad)
    aggio__op_note(op, AGGIO_ERR_MPI, "two-phase offset exchange");
  aggio__then(op, reserve_lists, AGGIO_P_PLAN);
  return aggio__op_await(op, firsts_done, firsts_block, AGGIO_P_PLAN);
}

/* ---- the lists' memory, then step 2 ------------------------------------------------- */

/* The aggregator's list of rank r's pieces: reserved whole, the first
 * pieces stored, room left for the rest. */
static int start_list(struct tp *t, int r, size_t *total, size_t *most) {
  const int64_t *m = inbox_of(t->f, r);
  if (m[0] < 0 || m[0] > INT_MAX)
    return AGGIO_ERR_MPI; /* not a message this exchange sends */
  size_t n = (size_t)m[0], k = n < TP_INLINE ? n : TP_INLINE;
  size_t room = t->keep && (size_t)t->bound.most > n ? (size_t)t->bound.most : n;
  if (aggio__extents_reserve(&t->theirs[r], room) != 0 ||
      aggio__extents_reserve(&t->window[r], room) != 0)
    return AGGIO_ERR_NOMEM;
  for (size_t j = 0; j < k; j++)
    aggio__extents_push(&t->theirs[r], m[1 + 2 * j], m[2 + 2 * j]); /* reserved */
  *total += n;
  *most = n > *most ? n : *most;
  return 0;
}

static int reserve_all(struct tp *t) {
  size_t total = 0, most = 0;
  int active = 0;
  for (int r = 0; t->me >= 0 && r < t->fh->nprocs; r++) {
    int rc = start_list(t, r, &total, &most);
    if (rc != 0)
      return rc;
    active += inbox_of(t->f, r)[0] > 0;
  }
  for (int i = 0; i < t->naggr; i++) {
    if (t->mine[i].n > INT_MAX)
      return AGGIO_ERR_OVERFLOW; /* the count of one message */
    most = t->mine[i].n > most ? t->mine[i].n : most;
  }
  return aggio__tp_reserve_rounds(t, total, most, active);
}

static int send_rest(struct aggio__op *op);

static int set_up_agreed(struct aggio__op *op);

/* Before the rest travels, every rank has the memory for it and for the
 * rounds: after this, a local failure (a refused write, a full disk) no
 * longer stops the exchanges.  A call that fits the memory every rank
 * kept from an agreed earlier call (t->fast, plan/tp_keep.h) allocates
 * nothing here, so it cannot fail, and every rank skips the agreement. */
static int reserve_lists(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t && op->err.code == 0)
    aggio__op_note(op, reserve_all(t), "two-phase set-up");
  if (t && t->fast) {
    if (op->fh->obs.stats)
      op->fh->obs.stats->c[AGGIO_C_TP_KEPT]++;
    return aggio__then(op, send_rest, AGGIO_P_PLAN);
  }
  return aggio__op_agree_then(op, set_up_agreed, AGGIO_P_PLAN);
}

/* Every rank reserved this call's bounds (when it keeps): every rank now
 * holds them. */
static int set_up_agreed(struct aggio__op *op) {
  struct tp *t = op->sdata;
  if (t->keep)
    aggio__tp_keep_hold(&t->f->held, &t->bound);
  return aggio__then(op, send_rest, AGGIO_P_PLAN);
}

static int unpack_rest(struct aggio__op *op);

static int send_rest(struct aggio__op *op) {
  struct tp *t = op->sdata;
  aggio_file fh = op->fh;
  int rc = 0; /* every message is posted, also after a failed one: no peer waits */
  for (int i = 0; i < t->naggr; i++) {
    struct piece_list *l = &t->mine[i];
    if (l->n > TP_INLINE)
      rc |= aggio__tp_post(t, l->v + TP_INLINE, (int)(l->n - TP_INLINE), t->f->piece_type,
                           fh->topo.aggr[i], TP_REST_TAG,
                           1); /* slots reserved in reserve_all */
  }
  for (int r = 0; t->me >= 0 && r < fh->nprocs; r++) {
    int64_t n = inbox_of(t->f, r)[0];
    struct aggio__extents *x = &t->theirs[r];
    if (n > TP_INLINE) /* n <= INT_MAX: start_list checked */
      rc |= aggio__tp_post(t, x->v + x->n, (int)(n - TP_INLINE), t->f->pair_type, r,
                           TP_REST_TAG, 0);
  }
  aggio__op_note(op, rc ? AGGIO_ERR_MPI : 0, "two-phase offset exchange");
  aggio__then(op, unpack_rest, AGGIO_P_PLAN);
  return aggio__op_await_requests(op, AGGIO_P_PLAN);
}

/* Joins the touching ranges of a list that arrived whole, as
 * aggio__extents_push does for pieces added one at a time. */
static void join_touching(struct aggio__extents *x) {
  size_t w = 0;
  for (size_t j = 1; j < x->n; j++) {
    if (x->v[w].off + x->v[w].len == x->v[j].off)
      x->v[w].len += x->v[j].len;
    else
      x->v[++w] = x->v[j];
  }
  if (x->n > 0)
    x->n = w + 1;
}

static int unpack_rest(struct aggio__op *op) {
  struct tp *t = op->sdata;
  for (int r = 0; t->me >= 0 && r < op->fh->nprocs; r++) {
    int64_t n = inbox_of(t->f, r)[0];
    if (n <= TP_INLINE)
      continue;
    t->theirs[r].n += (size_t)(n - TP_INLINE);
    join_touching(&t->theirs[r]);
  }
  return aggio__then(op, aggio__tp_file(op->fh)->rounds, AGGIO_P_PLAN);
}
