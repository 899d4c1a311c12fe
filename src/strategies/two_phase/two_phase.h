/*
 * two_phase.h - what the two-phase strategy (strategy_two_phase.c) shares
 * with its exchange methods, the ways one round's bytes travel between the
 * ranks' data streams and the aggregators' buffers:
 *   exchange_two_sided.c  messages (MPI_Isend/Irecv of derived types), and
 *                         copies through a node's shared-memory window;
 *   exchange_rma.c        one-sided: MPI_Put/MPI_Get into each
 *                         aggregator's double buffer, exposed in an RMA
 *                         window (TAPIOCA's pipelined aggregation).
 * Before the rounds, tp_offsets.c tells each aggregator which ranges of
 * its domain each rank accesses (a sparse exchange: ranks x aggregators
 * messages).  The strategy plans (domains, offsets, each round's window and covered
 * runs) and does the file I/O; the exchange only moves bytes.  The hint
 * aggio_exchange picks the method per file (docs/strategies.md).
 */
#ifndef AGGIO_TWO_PHASE_H
#define AGGIO_TWO_PHASE_H

#include "cyclic.h"
#include "engine.h"
#include "shm.h"
#include "tp_keep.h"

/* ---- per-file state ------------------------------------------------------------------ */

/* Per aggregator, before its buffers: a header page (the end of valid data
 * of each buffer, for reads that reach end of file). */
struct tp_header {
  int64_t valid_end[2];
};

struct aggio__exchange_ops;

struct tp_file {
  const struct aggio__exchange_ops *x; /* the exchange method in use */
  char *own;            /* this aggregator's header + two buffers (aligned), or NULL */
  int64_t slot;         /* bytes of one buffer */
  int64_t align;        /* buffer alignment */
  /* the offset exchange's first step (tp_offsets.c), which needs no
   * per-call memory: */
  int64_t *outbox;      /* [naggr x TP_MSG]: my record for each aggregator */
  int node_rank, node_size; /* in fh->topo.node_comm */
  int64_t *gathered;    /* node's first rank: [node_size x naggr x TP_MSG] */
  MPI_Datatype column_type; /* node's first rank: one aggregator's records */
  int64_t *inbox;       /* aggregators: [nprocs x TP_MSG], node by node */
  int *slot_of;         /* aggregators: [nprocs] rank -> record slot */
  int *node_first;      /* aggregators: [nnodes + 1] first slot of each node */
  int *node_leader;     /* aggregators: [nnodes] first rank of each node */
  MPI_Request *plan_req; /* naggr on a node's first rank, + nnodes on aggregators */
  MPI_Status *plan_stat;
  int plan_nreq;
  MPI_Datatype piece_type; /* (off, len) of a struct piece */
  MPI_Datatype pair_type;  /* (off, len) of a struct aggio__extent: the same
                            * count of pairs on both sides of a message */
  /* two-sided exchange */
  struct aggio__shm shm; /* the node's aggregator buffers (shm.h), or base NULL */
  char **peer;          /* [naggr]: header of each same-node aggregator, or NULL */
  char *private_buf;    /* this aggregator's buffers without shared memory */
  /* one-sided exchange */
  MPI_Win rma_win;      /* every aggregator's buffers, or MPI_WIN_NULL */
  char *rma_base;       /* this rank's part of it (unaligned) */
  /* The strategy's steps its helpers go on with, set with the state
   * (strategy_two_phase.c): the exchanges, the offset exchange and the
   * per-call placement sit below the strategy and name none of its
   * functions. */
  aggio__step_fn exchange_ready; /* after an exchange method's set-up */
  aggio__step_fn round_moved;    /* after a round's exchange: round t->k's bytes
                                  * are in the aggregators' buffers (writes) or
                                  * the ranks' streams (reads) */
  aggio__step_fn rounds;         /* after the offset exchange: the rounds start */
  aggio__step_fn begin;          /* after a call's placement: the call's set-up
                                  * proper (domains, my pieces, the offsets) */
  /* set-up: the method asked for could not run on every rank (why) */
  int refused;
  char why[200];
  /* The calls' state kept between them (plan/tp_keep.h): made by the
   * file's first call and reset after each (collective operations of a
   * file run one at a time, core/request.c), and the largest bounds a
   * call reserved it to and agreed on: the same on every rank.  Not with
   * aggregators placed per call (tp_place.c). */
  struct tp *kept;
  struct aggio__tp_bound held;
};

/* Total bytes of an aggregator's header and buffers, before alignment. */
static inline int64_t tp_buffers_bytes(const struct tp_file *f) {
  return 2 * f->align + 2 * f->slot;
}

static inline char *tp_page_align(char *p, int64_t align) {
  uintptr_t u = (uintptr_t)p, a = (uintptr_t)align;
  return (char *)((u + a - 1) / a * a);
}

/* ---- per-operation state ---------------------------------------------------------- */

/* A rank's own range with its position in the data stream. */
struct piece {
  int64_t off, len, spos;
};

struct piece_list {
  struct piece *v;
  size_t n, cap, cursor;
};

struct tp;

/* One of an aggregator's two buffers, and the write it may have in flight. */
struct slot {
  char *buf;                  /* shared-memory, RMA window or private */
  struct tp_header *hdr;      /* its header (valid end for reads) */
  int64_t lo;                 /* window this buffer holds */
  struct aggio__extents runs; /* covered runs of the window */
  int rmw;                    /* write the span, old bytes read in first */
  struct aggio__batch batch;  /* its write in the pool */
  struct aggio__job job;
  struct tp *t;
};

struct tp {
  struct aggio__op *op;
  aggio_file fh;
  struct tp_file *f;
  int naggr, me;           /* me: my aggregator index, or -1 */
  int64_t *fd_lo, *fd_hi;  /* file domains, in the domain space of cyc */
  struct aggio__cyclic cyc; /* the domain space: the file's own offsets, or
                             * stripe-cyclic (cyclic.h) */
  int64_t cb, nrounds, k;  /* bytes per round, rounds, current round */
  int shm;                 /* same-node copies through shared memory */
  int pipeline;            /* writes on the pool's threads */
  struct piece_list *mine; /* [naggr]: my ranges in each domain */
  /* aggregators only (NULL elsewhere, so that memory grows with ranks x
   * aggregators, not ranks²): */
  struct aggio__extents *theirs;  /* [nprocs]: ranges of my domain per rank */
  size_t *their_cursor;           /* [nprocs] */
  struct aggio__extents *window;  /* [nprocs]: theirs clipped to this round */
  struct slot slot[2];
  MPI_Datatype *types;     /* 2 naggr (+ nprocs on aggregators): derived
                            * types of one round */
  int ntypes;
  int *blens;              /* scratch for derived types */
  MPI_Aint *disps;
  MPI_Aint *tdisps;        /* (RMA) the same blocks' places in the target window */
  size_t scratch_cap;
  int64_t *note;           /* [4 naggr (+ 2 nprocs on aggregators)]: the RMA
                            * exchange's notices */
  int setup_failed;
  /* kept between calls (tp_file.kept): */
  MPI_Request *req;        /* the rounds' request slots, lent to each call */
  MPI_Status *stat;
  int req_cap;
  /* this call: */
  int64_t unit;            /* stripe of cyclic domains, or 0 (call_unit) */
  int groups;
  int keep;                /* its lists are reserved to `bound` (tp_keep.h) */
  int fast;                /* `bound` fits what every rank holds: no set-up
                            * agreement */
  struct aggio__tp_bound bound;
};

/* Where file offset `off` of a window starting at `lo` lives in a buffer:
 * shifted so that aligned offsets land on aligned memory (direct I/O). */
static inline char *tp_buf_at(const struct tp *t, char *buf, int64_t lo, int64_t off) {
  return buf + (lo % t->f->align) + (off - lo);
}

/* ---- per-call placement (tp_place.c) ------------------------------------------------ */

/* The first step of a call whose file places its aggregators per call:
 * shares the volumes, places, remakes the per-file state when the
 * aggregators change, then f->begin. */
int aggio__tp_place_call(struct aggio__op *op);

/* ---- the set-up (tp_offsets.c) ------------------------------------------------------ */

/* The first message to each aggregator: a count and up to TP_INLINE
 * (offset, length) pieces. */
#define TP_INLINE 4
#define TP_MSG (1 + 2 * TP_INLINE)

/* Per file, at the strategy's init: the first step's memory. */
int aggio__tp_offsets_open(aggio_file fh, struct tp_file *f);
void aggio__tp_offsets_close(struct tp_file *f);

/* The step after planning (t->mine filled, or op->sdata NULL / op->err set
 * after a local failure): tells the aggregators the pieces, reserves what
 * the rounds need (aggio__tp_reserve_rounds), agrees, then goes on with
 * f->rounds. */
int aggio__tp_offsets(struct aggio__op *op);

/* The rounds' memory, before the agreement that precedes them: `total`
 * pieces in my domain and `most` in one list, from `active` ranks (with
 * t->keep, the call's bounds and every rank instead, in slots kept). */
int aggio__tp_reserve_rounds(struct tp *t, size_t total, size_t most, int active);

/* One MPI_Isend (is_send) or MPI_Irecv on the file's communicator, in a
 * request slot of the step (0, AGGIO_ERR_NOMEM or AGGIO_ERR_MPI). */
int aggio__tp_post(struct tp *t, void *buf, int count, MPI_Datatype type, int peer, int tag,
                   int is_send);

/* Makes the scratch arrays (blens, disps, tdisps) hold n entries. */
int aggio__tp_scratch(struct tp *t, size_t n);

/* My pieces for aggregator i in round t->k, clipped to its window [lo, hi):
 * calls fn(t, ctx, a, b, spos) for each part [a, b) at stream position spos,
 * in order; returns the bytes visited (or fn's first non-zero result, as a
 * negative code, when fn fails). */
typedef int (*aggio__tp_part_fn)(struct tp *t, void *ctx, int64_t a, int64_t b, int64_t spos);
int64_t aggio__tp_my_parts(struct tp *t, int i, int64_t *lo, int64_t *hi,
                           aggio__tp_part_fn fn, void *ctx);


/* ---- exchange methods ---------------------------------------------------------------- */

struct aggio__exchange_ops {
  const char *name; /* as aggio_exchange names it, and aggio_exchange_selected reports */
  /* Per-file set-up at the strategy's first operation: the first of its
   * steps, run on every rank (the strategy's state exists on every rank by
   * then), the last going on with f->exchange_ready.  Sets f->own
   * on aggregators when the method provides their buffers.  When the
   * method cannot run on every rank it sets f->refused and f->why (the
   * same on every rank), and the strategy sets up two_sided instead.  A
   * method that needs MPI's blocking collectives (RMA windows) runs only in
   * a blocking operation (op->blocking). */
  aggio__step_fn setup;
  /* Frees it: collectively where the set-up was blocking (RMA) */
  void (*close)(aggio_file fh, struct tp_file *f);
  /* The first step of round t->k's exchange, once the aggregators have
   * planned their windows (t->window, the slot's lo and runs) and filled
   * their buffers for reads; its last step goes on with f->round_moved. */
  aggio__step_fn round;
  /* 1 when its state is made and freed with MPI's blocking collectives
   * (an RMA window): only in blocking calls */
  int blocking_setup;
};
/* The file's two-phase state (during its set-up too). */
static inline struct tp_file *aggio__tp_file(aggio_file fh) {
  return (struct tp_file *)fh->strategy_state[AGGIO_STRAT_TWO_PHASE];
}

extern const struct aggio__exchange_ops aggio__exchange_two_sided;
extern const struct aggio__exchange_ops aggio__exchange_rma;

#endif
