/*
 * stage_dir.c - a stage directory on disk (stage_dir.h, docs/staging.md):
 * its lock, manifest and tidying, and the replay of what other sessions
 * left staged in it.  The stage back end (storage_stage.c) writes and
 * moves this process's own records; what touches the directory as a
 * whole, or another process's files, is here.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <spawn.h>
#include <sys/file.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#include "stage_dir.h"
#include "stage_format.h"

/* ---- whole transfers on a descriptor ------------------------------------------- */

int aggio__stage_put_all(int fd, const void *vbuf, int64_t len, int64_t off) {
  const char *buf = vbuf;
  while (len > 0) {
    ssize_t w = pwrite(fd, buf, (size_t)(len < (1 << 30) ? len : 1 << 30), (off_t)off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return w < 0 ? errno : ENOSPC;
    buf += w, off += w, len -= w;
  }
  return 0;
}

int aggio__stage_get_all(int fd, void *vbuf, int64_t len, int64_t off) {
  char *buf = vbuf;
  while (len > 0) {
    ssize_t r = pread(fd, buf, (size_t)(len < (1 << 30) ? len : 1 << 30), (off_t)off);
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      return r < 0 ? errno : EIO; /* a staged byte is missing: the stage was cut */
    buf += r, off += r, len -= r;
  }
  return 0;
}

#define PROGRESS_EVERY 0.25 /* seconds between updates of a .drained */

void aggio__stage_put_drained(int fd, double *noted, int force, int64_t records,
                              int64_t bytes, double started) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  double now = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
  if (fd < 0 || (!force && now - *noted < PROGRESS_EVERY))
    return;
  *noted = now;
  struct aggio__stage_drained d = {(uint64_t)records, (uint64_t)bytes, started, now};
  unsigned char b[AGGIO_STAGE_DRAINED];
  aggio__stage_drained_encode(&d, b);
  (void)aggio__stage_put_all(fd, b, sizeof b, 0);
}

/* ---- the stage directory ------------------------------------------------------- */

/* mkdir -p, each level 0700: the stage holds the program's data. */
int aggio__stage_make_dirs(const char *path) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1;; s++) {
    if (*s != '/' && *s != '\0')
      continue;
    char c = *s;
    *s = '\0';
    if (mkdir(p, 0700) != 0 && errno != EEXIST)
      return errno;
    *s = c;
    if (c == '\0')
      return 0;
  }
}

/* The directory's lock (docs/staging.md), held exclusively: -1 on failure
 * (errno ENOENT: the directory is gone).  A lock file the last writer out
 * removed while this one waited for it locks nothing: taken again. */
int aggio__stage_lock(const char *dir) {
  char p[PATH_MAX];
  if (snprintf(p, sizeof p, "%s/lock", dir) >= (int)sizeof p) {
    errno = ENAMETOOLONG;
    return -1;
  }
  for (;;) {
    int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0)
      return -1;
    int rc;
    while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR)
      ;
    struct stat sb;
    if (rc == 0 && fstat(fd, &sb) == 0 && sb.st_nlink > 0)
      return fd;
    int err = errno;
    close(fd);
    if (rc != 0) {
      errno = err;
      return -1;
    }
  }
}

void aggio__stage_unlock(int fd) {
  if (fd >= 0)
    close(fd); /* gives the flock back */
}

/* Writes the manifest unless there is one: a temporary file renamed into
 * place, so a reader never sees half of it. */
int aggio__stage_write_manifest(const char *dir, const char *abs) {
  char p[PATH_MAX], tmp[PATH_MAX + 32], text[PATH_MAX + 512];
  snprintf(p, sizeof p, "%s/manifest", dir);
  if (access(p, F_OK) == 0)
    return 0;
  if (aggio__stage_manifest_text(abs, text, sizeof text) != 0)
    return ENAMETOOLONG;
  snprintf(tmp, sizeof tmp, "%s.%d.tmp", p, (int)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0)
    return errno;
  int rc = aggio__stage_put_all(fd, text, (int64_t)strlen(text), 0);
  close(fd);
  if (rc == 0 && rename(tmp, p) != 0)
    rc = errno;
  if (rc != 0)
    unlink(tmp);
  return rc;
}

/* Whether any writer's index is left in dir. */
static int has_index(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *ent;
  char session[17];
  int rank, any = 0;
  while (!any && (ent = readdir(d)))
    any = aggio__stage_index_name(ent->d_name, session, &rank) == 0;
  closedir(d);
  return any;
}

/* The last writer out removes the manifest, the lock and the directory.
 * The lock held, so that no writer is making its files meanwhile. */
static void tidy_locked(const char *dir) {
  if (has_index(dir))
    return;
  char p[PATH_MAX + 16];
  snprintf(p, sizeof p, "%s/manifest", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/lock", dir);
  unlink(p);
  rmdir(dir); /* fails, harmlessly, when something else is in it */
}

void aggio__stage_tidy(const char *dir) {
  int lk = aggio__stage_lock(dir);
  if (lk < 0)
    return;
  tidy_locked(dir);
  aggio__stage_unlock(lk);
}

/* ---- replaying a stage left behind --------------------------------------------- */

struct replay_rec {
  char session[17];
  int rank, writer;
  struct aggio__stage_rec r;
};

struct writer {
  char session[17];
  int rank;
  int data_fd;
  int64_t data_size;
  char index[PATH_MAX];
};

static int replay_order(const void *a, const void *b) {
  const struct replay_rec *x = a, *y = b;
  int c = strcmp(x->session, y->session);
  return c ? c : aggio__stage_rec_older(&x->r, x->rank, &y->r, y->rank);
}

/* A writer's valid records appended to *list. */
static int read_index(struct writer *w, int wi, struct replay_rec **list, int64_t *n,
                      int64_t *cap) {
  int fd = open(w->index, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return errno;
  unsigned char b[AGGIO_STAGE_REC];
  for (uint64_t seq = 0;; seq++) {
    int64_t at = (int64_t)(seq * AGGIO_STAGE_REC);
    if (aggio__stage_get_all(fd, b, AGGIO_STAGE_REC, at) != 0)
      break; /* the end, or a record cut short */
    struct aggio__stage_rec r;
    if (aggio__stage_rec_decode(b, seq, w->data_size, &r) != 0)
      continue;
    if (*n == *cap) {
      int64_t c = *cap ? 2 * *cap : 1024;
      struct replay_rec *l = realloc(*list, (size_t)c * sizeof *l);
      if (!l) {
        close(fd);
        return ENOMEM;
      }
      *list = l, *cap = c;
    }
    struct replay_rec *x = &(*list)[(*n)++];
    memcpy(x->session, w->session, 17);
    x->rank = w->rank, x->writer = wi, x->r = r;
  }
  close(fd);
  return 0;
}

/* The writers in dir other than session `mine` ("" for all). */
int aggio__stage_hold_live(int index_fd) {
  while (flock(index_fd, LOCK_SH) != 0)
    if (errno != EINTR)
      return errno;
  return 0;
}

/* Whether a process has the writer's files open (its shared lock on the
 * index): another group of ranks may have the same file open now, with a
 * session of its own, and its writers' records are not leftovers. */
static int is_live(const char *index) {
  int fd = open(index, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  int rc;
  while ((rc = flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR)
    ;
  int live = rc != 0 && errno == EWOULDBLOCK;
  close(fd); /* gives the probe's lock back */
  return live;
}

static int list_writers(const char *dir, const char *mine, struct writer **out,
                        int *count) {
  DIR *d = opendir(dir);
  if (!d)
    return errno == ENOENT ? 0 : errno;
  struct dirent *ent;
  int n = 0, cap = 0, rc = 0;
  struct writer *w = NULL;
  while (rc == 0 && (ent = readdir(d))) {
    char session[17];
    int rank;
    char index[PATH_MAX];
    if (aggio__stage_index_name(ent->d_name, session, &rank) != 0 ||
        !strcmp(session, mine) ||
        snprintf(index, sizeof index, "%s/%s", dir, ent->d_name) >= (int)sizeof index ||
        is_live(index))
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 16;
      struct writer *x = realloc(w, (size_t)cap * sizeof *x);
      if (!x) {
        rc = ENOMEM;
        break;
      }
      w = x;
    }
    struct writer *x = &w[n++];
    memcpy(x->session, session, 17);
    x->rank = rank;
    x->data_fd = -1;
    x->data_size = 0;
    memcpy(x->index, index, sizeof x->index);
  }
  closedir(d);
  *out = w, *count = n;
  return rc;
}

static void writer_paths(const char *dir, const struct writer *w, char data[PATH_MAX],
                         char drained[PATH_MAX]) {
  aggio__stage_writer_path(dir, w->session, w->rank, "data", data, PATH_MAX);
  aggio__stage_writer_path(dir, w->session, w->rank, "drained", drained, PATH_MAX);
}

/* One record's bytes from its writer's .data to the final file, its CRC
 * checked (a record whose bytes do not match was torn: skipped). */
static int replay_one(const struct replay_rec *x, struct writer *w, int final_fd,
                      char *buf) {
  uint32_t crc = 0;
  int64_t len = (int64_t)x->r.length;
  for (int64_t done = 0; x->r.has_data_crc && done < len;) {
    int64_t n = len - done < AGGIO_STAGE_MOVE_MAX ? len - done : AGGIO_STAGE_MOVE_MAX;
    if (aggio__stage_get_all(w->data_fd, buf, n, (int64_t)x->r.data_off + done) != 0)
      return 0;
    crc = aggio__crc32(crc, buf, (size_t)n);
    done += n;
  }
  if (x->r.has_data_crc && crc != x->r.data_crc)
    return 0;
  for (int64_t done = 0; done < len;) {
    int64_t n = len - done < AGGIO_STAGE_MOVE_MAX ? len - done : AGGIO_STAGE_MOVE_MAX;
    int rc = aggio__stage_get_all(w->data_fd, buf, n, (int64_t)x->r.data_off + done);
    if (rc == 0)
      rc = aggio__stage_put_all(final_fd, buf, n, (int64_t)x->r.offset + done);
    if (rc != 0)
      return rc;
    done += n;
  }
  return 0;
}

/* Every valid record of writers in the final file, in the replay's order. */
static int replay_records(const char *dir, const char *final, struct writer *w, int nw) {
  struct replay_rec *list = NULL;
  int64_t n = 0, cap = 0;
  int rc = 0;
  for (int i = 0; i < nw && rc == 0; i++) {
    char data[PATH_MAX], drained[PATH_MAX];
    writer_paths(dir, &w[i], data, drained);
    w[i].data_fd = open(data, O_RDONLY | O_CLOEXEC);
    struct stat sb;
    w[i].data_size = w[i].data_fd >= 0 && fstat(w[i].data_fd, &sb) == 0 ? sb.st_size : 0;
    rc = read_index(&w[i], i, &list, &n, &cap);
  }
  qsort(list, (size_t)n, sizeof *list, replay_order);
  char *buf = n ? malloc(AGGIO_STAGE_MOVE_MAX) : NULL;
  int fd = rc == 0 && n ? open(final, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
  if (rc == 0 && n && (!buf || fd < 0))
    rc = !buf ? ENOMEM : errno;
  for (int64_t i = 0; i < n && rc == 0; i++)
    if (w[list[i].writer].data_fd >= 0)
      rc = replay_one(&list[i], &w[list[i].writer], fd, buf);
  if (fd >= 0 && rc == 0 && fsync(fd) != 0)
    rc = errno;
  if (fd >= 0)
    close(fd);
  free(buf);
  free(list);
  for (int i = 0; i < nw; i++)
    if (w[i].data_fd >= 0)
      close(w[i].data_fd);
  return rc;
}

/* Replays the writers of dir other than session `mine` into final, then
 * removes their files: what a killed job, or aggio_stage_drain=none,
 * left behind.  Under the directory's lock.  0, or an errno value. */
int aggio__stage_replay(const char *dir, const char *final, const char *mine) {
  struct stat sb;
  if (stat(dir, &sb) != 0)
    return 0;
  int lk = aggio__stage_lock(dir);
  if (lk < 0)
    return errno == ENOENT ? 0 : errno ? errno : EIO; /* another rank replayed it all */
  struct writer *w = NULL;
  int nw = 0;
  int rc = list_writers(dir, mine, &w, &nw);
  if (rc == 0 && nw > 0)
    rc = replay_records(dir, final, w, nw);
  for (int i = 0; rc == 0 && i < nw; i++) {
    char data[PATH_MAX], drained[PATH_MAX];
    writer_paths(dir, &w[i], data, drained);
    unlink(data);
    unlink(drained);
    unlink(w[i].index);
  }
  free(w);
  if (rc == 0)
    tidy_locked(dir);
  aggio__stage_unlock(lk);
  return rc;
}

int aggio__stage_absolute(const char *path, char *out, size_t len) {
  char a[PATH_MAX], b[PATH_MAX], dir[PATH_MAX];
  snprintf(a, sizeof a, "%s", path);
  snprintf(b, sizeof b, "%s", path);
  if (!realpath(dirname(a), dir))
    return errno;
  int n = snprintf(out, len, "%s/%s", strcmp(dir, "/") ? dir : "", basename(b));
  return n < 0 || (size_t)n >= len ? ENAMETOOLONG : 0;
}

/* The environment without LD_PRELOAD (aggio-run's library would load the
 * MPI library into the drainer); malloc'ed, or NULL. */
static char **environment_for_drainer(void) {
  size_t n = 0;
  while (environ && environ[n])
    n++;
  char **env = malloc((n + 1) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; env && i < n; i++)
    if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
      env[k++] = environ[i];
  if (env)
    env[k] = NULL;
  return env;
}

int aggio__stage_spawn_drainer(const char *drainer, const char *dir, const char *log) {
  if (access(drainer, X_OK) != 0)
    return errno;
  char **env = environment_for_drainer();
  if (!env)
    return ENOMEM;
  char *argv[] = {(char *)drainer, "--detach", "--log", (char *)log, (char *)dir, NULL};
  pid_t pid;
  int rc = posix_spawn(&pid, drainer, NULL, NULL, argv, env);
  free(env);
  if (rc != 0)
    return rc;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return errno;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : ECHILD;
}

/* Removes dir's files, whatever session wrote them, and dir: under the
 * lock, so that a drainer still replaying it (aggio_stage_drain=detach)
 * finishes first and cannot bring the deleted file back. */
void aggio__stage_remove_dir(const char *dir) {
  int lk = aggio__stage_lock(dir);
  DIR *d = opendir(dir);
  if (!d) {
    aggio__stage_unlock(lk);
    return;
  }
  struct dirent *ent;
  char p[PATH_MAX + 256];
  while ((ent = readdir(d)))
    if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", dir, ent->d_name);
      unlink(p);
    }
  closedir(d);
  rmdir(dir);
  aggio__stage_unlock(lk);
}

void aggio__stage_remove(const char *stage_dir, const char *path) {
  char abs[PATH_MAX], dir[PATH_MAX];
  if (aggio__stage_absolute(path, abs, sizeof abs) == 0 &&
      aggio__stage_dir_of(stage_dir, abs, dir, sizeof dir) == 0)
    aggio__stage_remove_dir(dir);
}
