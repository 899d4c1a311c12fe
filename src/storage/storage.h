/*
 * storage.h - the storage layer: the only place where aggio touches a file.
 *
 * Strategies and the engine never see a file descriptor: they call the
 * back end of the file (fh->st.ops) through this table, the way ROMIO's
 * ADIO drivers sit under its collective algorithms (ad_fstype.c picks one
 * from a table).  Hint aggio_storage picks the back end at open:
 *   posix  storage_posix.c, the file system (the default);
 *   null   storage_null.c, discards writes and reads zeros, to measure the
 *          aggregation alone (TAPIOCA's /dev/null runs) and in SimGrid,
 *          which simulates no file I/O;
 *   subfile storage_subfile.c, one logical file as M subfiles beside a
 *          layout file (docs/subfiling.md), chosen by the core when
 *          aggio_subfiles asks for it or the file is such a layout; each
 *          subfile is a store of posix, or of null with aggio_storage=null.
 *   stage  storage_stage.c, writes staged in a node-local directory and
 *          moved to the final file (a posix store) by movers behind the
 *          program (docs/staging.md), chosen by the core when
 *          aggio_stage_dir names a directory.
 *
 * Every call may run on any thread (the calling thread or an I/O thread of
 * the file's pool or cache), so back ends keep no unlocked shared scratch.
 *
 * The layer sits below the core: it uses the base (errors, faults), the
 * observability layer (it records every transfer) and the planning (hint
 * values, Lustre locks), and sees of the file only its storage part,
 * struct aggio__store.
 */
#ifndef AGGIO_STORAGE_H
#define AGGIO_STORAGE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "errors.h"
#include "fault.h"
#include "observe.h"

/* Flags for writes and reads. */
#define AGGIO_IO_AGGREGATOR AGGIO_OBS_AGGREGATOR /* made as an aggregator (trace) */
#define AGGIO_IO_BEHIND AGGIO_OBS_BEHIND /* by an I/O thread after the call returned */
#define AGGIO_IO_DIRECT_OK 4  /* the caller wants the device: use O_DIRECT when
                               * the piece is large and aligned enough */
#define AGGIO_IO_DIRECT_EAGER 8 /* with DIRECT_OK: the writer does not wait for
                                 * the device (write-behind), so smaller aligned
                                 * middles go direct too */

enum aggio__dio_state {
  AGGIO_DIO_OFF = 0, /* disabled by hint, or refused */
  AGGIO_DIO_ON = 1
};

/* The file as the storage layer sees it: the handle's storage part
 * (fh->st).  A back end sees this, never the handle. */
struct aggio__store {
  const struct aggio__storage_ops *ops; /* the back end (storage_registry.c) */
  void *state;               /* the back end's own */
  /* set by the core when the handle is made, then fixed */
  const char *path;
  int rank;                  /* for messages */
  int amode;                 /* MPI_MODE_* */
  int direct_wanted;         /* the direct_io hint is not "disable" */
  const char *io_node;       /* this rank's I/O node, or "" (the topology's;
                              * filled after the storage opens) */
  int subfiles;              /* the subfile back end: M for a new layout; */
  int64_t subfile_stripe;    /* and its stripe, bytes; after open, the file's
                              * own (0 when not subfiled) */
  /* and the back end of each subfile: posix, or null (aggio_storage=null,
   * e.g. SimGrid: the layout lives in memory and nothing reaches a disk);
   * NULL when the file is not subfiled */
  const struct aggio__storage_ops *subfile_ops;
  /* Staging (storage_stage.c, docs/staging.md): the stage back end keeps
   * the final file in a store of final_ops (posix); NULL when the file is
   * not staged.  Set by the core at open (core/staging.c), then fixed. */
  const struct aggio__storage_ops *final_ops;
  struct aggio__stage_conf {
    char dir[256];      /* aggio_stage_dir */
    /* the SimGrid build's model of a stage under the null back end
     * (stage_sim.h): the file is not staged (final_ops NULL), the null
     * store models the node-local device and the movers */
    int simulated;
    int drain;          /* enum aggio__stage_drain */
    int movers;         /* this process's movers */
    int sync_final;     /* sync waits until the bytes are in the final file */
    int data_crc;       /* aggio_stage_checksum: records carry their data's CRC
                         * (1), or their own only (0); -1 auto: 0 on a memory
                         * file system, whose stage a node's crash loses whole */
    char session[17];   /* the open's time (rank 0's), the same on every rank */
    /* aggio_stage_merge=node with two or more of the file's ranks on this
     * node: the movers of the node's first rank move every rank's records
     * (stage_node.h), the others have none */
    int merge;
    int nnode;          /* with merge: this node's ranks, ... */
    int *node_ranks;    /* ... lowest first (the first moves), owned by the core */
    int64_t *node_counts; /* the core's scratch: their records, at each drain */
  } stage;
  /* Atomic mode: the back end holds nothing between calls (set by the
   * core after a flush; a staging back end writes through). */
  int write_through;
  /* Collective data calls of the file begun so far (the same count on
   * every rank): a staged record's age (plan/stage_format.h).  Counted by
   * the core, read by the stage back end's writes (atomically). */
  int64_t coll_calls;
  struct aggio__obs_state *obs; /* the file's statistics and trace */
  struct aggio__faults *faults; /* AGGIO_FAULTS, or NULL */
  /* learnt at open */
  int opened;                /* this rank opened the file (romio_no_indep_rw:
                              * only aggregators and rank 0 do) */
  int dio;                   /* enum aggio__dio_state; an I/O thread may
                              * turn it off (atomics) */
  int64_t dio_align;         /* offset/length/memory alignment for O_DIRECT */
  int64_t block;             /* file-system block size (st_blksize), agreed */
  int64_t align_unit;        /* the stripe, or the block: "aligned" in the
                              * counters */
  /* Where a back end says why it turned direct I/O off on an I/O thread:
   * the hint's "ignored" text, which get_info reads under *info_lock. */
  char *dio_ignored;
  size_t dio_ignored_len;
  pthread_mutex_t *info_lock;
};

/* What open learns about the file system, the same on every rank (rank 0
 * probes, the others take its answer). */
struct aggio__fs_info {
  int64_t block;      /* st_blksize, at least 4096 */
  int64_t dio_align;  /* offset/length/memory alignment O_DIRECT needs */
  int dio_ok;         /* an O_DIRECT descriptor could be opened */
  char fstype[32];    /* "ext4", "tmpfs", "lustre", ... */
  char dio_reason[160]; /* why direct I/O is off, when it is */
  int subfiles;           /* a subfiled file's layout: subfiles and stripe */
  int64_t subfile_stripe; /* (0 for any other file) */
};

struct aggio__storage_ops {
  const char *name;
  /* Opens the file on this rank (create: this rank creates it, honouring
   * MPI_MODE_CREATE/EXCL).  Sets st->opened. */
  int (*open)(struct aggio__store *st, int create, struct aggio__err *e);
  /* Rank 0, after its open: the file system's properties. */
  void (*probe)(struct aggio__store *st, struct aggio__fs_info *fi);
  /* After the agreed probe: opens what direct I/O needs on this rank. */
  void (*open_direct)(struct aggio__store *st);
  int (*close)(struct aggio__store *st, struct aggio__err *e);
  /* Writes len bytes at off, whole or fails (short writes retried). */
  int (*pwrite)(struct aggio__store *st, const void *buf, int64_t len, int64_t off,
                int flags, struct aggio__err *e);
  /* Reads up to len bytes at off; *got is what lay before end of file. */
  int (*pread)(struct aggio__store *st, void *buf, int64_t len, int64_t off,
               int64_t *got, int flags, struct aggio__err *e);
  int (*sync)(struct aggio__store *st, struct aggio__err *e);
  /* Starts the device's writing of the bytes of [off, off+len) that sit in
   * the page cache, without waiting for it (Linux: sync_file_range with
   * SYNC_FILE_RANGE_WRITE).  Best effort: what it cannot start, sync
   * writes; a write-back error stays for sync to report.  NULL: the back
   * end keeps nothing in a page cache. */
  void (*start_writeback)(struct aggio__store *st, int64_t off, int64_t len);
  /* Asks for [off, off+len) to be read into the page cache without
   * waiting for it (Linux: posix_fadvise WILLNEED), so that reads of
   * several files proceed together.  Best effort.  NULL: the back end
   * keeps nothing in a page cache. */
  void (*prefetch)(struct aggio__store *st, int64_t off, int64_t len);
  int (*size)(struct aggio__store *st, int64_t *size, struct aggio__err *e);
  int (*truncate)(struct aggio__store *st, int64_t size, struct aggio__err *e);
  /* Reserves storage for bytes [0, size) (MPI_File_preallocate): the file
   * is at least size bytes long afterwards and never shorter than before.
   * Called on rank 0 only. */
  int (*preallocate)(struct aggio__store *st, int64_t size, struct aggio__err *e);
  /* Byte-range lock of [off, off+len) for atomic mode (exclusive when
   * is_write); unlock with lock(..., -1).  Blocking. */
  int (*lock)(struct aggio__store *st, int64_t off, int64_t len, int is_write,
              struct aggio__err *e);
  /* Takes (lock 1) or gives back (lock 0) a Lustre group lock with id gid
   * on this rank's descriptors; closing them gives it back too
   * (lustre_lock.h).  0 or an errno value; NULL: the back end has no such
   * lock. */
  int (*group_lock)(struct aggio__store *st, long gid, int lock);
  /* Rank 0, after every rank closed: removes the file
   * (MPI_MODE_DELETE_ON_CLOSE).  NULL: the back end keeps no file. */
  int (*remove)(struct aggio__store *st, struct aggio__err *e);
  /* Frees what the back end keeps (descriptors already closed). */
  void (*release)(struct aggio__store *st);
  /* The core has set the store's block, dio_align or align_unit (after the
   * probe, and when hints change them): a back end that keeps stores of
   * its own passes them on.  NULL: nothing to do. */
  void (*configured)(struct aggio__store *st);
  /* Brings what the back end holds of this rank's writes (staged bytes)
   * into the final file and waits for it, without syncing; a failure of
   * its movers kept since, once.  NULL: the back end holds nothing. */
  int (*flush)(struct aggio__store *st, struct aggio__err *e);
  /* Bytes whose writes returned success that are not in the file and
   * cannot be any more (the movers failed), with where they are in msg.
   * NULL: none can be. */
  int64_t (*unwritten)(struct aggio__store *st, char *msg, size_t len);
};

/* detach: background movers, and at close what is left goes to a
 * drainer process that outlives the program (aggio-stage-drain). */
enum aggio__stage_drain {
  AGGIO_STAGE_BACKGROUND,
  AGGIO_STAGE_AT_CLOSE,
  AGGIO_STAGE_NONE,
  AGGIO_STAGE_DETACH
};

/* The registry (storage_registry.c): the back end called name
 * (aggio_storage), or NULL when there is none; the default one (the
 * first); "posix, null": every name, for messages. */
const struct aggio__storage_ops *aggio__storage_find(const char *name);
const struct aggio__storage_ops *aggio__storage_default(void);
const char *aggio__storage_names(void);

/* Staging (storage_stage.c): removes the stage directory of the final
 * file at path under stage_dir, with whatever it holds (MPI_File_delete,
 * MPI_MODE_DELETE_ON_CLOSE). */
void aggio__stage_remove(const char *stage_dir, const char *path);

/* Staging: the newest write of each byte across ranks (core/staging.c
 * and plan/stage_order.h; st is a staged store).  settle: waits until
 * every record of this rank is in the final file (a failure of the
 * movers is e's).  records: this rank's records since the last sync, a
 * malloc'ed copy, oldest first; their count, or -1 when memory runs out.
 * rewrite: this rank's newest bytes of [off, off+len), which its records
 * cover, written to the final file again.  fail: nothing more moves and
 * every later sync or close returns e (the records stay for `aggio stage
 * drain`, whose replay orders them). */
struct aggio__stage_rec;
int aggio__stage_settle(struct aggio__store *st, struct aggio__err *e);
int64_t aggio__stage_records(struct aggio__store *st, struct aggio__stage_rec **out);
int aggio__stage_rewrite(struct aggio__store *st, int64_t off, int64_t len,
                         struct aggio__err *e);
void aggio__stage_fail(struct aggio__store *st, const struct aggio__err *e);
/* With merge (the node's movers): count: the records of this rank's stage
 * files; node_settle, on the node's first rank only: waits until every
 * writer's count records (counts in node_ranks' order) are in the final
 * file (stage_node.h); moved_all, on every rank once that succeeded: all
 * this rank's records count as moved. */
int64_t aggio__stage_count(struct aggio__store *st);
int aggio__stage_node_settle(struct aggio__store *st, const int64_t *counts,
                             struct aggio__err *e);
void aggio__stage_moved_all(struct aggio__store *st);
/* The end of this rank's records not in the final file yet (0: none). */
int64_t aggio__stage_end(struct aggio__store *st);
/* aggio_stage_drain=detach, after every rank closed, on one rank per
 * node: a drainer process (drainer: aggio-stage-drain) that outlives the
 * program replays this file's stage; when none can be started, the
 * replay runs here (its failure is e's).  Its output goes to
 * <aggio_stage_dir>/aggio-stage-drain.log. */
int aggio__stage_hand_over(struct aggio__store *st, const char *drainer,
                           struct aggio__err *e);

/* Subfiling (storage_subfile.c): whether the file at path is a subfiled
 * layout (its first line), and its removal with its subfiles. */
int aggio__subfile_detect(const char *path);
int aggio__subfile_remove(const char *path, struct aggio__err *e);

/* Counts one transfer of len bytes at off that began at t0 (aggio__now) in
 * the statistics and the trace, as every back end does, so that the
 * counters mean the same whichever stores the bytes.  Any thread. */
void aggio__storage_note(struct aggio__store *st, int is_write, int64_t off, int64_t len,
                         int direct, double t0, int flags);

/* The back end's calls as the rest of the library makes them: faults
 * injected (AGGIO_FAULTS) and the trace records and counters of open,
 * sync, truncate and preallocate made here, once for every back end.  A
 * transfer (pwrite, pread) may be several system calls (short writes,
 * direct I/O's aligned middle and buffered edges): a back end injects and
 * counts those itself, per call (aggio__fault, aggio__storage_note).
 * The core calls them through inline helpers that take the handle
 * (internal.h: aggio__pwrite(fh, ...) is aggio__store_pwrite(&fh->st, ...)). */
int aggio__store_open(struct aggio__store *st, int create, struct aggio__err *e);
int aggio__store_size(struct aggio__store *st, int64_t *size, struct aggio__err *e);
int aggio__store_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e);
int aggio__store_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e);
int aggio__store_pwrite(struct aggio__store *st, const void *buf, int64_t len, int64_t off,
                        int flags, struct aggio__err *e);
int aggio__store_pread(struct aggio__store *st, void *buf, int64_t len, int64_t off,
                       int64_t *got, int flags, struct aggio__err *e);
int aggio__store_sync(struct aggio__store *st, struct aggio__err *e);

/* A back end's byte-range lock on descriptor fd (fcntl record locks,
 * blocking; is_write < 0 unlocks), for the lock op. */
int aggio__storage_fcntl_lock(struct aggio__store *st, int fd, int64_t off, int64_t len,
                              int is_write, struct aggio__err *e);

#endif
