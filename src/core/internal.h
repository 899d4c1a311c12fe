/*
 * internal.h - what the library's files share: the file handle, the access
 * description handed to strategies, the strategy function table and error
 * helpers.  The engine that runs operations is engine.h; the storage edge
 * (the only code that touches the file) is storage.h.
 *
 * Communicators made per file (file.c, nodes.c):
 *   fh->comm      dup of the user's communicator; all of this file's
 *                 collective traffic runs on it so it never mixes with the
 *                 application's messages.
 *   fh->topo.node_comm the ranks of this rank's node (the emulated node when
 *                 aggio_emulate_nodes is set): ranks that share memory.
 *                 Strategies that use shared memory allocate their windows
 *                 on it, so that emulated nodes exercise the paths that mix
 *                 shared-memory copies with messages as real nodes do.
 */
#ifndef AGGIO_INTERNAL_H
#define AGGIO_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "aggio.h"
#include "errors.h"
#include "dio_choice.h"
#include "extent.h"
#include "flat.h"
#include "hints.h"
#include "nodes.h"
#include "one_round.h"
#include "observe.h"
#include "open_files.h"
#include "plan.h"
#include "report.h"
#include "request.h"
#include "shared_fp.h"
#include "stats.h"
#include "storage.h"
#include "trace.h"

/* Makes the call's outcome collective: a reduction of the encoded error
 * (below), so every rank learns the lowest failing code and the lowest
 * rank that had it, then that rank's message: every rank returns the same
 * code and text.
 * Posted, and waited for while the process's non-blocking operations
 * progress (aggio__wait_progress): it may be a blocking call's first
 * collective.  Returns the agreed code. */
int aggio__agree(MPI_Comm comm, struct aggio__err *e);
/* The same, returning the agreed encoding (to tell whether this rank's
 * own failure was the one chosen). */
int64_t aggio__agree_encoded(MPI_Comm comm, struct aggio__err *e);
/* The same, with n (at most AGGIO_AGREE_VALUES) more values reduced by
 * MPI_MIN in the same round (values: this rank's in, the minimum out):
 * whatever else a call must agree on costs no second collective.  A
 * maximum is the minimum of the complements (~x).  Returns the agreed
 * encoding. */
#define AGGIO_AGREE_VALUES 7
int64_t aggio__agree_values(MPI_Comm comm, struct aggio__err *e, int64_t *values, int n);

/* MPI_Allreduce, posted and waited for with aggio__wait_progress: the
 * first collective of a blocking call (its entry).  Returns MPI's code. */
int aggio__allreduce_progress(const void *in, void *out, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm);
/* Waits for a posted collective while this process's outstanding
 * non-blocking operations progress (request.c): a peer may need their
 * steps before it can reach the collective.  Returns MPI's code. */
int aggio__wait_progress(MPI_Request *r);
/* Schedule perturbation for the test suite (AGGIO_TEST_PERTURB,
 * request.c): a random short delay before an engine step. */
void aggio__perturb(aggio_file fh);
/* AGGIO_TEST_TIMING=factor (perturb.c): the test suite widens the windows
 * that non-blocking starts are judged by (the merge grace, the run-ahead of
 * a starting call) on a busy machine, so that tests of what happens inside
 * a window do not depend on the scheduler.  1 when unset. */
double aggio__test_timing(void);

/* ---- the file view -------------------------------------------------------- */

/* The view's data representation (MPI 3.1, 13.5).  "internal" is
 * aggio's choice, and it chose the native one.  external32 keeps the
 * native layout (its types must have their native sizes, checked at
 * set_view and at every call) and converts each element's bytes: the
 * stream is packed and unpacked with MPI_Pack_external. */
enum aggio__datarep { AGGIO_DATAREP_NATIVE, AGGIO_DATAREP_INTERNAL, AGGIO_DATAREP_EXTERNAL32 };

struct aggio__view {
  int datarep;           /* enum aggio__datarep */
  MPI_Offset disp;
  MPI_Datatype etype;    /* duplicated, or a named type */
  MPI_Datatype filetype; /* duplicated, or a named type */
  int64_t etype_size;
  struct aggio__flat *ft; /* flattened filetype */
};

/* ---- node-shared memory (shm.h) -------------------------------------------- */

#define AGGIO_SHM_NAME 64

struct aggio__op;

struct aggio__shm {
  char *base;          /* this rank's mapping (page-aligned), or NULL */
  size_t len;
  /* while it is being made (shm.c) */
  MPI_Comm comm;
  int me;              /* rank in comm */
  char name[AGGIO_SHM_NAME];
  int ok;              /* the agreement's operand: this rank mapped it */
  int (*then)(struct aggio__op *op);
  int phase;
  /* set by the caller, or NULL: run by the creating rank on the new
   * memory before any other rank can map it; 0 or -1 (failed) */
  int (*init)(char *base, void *arg);
  void *init_arg;
};

/* ---- the file handle ------------------------------------------------------ */

struct aggio__strategy_ops;
struct aggio__pool;
struct aggio__writeback;

struct aggio_file_s {
  MPI_Comm comm;
  int rank, nprocs;
  char *path;
  int amode;
  int atomic;             /* MPI atomic mode (aggio_file_set_atomicity) */
  long group_lock;        /* Lustre group-lock id this rank holds (lustre_lock.h), 0 none */
  int wrote_alone;        /* an independent write since the last collective call */
  int read_alone;         /* an independent read since the open (auto's read rule) */
  struct aggio__store st;  /* the storage back end and what it learnt at
                            * open: opened, direct I/O, block (storage.h) */
  struct aggio__faults *faults; /* AGGIO_FAULTS for tests, or NULL */
  char fstype[32];        /* "ext4", "tmpfs", "lustre", ... */
  struct aggio__hints hints;
  uint64_t hints_hash;    /* aggio__hints_match_hash(&hints), when hints_hashed */
  int hints_hashed;       /* 0 after hints change (file.c sets it again) */
  struct aggio__view view;
  MPI_Offset fp_ind;      /* individual file pointer, in etypes */
  struct aggio__sfp_state sfp; /* the shared file pointer (shared_fp.h) */

  struct aggio__topo_state topo; /* nodes and aggregators, agreed at open (nodes.h) */
  char exchange_used[16];   /* two-phase exchange in use (aggio_exchange_selected), or "" */
  char exchange_why[200];   /* why not the one aggio_exchange asked for, or "" */

  /* strategies: the table of every strategy by id (the registry's, set at
   * open: aggio__strategy_at), the configured one, and the per-file state
   * of each that has run (made collectively at its first operation, see
   * engine.c) */
  const struct aggio__strategy_ops *const *strategies;
  const struct aggio__strategy_ops *strategy;
  void *strategy_state[AGGIO_NSTRATEGIES];
  unsigned strategy_ready; /* bit i: strategy i's state is whole (aggio__ready) */
  unsigned strategy_refused; /* bit i: strategy i's set-up failed (auto avoids it) */
  const char *strategy_used;   /* strategy of the last collective call ("" none) */
  int auto_previous;           /* auto's last choice, enum aggio__auto_choice or -1 */
  struct aggio__one_round one_round; /* the collective calls' history: whether the
                                * next may do its I/O before its summary (one_round.c) */
  struct aggio__pool *pool;    /* the process's I/O threads (pool.c), once used */
  struct aggio__writeback *early_wb; /* early write-back (writeback.c), once used */
  int64_t early_wb_min;        /* its smallest write, -1 off (aggio_early_writeback) */
  struct aggio__dio_choice dio_choice; /* page cache or direct for independent
                                * writes of 1-4 MiB, measured (dio_choice.h) */
  pthread_mutex_t dio_lock;    /* dio_choice: non-blocking writes run on I/O threads */
  MPI_Datatype summary_type;   /* struct aggio__call_summary, and its reduction */
  MPI_Op summary_op;

  struct aggio__nb_state nb;    /* non-blocking operations (request.h) */

  struct aggio__open_entry open; /* the process's open files (open_files.h) */
  int64_t coll_end;            /* end of the collective writes since the last
                                * collective flush (agreed: get_size) */

  struct aggio__obs_state obs; /* statistics, timers and trace (observe.h) */
  pthread_mutex_t info_lock;   /* the texts get_info reads while other threads
                                * write them: hints' "ignored" reasons (an I/O
                                * thread finds direct I/O refused), the
                                * exchange chosen (a progress pass sets two-phase
                                * up) */
};

/* Strategy i's per-file state is whole.  Any thread may ask (get_size,
 * the independent path, a twin's access) while a progress pass sets the
 * state up: the bit is set once the state is whole (release), and read
 * with acquire. */
static inline int aggio__ready(aggio_file fh, int i) {
  return (int)((__atomic_load_n(&fh->strategy_ready, __ATOMIC_ACQUIRE) >> i) & 1u);
}
static inline void aggio__set_ready(aggio_file fh, int i, int on) {
  if (on)
    __atomic_or_fetch(&fh->strategy_ready, 1u << i, __ATOMIC_RELEASE);
  else
    __atomic_and_fetch(&fh->strategy_ready, ~(1u << i), __ATOMIC_RELEASE);
}

/* A trace record taken under the file's trace lock (any thread). */
void aggio__trace_record_locked(aggio_file fh, int op, int64_t offset, int64_t length,
                                int64_t type_size, double t0, double t1, int flags);

/* ---- one rank's side of a data access ------------------------------------ */

/* A data access reduced to what the strategies need: the file byte ranges
 * (sorted: MPI-IO requires monotonic file views) and the matching contiguous
 * data stream of the same total length. */
struct aggio__access {
  int is_write;
  struct aggio__extents file; /* file ranges in stream order */
  char *stream;               /* user buffer, or a packed copy */
  int64_t nbytes;             /* total bytes requested */
};

/* ---- aggregation strategies ----------------------------------------------- */

struct aggio__op;

/* One strategy per file, each exporting one of these (read
 * strategy_independent.c first: it is the reference).  A NULL slot means
 * the strategy has nothing to do there.  Operations run through the engine
 * (engine.h): `start` receives a collective operation whose arguments every
 * rank has agreed on and sets its first step; steps never block unless the
 * operation is blocking, and never leave a peer waiting after a local
 * failure. */
struct aggio__strategy_ops {
  const char *name;
  int id;  /* AGGIO_STRAT_* (strategies.def): index into fh->strategy_state */
  /* Per-file state, made by the strategy's first operation on the file:
   * `setup` is the first of the steps that make it (they sit in
   * fh->strategy_state[id] from the first step on), the last one calls
   * aggio__setup_done.  Like every step, they post collectives and never
   * block on a peer in a non-blocking operation (docs/engine.md,
   * "Liveness"); a collective MPI has only in blocking form may run only
   * when op->blocking (the operation has entered a blocking call on every
   * rank).  fini frees it: at close and when hints change (every rank,
   * collectively), and after a failed set-up (every rank, by the
   * agreement); it must not block on peers in a non-blocking operation. */
  int (*setup)(struct aggio__op *op);
  void (*fini)(aggio_file fh, void *state);
  /* 1 when, with the file's hints, setup needs MPI's blocking collectives
   * (an RMA window): the state is then made at open and when hints change
   * (aggio__strategies_prepare), so that a non-blocking first operation
   * finds it made */
  int (*setup_blocks)(aggio_file fh);
  /* Only for auto: the strategy that runs this operation (pure: the same
   * on every rank, from the agreed summary). */
  const struct aggio__strategy_ops *(*choose)(aggio_file fh, const struct aggio__op *op,
                                              char *why, size_t whylen);
  /* Begins an agreed collective operation: sets op's first step. */
  int (*start)(struct aggio__op *op);
  /* Strategies that keep data between calls (write-behind): */
  /* what it holds, into this rank's summary (flags AGGIO_SF_*, the range
   * of written data held), and a deferred failure not reported yet into
   * e (NULL: this rank has an error of its own already, the failure waits
   * for a later call); called at the start of every collective operation */
  void (*contribute)(aggio_file fh, void *state, struct aggio__call_summary *mine,
                     struct aggio__err *e);
  /* the agreement chose the deferred failure contribute (or flush) gave
   * as this rank's error: it has been reported (until then it stays,
   * for the next call to report) */
  void (*reported)(aggio_file fh, void *state);
  /* writes out what it holds and forgets what it read; local part of a
   * collective flush (sync, close, set_size, atomic mode, a strategy
   * switch); a deferred failure not reported yet goes to e when e holds
   * no error (the caller's agreement then tells `reported`) */
  int (*flush)(aggio_file fh, void *state, struct aggio__err *e);
  /* before an independent access of this rank: make the bytes it touches
   * consistent (MPI's same-process rule) */
  int (*before_independent)(aggio_file fh, void *state, const struct aggio__access *acc,
                            struct aggio__err *e);
  /* a small independent blocking access of this rank that the strategy
   * holds: a write taken into the data it holds, as its own collective
   * writes (a failure to write it out later is a deferred failure,
   * reported as the strategy's own), or a read copied from that data when
   * it holds all of it.  1 when it did; 0: the access goes to the file
   * (before_independent is called then) */
  int (*hold_independent)(aggio_file fh, void *state, const struct aggio__access *acc);
  /* end of the data this rank's node holds for the file (get_size), or 0 */
  int64_t (*held_end)(aggio_file fh, void *state);
  /* bytes acknowledged to the program that this rank's node could not
   * write and no call has reported yet, with the first failure's text;
   * *speaker 1 on the one rank of the node that says so (at finalize) */
  int64_t (*unwritten)(aggio_file fh, void *state, char *msg, size_t len, int *speaker);
};

/* The strategy of id i (AGGIO_STRAT_*, strategy_ids.h) of the file's
 * table, or NULL when i is out of range.  The table is the registry's
 * (strategies/registry.c, above the core), handed to the file at open: the
 * core names no strategy and calls none by symbol (docs/architecture.md). */
static inline const struct aggio__strategy_ops *aggio__strategy_at(aggio_file fh, int i) {
  return i >= 0 && i < AGGIO_NSTRATEGIES ? fh->strategies[i] : NULL;
}

/* ---- topology (nodes.h) ---------------------------------------------------- */

/* Sets topo.my_aggr_index from topo.aggr (after the aggregators are chosen
 * or moved: node discovery and placement both do). */
static inline void aggio__find_my_aggr(aggio_file fh) {
  fh->topo.my_aggr_index = -1;
  for (int i = 0; i < fh->topo.naggr; i++)
    if (fh->topo.aggr[i] == fh->rank)
      fh->topo.my_aggr_index = i;
}

/* ---- helpers shared by the data-access entry points ------------------------ */

/* Current file size as this rank must see it: the file's, or further when
 * this node still holds written data (write-behind). */
int aggio__file_size(aggio_file fh, MPI_Offset *size, struct aggio__err *e);

/* Byte displacement in the file of a view offset (in etypes): the heart of
 * aggio_file_get_byte_offset (io.c). */
int aggio__view_byte_offset(aggio_file fh, MPI_Offset offset, MPI_Offset *disp,
                            struct aggio__err *e);

/* malloc/calloc that AGGIO_FAULTS can make fail (alloc), for the small
 * allocations whose failure paths must be tested. */
void *aggio__malloc(aggio_file fh, size_t n);
void *aggio__calloc(aggio_file fh, size_t n, size_t size);

/* The storage layer's calls on this file (storage.h). */
static inline int aggio__pwrite(aggio_file fh, const void *buf, int64_t len, int64_t off,
                                int flags, struct aggio__err *e) {
  return aggio__store_pwrite(&fh->st, buf, len, off, flags, e);
}
static inline int aggio__pread(aggio_file fh, void *buf, int64_t len, int64_t off,
                               int64_t *got, int flags, struct aggio__err *e) {
  return aggio__store_pread(&fh->st, buf, len, off, got, flags, e);
}
static inline int aggio__fsync(aggio_file fh, struct aggio__err *e) {
  return aggio__store_sync(&fh->st, e);
}

#endif
