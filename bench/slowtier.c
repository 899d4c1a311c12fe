/*
 * slowtier.c - a slow shared tier for staging measurements (issue 28,
 * docs/bench.md "A slow tier"): a FUSE file system that passes every call
 * through to a directory of the local disk and holds each read and write
 * until a device of the given bandwidth would have moved it.
 *
 * Why: on a single machine the "slow" tier of a staging run is the local
 * disk behind the kernel's page cache, which absorbs a checkpoint at memory
 * speed and writes it back during the computation, so a direct run is
 * itself staged by the kernel.  A parallel file system's client cache is
 * bounded and its servers are shared; this tier has no write cache at all
 * (every open is FUSE direct I/O) and one device's bandwidth for all its
 * clients together, which is the other end of that range.
 *
 *   cc -O2 -Wall bench/slowtier.c $(pkg-config --cflags --libs fuse3) -lpthread \
 *      -o build/slowtier
 *   build/slowtier --backing=/var/tmp/slow-backing --mbps=200 /tmp/slow
 *   ... (files under /tmp/slow) ...
 *   fusermount3 -u /tmp/slow
 *
 * The device is one queue: a transfer starts when the one before it ended
 * (or now), takes len / bandwidth, and the calling thread sleeps until it
 * would end.  Benchmark tool: not built by CMake (libfuse3 is not one of
 * aggio's dependencies).
 */
#define FUSE_USE_VERSION 35
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <limits.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static struct options {
  const char *backing;
  int mbps;
} opt = {NULL, 200};

static const struct fuse_opt option_spec[] = {
    {"--backing=%s", offsetof(struct options, backing), 1},
    {"--mbps=%d", offsetof(struct options, mbps), 1},
    FUSE_OPT_END};

static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;
static double device_free_at; /* when the device's queue is empty (s) */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Holds the caller until the device would have moved len bytes. */
static void device_move(size_t len) {
  double need = (double)len / ((double)opt.mbps * 1e6);
  pthread_mutex_lock(&device_lock);
  double start = device_free_at > now_s() ? device_free_at : now_s();
  device_free_at = start + need;
  double end = device_free_at;
  pthread_mutex_unlock(&device_lock);
  double wait = end - now_s();
  if (wait > 0) {
    struct timespec t = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&t, NULL);
  }
}

static void backing_path(const char *path, char out[PATH_MAX]) {
  snprintf(out, PATH_MAX, "%s%s", opt.backing, path);
}

static int st_getattr(const char *path, struct stat *sb, struct fuse_file_info *fi) {
  if (fi)
    return fstat((int)fi->fh, sb) == 0 ? 0 : -errno;
  char p[PATH_MAX];
  backing_path(path, p);
  return lstat(p, sb) == 0 ? 0 : -errno;
}

static int st_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  char p[PATH_MAX];
  backing_path(path, p);
  DIR *d = opendir(p);
  if (!d)
    return -errno;
  struct dirent *e;
  while ((e = readdir(d)))
    fill(buf, e->d_name, NULL, 0, 0);
  closedir(d);
  return 0;
}

static int st_mkdir(const char *path, mode_t mode) {
  char p[PATH_MAX];
  backing_path(path, p);
  return mkdir(p, mode) == 0 ? 0 : -errno;
}

static int st_rmdir(const char *path) {
  char p[PATH_MAX];
  backing_path(path, p);
  return rmdir(p) == 0 ? 0 : -errno;
}

static int st_unlink(const char *path) {
  char p[PATH_MAX];
  backing_path(path, p);
  return unlink(p) == 0 ? 0 : -errno;
}

static int st_rename(const char *from, const char *to, unsigned int flags) {
  if (flags)
    return -EINVAL;
  char a[PATH_MAX], b[PATH_MAX];
  backing_path(from, a);
  backing_path(to, b);
  return rename(a, b) == 0 ? 0 : -errno;
}

static int st_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
  if (fi)
    return ftruncate((int)fi->fh, size) == 0 ? 0 : -errno;
  char p[PATH_MAX];
  backing_path(path, p);
  return truncate(p, size) == 0 ? 0 : -errno;
}

static int st_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  backing_path(path, p);
  return chmod(p, mode) == 0 ? 0 : -errno;
}

static int st_utimens(const char *path, const struct timespec tv[2],
                      struct fuse_file_info *fi) {
  (void)fi;
  char p[PATH_MAX];
  backing_path(path, p);
  return utimensat(AT_FDCWD, p, tv, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : -errno;
}

/* Every open is FUSE direct I/O: no page cache on this side, so nothing
 * is absorbed at memory speed.  O_DIRECT itself goes no further (the
 * backing directory's file system may refuse unaligned direct I/O). */
static int open_backing(const char *path, int flags, mode_t mode, struct fuse_file_info *fi) {
  char p[PATH_MAX];
  backing_path(path, p);
  int fd = open(p, flags & ~O_DIRECT, mode);
  if (fd < 0)
    return -errno;
  fi->fh = (uint64_t)fd;
  fi->direct_io = 1;
  return 0;
}

static int st_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
  return open_backing(path, fi->flags | O_CREAT, mode, fi);
}

static int st_open(const char *path, struct fuse_file_info *fi) {
  return open_backing(path, fi->flags, 0, fi);
}

static int st_read(const char *path, char *buf, size_t size, off_t off,
                   struct fuse_file_info *fi) {
  (void)path;
  ssize_t n = pread((int)fi->fh, buf, size, off);
  if (n < 0)
    return -errno;
  device_move((size_t)n);
  return (int)n;
}

static int st_write(const char *path, const char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  (void)path;
  device_move(size);
  ssize_t n = pwrite((int)fi->fh, buf, size, off);
  return n < 0 ? -errno : (int)n;
}

static int st_statfs(const char *path, struct statvfs *sv) {
  (void)path;
  return statvfs(opt.backing, sv) == 0 ? 0 : -errno;
}

static int st_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  close((int)fi->fh);
  return 0;
}

static int st_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
  (void)path;
  return (datasync ? fdatasync((int)fi->fh) : fsync((int)fi->fh)) == 0 ? 0 : -errno;
}

static void *st_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  cfg->direct_io = 1;
  cfg->attr_timeout = 0;  /* sizes change under several writers */
  cfg->entry_timeout = 0;
  return NULL;
}

static const struct fuse_operations ops = {
    .init = st_init,
    .getattr = st_getattr,
    .readdir = st_readdir,
    .mkdir = st_mkdir,
    .rmdir = st_rmdir,
    .unlink = st_unlink,
    .rename = st_rename,
    .truncate = st_truncate,
    .chmod = st_chmod,
    .utimens = st_utimens,
    .create = st_create,
    .open = st_open,
    .read = st_read,
    .write = st_write,
    .statfs = st_statfs,
    .release = st_release,
    .fsync = st_fsync,
};

int main(int argc, char **argv) {
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  if (fuse_opt_parse(&args, &opt, option_spec, NULL) != 0)
    return 1;
  if (!opt.backing || opt.mbps <= 0) {
    fprintf(stderr, "usage: slowtier --backing=DIR [--mbps=N] MOUNTPOINT [FUSE options]\n");
    return 2;
  }
  int rc = fuse_main(args.argc, args.argv, &ops, NULL);
  fuse_opt_free_args(&args);
  return rc;
}
