/*
 * engine.h - the collective engine: one object per data access, driven
 * through its life by small step functions that never block unless the
 * operation is blocking.  docs/engine.md tells the whole story.
 *
 * The life of a collective operation (io.c makes it, engine.c runs it):
 *   prepare     arguments checked, view mapped, memory packed (io.c)
 *   summarize   one reduction over all ranks carries every rank's argument
 *               error, deferred error (write-behind) and range: the
 *               arguments are agreed before anything moves
 *   choose      the strategy (auto picks from the agreed summary)
 *   flush       when another strategy still holds data of the file
 *   init        the strategy's per-file state, at its first operation
 *   strategy    the strategy's own steps: plan, exchange, file I/O
 *   agree       the outcome (and end of file for reads), on every rank;
 *               write-behind returns earlier and reports later
 * A blocking call is "start, then wait": the same steps; its first
 * collective (the summary, the call's "entry") is posted and waited for
 * while the process's other operations progress, and once every rank is
 * known to be in the call the rest block in MPI (faster than posted ones).
 * docs/engine.md, "Liveness", says why this order of things cannot hang.
 *
 * A step returns AGGIO_STEP_NEXT to run op->next at once, or
 * AGGIO_STEP_PENDING when op->next must wait for what the step posted:
 * MPI requests (op->req), I/O jobs (op->batch) or a strategy condition
 * (op->test / op->block).  Like libuv's uv_fs_t (one request type for
 * synchronous and asynchronous calls) and ROMIO's ad_iwrite_coll.c (a state
 * machine advanced by MPI test calls).
 */
#ifndef AGGIO_ENGINE_H
#define AGGIO_ENGINE_H

#include <stdio.h>

#include "internal.h"
#include "pool.h"

enum { AGGIO_STEP_NEXT = 0, AGGIO_STEP_PENDING = 1 };

/* Summary flags (aggio__op.sum.flags, OR over ranks). */
#define AGGIO_SF_CACHE_DIRTY 1 /* a node holds written data not yet in the file */
#define AGGIO_SF_CACHE_CLEAN 2 /* a node holds data it read (read-ahead) */
#define AGGIO_SF_NOT_OPENED 4  /* a rank did not open the file (romio_no_indep_rw) */
#define AGGIO_SF_INDEPENDENT 8 /* a rank wrote independently since its last collective call */
/* Writes of the program may land in the file while the operation runs (it
 * is non-blocking, a rank has non-blocking operations outstanding, or
 * other threads may call MPI-IO): a hole between the operation's pieces
 * may be written meanwhile, so it must not be read and written back (a
 * read-modify-write would put stale bytes over a write that returned). */
#define AGGIO_SF_CONCURRENT 16
/* A rank has read the file independently since it opened it (HDF5's and
 * PnetCDF's metadata reads): auto's read rule (plan.c). */
#define AGGIO_SF_READ_ALONE 32
/* A rank did not do its I/O before the summary (one_round.c). */
#define AGGIO_SF_NOT_IO_FIRST 64

struct aggio__op;
typedef int (*aggio__step_fn)(struct aggio__op *op);

/* Non-blocking collective operations started back to back on one file,
 * each small, may run as one (merge.c): the first carries the others. */
struct aggio__merge {
  int n;                    /* operations offered (ops[0]: the carrier) */
  struct aggio__op **ops;
  int64_t *ranges;          /* 2n: per operation MIN lo and MIN -hi over ranks */
  int *order;               /* n: merged operations by file offset */
  int64_t *spos;            /* n: where each one's data lies in the merged stream */
  int m;                    /* operations merged (0 until agreed) */
  int decided;              /* m is agreed: summaries describe op->acc again */
  int built;                /* the carrier runs the merged access */
  struct aggio__access own; /* the carrier's own access, while it carries */
  struct aggio__access x;   /* the merged access, its memory reserved */
  /* merge.c's part in the engine's steps (merging sits above the engine,
   * which calls it only through these):
   * mine: this rank's part of the summary when it offers operations to
   *   merge: the count offered, and the ranges and bytes of all of them
   *   together (when every rank's offer merges whole, the summary needs no
   *   second round);
   * step: after the summary, when every rank offered later operations:
   *   agrees on how many merge and runs them as one. */
  void (*mine)(const struct aggio__op *op, struct aggio__call_summary *mine);
  int (*step)(struct aggio__op *op);
};

struct aggio__shm;

struct aggio__op {
  aggio_file fh;
  struct aggio__access acc;     /* this rank's ranges and data stream */
  struct aggio__err err;        /* this rank's error, then the agreed one */
  int collective;
  int blocking;                 /* a blocking call: collectives block once entered */
  int entered;                  /* the summary completed: every rank is in this call */
  int queued;                   /* a request on the process's list (request.c) */
  const struct aggio__strategy_ops *strategy; /* the strategy running it */
  void *sdata;                  /* the strategy's state for this operation */
  void (*sdata_free)(struct aggio__op *op); /* frees sdata at completion */

  aggio__step_fn next;          /* next step; NULL once complete */
  unsigned long nsteps;         /* steps run so far (progress tells movement) */
  int pending;                  /* the last step's waits are not complete */
  int phase;                    /* enum aggio__phase the next step accounts to */
  int wait_phase;               /* phase of what the pending step waits for */
  int step_phase;               /* phase of the step now running */
  double t_mark;                /* timers: where the time already counted ends */

  /* what the pending step waits for */
  MPI_Request *req;
  MPI_Status *stat;             /* req_cap entries (MPICH's headers warn on
                                 * MPI_STATUSES_IGNORE) */
  MPI_Request req_inline;       /* the first slot, which never fails */
  MPI_Status stat_inline;
  int nreq, req_cap;
  int req_lent;                 /* req and stat belong to the strategy's kept
                                 * state (aggio__op_lend_requests) */
  MPI_Request creq;             /* the posted collective of the step (a step */
  MPI_Status cstat;             /* posts at most one): its slot never fails */
  struct aggio__batch batch;    /* I/O jobs of this operation (pool.h) */
  int (*test)(struct aggio__op *op);  /* strategy condition: 1 when ready */
  void (*block)(struct aggio__op *op); /* waits until test would be 1 */

  struct aggio__merge *merge;   /* later operations this one may carry, or NULL */
  struct aggio__call_summary mine, sum; /* this rank's, and the agreed one */
  int64_t agreed[2];            /* outcome reduction: encoded error, end of file */
  aggio__step_fn agreed_next;   /* aggio__op_agree_then: the step after it */
  int agreed_phase;
  int64_t eof;                  /* reads: smallest end of file a short read saw */
  int io_first;                 /* this rank did its I/O before the summary (one_round.c) */
  double t_phase;               /* start of the step or wait being timed */

  /* the strategy's per-file state being made (aggio__setup_done) */
  const struct aggio__strategy_ops *setting_up;
  struct aggio__shm *shm;       /* node-shared memory being made (shm.h) */
  int64_t deferred_enc;         /* this rank's summary error is a deferred
                                 * failure (encoded), or 0 */
  int err_root;                 /* the rank whose failure was agreed, or -1 */
  char msg_in[AGGIO_ERRMSG_LEN]; /* its message, sent to every rank */
};

/* Timers: counts the time since the last count to `phase` (the calls'
 * time is tiled: every interval goes to the phase that ran in it). */
void aggio__op_account(struct aggio__op *op, int phase);
/* Moves `seconds` of the running step's time to another phase (a wait the
 * step measured itself). */
void aggio__op_reassign(struct aggio__op *op, int to, double seconds);

/* Sets op up for a collective or independent access (io.c fills acc and
 * err first; err may already hold this rank's argument error).  A
 * collective one starts with the summary; an independent one's first step
 * is the caller's to set (aggio__step_independent: the engine does not
 * depend on the data path). */
void aggio__op_init(struct aggio__op *op, aggio_file fh, int collective, int blocking);
/* Runs steps while they can run; 1 when the operation is complete. */
int aggio__op_progress(struct aggio__op *op);
/* Runs the operation to completion, blocking where it must. */
void aggio__op_wait(struct aggio__op *op);
/* 1 when what the pending step waits for has completed (the waits are
 * then cleared); aggio__op_block waits for it, in MPI where it must. */
int aggio__op_ready(struct aggio__op *op);
void aggio__op_block(struct aggio__op *op);
/* Waits for op's pending step while the process's other outstanding
 * operations progress (request.c): op's entry into a blocking call, and
 * every wait of a non-blocking operation. */
void aggio__requests_await(struct aggio__op *op);
/* Frees what the operation holds (not acc: io.c owns it). */
void aggio__op_free(struct aggio__op *op);

/* ---- for strategies ---------------------------------------------------------- */

/* Sets the next step and the phase its time counts to. */
static inline int aggio__then(struct aggio__op *op, aggio__step_fn next, int phase) {
  op->next = next;
  op->phase = phase;
  return AGGIO_STEP_NEXT;
}

/* Bytes of acc's stream before end of file `eof` (reads). */
int64_t aggio__access_before_eof(const struct aggio__access *acc, int64_t eof);

/* The first step of a collective operation: the summary reduction. */
int aggio__step_summarize(struct aggio__op *op);

/* After the summary: the strategy, then a flush of data other strategies
 * hold, then its state, then its steps. */
int aggio__step_choose(struct aggio__op *op);

/* Makes s's per-file state now, inside a blocking collective call that
 * every rank has entered (open, set_info): for state MPI makes only with
 * blocking collectives (an RMA window), so that non-blocking operations
 * find it made.  Returns 0, or the agreed error (then the state is not
 * made, and auto avoids s). */
int aggio__strategy_prepare(aggio_file fh, const struct aggio__strategy_ops *s,
                            struct aggio__err *e);

/* At open and when hints change (blocking calls every rank has entered):
 * prepares every strategy the file may run whose set-up blocks with these
 * hints (setup_blocks). */
void aggio__strategies_prepare(aggio_file fh);

/* The last step of a strategy's setup (struct aggio__strategy_ops): the
 * ranks agree on the outcome; the state is then ready on every rank, or
 * freed on every rank (fini) and the operation fails. */
int aggio__setup_done(struct aggio__op *op);

/* The last step of a strategy that agrees on the outcome: a reduction of
 * the error (and, for reads, of the end of file). */
int aggio__step_agree_outcome(struct aggio__op *op);

/* Agreement in the middle of an operation: posts the reduction of this
 * rank's error so far; once every rank's is known, the operation goes on
 * with `then` (in `phase`) if none failed, and completes with the agreed
 * error otherwise. */
int aggio__op_agree_then(struct aggio__op *op, aggio__step_fn then, int phase);

/* Ends the operation with an agreed failure (an encoded error every rank
 * computed alike, e.g. the worst of an allgather): every rank returns it,
 * with the failing rank's message (a posted broadcast). */
int aggio__op_fail_agreed(struct aggio__op *op, int64_t agreed);

/* A slot for one more MPI request of the pending step (grows op->req). */
MPI_Request *aggio__op_request(struct aggio__op *op);
/* Makes room for n requests of one step, so that a step that must post
 * all of them (a peer waits for each) cannot run out of slots: 0 or
 * AGGIO_ERR_NOMEM. */
int aggio__op_reserve_requests(struct aggio__op *op, int n);

/* The same with slots that outlive the operation (`cap` of them, kept by
 * the strategy between calls, at least as many as it reserves): the
 * operation uses them instead of its own, and never frees them, so that a
 * step's slots need no allocation.  Only between steps (no request posted). */
void aggio__op_lend_requests(struct aggio__op *op, MPI_Request *req, MPI_Status *stat,
                             int cap);

/* Collectives that block in a blocking operation and are posted otherwise;
 * either way op->next runs once they complete, and the time spent waiting
 * for them counts to `phase`.  They return the step code (AGGIO_STEP_NEXT
 * or AGGIO_STEP_PENDING) and record an MPI failure in op->err. */
int aggio__op_allreduce(struct aggio__op *op, const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Op mop, MPI_Comm comm, int phase);
int aggio__op_alltoall(struct aggio__op *op, const void *in, void *out, int count,
                       MPI_Datatype type, int phase);
int aggio__op_alltoallv(struct aggio__op *op, const void *in, const int *scount,
                        const int *sdisp, void *out, const int *rcount, const int *rdisp,
                        MPI_Datatype type, int phase);
/* On any communicator of the file (node_local gathers on fh->topo.node_comm). */
int aggio__op_gather(struct aggio__op *op, const void *in, void *out, int count,
                     MPI_Datatype type, int root, MPI_Comm comm, int phase);
int aggio__op_allgather(struct aggio__op *op, const void *in, void *out, int count,
                        MPI_Datatype type, MPI_Comm comm, int phase);
int aggio__op_allgatherv(struct aggio__op *op, const void *in, int count, void *out,
                         const int *rcount, const int *rdisp, MPI_Datatype type,
                         MPI_Comm comm, int phase);
int aggio__op_barrier(struct aggio__op *op, MPI_Comm comm, int phase);
int aggio__op_bcast(struct aggio__op *op, void *buf, int count, MPI_Datatype type, int root,
                    MPI_Comm comm, int phase);
/* Waits (pending) for the requests already posted with aggio__op_request. */
int aggio__op_await_requests(struct aggio__op *op, int phase);
/* Waits (pending) until test(op) holds; block(op) waits for it. */
int aggio__op_await(struct aggio__op *op, int (*test)(struct aggio__op *),
                    void (*block)(struct aggio__op *), int phase);

/* The reference data path (independent_io.c): every rank reads or writes
 * its own ranges; the independent strategy's step. */
int aggio__independent_io(struct aggio__op *op);
/* A collective call's I/O before its summary (one_round.c): the data path
 * run at once, by the calling thread, failures to op->err; then the
 * summary. */
int aggio__step_io_first(struct aggio__op *op);

/* ---- collective calls in one agreement (one_round.c) ------------------------- */

/* 1 when a collective operation's I/O is to run before its summary
 * (aggio__step_io_first as its first step): a blocking call whose shape
 * the file's history predicts to run independently. */
int aggio__one_round_guess(const struct aggio__op *op);

/* After the summary and the choice (flush: data other strategies hold
 * goes to the file first), what a rank whose I/O ran first does: */
enum aggio__one_round_next {
  AGGIO_ONE_ROUND_ON = 0, /* the call goes on as any (its I/O runs again, or
                           * this rank did none first) */
  AGGIO_ONE_ROUND_DONE,   /* complete: every rank's I/O ran first, and the
                           * summary agreed on its outcome */
  AGGIO_ONE_ROUND_AGREE   /* only the outcome agreement, which the ranks
                           * whose I/O did not run first join after it */
};
int aggio__one_round_after(struct aggio__op *op, int flush);
/* The first step of an independent access (independent_io.c): strategies
 * holding data make the touched bytes consistent, then the data path. */
int aggio__step_independent(struct aggio__op *op);

/* A deferred failure a strategy reports (write-behind's, held.code != 0)
 * becomes this rank's error unless it has one; the agreement that follows
 * then tells whether it was reported (aggio__deferred_agreed). */
void aggio__op_deferred(struct aggio__op *op, const struct aggio__err *held);
/* After an agreement: `mine`, the encoded deferred failure this rank gave
 * (0: none), was the one chosen: the strategies mark it reported. */
void aggio__deferred_agreed(aggio_file fh, int64_t mine, int64_t agreed);

/* Records a failure of the local side of a step; the steps keep running so
 * that no peer waits, and the outcome agreement spreads it. */
void aggio__op_note(struct aggio__op *op, int rc, const char *what);

/* Reads: a short read at file offset `end` means the file ends there. */
static inline void aggio__op_saw_eof(struct aggio__op *op, int64_t end) {
  if (end < op->eof)
    op->eof = end;
}

/* The file's pool (made at first use); NULL when threads cannot start. */
struct aggio__pool *aggio__file_pool(aggio_file fh);

/* Flushes every strategy's held data on this rank's node (local part of a
 * collective flush: the caller agrees). */
int aggio__flush_local(aggio_file fh, struct aggio__err *e);

/* Collective: the flush above followed by the agreement. */
int aggio__flush_all(aggio_file fh, struct aggio__err *e);

/* Collective: what the storage back end holds of every rank's writes
 * (staged bytes) in the file, agreed; nothing to do, and no agreement,
 * on a back end that holds none (the same on every rank). */
int aggio__flush_store(aggio_file fh, struct aggio__err *e);

/* What the strategies could not write of what they acknowledged and no
 * call has reported (write-behind's failed blocks), said on `out` by the
 * rank that speaks for its node: at MPI_Finalize and before MPI_Abort,
 * where no call is left to report it.  Returns this node's bytes. */
int64_t aggio__report_unwritten(aggio_file fh, FILE *out);

#endif
