/*
 * backend_posix.c - the POSIX back end: every rank pread/pwrites its extents
 * in the shared file (N:1), or its own file with -F (N:N, the reference that
 * shared-file I/O is judged against).  With -B (IOR's useO_DIRECT) the
 * aligned middle of each transfer goes through an O_DIRECT descriptor,
 * through an aligned bounce buffer when the memory is not aligned, and the
 * unaligned head and tail through the ordinary one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

#define BOUNCE_BYTES (8 * BENCH_MIB)

struct posix_file {
  int fd;       /* buffered */
  int dfd;      /* O_DIRECT, or -1 */
  unsigned char *bounce;
};

static int posix_open(const struct bench_open_args *a, void **state) {
  struct posix_file *f = calloc(1, sizeof *f);
  if (!f) return -ENOMEM;
  int flags = a->dir == BENCH_WRITE ? O_WRONLY | O_CREAT : O_RDONLY;
  f->dfd = -1;
  f->fd = open(a->path, flags, 0644);
  if (f->fd < 0) goto fail;
  if (a->odirect) {
    f->dfd = open(a->path, flags | O_DIRECT, 0644);
    if (f->dfd < 0) goto fail;
    if (posix_memalign((void **)&f->bounce, BENCH_DIRECT_ALIGN, BOUNCE_BYTES)) {
      errno = ENOMEM;
      goto fail;
    }
  }
  *state = f;
  return 0;
fail:;
  int err = errno;
  if (f->fd >= 0) close(f->fd);
  free(f);
  return -err;
}

/* Moves all of len bytes, through short transfers. */
static int full_io(int fd, enum bench_dir dir, int64_t off, unsigned char *buf,
                   int64_t len) {
  while (len > 0) {
    size_t n = len > BENCH_GIB ? (size_t)BENCH_GIB : (size_t)len;
    ssize_t got = dir == BENCH_WRITE ? pwrite(fd, buf, n, off) : pread(fd, buf, n, off);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -errno;
    if (got == 0) return -ENODATA; /* read past the end of the file */
    off += got;
    buf += got;
    len -= got;
  }
  return 0;
}

/* The aligned middle, with O_DIRECT; memory that is not aligned goes
 * through the bounce buffer. */
static int direct_io(struct posix_file *f, enum bench_dir dir, int64_t off,
                     unsigned char *buf, int64_t len) {
  if (((uintptr_t)buf % BENCH_DIRECT_ALIGN) == 0) return full_io(f->dfd, dir, off, buf, len);
  while (len > 0) {
    int64_t n = len < BOUNCE_BYTES ? len : BOUNCE_BYTES;
    if (dir == BENCH_WRITE) memcpy(f->bounce, buf, (size_t)n);
    int rc = full_io(f->dfd, dir, off, f->bounce, n);
    if (rc) return rc;
    if (dir == BENCH_READ) memcpy(buf, f->bounce, (size_t)n);
    off += n;
    buf += n;
    len -= n;
  }
  return 0;
}

static int posix_xfer(void *state, enum bench_dir dir, int64_t off, void *vbuf,
                      int64_t len) {
  struct posix_file *f = state;
  unsigned char *buf = vbuf;
  if (f->dfd < 0) return full_io(f->fd, dir, off, buf, len);
  int64_t head = (BENCH_DIRECT_ALIGN - off % BENCH_DIRECT_ALIGN) % BENCH_DIRECT_ALIGN;
  if (head > len) head = len;
  int64_t mid = (len - head) / BENCH_DIRECT_ALIGN * BENCH_DIRECT_ALIGN;
  int rc = 0;
  if (head) rc = full_io(f->fd, dir, off, buf, head);
  if (!rc && mid) rc = direct_io(f, dir, off + head, buf + head, mid);
  if (!rc && len - head - mid)
    rc = full_io(f->fd, dir, off + head + mid, buf + head + mid, len - head - mid);
  return rc;
}

static int posix_sync(void *state) {
  struct posix_file *f = state;
  return fsync(f->fd) ? -errno : 0;
}

static int posix_close(void *state) {
  struct posix_file *f = state;
  int rc = close(f->fd) ? -errno : 0;
  if (f->dfd >= 0 && close(f->dfd) && !rc) rc = -errno;
  free(f->bounce);
  free(f);
  return rc;
}

static int posix_remove(const char *path) {
  return unlink(path) && errno != ENOENT ? -errno : 0;
}

static const char *posix_error(int code) { return strerror(-code); }

const struct bench_backend bench_backend_posix = {
    .name = "POSIX",
    .open = posix_open,
    .set_view = NULL, /* no file views: -c is for the MPI back ends */
    .xfer = posix_xfer,
    .sync = posix_sync,
    .close = posix_close,
    .remove = posix_remove,
    .info = NULL,
    .error = posix_error,
};
