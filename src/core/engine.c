/*
 * engine.c - runs data-access operations (engine.h): the steps every
 * collective operation shares (summarize and agree on the arguments,
 * choose the strategy, flush data another strategy holds, make the
 * strategy's per-file state, agree on the outcome), the loop that runs
 * steps and waits for what they posted, and the phase timers, which see
 * every step and every wait so that the phases account for the calls'
 * whole time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"

void aggio__op_account(struct aggio__op *op, int phase) {
  if (!op->fh->obs.stats)
    return;
  double t = aggio__now();
  aggio__phase_add(op->fh->obs.stats, (enum aggio__phase)phase, t - op->t_mark);
  op->t_mark = t;
}

void aggio__op_reassign(struct aggio__op *op, int to, double seconds) {
  if (!op->fh->obs.stats || seconds <= 0)
    return;
  aggio__phase_add(op->fh->obs.stats, (enum aggio__phase)to, seconds);
  aggio__phase_add(op->fh->obs.stats, (enum aggio__phase)op->step_phase, -seconds);
}

/* ---- MPI requests of the pending step ---------------------------------------- */

static int inline_slot(const struct aggio__op *op) { return op->req == &op->req_inline; }

/* The request slots, unless they are the inline one or lent. */
static void free_requests(struct aggio__op *op) {
  if (!inline_slot(op) && !op->req_lent) {
    free(op->req);
    free(op->stat);
  }
}

static int grow_requests(struct aggio__op *op, int at_least) {
  int cap = op->req_cap > 1 ? 2 * op->req_cap : 8;
  cap = cap > at_least ? cap : at_least;
  MPI_Request *r = malloc((size_t)cap * sizeof *r);
  MPI_Status *st = malloc((size_t)cap * sizeof *st);
  if (!r || !st) {
    free(r);
    free(st);
    return -1;
  }
  memcpy(r, op->req, (size_t)op->nreq * sizeof *r);
  free_requests(op);
  op->req = r;
  op->stat = st;
  op->req_cap = cap;
  op->req_lent = 0;
  return 0;
}

/* Before the first request: the inline slot, which never fails. */
static void first_slot(struct aggio__op *op) {
  if (op->req_cap == 0) {
    op->req = &op->req_inline;
    op->stat = &op->stat_inline;
    op->req_cap = 1;
  }
}

MPI_Request *aggio__op_request(struct aggio__op *op) {
  first_slot(op);
  if (op->nreq == op->req_cap && grow_requests(op, 0) != 0)
    return NULL;
  op->req[op->nreq] = MPI_REQUEST_NULL;
  return &op->req[op->nreq++];
}

int aggio__op_reserve_requests(struct aggio__op *op, int n) {
  first_slot(op);
  return op->req_cap >= n || grow_requests(op, n) == 0 ? 0 : AGGIO_ERR_NOMEM;
}

void aggio__op_lend_requests(struct aggio__op *op, MPI_Request *req, MPI_Status *stat,
                             int cap) {
  first_slot(op);
  if (op->req == req || cap <= op->req_cap)
    return;
  memcpy(req, op->req, (size_t)op->nreq * sizeof *req);
  free_requests(op);
  op->req = req;
  op->stat = stat;
  op->req_cap = cap;
  op->req_lent = 1;
}

void aggio__op_note(struct aggio__op *op, int rc, const char *what) {
  if (rc != 0)
    aggio__fail(&op->err, rc, "rank %d: %s failed: %s", op->fh->rank, what,
                aggio_strerror(rc));
}

/* The slot of a posted collective, or NULL when the collective blocks: in
 * a blocking operation once it has entered (its summary completed on
 * every rank, so every rank is in the call and makes the same blocking
 * calls).  Before that, and in a non-blocking operation always, it is
 * posted: MPI never matches a blocking collective with a posted one, and
 * a rank waiting for it may have to run other operations' steps meanwhile
 * (docs/engine.md, "Liveness").  A step posts at most one collective, in
 * op->creq, which needs no memory. */
static MPI_Request *coll_slot(struct aggio__op *op) {
#ifdef AGGIO_SIMGRID
  /* SMPI (SimGrid 3.32) gives each rank its own operand back from an
   * MPI_Iallreduce with a user-defined operation (the summary's): the
   * simulated programs make blocking calls only, so theirs block. */
  if (op->blocking)
    return NULL;
#endif
  if (op->blocking && op->entered)
    return NULL;
  if (op->creq == MPI_REQUEST_NULL)
    return &op->creq;
  return aggio__op_request(op); /* a second collective in one step: none does */
}

/* Before a collective: the step's time so far is its own. */
static void closing(struct aggio__op *op) { aggio__op_account(op, op->step_phase); }

/* After a collective was posted (r) or ran (blocking: its time is the
 * waiting phase's). */
static int posted(struct aggio__op *op, MPI_Request *r, int mpi_rc, const char *what,
                  int phase) {
  if (mpi_rc != MPI_SUCCESS)
    aggio__op_note(op, AGGIO_ERR_MPI, what);
  if (r && mpi_rc == MPI_SUCCESS) {
    op->wait_phase = phase;
    return AGGIO_STEP_PENDING;
  }
  aggio__op_account(op, phase);
  return AGGIO_STEP_NEXT;
}

int aggio__op_allreduce(struct aggio__op *op, const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Op mop, MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Iallreduce(in, out, count, type, mop, comm, r)
             : MPI_Allreduce(in, out, count, type, mop, comm);
  return posted(op, r, rc, "MPI_Allreduce", phase);
}

int aggio__op_alltoall(struct aggio__op *op, const void *in, void *out, int count,
                       MPI_Datatype type, int phase) {
  MPI_Request *r = coll_slot(op);
  MPI_Comm c = op->fh->comm;
  closing(op);
  int rc = r ? MPI_Ialltoall(in, count, type, out, count, type, c, r)
             : MPI_Alltoall(in, count, type, out, count, type, c);
  return posted(op, r, rc, "MPI_Alltoall", phase);
}

int aggio__op_alltoallv(struct aggio__op *op, const void *in, const int *scount,
                        const int *sdisp, void *out, const int *rcount, const int *rdisp,
                        MPI_Datatype type, int phase) {
  MPI_Request *r = coll_slot(op);
  MPI_Comm c = op->fh->comm;
  closing(op);
  int rc = r ? MPI_Ialltoallv(in, scount, sdisp, type, out, rcount, rdisp, type, c, r)
             : MPI_Alltoallv(in, scount, sdisp, type, out, rcount, rdisp, type, c);
  return posted(op, r, rc, "MPI_Alltoallv", phase);
}

int aggio__op_gather(struct aggio__op *op, const void *in, void *out, int count,
                     MPI_Datatype type, int root, MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Igather(in, count, type, out, count, type, root, comm, r)
             : MPI_Gather(in, count, type, out, count, type, root, comm);
  return posted(op, r, rc, "MPI_Gather", phase);
}

int aggio__op_allgather(struct aggio__op *op, const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Iallgather(in, count, type, out, count, type, comm, r)
             : MPI_Allgather(in, count, type, out, count, type, comm);
  return posted(op, r, rc, "MPI_Allgather", phase);
}

int aggio__op_allgatherv(struct aggio__op *op, const void *in, int count, void *out,
                         const int *rcount, const int *rdisp, MPI_Datatype type,
                         MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Iallgatherv(in, count, type, out, rcount, rdisp, type, comm, r)
             : MPI_Allgatherv(in, count, type, out, rcount, rdisp, type, comm);
  return posted(op, r, rc, "MPI_Allgatherv", phase);
}

int aggio__op_barrier(struct aggio__op *op, MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Ibarrier(comm, r) : MPI_Barrier(comm);
  return posted(op, r, rc, "MPI_Barrier", phase);
}

int aggio__op_bcast(struct aggio__op *op, void *buf, int count, MPI_Datatype type, int root,
                    MPI_Comm comm, int phase) {
  MPI_Request *r = coll_slot(op);
  closing(op);
  int rc = r ? MPI_Ibcast(buf, count, type, root, comm, r)
             : MPI_Bcast(buf, count, type, root, comm);
  return posted(op, r, rc, "MPI_Bcast", phase);
}

int aggio__op_await_requests(struct aggio__op *op, int phase) {
  op->wait_phase = phase;
  return op->nreq > 0 || op->creq != MPI_REQUEST_NULL ? AGGIO_STEP_PENDING : AGGIO_STEP_NEXT;
}

int aggio__op_await(struct aggio__op *op, int (*test)(struct aggio__op *),
                    void (*block)(struct aggio__op *), int phase) {
  if (test(op))
    return AGGIO_STEP_NEXT;
  op->test = test;
  op->block = block;
  op->wait_phase = phase;
  return AGGIO_STEP_PENDING;
}

/* ---- what a pending step waits for --------------------------------------------- */

static int mpi_ready(struct aggio__op *op) {
  int flag = 1, cflag = 1;
  if (op->creq != MPI_REQUEST_NULL && MPI_Test(&op->creq, &cflag, &op->cstat) != MPI_SUCCESS) {
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Test");
    op->creq = MPI_REQUEST_NULL;
    cflag = 1;
  }
  if (op->nreq > 0 && MPI_Testall(op->nreq, op->req, &flag, op->stat) != MPI_SUCCESS)
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Testall");
  return flag && cflag;
}

static void collect_batch(struct aggio__op *op) {
  if (op->batch.err.code != 0 && op->err.code == 0)
    op->err = op->batch.err;
  op->batch.err.code = 0;
}

int aggio__op_ready(struct aggio__op *op) {
  if ((op->nreq > 0 || op->creq != MPI_REQUEST_NULL) && !mpi_ready(op))
    return 0;
  op->nreq = 0;
  if (!aggio__batch_done(op->fh->pool, &op->batch)) /* under the pool's lock */
    return 0;
  collect_batch(op);
  if (op->test && !op->test(op))
    return 0;
  op->test = NULL;
  op->block = NULL;
  return 1;
}

void aggio__op_block(struct aggio__op *op) {
  if (op->creq != MPI_REQUEST_NULL && MPI_Wait(&op->creq, &op->cstat) != MPI_SUCCESS) {
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Wait");
    op->creq = MPI_REQUEST_NULL;
  }
  if (op->nreq > 0 && MPI_Waitall(op->nreq, op->req, op->stat) != MPI_SUCCESS)
    aggio__op_note(op, AGGIO_ERR_MPI, "MPI_Waitall");
  op->nreq = 0;
  aggio__op_account(op, op->wait_phase);
  if (!aggio__batch_done(op->fh->pool, &op->batch)) {
    aggio__batch_wait(op->fh->pool, &op->batch);
    aggio__op_account(op, AGGIO_P_IO_WAIT);
  }
  collect_batch(op);
  if (op->block)
    op->block(op);
  aggio__op_account(op, op->wait_phase);
  op->test = NULL;
  op->block = NULL;
}

/* ---- the loop ---------------------------------------------------------------------- */

/* A pending step's waits are tested again at the next progress (a
 * non-blocking operation), or block_pending waits for them. */
static int still_pending(struct aggio__op *op) {
  if (!op->pending)
    return 0;
  int ok = aggio__op_ready(op);
  aggio__op_account(op, op->wait_phase);
  op->pending = !ok;
  return op->pending;
}

static void setup_failed(struct aggio__op *op);

int aggio__op_progress(struct aggio__op *op) {
  if (still_pending(op))
    return 0;
  while (op->next) {
    aggio__step_fn step = op->next;
    op->step_phase = op->wait_phase = op->phase;
    op->nsteps++;
    aggio__perturb(op->fh);
    int rc = step(op);
    aggio__op_account(op, op->step_phase);
    if (rc == AGGIO_STEP_PENDING) {
      op->pending = 1;
      if (still_pending(op))
        return 0;
    }
  }
  if (op->setting_up) /* the set-up's agreement failed, on every rank */
    setup_failed(op);
  return 1;
}

void aggio__op_free(struct aggio__op *op) {
  if (op->sdata_free)
    op->sdata_free(op);
  op->sdata = NULL;
  op->sdata_free = NULL;
  free_requests(op);
  op->req = NULL;
  op->stat = NULL;
  op->nreq = op->req_cap = op->req_lent = 0;
}

/* ---- the shared steps of a collective operation ------------------------------------- */

static int step_decide(struct aggio__op *op);
static int step_flush(struct aggio__op *op);
static int step_init(struct aggio__op *op);

void aggio__op_init(struct aggio__op *op, aggio_file fh, int collective, int blocking) {
  op->fh = fh;
  op->creq = MPI_REQUEST_NULL;
  op->t_mark = fh->obs.stats ? aggio__now() : 0.0;
  op->collective = collective;
  op->blocking = blocking;
  op->eof = INT64_MAX;
  if (collective) /* call.c may put the I/O first (one_round.c) */
    aggio__then(op, aggio__step_summarize, AGGIO_P_AGREE);
}

/* Strategies that keep data between calls say what they hold, and give a
 * deferred failure (an earlier write-behind that failed) as this rank's
 * error, so that the agreement below spreads it.  It counts as reported
 * only once an agreement chose it (deferred_agreed): when this rank has an
 * error of its own, or another rank's error wins, it stays for the next
 * call. */
static void contributions(struct aggio__op *op, struct aggio__call_summary *mine) {
  aggio_file fh = op->fh;
  struct aggio__err held = {0};
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (s && s->contribute && aggio__ready(fh, i))
      s->contribute(fh, fh->strategy_state[i], mine, op->err.code ? NULL : &held);
  }
  aggio__op_deferred(op, &held);
}

void aggio__op_deferred(struct aggio__op *op, const struct aggio__err *held) {
  if (held->code == 0 || op->err.code != 0)
    return;
  op->err = *held;
  op->deferred_enc = aggio__err_encode(held->code, op->fh->rank);
}

void aggio__deferred_agreed(aggio_file fh, int64_t mine, int64_t agreed) {
  if (mine == 0 || mine != agreed ||
      fh->open.finalizing) /* at finalize nobody hears it */
    return;
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (s && s->reported && aggio__ready(fh, i))
      s->reported(fh, fh->strategy_state[i]);
  }
}

/* Applies an agreed encoded error (a reduction's result) to op->err: 1
 * when some rank failed.  A deferred failure this rank gave is reported
 * if the agreement chose it. */
static int failed(struct aggio__op *op, int64_t agreed) {
  aggio__deferred_agreed(op->fh, op->deferred_enc, agreed);
  op->deferred_enc = 0;
  op->err_root = aggio__err_rank(agreed);
  return aggio__err_decode(agreed, op->fh->rank, &op->err) != 0;
}

static int step_message_in(struct aggio__op *op) {
  aggio__err_take_message(op->fh->rank, op->err_root, op->msg_in, &op->err);
  return aggio__then(op, NULL, AGGIO_P_AGREE);
}

/* The operation failed (agreed on every rank): the failing rank's message
 * reaches every rank, so that each returns the same text ("rank 3:
 * pwrite(...): No space left on device"), then the operation ends. */
static int share_message(struct aggio__op *op);

int aggio__op_fail_agreed(struct aggio__op *op, int64_t agreed) {
  if (!failed(op, agreed))
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  return share_message(op);
}

static int share_message(struct aggio__op *op) {
  if (op->err_root < 0) /* MPI itself failed: nothing to share */
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  if (op->fh->rank == op->err_root)
    memcpy(op->msg_in, op->err.msg, sizeof op->msg_in);
  aggio__then(op, step_message_in, AGGIO_P_AGREE);
  return aggio__op_bcast(op, op->msg_in, (int)sizeof op->msg_in, MPI_CHAR, op->err_root,
                         op->fh->comm, AGGIO_P_AGREE);
}

/* 1 at MPI_THREAD_MULTIPLE.  Asked of MPI once: the level is fixed at
 * MPI_Init_thread, and this is on every collective call's path. */
static int threads_multiple(void) {
  static int cached = -1;
  int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
  if (v < 0) {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    v = level == MPI_THREAD_MULTIPLE;
    __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
  }
  return v;
}

/* Whether the program's writes may reach the file while op runs
 * (AGGIO_SF_CONCURRENT): a non-blocking operation runs while the program
 * goes on; a blocking one first completes the file's outstanding
 * operations (request.c), but the process may have others, and at
 * MPI_THREAD_MULTIPLE another thread may write meanwhile. */
static int concurrent(const struct aggio__op *op) {
  return !op->blocking || __atomic_load_n(&op->fh->nb.outstanding, __ATOMIC_RELAXED) > 0 ||
         threads_multiple();
}

int aggio__step_summarize(struct aggio__op *op) {
  aggio_file fh = op->fh;
  struct aggio__call_summary c = {.held_lo = INT64_MAX};
  contributions(op, &c);
  aggio__summary_mine(&op->mine, &op->acc.file, op->acc.nbytes,
                      aggio__err_encode(op->err.code, fh->rank),
                      c.flags | (fh->st.opened ? 0 : AGGIO_SF_NOT_OPENED) |
                          (concurrent(op) ? AGGIO_SF_CONCURRENT : 0) |
                          (__atomic_exchange_n(&fh->wrote_alone, 0, __ATOMIC_RELAXED)
                               ? AGGIO_SF_INDEPENDENT
                               : 0) |
                          (__atomic_load_n(&fh->read_alone, __ATOMIC_RELAXED)
                               ? AGGIO_SF_READ_ALONE
                               : 0) |
                          (op->io_first ? 0 : AGGIO_SF_NOT_IO_FIRST));
  op->mine.eof = op->eof; /* reads done first: where they found the end */
  op->mine.held_lo = c.held_lo;
  op->mine.held_hi = c.held_hi;
  op->mine.mergeable = op->mine.offered_max = 1;
  if (op->merge && !op->merge->decided)
    op->merge->mine(op, &op->mine); /* the summary of all it offers */
  aggio__then(op, step_decide, AGGIO_P_PLAN);
  return aggio__op_allreduce(op, &op->mine, &op->sum, 1, fh->summary_type,
                             fh->summary_op, fh->comm, AGGIO_P_AGREE);
}

/* The strategy, from the agreed summary.  In atomic mode none may keep
 * data between calls (MPI's atomic semantics need every access in the file
 * when it returns): an explicit write_behind runs as two-phase, saying so. */
static const struct aggio__strategy_ops *choose(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__strategy_ops *s = fh->strategy;
  char why[160] = "";
  if (s->choose)
    s = s->choose(fh, op, why, sizeof why);
  if (fh->atomic && s->flush) {
    snprintf(why, sizeof why, "atomic mode: %s keeps data between calls; two_phase", s->name);
    s = aggio__strategy_at(fh, AGGIO_STRAT_TWO_PHASE);
  }
  pthread_mutex_lock(&fh->info_lock); /* get_info may read it meanwhile */
  fh->strategy_used = s->name;
  pthread_mutex_unlock(&fh->info_lock);
  if (fh->obs.stats && why[0])
    snprintf(fh->obs.stats->auto_choice, sizeof fh->obs.stats->auto_choice, "%s: %s",
             s->name, why);
  return s;
}

/* After the summary every rank is in this operation: a blocking one may
 * block in MPI from here on (engine.h).  Every rank then goes on with the
 * agreed error, whatever its own was. */
static int step_decide(struct aggio__op *op) {
  op->entered = 1;
  /* an error noted after this rank's summary was made: the reduction failed */
  int reduction_failed = op->err.code != 0 &&
                         op->mine.err != aggio__err_encode(op->err.code, op->fh->rank);
  if (reduction_failed)
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  if (failed(op, op->sum.err)) /* bad arguments: nothing moves */
    return share_message(op);
  if (op->sum.mergeable > 1) /* every rank has later operations to merge */
    return aggio__then(op, op->merge->step, AGGIO_P_PLAN);
  return aggio__step_choose(op);
}

int aggio__step_choose(struct aggio__op *op) {
  op->strategy = choose(op);
  /* Data another strategy keeps (write-behind) reaches the file first; a
   * strategy that keeps data itself (it has a flush) handles it itself. */
  int flush = (op->sum.flags & (AGGIO_SF_CACHE_DIRTY | AGGIO_SF_CACHE_CLEAN)) &&
              !op->strategy->flush;
  switch (aggio__one_round_after(op, flush)) { /* this rank's I/O may have run */
  case AGGIO_ONE_ROUND_DONE:
    return aggio__then(op, NULL, AGGIO_P_AGREE);
  case AGGIO_ONE_ROUND_AGREE:
    return aggio__then(op, aggio__step_agree_outcome, AGGIO_P_AGREE);
  default:
    break;
  }
  if (flush)
    return aggio__then(op, step_flush, AGGIO_P_IO_WAIT);
  return aggio__then(op, step_init, AGGIO_P_PLAN);
}

/* Every node writes out (and forgets) what it holds, and all agree on it
 * before the new strategy touches the file. */
static int step_flush(struct aggio__op *op) {
  struct aggio__err held = {0};
  aggio__flush_local(op->fh, &held);
  aggio__op_deferred(op, &held);
  return aggio__op_agree_then(op, step_init, AGGIO_P_PLAN);
}

static int step_agreed(struct aggio__op *op) {
  if (failed(op, op->agreed[0]))
    return share_message(op);
  return aggio__then(op, op->err.code ? NULL : op->agreed_next, op->agreed_phase);
}

int aggio__op_agree_then(struct aggio__op *op, aggio__step_fn then, int phase) {
  op->agreed[0] = aggio__err_encode(op->err.code, op->fh->rank);
  op->agreed_next = then;
  op->agreed_phase = phase;
  aggio__then(op, step_agreed, AGGIO_P_AGREE);
  return aggio__op_allreduce(op, MPI_IN_PLACE, op->agreed, 1, MPI_INT64_T, MPI_MIN,
                             op->fh->comm, AGGIO_P_AGREE);
}

/* ---- the strategy's per-file state ------------------------------------------------- */

/* Made at the strategy's first operation on the file, by the strategy's
 * own set-up steps (internal.h), and agreed on before it is used: every
 * rank chose the same strategy from the same summary, so every rank runs
 * the same set-up. */
static int step_init(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__strategy_ops *s = op->strategy;
  if (s->setup && !aggio__ready(fh, s->id)) {
    op->setting_up = s;
    return aggio__then(op, s->setup, AGGIO_P_PLAN);
  }
  aggio__then(op, NULL, AGGIO_P_PLAN);
  return s->start(op);
}

static int step_set_up(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__strategy_ops *s = op->setting_up;
  op->setting_up = NULL;
  fh->strategy_refused &= ~(1u << s->id);
  aggio__set_ready(fh, s->id, 1);
  aggio__then(op, NULL, AGGIO_P_PLAN);
  return op->strategy ? s->start(op) : AGGIO_STEP_NEXT;
}

int aggio__setup_done(struct aggio__op *op) {
  return aggio__op_agree_then(op, step_set_up, AGGIO_P_PLAN);
}

/* Some rank's set-up failed (the agreement said so on every rank): every
 * rank frees what it made, and auto avoids the strategy from now on. */
static void setup_failed(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__strategy_ops *s = op->setting_up;
  op->setting_up = NULL;
  if (s->fini)
    s->fini(fh, fh->strategy_state[s->id]);
  fh->strategy_state[s->id] = NULL;
  aggio__set_ready(fh, s->id, 0);
  fh->strategy_refused |= 1u << s->id;
}

/* ---- the outcome --------------------------------------------------------------------- */

static int step_outcome(struct aggio__op *op) {
  if (op->agreed[1] < op->eof)
    op->eof = op->agreed[1];
  if (failed(op, op->agreed[0]))
    return share_message(op);
  return aggio__then(op, NULL, AGGIO_P_AGREE);
}

int aggio__step_agree_outcome(struct aggio__op *op) {
  op->agreed[0] = aggio__err_encode(op->err.code, op->fh->rank);
  op->agreed[1] = op->eof;
  aggio__then(op, step_outcome, AGGIO_P_AGREE);
  return aggio__op_allreduce(op, MPI_IN_PLACE, op->agreed, 2, MPI_INT64_T, MPI_MIN,
                             op->fh->comm, AGGIO_P_AGREE);
}

/* Bytes of the stream before end of file (reads): the file ranges in stream
 * order are sorted, so the count stops at the first byte past EOF. */
int64_t aggio__access_before_eof(const struct aggio__access *acc, int64_t eof) {
  int64_t n = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    if (x->off + x->len <= eof) {
      n += x->len;
      continue;
    }
    if (x->off < eof)
      n += eof - x->off;
    break;
  }
  return n;
}

/* ---- flushing ---------------------------------------------------------------------- */

int aggio__flush_local(aggio_file fh, struct aggio__err *e) {
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    if (s && s->flush && aggio__ready(fh, i))
      s->flush(fh, fh->strategy_state[i], e);
  }
  return e->code;
}

struct aggio__pool *aggio__file_pool(aggio_file fh) {
  if (!fh->pool)
    fh->pool = aggio__pool_process();
  return fh->pool;
}
