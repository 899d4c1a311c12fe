/*
 * storage.h - the storage edge: the only place where aggio touches a file.
 *
 * Strategies and the engine never see a file descriptor: they call the
 * back end of the file (fh->store) through this table, the way ROMIO's
 * ADIO drivers sit under its collective algorithms (ad_fstype.c picks one
 * from a table).  Hint aggio_storage picks the back end at open:
 *   posix  storage_posix.c, the file system (the default);
 *   null   storage_null.c, discards writes and reads zeros, to measure the
 *          aggregation alone (TAPIOCA's /dev/null runs) and in SimGrid,
 *          which simulates no file I/O.
 * A subfiling or tier back end would fill the same table.
 *
 * Every call may run on any thread (the calling thread or an I/O thread of
 * the file's pool or cache), so back ends keep no unlocked shared scratch.
 */
#ifndef AGGIO_STORAGE_H
#define AGGIO_STORAGE_H

#include <stdint.h>

struct aggio_file_s;
struct aggio__err;

/* Flags for writes and reads. */
#define AGGIO_IO_AGGREGATOR 1 /* done while acting as an aggregator (trace) */
#define AGGIO_IO_BEHIND 2     /* done by an I/O thread after the call returned */
#define AGGIO_IO_DIRECT_OK 4  /* the caller wants the device: use O_DIRECT when
                               * the piece is large and aligned enough */

/* What open learns about the file system, the same on every rank (rank 0
 * probes, the others take its answer). */
struct aggio__fs_info {
  int64_t block;      /* st_blksize, at least 4096 */
  int64_t dio_align;  /* offset/length/memory alignment O_DIRECT needs */
  int dio_ok;         /* an O_DIRECT descriptor could be opened */
  char fstype[32];    /* "ext4", "tmpfs", "lustre", ... */
  char dio_reason[160]; /* why direct I/O is off, when it is */
};

struct aggio__storage_ops {
  const char *name;
  /* Opens the file on this rank (create: this rank creates it, honouring
   * MPI_MODE_CREATE/EXCL).  Sets fh->opened. */
  int (*open)(struct aggio_file_s *fh, int create, struct aggio__err *e);
  /* Rank 0, after its open: the file system's properties. */
  void (*probe)(struct aggio_file_s *fh, struct aggio__fs_info *fi);
  /* After the agreed probe: opens what direct I/O needs on this rank. */
  void (*open_direct)(struct aggio_file_s *fh);
  int (*close)(struct aggio_file_s *fh, struct aggio__err *e);
  /* Writes len bytes at off, whole or fails (short writes retried). */
  int (*pwrite)(struct aggio_file_s *fh, const void *buf, int64_t len, int64_t off,
                int flags, struct aggio__err *e);
  /* Reads up to len bytes at off; *got is what lay before end of file. */
  int (*pread)(struct aggio_file_s *fh, void *buf, int64_t len, int64_t off,
               int64_t *got, int flags, struct aggio__err *e);
  int (*sync)(struct aggio_file_s *fh, struct aggio__err *e);
  int (*size)(struct aggio_file_s *fh, int64_t *size, struct aggio__err *e);
  int (*truncate)(struct aggio_file_s *fh, int64_t size, struct aggio__err *e);
  /* Reserves storage for bytes [0, size) (MPI_File_preallocate): the file
   * is at least size bytes long afterwards and never shorter than before.
   * Called on rank 0 only. */
  int (*preallocate)(struct aggio_file_s *fh, int64_t size, struct aggio__err *e);
  /* Byte-range lock of [off, off+len) for atomic mode (exclusive when
   * is_write); unlock with lock(..., -1).  Blocking. */
  int (*lock)(struct aggio_file_s *fh, int64_t off, int64_t len, int is_write,
              struct aggio__err *e);
  /* Takes (lock 1) or gives back (lock 0) a Lustre group lock with id gid
   * on this rank's descriptors; closing them gives it back too
   * (lustre_lock.h).  0 or an errno value; NULL: the back end has no such
   * lock. */
  int (*group_lock)(struct aggio_file_s *fh, long gid, int lock);
  /* Rank 0, after every rank closed: removes the file
   * (MPI_MODE_DELETE_ON_CLOSE).  NULL: the back end keeps no file. */
  int (*remove)(struct aggio_file_s *fh, struct aggio__err *e);
  /* Frees what the back end keeps (descriptors already closed). */
  void (*release)(struct aggio_file_s *fh);
};

/* The registry (storage_registry.c): the back end called name
 * (aggio_storage), or NULL when there is none; the default one (the
 * first); "posix, null": every name, for messages. */
const struct aggio__storage_ops *aggio__storage_find(const char *name);
const struct aggio__storage_ops *aggio__storage_default(void);
const char *aggio__storage_names(void);

/* Counts one transfer of len bytes at off that began at t0 (aggio__now) in
 * the statistics and the trace, as every back end does, so that the
 * counters mean the same whichever stores the bytes.  Any thread. */
void aggio__storage_note(struct aggio_file_s *fh, int is_write, int64_t off, int64_t len,
                         int direct, double t0, int flags);

/* The back end's calls as the rest of the library makes them: faults
 * injected (AGGIO_FAULTS) and the trace records and counters of open,
 * sync, truncate and preallocate made here, once for every back end.  A
 * transfer (pwrite, pread) may be several system calls (short writes,
 * direct I/O's aligned middle and buffered edges): a back end injects and
 * counts those itself, per call (aggio__fault, aggio__storage_note). */
int aggio__store_open(struct aggio_file_s *fh, int create, struct aggio__err *e);
int aggio__store_size(struct aggio_file_s *fh, int64_t *size, struct aggio__err *e);
int aggio__store_truncate(struct aggio_file_s *fh, int64_t size, struct aggio__err *e);
int aggio__store_preallocate(struct aggio_file_s *fh, int64_t size, struct aggio__err *e);
int aggio__pwrite(struct aggio_file_s *fh, const void *buf, int64_t len, int64_t off,
                  int flags, struct aggio__err *e);
int aggio__pread(struct aggio_file_s *fh, void *buf, int64_t len, int64_t off,
                 int64_t *got, int flags, struct aggio__err *e);
int aggio__fsync(struct aggio_file_s *fh, struct aggio__err *e);

/* ---- fault injection for tests (fault.c) ----------------------------------
 * AGGIO_FAULTS="op@rank#nth=ERRNO,..." makes the nth call (counted from 1;
 * "#3+" the 3rd and every later one) of a storage operation or allocation
 * fail on a rank ("@*" every rank).  ops: open, pwrite, pread, fsync, size,
 * truncate, alloc, preallocate, window, rma_window, shm (a node's shared memory, shm.c).  ERRNO: EIO (default), ENOSPC, ENOMEM, EACCES, EROFS, EINVAL.  Read once
 * at open; costs one test of a pointer per call when unset.  For the test
 * suite: it lets tests reach error paths no real file system produces on
 * demand (a failing fstat, an EIO in an I/O thread, a failed allocation). */
enum aggio__fault_op {
  AGGIO_FAULT_OPEN,
  AGGIO_FAULT_PWRITE,
  AGGIO_FAULT_PREAD,
  AGGIO_FAULT_FSYNC,
  AGGIO_FAULT_SIZE,
  AGGIO_FAULT_TRUNCATE,
  AGGIO_FAULT_ALLOC,
  AGGIO_FAULT_PREALLOCATE,
  AGGIO_FAULT_WINDOW, /* the shared file pointer's window, at open */
  AGGIO_FAULT_RMA_WINDOW, /* the RMA exchange's window (a rank's part refused) */
  AGGIO_FAULT_SHM, /* creating a node's shared memory (shm.c) */
  AGGIO_FAULT_NOPS
};
struct aggio__faults;
/* Parses AGGIO_FAULTS for this rank; NULL when none applies. */
struct aggio__faults *aggio__faults_new(int rank);
void aggio__faults_free(struct aggio__faults *f);
/* 0, or the errno the nth call of op must fail with. Thread-safe. */
int aggio__fault(struct aggio__faults *f, enum aggio__fault_op op);
/* Calls of op so far in the process's files that have AGGIO_FAULTS rules
 * (a rule that never fires still counts them): the fault sweeps' count of
 * the places a scenario could fail. */
int64_t aggio__fault_calls(enum aggio__fault_op op);

#endif
