/*
 * request.c - non-blocking and split collective data access: the engine's
 * operation objects (engine.h) handed to the user as requests, and the
 * progress that moves them.
 *
 * A request is a call (call.h) and its operation.  Starting it prepares
 * the call and queues the operation; progress runs the operation's steps
 * until one must wait (a posted collective, I/O jobs, a node-cache block);
 * completing it gives the user the result.  What runs where:
 *   - every outstanding operation of the process is on one list, in start
 *     order; a progress pass runs each operation that can move, but of
 *     each file only its oldest unfinished collective operation: MPI wants
 *     a communicator's collectives in the same order on every rank, and
 *     the user started the file's collective operations in the same order
 *     everywhere.  Different files' operations are independent of each
 *     other (ranks may start them in different orders);
 *   - no step blocks on a peer (docs/engine.md, "Liveness"): every wait
 *     that depends on another rank either runs passes meanwhile, or blocks
 *     in MPI only where no peer can need this process's other operations;
 *   - progress passes run in aggio calls (a starting call, the completion
 *     calls, the entry of every blocking call) and, when MPI gives
 *     MPI_THREAD_MULTIPLE, in a progress thread that lives while
 *     operations are outstanding;
 *   - file I/O runs on the file's I/O threads (pool.h) and the node
 *     cache's threads, which never call MPI, so it goes on between
 *     progress passes at every thread level.
 * One mutex guards the list and every step run in a pass.  A thread that
 * waits for one request may run that request's steps outside the mutex
 * (the request is marked busy, and passes leave it alone).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "call.h"
#include "merge.h"
#include "request.h"

struct aggio_request_s {
  struct call c;
  struct aggio__op op;
  aggio_file fh;          /* NULL once the file is closed */
  int complete;           /* the outcome is known */
  int busy;               /* a thread runs its steps outside the mutex */
  int split;              /* a split collective (begin/end) */
  MPI_Status status;      /* filled at completion */
  struct aggio__err err;  /* the outcome */
  struct aggio_request_s *prev, *next; /* every live request, start order */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed; /* a request completed (monotonic clock: init_once) */
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct aggio_request_s *first, *last;
static int outstanding;       /* live requests not complete */
static unsigned long pass_serial; /* the progress pass running now */

/* The progress thread: started when an operation starts and none runs,
 * gone when no operation is outstanding. */
static pthread_t progress_thread;
static int thread_running, thread_joinable, thread_level = -1;
static int finalize_hook = MPI_KEYVAL_INVALID;

/* ---- the list ------------------------------------------------------------------------ */

static void link_request(struct aggio_request_s *r) {
  r->prev = last;
  r->next = NULL;
  if (last)
    last->next = r;
  else
    first = r;
  last = r;
  outstanding++;
  __atomic_add_fetch(&r->fh->nb.outstanding, 1, __ATOMIC_RELAXED); /* engine.c reads it */
}

static void unlink_request(struct aggio_request_s *r) {
  if (r->prev)
    r->prev->next = r->next;
  else
    first = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    last = r->prev;
  r->prev = r->next = NULL;
}

/* ---- progress -------------------------------------------------------------------------- */

static struct aggio_request_s *request_of(struct aggio__op *op) {
  return (struct aggio_request_s *)((char *)op - offsetof(struct aggio_request_s, op));
}

/* Gives the user the outcome; the request stays on the list until waited.
 * Operations merged into r's complete with it. */
static void complete(struct aggio_request_s *r) {
  aggio_file fh = r->fh;
  struct aggio__merge *g = r->op.merge;
  int m = aggio__merge_finish(&r->op);
  r->op.merge = NULL;
  aggio__call_end(&r->c, &r->op);
  r->err = r->op.err;
  r->status.MPI_ERROR = r->err.code;
  r->complete = 1;
  outstanding--;
  __atomic_sub_fetch(&fh->nb.outstanding, 1, __ATOMIC_RELAXED);
  for (int i = 1; i < m; i++) {
    struct aggio_request_s *f = request_of(g->ops[i]);
    f->op.t_mark = fh->obs.stats ? aggio__now() : 0.0;
    complete(f);
  }
  if (fh->obs.stats && m > 1)
    fh->obs.stats->c[AGGIO_C_NB_MERGED] += m - 1;
  aggio__merge_free(g);
  pthread_cond_broadcast(&changed);
}

/* ---- merging ------------------------------------------------------------------------- */

/* Small non-blocking collective operations queued back to back on a file
 * are offered to the first for merging (merge.c: the ranks agree on how
 * many).  Limits keep the merged copy small. */
#define MERGE_MAX_OPS 256
#define MERGE_MAX_BYTES (1 << 20)      /* per operation and rank */
#define MERGE_MAX_TOTAL (64 << 20)     /* per merged operation and rank */

static int mergeable(const struct aggio_request_s *r, int is_write) {
  return r->c.collective && !r->complete && !r->busy && r->op.nsteps == 0 &&
         r->c.is_write == is_write &&
         r->op.err.code == 0 && r->op.acc.nbytes <= MERGE_MAX_BYTES;
}

/* The operations r may carry: the next collective ones of its file, while
 * they qualify (the first that does not ends the run: the order of a
 * file's collective operations is kept). */
static int followers(struct aggio_request_s *r, struct aggio__op **ops) {
  int n = 1;
  int64_t total = r->op.acc.nbytes;
  ops[0] = &r->op;
  for (struct aggio_request_s *f = r->next; f && n < MERGE_MAX_OPS; f = f->next) {
    if (f->fh != r->fh || !f->c.collective)
      continue;
    if (!mergeable(f, r->c.is_write) || total + f->op.acc.nbytes > MERGE_MAX_TOTAL)
      break;
    total += f->op.acc.nbytes;
    ops[n++] = &f->op;
  }
  return n;
}

/* Before r's first step: offers it the operations queued behind it. */
static void offer_merge(struct aggio_request_s *r) {
  if (r->op.nsteps != 0 || r->op.merge || r->fh->atomic || !mergeable(r, r->c.is_write))
    return;
  struct aggio__op *ops[MERGE_MAX_OPS];
  int n = followers(r, ops);
  if (n < 2)
    return;
  /* without memory this rank offers nothing (1), and the MIN says so */
  r->op.merge = aggio__merge_new(ops, n);
}

/* Runs r's steps while they can run (locked).  The phase timers count only
 * the time spent here, not the time between progress passes. */
static int advance(struct aggio_request_s *r, int *moved) {
  unsigned long before = r->op.nsteps;
  double t = r->fh->obs.stats ? aggio__now() : 0.0;
  r->op.t_mark = t;
  int done = aggio__op_progress(&r->op);
  if (r->fh->obs.stats) /* api_time counts progress passes too */
    r->fh->obs.stats->api_time += r->op.t_mark - t;
  if (r->op.nsteps != before || done)
    *moved = 1;
  return done;
}

/* A file's first unstarted collective operation waits this long after a
 * starting call on the file before the progress thread starts it, so that
 * operations started back to back can merge. */
#define MERGE_GRACE 200e-6

/* 1 when r should not take its first step in this pass: `defer` is the
 * file of the starting call running the pass (its next call may bring an
 * operation to merge), or the pass is the progress thread's within the
 * grace after a starting call. */
static int deferred(const struct aggio_request_s *r, aggio_file defer, double now) {
  if (!r->c.collective || r->op.nsteps != 0)
    return 0;
  if (r->fh == defer)
    return 1;
  return now > 0 && now - r->fh->nb.last_start < MERGE_GRACE * aggio__test_timing();
}

/* Per-file order within a pass: once a file's oldest unfinished
 * collective operation could not finish, the file's later ones wait. */
static int file_waits(aggio_file fh) { return fh->nb.pass == pass_serial; }
static void file_wait(aggio_file fh) { fh->nb.pass = pass_serial; }

/* One pass over every outstanding operation (locked).  Returns 1 when
 * some step ran.  `defer` and `now`: see deferred().
 *
 * Collective operations of one file run one at a time, in the order they
 * were started; those of different files independently of each other.  A
 * process-wide order (as this pass kept before) is not MPI's: a rank may
 * start iwrite_at_all on file A then B while another starts B then A, and
 * the MPI library's own MPI-IO completes that.  Nothing here may block on
 * a peer (docs/engine.md, "Liveness"), so two files' operations can never
 * wait for each other. */
static int progress_pass(aggio_file defer, double now) {
  int moved = 0;
  pass_serial++;
  for (struct aggio_request_s *r = first, *next; r; r = next) {
    next = r->next;
    int coll = r->c.collective;
    if (r->complete || (coll && file_waits(r->fh)))
      continue;
    if (r->busy || deferred(r, defer, now)) {
      if (coll)
        file_wait(r->fh);
      continue;
    }
    offer_merge(r);
    if (advance(r, &moved)) {
      complete(r);
      next = r->next; /* complete() may have completed what followed */
    } else if (coll)
      file_wait(r->fh);
  }
  return moved;
}

static int progress_all(void) { return progress_pass(NULL, 0.0); }

/* The condition variable waits on the monotonic clock: a timed wait on
 * the wall clock jumps when the clock is set. */
static void init_once(void) {
  pthread_condattr_t a;
  pthread_condattr_init(&a);
  pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
  pthread_cond_init(&changed, &a);
  pthread_condattr_destroy(&a);
}

static void lock_requests(void) {
  pthread_once(&once, init_once);
  pthread_mutex_lock(&lock);
}

/* Waits a little for a completion (locked): the progress thread's, or for
 * posted work to move.  MPI moves messages only while someone calls it, so
 * the first pauses just yield the processor; then sleeps from 10 us,
 * doubling up to 1 ms while nothing moves. */
#define YIELDS 64

static void pause_locked(int *backoff) {
  if (*backoff < YIELDS) {
    (*backoff)++;
    pthread_mutex_unlock(&lock);
    sched_yield();
    lock_requests();
    return;
  }
  int us = 10 << (*backoff - YIELDS < 7 ? *backoff - YIELDS : 7);
  (*backoff)++;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_nsec += (long)us * 1000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(&changed, &lock, &ts);
}

/* One pass; when it moved nothing, a pause (locked).  A pass that
 * completes a request has moved, so callers waiting for one need not look
 * before pausing. */
static void pass_or_pause(int *backoff) {
  if (progress_all())
    *backoff = 0;
  else
    pause_locked(backoff);
}

static void *progress_main(void *arg) {
  (void)arg;
  int backoff = 0;
  lock_requests();
  while (outstanding > 0 && thread_running) {
    if (progress_pass(NULL, aggio__now()))
      backoff = 0;
    if (outstanding == 0)
      break;
    /* let the user's thread take the lock between passes */
    pause_locked(&backoff);
  }
  thread_running = 0;
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* At MPI_Finalize (the attribute on MPI_COMM_SELF is deleted first): the
 * progress thread has ended (no operation is outstanding then); join it. */
static int at_finalize(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  lock_requests();
  thread_running = 0;
  int join = thread_joinable;
  thread_joinable = 0;
  pthread_mutex_unlock(&lock);
  if (join)
    pthread_join(progress_thread, NULL);
  MPI_Comm_free_keyval(&finalize_hook);
  return MPI_SUCCESS;
}

/* 1 when a thread may call MPI while the application's threads do. */
static int thread_allowed(void) {
#ifdef AGGIO_SIMGRID
  thread_level = 0; /* as AGGIO_PROGRESS_THREAD=0: SMPI simulates no thread */
#endif
  if (thread_level < 0) {
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    const char *env = getenv("AGGIO_PROGRESS_THREAD");
    thread_level = level == MPI_THREAD_MULTIPLE && !(env && strcmp(env, "0") == 0);
    if (thread_level &&
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &finalize_hook, NULL) ==
            MPI_SUCCESS)
      MPI_Comm_set_attr(MPI_COMM_SELF, finalize_hook, NULL);
  }
  return thread_level;
}

/* Starts the progress thread if it may run and does not (locked). */
static void ensure_thread(void) {
  if (thread_running || !thread_allowed())
    return;
  if (thread_joinable) { /* the last one ended: it holds no lock now */
    pthread_mutex_unlock(&lock);
    pthread_join(progress_thread, NULL);
    lock_requests();
    thread_joinable = 0;
    if (thread_running)
      return;
  }
  thread_running = 1;
  if (pthread_create(&progress_thread, NULL, progress_main, NULL) != 0)
    thread_running = 0; /* progress then runs in aggio calls only */
  else
    thread_joinable = 1;
}

/* 1 when r may run now: no earlier collective operation of its file is
 * unfinished, and no other thread runs it (locked). */
static int runnable(const struct aggio_request_s *r) {
  if (r->busy)
    return 0;
  for (const struct aggio_request_s *x = first; x && x != r; x = x->next)
    if (!x->complete && x->fh == r->fh && x->c.collective && r->c.collective)
      return 0;
  return 1;
}

/* Completes r (locked).  Once r may run, this thread runs its steps itself,
 * outside the mutex (r is busy meanwhile, and passes leave it alone), and
 * waits for what they post as any operation waits: in MPI when nothing
 * else of this process is outstanding, else running passes for the others
 * (aggio__requests_await), which another rank may be waiting for.  Its
 * collectives stay posted ones: MPI does not match a blocking collective
 * with a non-blocking one, and other ranks run the same operation from
 * their progress passes. */
static void wait_locked(struct aggio_request_s *r) {
  int backoff = 0;
  while (!r->complete) {
    if (!runnable(r)) {
      pass_or_pause(&backoff);
      continue;
    }
    offer_merge(r); /* before it is busy: a busy request is not mergeable */
    r->busy = 1;
    pthread_mutex_unlock(&lock);
    double t = r->fh->obs.stats ? aggio__now() : 0.0;
    r->op.t_mark = t;
    aggio__op_wait(&r->op);
    if (r->fh->obs.stats)
      r->fh->obs.stats->api_time += r->op.t_mark - t;
    lock_requests();
    r->busy = 0;
    complete(r);
  }
}

/* 1 when x can take a step before op completes (locked): every other
 * outstanding operation but the collective ones queued behind op on its
 * file, which wait for it anyway (op NULL: any). */
static int may_run_first(const struct aggio_request_s *x, const struct aggio__op *op) {
  if (x->complete || (op && &x->op == op))
    return 0;
  if (!op || !op->queued || !op->collective || !x->c.collective || x->fh != op->fh)
    return 1;
  for (const struct aggio_request_s *y = request_of((struct aggio__op *)op)->next; y;
       y = y->next)
    if (y == x)
      return 0; /* started after op on its file: waits behind it */
  return 1;
}

/* Blocking in MPI on op's waits is safe when no other operation of this
 * process could move meanwhile (nothing a peer could need waits behind
 * this thread), or when the progress thread runs them (locked). */
static int may_block(const struct aggio__op *op) {
  if (thread_running)
    return 1;
  for (const struct aggio_request_s *x = first; x; x = x->next)
    if (may_run_first(x, op))
      return 0;
  return 1;
}

void aggio__requests_await(struct aggio__op *op) {
  int backoff = 0;
  lock_requests();
  for (;;) {
    if (may_block(op)) { /* the common case: straight into MPI */
      pthread_mutex_unlock(&lock);
      aggio__op_block(op);
      return;
    }
    if (aggio__op_ready(op))
      break;
    pass_or_pause(&backoff);
  }
  pthread_mutex_unlock(&lock);
  aggio__op_account(op, op->wait_phase);
}

int aggio__wait_progress(MPI_Request *req) {
  int backoff = 0, flag = 0, rc = MPI_SUCCESS;
  lock_requests();
  while (!may_block(NULL)) {
    rc = MPI_Test(req, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || flag) {
      pthread_mutex_unlock(&lock);
      return rc;
    }
    pass_or_pause(&backoff);
  }
  pthread_mutex_unlock(&lock);
  return MPI_Wait(req, MPI_STATUS_IGNORE);
}

void aggio__requests_settle(aggio_file fh) {
  int backoff = 0;
  lock_requests();
  while (__atomic_load_n(&fh->nb.outstanding, __ATOMIC_RELAXED) > 0)
    pass_or_pause(&backoff);
  pthread_mutex_unlock(&lock);
}

void aggio__requests_detach(aggio_file fh) {
  lock_requests();
  for (struct aggio_request_s *r = first, *next; r; r = next) {
    next = r->next;
    if (r->fh != fh)
      continue;
    r->fh = NULL;
    if (r->split) { /* nobody can reach it any more */
      unlink_request(r);
      free(r);
    }
  }
  fh->nb.split = NULL;
  pthread_mutex_unlock(&lock);
}

/* ---- starting ------------------------------------------------------------------------- */

/* The trace record of a starting call. */
static void trace_start(struct aggio_request_s *r, double t1) {
  struct call *c = &r->c;
  if (c->fh->obs.trace)
    aggio__obs_record(&c->fh->obs, aggio__call_trace_op(c, 1), c->offset, c->count,
                               c->type_size, c->t0, t1,
                               c->collective ? AGGIO_TRACE_FLAG_COLLECTIVE : 0);
}

/* How long a starting call runs its operation while it waits for the other
 * ranks' starting calls (see first_steps). */
#define RUN_AHEAD 2e-3

/* 1 while r's pending step waits for messages or collectives. */
static int waits_on_peers(const struct aggio_request_s *r) {
  return !r->complete && r->op.pending && (r->op.nreq > 0 || r->op.creq != MPI_REQUEST_NULL);
}

/* The starting call's pass (locked).  Operations started back to back on
 * a file (a burst: the file's previous one was started within
 * MERGE_GRACE) are left for the next call to merge.  Otherwise the
 * operation starts now, and the starting call runs it as far as it goes
 * within RUN_AHEAD: ranks start a collective operation at about the same
 * time, and once it has agreed and handed its file I/O to the I/O threads
 * the I/O goes on during the computation.  Without a progress thread
 * nothing else would move it until the application's next aggio call;
 * with one, this keeps the thread (which shares the cores with the
 * computation) from having to (measured: 2 ranks on 2 cores hid 50% of
 * the I/O when the thread took over at once, 70% this way). */
static void first_steps(struct aggio_request_s *r) {
  aggio_file fh = r->fh;
  double now = aggio__now();
  int burst = now - fh->nb.last_start < MERGE_GRACE * aggio__test_timing();
  fh->nb.last_start = now;
  ensure_thread();
  if (burst) {
    progress_pass(fh, 0.0);
    return;
  }
  do
    progress_all();
  while (waits_on_peers(r) && aggio__now() - now < RUN_AHEAD * aggio__test_timing());
}

/* Without memory for a request, the operation runs to completion now, with
 * posted collectives as its peers' operations use (a collective one still
 * meets theirs in order), and the starting call returns its outcome,
 * AGGIO_ERR_NOMEM, agreed with the peers. */
static int run_now(struct call *c) {
  struct aggio__op op;
  aggio__requests_settle(c->fh);
  c->fp_at_start = 0;
  aggio__call_begin(c, &op, 0);
  aggio__fail(&op.err, AGGIO_ERR_NOMEM, "rank %d: out of memory for a request",
              c->fh->rank);
  aggio__op_wait(&op);
  aggio__call_end(c, &op);
  return aggio__finish(&op.err);
}

int aggio__request_start(struct call *c, aggio_request *request, int split) {
  struct aggio__err e = {0};
  if (request)
    *request = AGGIO_REQUEST_NULL;
  if (!c->fh)
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
  else if (!request && !split)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: request is NULL", c->fh->rank);
  if (e.code != 0)
    return aggio__finish(&e);
  struct aggio_request_s *r = calloc(1, sizeof *r);
  if (!r)
    return run_now(c);
  r->c = *c;
  r->c.status = &r->status;
  r->c.fp_at_start = 1;
  r->fh = c->fh;
  r->split = split;
  if (c->fh->obs.stats)
    c->fh->obs.stats->c[AGGIO_C_NB_STARTED]++;
  lock_requests();
  aggio__call_begin(&r->c, &r->op, 0);
  r->op.queued = 1;
  if (c->fh->obs.stats) /* the passes below count their own time */
    c->fh->obs.stats->api_time += aggio__now() - r->c.t0;
  link_request(r);
  if (split)
    c->fh->nb.split = r;
  first_steps(r);
  pthread_mutex_unlock(&lock);
  trace_start(r, aggio__now());
  if (request)
    *request = r;
  return AGGIO_SUCCESS;
}

int aggio_progress(void) {
  lock_requests();
  int moved = outstanding > 0 ? progress_all() : 0;
  pthread_mutex_unlock(&lock);
  return moved;
}

/* ---- completion ------------------------------------------------------------------------ */

static void empty_status(MPI_Status *status) {
  if (status && status != MPI_STATUS_IGNORE) {
    MPI_Status_set_elements_x(status, MPI_BYTE, 0);
    status->MPI_ERROR = MPI_SUCCESS;
  }
}

/* Hands a completed request's outcome to the user and frees it (locked):
 * its status, its trace record of the completion call (t0: when that call
 * began), the return code and message. */
static int release(aggio_request *rp, MPI_Status *status, double t0) {
  struct aggio_request_s *r = *rp;
  if (status && status != MPI_STATUS_IGNORE)
    *status = r->status;
  if (r->fh && r->fh->obs.trace) {
    MPI_Count bytes = 0;
    MPI_Get_elements_x(&r->status, MPI_BYTE, &bytes);
    aggio__obs_record(&r->fh->obs, AGGIO_OP_WAIT, -1, (int64_t)bytes, 1, t0, aggio__now(),
                               r->c.collective ? AGGIO_TRACE_FLAG_COLLECTIVE : 0);
  }
  struct aggio__err e = r->err;
  unlink_request(r);
  free(r);
  *rp = AGGIO_REQUEST_NULL;
  return aggio__finish(&e);
}

int aggio_wait(aggio_request *request, MPI_Status *status) {
  struct aggio__err e = {0};
  if (!request) {
    aggio__fail(&e, AGGIO_ERR_ARG, "request is NULL");
    return aggio__finish(&e);
  }
  if (!*request) {
    empty_status(status);
    return aggio__finish(&e);
  }
  double t0 = aggio__now();
  lock_requests();
  wait_locked(*request);
  int rc = release(request, status, t0);
  pthread_mutex_unlock(&lock);
  return rc;
}

int aggio_test(aggio_request *request, int *flag, MPI_Status *status) {
  struct aggio__err e = {0};
  if (!request || !flag) {
    aggio__fail(&e, AGGIO_ERR_ARG, "request or flag is NULL");
    return aggio__finish(&e);
  }
  *flag = 1;
  if (!*request) {
    empty_status(status);
    return aggio__finish(&e);
  }
  double t0 = aggio__now();
  lock_requests();
  if (!(*request)->complete)
    progress_all();
  *flag = (*request)->complete;
  int rc = *flag ? release(request, status, t0) : aggio__finish(&e);
  pthread_mutex_unlock(&lock);
  return rc;
}

static MPI_Status *status_at(MPI_Status statuses[], int i) {
  return statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &statuses[i];
}

/* Releases every request of the array (locked, all complete); the first
 * failure is the result, its message the thread's. */
static int release_all(int count, aggio_request requests[], MPI_Status statuses[], double t0) {
  struct aggio__err first_err = {0};
  for (int i = 0; i < count; i++) {
    if (!requests[i]) {
      empty_status(status_at(statuses, i));
      continue;
    }
    struct aggio__err e = requests[i]->err;
    release(&requests[i], status_at(statuses, i), t0);
    if (e.code != 0 && first_err.code == 0)
      first_err = e;
  }
  return aggio__finish(&first_err);
}

/* The arguments of the calls on several requests; `out`: the flag or index
 * pointer of the calls that have one. */
static int check_array(int count, aggio_request requests[], int has_out, const void *out) {
  struct aggio__err e = {0};
  if (count < 0 || (count > 0 && !requests))
    aggio__fail(&e, AGGIO_ERR_ARG, "bad request array (count %d)", count);
  else if (has_out && !out)
    aggio__fail(&e, AGGIO_ERR_ARG, "flag or index is NULL");
  return aggio__finish(&e);
}

int aggio_waitall(int count, aggio_request requests[], MPI_Status statuses[]) {
  if (check_array(count, requests, 0, NULL) != 0)
    return AGGIO_ERR_ARG;
  double t0 = aggio__now();
  lock_requests();
  for (int i = 0; i < count; i++)
    if (requests[i])
      wait_locked(requests[i]);
  int rc = release_all(count, requests, statuses, t0);
  pthread_mutex_unlock(&lock);
  return rc;
}

int aggio_testall(int count, aggio_request requests[], int *flag, MPI_Status statuses[]) {
  if (check_array(count, requests, 1, flag) != 0)
    return AGGIO_ERR_ARG;
  double t0 = aggio__now();
  lock_requests();
  progress_all();
  *flag = 1;
  for (int i = 0; i < count; i++)
    if (requests[i] && !requests[i]->complete)
      *flag = 0;
  struct aggio__err none = {0};
  int rc = *flag ? release_all(count, requests, statuses, t0) : aggio__finish(&none);
  pthread_mutex_unlock(&lock);
  return rc;
}

/* The first complete request of the array, -1 if none (locked). */
static int any_complete(int count, aggio_request requests[], int *live) {
  *live = 0;
  for (int i = 0; i < count; i++) {
    if (!requests[i])
      continue;
    (*live)++;
    if (requests[i]->complete)
      return i;
  }
  return -1;
}

int aggio_waitany(int count, aggio_request requests[], int *index, MPI_Status *status) {
  if (check_array(count, requests, 1, index) != 0)
    return AGGIO_ERR_ARG;
  double t0 = aggio__now();
  int backoff = 0, live, i;
  lock_requests();
  while ((i = any_complete(count, requests, &live)) < 0 && live > 0) {
    if (live == 1 && outstanding == 1) { /* only one left: block on it */
      for (i = 0; !requests[i]; i++)
        ;
      wait_locked(requests[i]);
      continue;
    }
    pass_or_pause(&backoff);
  }
  struct aggio__err none = {0};
  int rc;
  if (i < 0) {
    *index = MPI_UNDEFINED;
    empty_status(status);
    rc = aggio__finish(&none);
  } else {
    *index = i;
    rc = release(&requests[i], status, t0);
  }
  pthread_mutex_unlock(&lock);
  return rc;
}

/* ---- split collectives ------------------------------------------------------------------- */

int aggio__split_end(aggio_file fh, const void *buf, MPI_Status *status, int is_write,
                     int use_fp, int kind) {
  struct aggio__err e = {0};
  struct aggio_request_s *r = fh ? fh->nb.split : NULL;
  if (!fh)
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
  else if (!r || r->c.is_write != is_write || r->c.use_fp != use_fp || r->c.kind != kind)
    aggio__fail(&e, AGGIO_ERR_REQUEST, "rank %d: no matching split collective was begun "
                "on this file", fh->rank);
  else if (r->c.buf != buf)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: the end call's buffer is not the begin call's",
                fh->rank);
  if (e.code != 0)
    return aggio__finish(&e);
  fh->nb.split = NULL;
  aggio_request req = r;
  return aggio_wait(&req, status);
}

/* Blocks in MPI only where no peer can need this process meanwhile: in a
 * blocking operation once it has entered.  Otherwise (its entry, or a
 * non-blocking operation) the process's other operations progress while
 * it waits (aggio__requests_await). */
void aggio__op_wait(struct aggio__op *op) {
  while (!aggio__op_progress(op)) {
    if (op->blocking && op->entered)
      aggio__op_block(op);
    else
      aggio__requests_await(op);
    op->pending = 0;
  }
}
