/*
 * posix.c - the POSIX edge of the library: every pread/pwrite/fsync goes
 * through here, so that short transfers, EINTR, O_DIRECT alignment,
 * statistics and the trace are handled in one place.
 *
 * Direct I/O: large writes go to the device through a second descriptor
 * opened with O_DIRECT; only the part aligned to fh->dio_align (at least the
 * page size, so a buffered head/tail never shares a page with a direct
 * write) goes that way, head and tail stay buffered.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

/* Below this many aligned bytes a direct write costs more than it saves. */
#define AGGIO_DIO_MIN (64 * 1024)
/* Largest bounce buffer kept per file for unaligned user memory. */
#define AGGIO_BOUNCE_MAX (8 * 1024 * 1024)

/* Aggregators may have two writes in flight (one per buffer, each in an I/O
 * thread), so statistics are added atomically and trace records are taken
 * under the file's trace lock.  Both cost nothing when off. */
static void add(int64_t *p, int64_t v) { __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }

static void add_time(double *p, double v) {
  double old, new;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  do
    new = old + v;
  while (!__atomic_compare_exchange(p, &old, &new, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static void trace(aggio_file fh, int op, int64_t off, int64_t len, double t0,
                  double t1, int flags) {
  pthread_mutex_lock(&fh->trace_lock);
  aggio__trace_record(fh->trace, op, off, len, 0, t0, t1, flags);
  pthread_mutex_unlock(&fh->trace_lock);
}

void *aggio__alloc_aligned(int64_t len, int64_t align) {
  void *p = NULL;
  if (align < (int64_t)sizeof(void *))
    align = sizeof(void *);
  if (posix_memalign(&p, (size_t)align, (size_t)(len > 0 ? len : 1)) != 0)
    return NULL;
  return p;
}

static int64_t align_unit(aggio_file fh) {
  int64_t su = fh->hints.striping_unit.num;
  return su > 0 ? su : fh->block;
}

static void note_write(aggio_file fh, int64_t off, int64_t len, int direct,
                       double t0, int flags) {
  if (fh->trace)
    trace(fh, AGGIO_OP_POSIX_PWRITE, off, len, t0, aggio__now(),
          flags & AGGIO_IO_AGGREGATOR);
  struct aggio__stats *s = fh->stats;
  if (!s)
    return;
  add(&s->c[AGGIO_C_SYS_WRITES], 1);
  add(&s->c[AGGIO_C_SYS_WRITE_BYTES], len);
  int64_t a = align_unit(fh);
  if (a > 0 && off % a == 0)
    add(&s->c[AGGIO_C_SYS_WRITES_ALIGNED], 1);
  if (direct) {
    add(&s->c[AGGIO_C_DIRECT_WRITES], 1);
    add(&s->c[AGGIO_C_DIRECT_WRITE_BYTES], len);
  }
}

/* One pwrite system call at a time, until done; each call is one record. */
static int write_loop(aggio_file fh, int fd, const char *buf, int64_t len,
                      int64_t off, int direct, int flags, struct aggio__err *e) {
  while (len > 0) {
    double t0 = (fh->trace || fh->stats) ? aggio__now() : 0.0;
    size_t chunk = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
    ssize_t w = pwrite(fd, buf, chunk, (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w < 0 || (w == 0 && chunk > 0)) {
      int err = w < 0 ? errno : ENOSPC;
      if (direct && err == EINVAL)
        return -EINVAL; /* the caller falls back to buffered I/O */
      return aggio__fail(e, aggio__errno_code(err),
                         "rank %d: pwrite(%s, %zu bytes at %lld): %s", fh->rank,
                         fh->path, chunk, (long long)off, strerror(err));
    }
    if (fh->stats)
      add_time(&fh->stats->t[AGGIO_P_WRITE], aggio__now() - t0);
    note_write(fh, off, w, direct, t0, flags);
    buf += w;
    off += w;
    len -= w;
  }
  return 0;
}

static void *bounce_buffer(aggio_file fh) {
  if (!fh->bounce) {
    fh->bounce = aggio__alloc_aligned(AGGIO_BOUNCE_MAX, fh->dio_align);
    fh->bounce_len = fh->bounce ? AGGIO_BOUNCE_MAX : 0;
  }
  return fh->bounce;
}

/* Writes the aligned middle through O_DIRECT, copying through the bounce
 * buffer when the memory is not aligned.  -EINVAL: refused, fall back. */
static int write_direct(aggio_file fh, const char *buf, int64_t len, int64_t off,
                        int flags, struct aggio__err *e) {
  if (((uintptr_t)buf % (uintptr_t)fh->dio_align) == 0)
    return write_loop(fh, fh->fd_direct, buf, len, off, 1, flags, e);
  char *b = bounce_buffer(fh);
  if (!b)
    return -EINVAL;
  while (len > 0) {
    int64_t n = len < fh->bounce_len ? len : fh->bounce_len;
    memcpy(b, buf, (size_t)n);
    int rc = write_loop(fh, fh->fd_direct, b, n, off, 1, flags, e);
    if (rc != 0)
      return rc;
    buf += n;
    off += n;
    len -= n;
  }
  return 0;
}

int aggio__pwrite(aggio_file fh, const void *vbuf, int64_t len, int64_t off,
                  int flags, struct aggio__err *e) {
  const char *buf = vbuf;
  if (len <= 0)
    return 0;
  if (fh->dio == AGGIO_DIO_ON && fh->fd_direct >= 0) {
    int64_t a = fh->dio_align;
    int64_t mid_lo = aggio__round_up(off, a), mid_hi = aggio__round_down(off + len, a);
    if (mid_hi - mid_lo >= AGGIO_DIO_MIN) {
      int rc = write_direct(fh, buf + (mid_lo - off), mid_hi - mid_lo, mid_lo,
                            flags, e);
      if (rc == -EINVAL) {
        /* The file system refused after all: buffered from now on. */
        __atomic_store_n(&fh->dio, AGGIO_DIO_OFF, __ATOMIC_RELAXED);
        snprintf(fh->hints.direct_io.ignored, sizeof fh->hints.direct_io.ignored,
                 "O_DIRECT write refused (EINVAL); using buffered I/O");
        rc = write_loop(fh, fh->fd, buf + (mid_lo - off), mid_hi - mid_lo,
                        mid_lo, 0, flags, e);
      }
      if (rc != 0)
        return rc;
      rc = write_loop(fh, fh->fd, buf, mid_lo - off, off, 0, flags, e);
      if (rc != 0)
        return rc;
      return write_loop(fh, fh->fd, buf + (mid_hi - off), off + len - mid_hi,
                        mid_hi, 0, flags, e);
    }
  }
  return write_loop(fh, fh->fd, buf, len, off, 0, flags, e);
}

int aggio__pread(aggio_file fh, void *vbuf, int64_t len, int64_t off,
                 int64_t *got, int flags, struct aggio__err *e) {
  char *buf = vbuf;
  *got = 0;
  while (len > 0) {
    double t0 = (fh->trace || fh->stats) ? aggio__now() : 0.0;
    size_t chunk = len > (1 << 30) ? (size_t)1 << 30 : (size_t)len;
    ssize_t r = pread(fh->fd, buf, chunk, (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return aggio__fail(e, aggio__errno_code(errno),
                         "rank %d: pread(%s, %zu bytes at %lld): %s", fh->rank,
                         fh->path, chunk, (long long)off, strerror(errno));
    if (fh->trace)
      trace(fh, AGGIO_OP_POSIX_PREAD, off, (int64_t)chunk, t0, aggio__now(),
            flags & AGGIO_IO_AGGREGATOR);
    if (fh->stats) {
      struct aggio__stats *s = fh->stats;
      add_time(&s->t[AGGIO_P_READ], aggio__now() - t0);
      add(&s->c[AGGIO_C_SYS_READS], 1);
      add(&s->c[AGGIO_C_SYS_READ_BYTES], r);
      int64_t a = align_unit(fh);
      if (a > 0 && off % a == 0)
        add(&s->c[AGGIO_C_SYS_READS_ALIGNED], 1);
    }
    if (r == 0)
      break; /* end of file */
    buf += r;
    off += r;
    len -= r;
    *got += r;
  }
  return 0;
}

int aggio__fsync(aggio_file fh, struct aggio__err *e) {
  if (fh->fd < 0)
    return 0;
  double t0 = aggio__now();
  if (fsync(fh->fd) != 0 && errno != EINVAL && errno != EROFS)
    return aggio__fail(e, aggio__errno_code(errno), "rank %d: fsync(%s): %s",
                       fh->rank, fh->path, strerror(errno));
  double t1 = aggio__now();
  if (fh->trace)
    trace(fh, AGGIO_OP_POSIX_FSYNC, -1, 0, t0, t1, 0);
  if (fh->stats) {
    fh->stats->c[AGGIO_C_SYNCS]++;
    aggio__phase_add(fh->stats, AGGIO_P_SYNC, t1 - t0);
  }
  return 0;
}
