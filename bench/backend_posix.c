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

/* Moves len bytes, resuming after partial transfers (POSIX allows them);
 * returns the bytes moved (fewer only at the end of the file) or -errno. */
static int64_t full_io(int fd, enum bench_dir dir, int64_t off, unsigned char *buf,
                       int64_t len) {
  int64_t done = 0;
  while (done < len) {
    size_t n = (size_t)(len - done);
    ssize_t got = dir == BENCH_WRITE ? pwrite(fd, buf + done, n, off + done)
                                     : pread(fd, buf + done, n, off + done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return -errno;
    if (got == 0) break; /* read past the end of the file */
    done += got;
  }
  return done;
}

/* The aligned middle, with O_DIRECT; memory that is not aligned goes
 * through the bounce buffer.  Returns as full_io. */
static int64_t direct_io(struct posix_file *f, enum bench_dir dir, int64_t off,
                         unsigned char *buf, int64_t len) {
  if (((uintptr_t)buf % BENCH_DIRECT_ALIGN) == 0) return full_io(f->dfd, dir, off, buf, len);
  int64_t done = 0;
  while (done < len) {
    int64_t n = len - done < BOUNCE_BYTES ? len - done : BOUNCE_BYTES;
    if (dir == BENCH_WRITE) memcpy(f->bounce, buf + done, (size_t)n);
    int64_t got = full_io(f->dfd, dir, off + done, f->bounce, n);
    if (got < 0) return got;
    if (dir == BENCH_READ) memcpy(buf + done, f->bounce, (size_t)got);
    done += got;
    if (got < n) break;
  }
  return done;
}

/* The unaligned head and tail through the buffered descriptor, the aligned
 * middle through the O_DIRECT one (with -B). */
static int posix_xfer(void *state, enum bench_dir dir, int64_t off, void *vbuf, int len,
                      int64_t *moved) {
  struct posix_file *f = state;
  unsigned char *buf = vbuf;
  int64_t head = len, mid = 0;
  if (f->dfd >= 0) {
    head = (BENCH_DIRECT_ALIGN - off % BENCH_DIRECT_ALIGN) % BENCH_DIRECT_ALIGN;
    if (head > len) head = len;
    mid = (len - head) / BENCH_DIRECT_ALIGN * BENCH_DIRECT_ALIGN;
  }
  int64_t part[3] = {head, mid, len - head - mid};
  *moved = 0;
  for (int k = 0; k < 3; k++) {
    if (!part[k]) continue;
    int64_t got = k == 1 ? direct_io(f, dir, off + *moved, buf + *moved, part[k])
                         : full_io(f->fd, dir, off + *moved, buf + *moved, part[k]);
    if (got < 0) return (int)got;
    *moved += got;
    if (got < part[k]) break;
  }
  return 0;
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
