/*
 * storage_posix.c - the POSIX back end of the storage edge (storage.h):
 * open/pread/pwrite/fsync/ftruncate/fcntl on a local or parallel file
 * system, with short transfers, EINTR, direct I/O, statistics and the trace
 * handled here once.
 *
 * Direct I/O: a write (or read) whose caller allows it (AGGIO_IO_DIRECT_OK)
 * sends its aligned middle through a second descriptor opened with
 * O_DIRECT when that middle is at least AGGIO_DIO_MIN bytes (a writer that
 * does not wait for it: AGGIO_DIO_MIN_EAGER): measured here,
 * a 1 MiB O_DIRECT write reaches the device's speed while 128 KiB ones run
 * at 40% of it, and every direct write waits for the device.  Head and tail
 * stay buffered.  Memory that is not aligned to the file system's direct-I/O
 * unit goes through a bounce buffer taken from a locked per-file list, so
 * that I/O threads never share one.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "storage.h"
#include "lustre_lock.h"

/* Below this many aligned bytes a direct transfer costs more than it saves. */
#define AGGIO_DIO_MIN (1 << 20)
/* The same for a writer that does not wait for the device (write-behind's
 * I/O threads, AGGIO_IO_DIRECT_EAGER): what it leaves buffered, a durable
 * run writes back in its final sync, at the page cache's write-back speed
 * (HDF5's ior-hard, 2 ranks, its datasets' data in 92 KiB runs between
 * metadata: 410 MiB/s with the 1 MiB floor, 555 with this one; BENCHMARKS.md,
 * issue 25). */
#define AGGIO_DIO_MIN_EAGER (64 << 10)
/* Size of one bounce buffer for unaligned memory. */
#define AGGIO_BOUNCE (8 << 20)

struct bounce {
  struct bounce *next;
  char *buf;
};

struct posix {
  int fd;              /* buffered descriptor, -1 when this rank did not open */
  int fd_direct;       /* O_DIRECT descriptor, or -1 */
  pthread_mutex_t lock;
  struct bounce *free_bounces; /* idle bounce buffers */
};

static struct posix *px(struct aggio__store *st) { return st->state; }

/* ---- opening ------------------------------------------------------------------ */

static int open_flags(int amode) {
  if (amode & MPI_MODE_RDONLY)
    return O_RDONLY;
  /* Aggregators read-modify-write holes, so write-only files open O_RDWR
   * where permissions allow. */
  return O_RDWR;
}

static int px_open(struct aggio__store *st, int create, struct aggio__err *e) {
  struct posix *p = calloc(1, sizeof *p);
  if (!p)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
  p->fd = p->fd_direct = -1;
  pthread_mutex_init(&p->lock, NULL);
  st->state = p;
  int flags = open_flags(st->amode);
  if (create && (st->amode & MPI_MODE_CREATE))
    flags |= O_CREAT;
  if (create && (st->amode & MPI_MODE_EXCL))
    flags |= O_EXCL;
  p->fd = open(st->path, flags, 0666);
  if (p->fd < 0 && errno == EACCES && (st->amode & MPI_MODE_WRONLY))
    p->fd = open(st->path, (flags & ~O_RDWR) | O_WRONLY, 0666);
  int err = p->fd < 0 ? errno : 0;
  if (err)
    return aggio__fail(e, aggio__errno_code(err), "rank %d: open(%s): %s", st->rank,
                       st->path, strerror(err));
  st->opened = 1;
  return 0;
}

static const char *fs_name(long magic) {
  switch ((unsigned long)magic) {
  case 0xEF53: return "ext4";
  case 0x58465342: return "xfs";
  case 0x01021994: return "tmpfs";
  case 0x0BD00BD0: return "lustre";
  case 0x47504653: return "gpfs";
  case 0x6969: return "nfs";
  case 0x9123683E: return "btrfs";
  case 0x794c7630: return "overlayfs";
  case 0x19830326: return "beegfs";
  case 0x65735546: return "fuse";
  default: return "unknown";
  }
}

static void px_probe(struct aggio__store *st, struct aggio__fs_info *fi) {
  struct statfs sf;
  struct stat sb;
  int fd = px(st)->fd;
  memset(fi, 0, sizeof *fi);
  fi->block = 4096;
  snprintf(fi->fstype, sizeof fi->fstype, "unknown");
  if (fstatfs(fd, &sf) == 0)
    snprintf(fi->fstype, sizeof fi->fstype, "%s", fs_name((long)sf.f_type));
  if (fstat(fd, &sb) == 0 && sb.st_blksize > fi->block)
    fi->block = sb.st_blksize;
  fi->dio_align = fi->block;
  /* Tests stand in for a parallel file system's MiB-sized direct-I/O unit. */
  const char *test_align = getenv("AGGIO_TEST_DIO_ALIGN");
  if (test_align && atoll(test_align) > fi->dio_align)
    fi->dio_align = atoll(test_align);
  if (!st->direct_wanted)
    return;
  int dfd = open(st->path, ((st->amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR) | O_DIRECT);
  if (dfd < 0) {
    snprintf(fi->dio_reason, sizeof fi->dio_reason,
             "file system %s refuses O_DIRECT (%s)", fi->fstype, strerror(errno));
    return;
  }
  close(dfd);
  fi->dio_ok = 1;
}

static void px_open_direct(struct aggio__store *st) {
  struct posix *p = px(st);
  if (p->fd < 0)
    return;
  p->fd_direct = open(st->path, ((st->amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR) | O_DIRECT);
  st->dio = p->fd_direct >= 0 ? AGGIO_DIO_ON : AGGIO_DIO_OFF;
}

static int px_close(struct aggio__store *st, struct aggio__err *e) {
  struct posix *p = px(st);
  if (!p)
    return 0;
  if (p->fd_direct >= 0 && close(p->fd_direct) != 0)
    aggio__fail(e, aggio__errno_code(errno), "rank %d: close(%s): %s", st->rank,
                st->path, strerror(errno));
  p->fd_direct = -1;
  if (p->fd >= 0) {
    double t0 = st->obs->trace ? aggio__now() : 0.0;
    if (close(p->fd) != 0)
      aggio__fail(e, aggio__errno_code(errno), "rank %d: close(%s): %s", st->rank,
                  st->path, strerror(errno));
    if (st->obs->trace)
      aggio__obs_record(st->obs, AGGIO_OP_POSIX_CLOSE, -1, 0, 0, t0, aggio__now(), 0);
  }
  p->fd = -1;
  return e->code;
}

/* Both descriptors: writes go through either. */
static int px_group_lock(struct aggio__store *st, long gid, int lock) {
  struct posix *p = px(st);
  if (!p)
    return 0;
  int rc = aggio__lustre_group_lock(p->fd, gid, lock);
  return rc ? rc : aggio__lustre_group_lock(p->fd_direct, gid, lock);
}

static void px_release(struct aggio__store *st) {
  struct posix *p = px(st);
  if (!p)
    return;
  if (p->fd >= 0)
    close(p->fd);
  if (p->fd_direct >= 0)
    close(p->fd_direct);
  while (p->free_bounces) {
    struct bounce *b = p->free_bounces;
    p->free_bounces = b->next;
    free(b->buf);
    free(b);
  }
  pthread_mutex_destroy(&p->lock);
  free(p);
  st->state = NULL;
}

/* ---- bounce buffers ------------------------------------------------------------ */

static struct bounce *bounce_get(struct aggio__store *st) {
  struct posix *p = px(st);
  pthread_mutex_lock(&p->lock);
  struct bounce *b = p->free_bounces;
  if (b)
    p->free_bounces = b->next;
  pthread_mutex_unlock(&p->lock);
  if (b)
    return b;
  b = malloc(sizeof *b);
  if (!b)
    return NULL;
  b->buf = aggio__alloc_aligned(AGGIO_BOUNCE, st->dio_align);
  if (!b->buf) {
    free(b);
    return NULL;
  }
  return b;
}

static void bounce_put(struct aggio__store *st, struct bounce *b) {
  struct posix *p = px(st);
  pthread_mutex_lock(&p->lock);
  b->next = p->free_bounces;
  p->free_bounces = b;
  pthread_mutex_unlock(&p->lock);
}

/* ---- writes ---------------------------------------------------------------------- */

static int io_error(struct aggio__store *st, int err, const char *what, int64_t len, int64_t off,
                    struct aggio__err *e) {
  return aggio__fail(e, aggio__errno_code(err), "rank %d: %s(%s, %lld bytes at %lld): %s",
                     st->rank, what, st->path, (long long)len, (long long)off,
                     strerror(err));
}

/* One pwrite system call at a time, until done; each call is one record.
 * -EINVAL: a direct write was refused (the caller falls back). */
static int write_loop(struct aggio__store *st, int fd, const char *buf, int64_t len, int64_t off,
                      int direct, int flags, struct aggio__err *e) {
  while (len > 0) {
    double t0 = (st->obs->trace || st->obs->stats) ? aggio__now() : 0.0;
    size_t chunk = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
    int err = aggio__fault(st->faults, AGGIO_FAULT_PWRITE);
    ssize_t w = err ? -1 : pwrite(fd, buf, chunk, (off_t)off);
    if (w < 0 && !err)
      err = errno;
    if (w < 0 && err == EINTR)
      continue;
    if (w == 0 && chunk > 0)
      err = ENOSPC;
    if (err) {
      if (direct && err == EINVAL)
        return -EINVAL;
      return io_error(st, err, "pwrite", (int64_t)chunk, off, e);
    }
    aggio__storage_note(st, 1, off, w, direct, t0, flags);
    buf += w;
    off += w;
    len -= w;
  }
  return 0;
}

/* The aligned middle through O_DIRECT, through a bounce buffer when the
 * memory is not aligned. */
static int write_direct(struct aggio__store *st, const char *buf, int64_t len, int64_t off,
                        int flags, struct aggio__err *e) {
  int fd = px(st)->fd_direct;
  if (((uintptr_t)buf % (uintptr_t)st->dio_align) == 0)
    return write_loop(st, fd, buf, len, off, 1, flags, e);
  struct bounce *b = bounce_get(st);
  if (!b)
    return -EINVAL; /* no memory for the bounce: buffered instead */
  int rc = 0;
  while (rc == 0 && len > 0) {
    int64_t n = len < AGGIO_BOUNCE ? len : AGGIO_BOUNCE;
    memcpy(b->buf, buf, (size_t)n);
    rc = write_loop(st, fd, b->buf, n, off, 1, flags, e);
    buf += n;
    off += n;
    len -= n;
  }
  bounce_put(st, b);
  return rc;
}

/* The aligned middle [*lo, *hi) of [off, off+len), or 0 when direct I/O is
 * off, not asked for, or the middle is too small to gain from it. */
static int direct_middle(struct aggio__store *st, int64_t len, int64_t off, int flags, int64_t *lo,
                         int64_t *hi) {
  if (!(flags & AGGIO_IO_DIRECT_OK) || st->dio != AGGIO_DIO_ON || px(st)->fd_direct < 0)
    return 0;
  int64_t a = st->dio_align;
  if (off > INT64_MAX - len - a)
    return 0;
  *lo = aggio__round_up(off, a);
  *hi = aggio__round_down(off + len, a);
  return *hi - *lo >= ((flags & AGGIO_IO_DIRECT_EAGER) ? AGGIO_DIO_MIN_EAGER : AGGIO_DIO_MIN);
}

/* The file system refused a direct transfer after all: buffered from now on. */
static void direct_refused(struct aggio__store *st) {
  __atomic_store_n(&st->dio, AGGIO_DIO_OFF, __ATOMIC_RELAXED);
  pthread_mutex_lock(st->info_lock); /* on an I/O thread: get_info may read it */
  snprintf(st->dio_ignored, st->dio_ignored_len,
           "O_DIRECT transfer refused (EINVAL); using buffered I/O");
  pthread_mutex_unlock(st->info_lock);
}

static int px_pwrite(struct aggio__store *st, const void *vbuf, int64_t len, int64_t off, int flags,
                     struct aggio__err *e) {
  const char *buf = vbuf;
  int fd = px(st)->fd;
  int64_t lo, hi;
  if (len <= 0)
    return 0;
  if (!direct_middle(st, len, off, flags, &lo, &hi))
    return write_loop(st, fd, buf, len, off, 0, flags, e);
  int rc = write_direct(st, buf + (lo - off), hi - lo, lo, flags, e);
  if (rc == -EINVAL) {
    direct_refused(st);
    rc = write_loop(st, fd, buf + (lo - off), hi - lo, lo, 0, flags, e);
  }
  if (rc == 0)
    rc = write_loop(st, fd, buf, lo - off, off, 0, flags, e);
  if (rc == 0)
    rc = write_loop(st, fd, buf + (hi - off), off + len - hi, hi, 0, flags, e);
  return rc;
}

/* ---- reads ------------------------------------------------------------------------ */

/* Reads until len bytes or end of file; *got counts them. */
static int read_loop(struct aggio__store *st, int fd, char *buf, int64_t len, int64_t off,
                     int64_t *got, int direct, int flags, struct aggio__err *e) {
  *got = 0;
  while (len > 0) {
    double t0 = (st->obs->trace || st->obs->stats) ? aggio__now() : 0.0;
    size_t chunk = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
    int err = aggio__fault(st->faults, AGGIO_FAULT_PREAD);
    ssize_t r = err ? -1 : pread(fd, buf, chunk, (off_t)off);
    if (r < 0 && !err)
      err = errno;
    if (r < 0 && err == EINTR)
      continue;
    if (err) {
      if (direct && err == EINVAL)
        return -EINVAL;
      return io_error(st, err, "pread", (int64_t)chunk, off, e);
    }
    aggio__storage_note(st, 0, off, r, direct, t0, flags);
    if (r == 0)
      break; /* end of file */
    buf += r;
    off += r;
    len -= r;
    *got += r;
    if (direct && (r % st->dio_align) != 0)
      break; /* a direct read stops short only at end of file */
  }
  return 0;
}

static int px_pread(struct aggio__store *st, void *vbuf, int64_t len, int64_t off, int64_t *got,
                    int flags, struct aggio__err *e) {
  char *buf = vbuf;
  int fd = px(st)->fd;
  int64_t lo, hi;
  /* Direct reads only when the whole piece is aligned, memory included:
   * the cache's blocks are. */
  if (direct_middle(st, len, off, flags, &lo, &hi) && lo == off && hi == off + len &&
      ((uintptr_t)buf % (uintptr_t)st->dio_align) == 0) {
    int rc = read_loop(st, px(st)->fd_direct, buf, len, off, got, 1, flags, e);
    if (rc != -EINVAL)
      return rc;
    direct_refused(st);
  }
  return read_loop(st, fd, buf, len, off, got, 0, flags, e);
}

/* ---- the rest ---------------------------------------------------------------------- */

/* The error of a failed fsync.  Every errno is a failure: sync promises
 * that the data is durable, and an fsync that failed did not make it so.
 * EINVAL (a file that does not support synchronization: a special file;
 * Linux's file systems, tmpfs included, never give it for a regular one)
 * and EROFS (a file system remounted read-only after an error) are neither
 * a bad argument of the caller nor a permission it lacks, but data that
 * did not reach storage: an I/O error. */
static int fsync_code(int err) {
  return err == EINVAL || err == EROFS ? AGGIO_ERR_IO : aggio__errno_code(err);
}

static int px_sync(struct aggio__store *st, struct aggio__err *e) {
  int fd = px(st)->fd;
  if (fd < 0 || fsync(fd) == 0)
    return 0;
  int err = errno;
  return aggio__fail(e, fsync_code(err), "rank %d: fsync(%s): %s; the data may not be "
                     "durable", st->rank, st->path, strerror(err));
}

/* sync_file_range(SYNC_FILE_RANGE_WRITE) starts the write-out of the
 * range's dirty pages and returns; it may block while the device's queue
 * is full, which is why the core calls it from an I/O thread
 * (core/writeback.c).  It waits for nothing and reports nothing a later
 * fsync would not: a failed write-back stays recorded for fsync. */
static void px_start_writeback(struct aggio__store *st, int64_t off, int64_t len) {
#ifdef SYNC_FILE_RANGE_WRITE
  struct posix *p = px(st);
  if (p && p->fd >= 0 && len > 0)
    (void)sync_file_range(p->fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
#else
  (void)st, (void)off, (void)len;
#endif
}

static void px_prefetch(struct aggio__store *st, int64_t off, int64_t len) {
  struct posix *p = px(st);
  if (p && p->fd >= 0 && len > 0)
    (void)posix_fadvise(p->fd, (off_t)off, (off_t)len, POSIX_FADV_WILLNEED);
}

static int px_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  struct stat sb;
  int fd = px(st) ? px(st)->fd : -1;
  int err = (fd >= 0 ? fstat(fd, &sb) : stat(st->path, &sb)) != 0 ? errno : 0;
  if (err)
    return aggio__fail(e, aggio__errno_code(err), "rank %d: stat(%s): %s", st->rank,
                       st->path, strerror(err));
  *size = (int64_t)sb.st_size;
  return 0;
}

static int px_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  if (ftruncate(px(st)->fd, (off_t)size) == 0)
    return 0;
  int err = errno;
  return aggio__fail(e, aggio__errno_code(err), "rank %d: ftruncate(%s): %s", st->rank,
                     st->path, strerror(err));
}

/* Reserves the blocks of [0, size): posix_fallocate, which never shrinks
 * the file.  Where the file system cannot (EOPNOTSUPP, as glibc's
 * emulation is not used by musl and some FUSE file systems refuse), the
 * file is only extended to size, never shortened (MPI_File_preallocate
 * leaves a larger file as it is). */
static int px_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  int err = size > 0 ? posix_fallocate(px(st)->fd, 0, (off_t)size) : 0;
  if (err == EOPNOTSUPP || err == ENOSYS) {
    struct stat sb;
    err = 0;
    if (fstat(px(st)->fd, &sb) != 0)
      err = errno;
    else if ((int64_t)sb.st_size < size && ftruncate(px(st)->fd, (off_t)size) != 0)
      err = errno;
  }
  if (err)
    return aggio__fail(e, aggio__errno_code(err), "rank %d: posix_fallocate(%s, %lld): %s",
                       st->rank, st->path, (long long)size, strerror(err));
  return 0;
}

/* fcntl record locks, as ROMIO's ADIOI_Set_lock: atomic mode on POSIX. */
static int px_lock(struct aggio__store *st, int64_t off, int64_t len, int is_write,
                   struct aggio__err *e) {
  return aggio__storage_fcntl_lock(st, px(st)->fd, off, len, is_write, e);
}

static int px_remove(struct aggio__store *st, struct aggio__err *e) {
  if (unlink(st->path) != 0)
    return aggio__fail(e, aggio__errno_code(errno), "rank 0: unlink(%s): %s", st->path,
                       strerror(errno));
  return 0;
}

const struct aggio__storage_ops aggio__storage_posix = {
    .name = "posix",
    .open = px_open,
    .probe = px_probe,
    .open_direct = px_open_direct,
    .close = px_close,
    .group_lock = px_group_lock,
    .pwrite = px_pwrite,
    .pread = px_pread,
    .sync = px_sync,
    .start_writeback = px_start_writeback,
    .prefetch = px_prefetch,
    .size = px_size,
    .truncate = px_truncate,
    .preallocate = px_preallocate,
    .lock = px_lock,
    .remove = px_remove,
    .release = px_release,
};
