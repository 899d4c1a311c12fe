/*
 * internal.h - what the library's files share: the file handle, the access
 * description handed to strategies, the strategy function table, the POSIX
 * layer and error helpers.
 *
 * Communicators made per file (see file.c):
 *   fh->comm      dup of the user's communicator; all of this file's
 *                 collective traffic runs on it so it never mixes with the
 *                 application's messages.
 *   fh->node_comm the ranks of this rank's (possibly emulated) node, used to
 *                 find hosts and node leaders; MPI_COMM_NULL after open.
 */
#ifndef AGGIO_INTERNAL_H
#define AGGIO_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "aggio.h"
#include "extent.h"
#include "flat.h"
#include "hints.h"
#include "plan.h"
#include "stats.h"
#include "trace.h"

#define AGGIO_ERRMSG_LEN 512

/* Per-call error state: the code and this rank's message. */
struct aggio__err {
  int code;
  char msg[AGGIO_ERRMSG_LEN];
};

/* Records an error (first one wins) and returns its code. */
int aggio__fail(struct aggio__err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* errno -> AGGIO_ERR_* */
int aggio__errno_code(int err);

/* Makes the call's outcome collective: MPI_Allreduce(MINLOC) of the code, so
 * every rank learns the lowest failing code and the lowest rank that had it.
 * A rank that did not fail gets "rank R failed: <code text>" as its message.
 * Returns the agreed code. */
int aggio__agree(MPI_Comm comm, struct aggio__err *e);

/* Stores e->msg as the thread's aggio_error_message() and returns e->code. */
int aggio__finish(const struct aggio__err *e);

/* ---- the file view -------------------------------------------------------- */

struct aggio__view {
  MPI_Offset disp;
  MPI_Datatype etype;    /* duplicated, or a named type */
  MPI_Datatype filetype; /* duplicated, or a named type */
  int64_t etype_size;
  struct aggio__flat *ft; /* flattened filetype */
};

/* ---- direct I/O ---------------------------------------------------------- */

enum aggio__dio_state {
  AGGIO_DIO_OFF = 0,     /* disabled by hint, read-only file, or refused */
  AGGIO_DIO_ON = 1
};

/* ---- the file handle ------------------------------------------------------ */

struct aggio__strategy_ops;

struct aggio_file_s {
  MPI_Comm comm;
  int rank, nprocs;
  char *path;
  int amode;
  int fd;                 /* buffered descriptor; -1 when this rank did not open */
  int fd_direct;          /* O_DIRECT descriptor for writes, or -1 */
  int dio;                /* enum aggio__dio_state */
  int64_t dio_align;      /* offset/length/memory alignment for O_DIRECT */
  int64_t block;          /* file-system block size (st_blksize), agreed */
  void *bounce;           /* aligned bounce buffer for O_DIRECT, lazily made */
  int64_t bounce_len;
  char fstype[32];        /* "ext4", "tmpfs", "lustre", ... */
  struct aggio__hints hints;
  struct aggio__view view;
  MPI_Offset fp_ind;      /* individual file pointer, in etypes */

  /* topology, agreed at open */
  int nnodes;
  int *node_of_rank;      /* nprocs entries */
  char **node_names;      /* nnodes entries */
  int *aggr;              /* aggregator ranks, sorted */
  int naggr;
  int my_aggr_index;      /* index into aggr, or -1 */
  struct aggio__summary *summary; /* nprocs entries, reused by every call */

  /* same-node shared memory (shm.c) */
  MPI_Comm shm_comm;      /* the ranks of this rank's real node */
  int *leader_of_rank;    /* real node of each rank, as its first rank */
  MPI_Win shm_win;        /* aggregator buffers, or MPI_WIN_NULL */
  int64_t shm_slot;       /* bytes of one aggregator buffer */
  int single_node;        /* every rank on one real node */
  char **shm_aggr;        /* [naggr]: first buffer of each same-node aggregator, or NULL */

  const struct aggio__strategy_ops *strategy;
  const char *strategy_used;   /* strategy of the last collective call ("" none) */
  int auto_previous;           /* auto's last choice: -1 none, 0 independent, 1 two-phase */
  struct aggio__stats *stats;  /* NULL unless stats or timers are on */
  struct aggio__trace *trace;  /* NULL unless tracing is on */
  pthread_mutex_t trace_lock;  /* I/O threads record POSIX calls too */
  double open_time;            /* seconds taken by open, for the timers */
  double posix_open_t0, posix_open_t1; /* the open(2), traced once the trace starts */
};

/* ---- one rank's side of a data access ------------------------------------ */

/* A data access reduced to what the strategies need: the file byte ranges
 * (sorted: MPI-IO requires monotonic file views) and the matching contiguous
 * data stream of the same total length. */
struct aggio__access {
  int is_write;
  struct aggio__extents file; /* file ranges in stream order */
  char *stream;               /* user buffer, or a packed copy */
  int64_t nbytes;             /* total bytes requested */
  int64_t done;               /* bytes transferred (short at EOF on reads) */
  int prep_error;             /* this rank's arguments were bad (collective
                               * calls: the strategy makes all ranks skip) */
};

/* ---- aggregation strategies ----------------------------------------------- */

/* One strategy per file, each exporting one of these.  The functions run
 * collectively over fh->comm; they return this rank's code and must complete
 * every exchange that peers expect even after a local failure (the caller
 * then agrees on the outcome), so that no rank hangs. */
struct aggio__strategy_ops {
  const char *name;
  int (*write_all)(aggio_file fh, struct aggio__access *acc, struct aggio__err *e);
  int (*read_all)(aggio_file fh, struct aggio__access *acc, struct aggio__err *e);
};

extern const struct aggio__strategy_ops aggio__strategy_independent;
extern const struct aggio__strategy_ops aggio__strategy_two_phase;
extern const struct aggio__strategy_ops aggio__strategy_auto;

/* Allgathers every rank's summary into all[nprocs]. */
int aggio__gather_summary(aggio_file fh, const struct aggio__access *acc,
                          struct aggio__summary *all, struct aggio__err *e);

/* Two-phase collective buffering with the summaries already gathered (auto
 * gathers them to decide, and passes them on). */
int aggio__two_phase_run(aggio_file fh, struct aggio__access *acc,
                         const struct aggio__summary *all, struct aggio__err *e);

/* The independent strategy's data path once the ranks have agreed that
 * every rank's arguments are good (auto gathers that itself). */
int aggio__independent_agreed(aggio_file fh, struct aggio__access *acc,
                              struct aggio__err *e);

/* Looks a strategy up by name; NULL if unknown. */
const struct aggio__strategy_ops *aggio__strategy_find(const char *name);

/* ---- the POSIX layer (posix.c) -------------------------------------------- */

/* Flags for the POSIX helpers. */
#define AGGIO_IO_AGGREGATOR 1 /* called while acting as aggregator (trace) */

/* Writes len bytes of buf at off, looping over short writes and EINTR.  Uses
 * O_DIRECT for the aligned middle when fh->dio is on and the piece is large
 * enough; unaligned head and tail go through the buffered descriptor.  buf
 * need not be aligned: when (buf - off) is not aligned, the middle goes
 * through an aligned bounce buffer. */
int aggio__pwrite(aggio_file fh, const void *buf, int64_t len, int64_t off,
                  int flags, struct aggio__err *e);
/* Reads up to len bytes at off; *got is the count before end of file. */
int aggio__pread(aggio_file fh, void *buf, int64_t len, int64_t off,
                 int64_t *got, int flags, struct aggio__err *e);
int aggio__fsync(aggio_file fh, struct aggio__err *e);
/* Aligned allocation for aggregator buffers (free with free()). */
void *aggio__alloc_aligned(int64_t len, int64_t align);

/* ---- topology (nodes.c) ---------------------------------------------------- */

/* Collective at open: finds nodes (MPI_COMM_TYPE_SHARED groups, split into
 * emulated nodes by the aggio_emulate_nodes hint), names them, and chooses
 * the aggregators from cb_config_list / cb_nodes.  Fills nnodes,
 * node_of_rank, node_names, aggr, naggr, my_aggr_index. */
int aggio__topology(aggio_file fh, struct aggio__err *e);
void aggio__topology_free(aggio_file fh);

/* ---- same-node shared memory (shm.c) -------------------------------------- */

/* Collective over fh->comm (each node allocates on its own): makes two
 * buffers of `slot` bytes (page-aligned) per aggregator in a shared window
 * of its node, unless there already are, and maps every same-node
 * aggregator's buffers.  Returns 1 when shared memory is in use, 0 when not
 * (disabled by hint or refused by MPI: then messages carry everything). */
int aggio__shm_ensure(aggio_file fh, int64_t slot);
/* Buffer s (0 or 1) of aggregator i, or NULL when i is on another node or
 * shared memory is off. */
char *aggio__shm_buffer(aggio_file fh, int i, int s);
/* Pieces one sender can post to one aggregator's mailbox per call. */
#define AGGIO_MAILBOX_CAP 4096
/* Mailbox of aggregator i for `sender`: [0] = count, then (offset, length)
 * pairs; NULL when shared memory is off or i is on another node. */
int64_t *aggio__shm_mailbox(aggio_file fh, int i, int sender);
/* A barrier of this rank's node with the memory synchronisation the MPI
 * shared-memory model asks for around it. */
void aggio__shm_barrier(aggio_file fh);
void aggio__shm_free(aggio_file fh);

/* ---- helpers shared by the data-access entry points ------------------------ */

/* The reference data path: one pread/pwrite per file range of acc, no
 * communication (io.c).  Reads zero-fill past end of file. */
int aggio__independent_rw(aggio_file fh, struct aggio__access *acc,
                          struct aggio__err *e);

/* Current file size (fstat) or a negative code. */
int aggio__file_size(aggio_file fh, MPI_Offset *size, struct aggio__err *e);

/* Portable ceil/floor for alignment. */
static inline int64_t aggio__round_down(int64_t x, int64_t a) {
  return a > 0 ? x - (((x % a) + a) % a) : x;
}
static inline int64_t aggio__round_up(int64_t x, int64_t a) {
  return a > 0 ? aggio__round_down(x + a - 1, a) : x;
}

#endif
