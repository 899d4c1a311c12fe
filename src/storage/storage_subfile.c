/*
 * storage_subfile.c - the subfiling back end (storage.h, docs/subfiling.md):
 * one logical file stored as M subfiles beside a small layout file at the
 * logical name.  Every transfer is cut at stripe boundaries and each piece
 * goes to its subfile through a child store of the subfiles' own back end
 * (st->subfile_ops): POSIX, so direct I/O, short transfers, faults and
 * the counters work as for an ordinary file; or null (aggio_storage=null,
 * the SimGrid build), where the layout is made in memory on every rank and
 * nothing is written or read on disk.  The mapping is src/plan/subfile_map.c.
 *
 * Chosen by the core (file.c) when aggio_subfiles asks for a new subfiled
 * file, or when the file at the name is a layout (any reader, any hints).
 * The logical size is never stored: it is derived from the subfiles' sizes
 * (a crash cannot make the layout and the data disagree).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "storage.h"
#include "subfile_map.h"

#define LAYOUT_MAX (16 << 20) /* a layout of 65536 subfiles is under 8 MiB */

extern const struct aggio__storage_ops aggio__storage_posix;

struct subfiles {
  struct aggio__subfile_map map;
  struct aggio__store *child; /* map.count stores, one per subfile, each
                               * calling its own ops (st->subfile_ops) */
  char *written;              /* [map.count]: this rank wrote to it (statistics) */
  int64_t read_end;           /* where the last large read ended (read-ahead) */
  int layout_fd;              /* the layout, for atomic mode's locks; -1 */
};

static struct subfiles *sf(struct aggio__store *st) { return st->state; }

/* Only POSIX subfiles have a layout file and subfiles on disk; null ones
 * (aggio_storage=null) have a layout in memory and nothing else. */
static int on_disk(const struct aggio__store *st) {
  return st->subfile_ops == &aggio__storage_posix;
}

/* ---- the layout ------------------------------------------------------------------- */

/* The whole file at path in a malloc'd NUL-terminated string (up to max
 * bytes), or NULL with errno set. */
static char *read_text(const char *path, size_t max) {
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return NULL;
  char *t = malloc(max + 1);
  size_t n = 0;
  ssize_t r = 0;
  while (t && n < max && (r = read(fd, t + n, max - n)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    n += (size_t)r;
  }
  int err = errno;
  close(fd);
  if (!t || r < 0) {
    free(t);
    errno = t ? err : ENOMEM;
    return NULL;
  }
  t[n] = '\0';
  return t;
}

int aggio__subfile_detect(const char *path) {
  char head[64] = "";
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return 0;
  ssize_t r = pread(fd, head, sizeof head - 1, 0);
  close(fd);
  head[r > 0 ? r : 0] = '\0';
  return aggio__subfile_is_layout(head);
}

/* The directory of path ("." for a bare name) and its last component. */
static void split_path(const char *path, char *dir, char *base, size_t len) {
  char a[4096], b[4096];
  snprintf(a, sizeof a, "%s", path);
  snprintf(b, sizeof b, "%s", path);
  snprintf(dir, len, "%s", dirname(a));
  snprintf(base, len, "%s", basename(b));
}

/* ---- the children -------------------------------------------------------------- */

/* Child k: a store of subfile `name` in dir, of the subfiles' back end,
 * seeing what the parent sees (statistics, faults, messages). */
static int child_init(struct aggio__store *st, struct aggio__store *c, const char *dir,
                      const char *name) {
  *c = *st;
  c->ops = st->subfile_ops;
  c->state = NULL;
  c->opened = 0;
  size_t n = strlen(dir) + strlen(name) + 2;
  char *p = malloc(n);
  if (!p)
    return -1;
  snprintf(p, n, "%s/%s", dir, name);
  c->path = p;
  return 0;
}

static struct aggio__store *child(struct aggio__store *st, int k) { return &sf(st)->child[k]; }

/* What the core learns after the open (alignment, direct I/O's unit) is
 * set on the parent; each child follows it (before any I/O thread reads
 * them: the core calls this from open and set_info). */
static void sf_configured(struct aggio__store *st) {
  for (int k = 0; sf(st) && k < sf(st)->map.count; k++) {
    struct aggio__store *c = child(st, k);
    c->block = st->block;
    c->dio_align = st->dio_align;
    c->align_unit = st->align_unit;
  }
}

static void children_free(struct subfiles *s) {
  for (int k = 0; s->child && k < s->map.count; k++) {
    if (s->child[k].state)
      s->child[k].ops->release(&s->child[k]);
    free((char *)s->child[k].path);
  }
  free(s->child);
  s->child = NULL;
  free(s->written);
  s->written = NULL;
}

/* The state for a parsed layout: children made, none opened. */
static struct subfiles *state_for(struct aggio__store *st, const char *text,
                                  struct aggio__err *e) {
  char dir[4096], base[4096], msg[256] = "", **names = NULL;
  struct subfiles *s = calloc(1, sizeof *s);
  if (!s) {
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
    return NULL;
  }
  s->layout_fd = -1;
  if (aggio__subfile_layout_parse(text, &s->map, &names, msg, sizeof msg) != 0) {
    aggio__fail(e, AGGIO_ERR_IO, "rank %d: %s: %s", st->rank, st->path, msg);
    free(s);
    return NULL;
  }
  split_path(st->path, dir, base, sizeof dir);
  s->child = calloc((size_t)s->map.count, sizeof *s->child);
  s->written = calloc((size_t)s->map.count, 1);
  int bad = !s->child || !s->written;
  for (int k = 0; !bad && k < s->map.count; k++)
    bad = child_init(st, &s->child[k], dir, names[k]) != 0;
  aggio__subfile_names_free(names, s->map.count);
  if (bad) {
    children_free(s);
    free(s);
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
    return NULL;
  }
  return s;
}

/* ---- opening ------------------------------------------------------------------ */

/* The text of a new layout from the hints (st->subfiles, st->subfile_stripe). */
static char *new_layout(struct aggio__store *st, struct aggio__err *e) {
  char dir[4096], base[4096];
  split_path(st->path, dir, base, sizeof dir);
  struct aggio__subfile_map m = {st->subfile_stripe, st->subfiles};
  char *text = aggio__subfile_layout_text(&m, base);
  if (!text)
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
  return text;
}

/* A new layout at st->path (MPI_MODE_EXCL honoured by its creation), then
 * its subfiles, emptied: bytes of an older layout's subfiles of the same
 * names must not show through. */
static char *create_layout(struct aggio__store *st, int *fd, struct aggio__err *e) {
  char *text = new_layout(st, e);
  if (!text)
    return NULL;
  *fd = open(st->path, O_RDWR | O_CREAT | O_TRUNC | ((st->amode & MPI_MODE_EXCL) ? O_EXCL : 0),
             0666);
  if (*fd < 0) {
    aggio__fail(e, aggio__errno_code(errno), "rank %d: open(%s): %s", st->rank, st->path,
                strerror(errno));
    free(text);
    return NULL;
  }
  return text;
}

/* The layout's text written and made durable once its subfiles exist. */
static int write_layout(struct aggio__store *st, int fd, const char *text, struct aggio__err *e) {
  size_t n = strlen(text), done = 0;
  while (done < n) {
    ssize_t w = pwrite(fd, text + done, n - done, (off_t)done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return aggio__fail(e, aggio__errno_code(w < 0 ? errno : ENOSPC),
                         "rank %d: writing the layout %s: %s", st->rank, st->path,
                         strerror(w < 0 ? errno : ENOSPC));
    done += (size_t)w;
  }
  if (fsync(fd) != 0)
    return aggio__fail(e, AGGIO_ERR_IO, "rank %d: fsync(%s): %s", st->rank, st->path,
                       strerror(errno));
  return 0;
}

/* Opens (create: creates and empties) every subfile. */
static int open_children(struct aggio__store *st, int create, struct aggio__err *e) {
  struct subfiles *s = sf(st);
  for (int k = 0; k < s->map.count; k++) {
    struct aggio__store *c = child(st, k);
    if (c->ops->open(c, create, e) != 0)
      return e->code;
    if (create && c->ops->truncate(c, 0, e) != 0)
      return e->code;
  }
  return 0;
}

/* A new layout that could not be made whole leaves nothing behind: no
 * empty layout at the name, no subfiles. */
static void undo_create(struct aggio__store *st) {
  struct subfiles *s = sf(st);
  for (int k = 0; s && k < s->map.count; k++) {
    if (s->child[k].state)
      s->child[k].ops->release(&s->child[k]);
    if (s->child[k].opened)
      unlink(s->child[k].path);
  }
  unlink(st->path);
}

/* Null subfiles: every rank makes the same layout from the hints and
 * opens its null stores; the disk is never touched. */
static int open_in_memory(struct aggio__store *st, struct aggio__err *e) {
  char *text = new_layout(st, e);
  if (!text)
    return e->code;
  st->state = state_for(st, text, e);
  free(text);
  if (st->state && open_children(st, 0, e) == 0)
    st->opened = 1;
  return e->code;
}

/* Rank 0 with create: an existing layout is opened as it is (MPI_MODE_CREATE
 * keeps a file's data); else a new one is made.  Others open what is
 * there. */
static int sf_open(struct aggio__store *st, int create, struct aggio__err *e) {
  if (!on_disk(st))
    return open_in_memory(st, e);
  int fd = -1, fresh = create && (st->amode & MPI_MODE_CREATE) &&
                       ((st->amode & MPI_MODE_EXCL) || !aggio__subfile_detect(st->path));
  char *text = fresh ? create_layout(st, &fd, e) : read_text(st->path, LAYOUT_MAX);
  if (!text && e->code == 0)
    return aggio__fail(e, aggio__errno_code(errno), "rank %d: reading the layout %s: %s",
                       st->rank, st->path, strerror(errno));
  if (!text)
    return e->code;
  st->state = state_for(st, text, e);
  if (st->state && open_children(st, fresh, e) == 0 && fresh)
    write_layout(st, fd, text, e);
  free(text);
  if (fresh && e->code != 0)
    undo_create(st);
  if (fd < 0 && st->state && e->code == 0)
    fd = open(st->path, (st->amode & MPI_MODE_RDONLY) ? O_RDONLY : O_RDWR);
  if (st->state)
    sf(st)->layout_fd = fd;
  else if (fd >= 0)
    close(fd);
  if (e->code == 0)
    st->opened = 1;
  return e->code;
}

/* The file system is that of the subfiles (they sit beside the layout);
 * the layout's geometry goes to every rank with it (two-phase fits its
 * file domains to the subfiles). */
static void sf_probe(struct aggio__store *st, struct aggio__fs_info *fi) {
  child(st, 0)->ops->probe(child(st, 0), fi);
  fi->subfiles = sf(st)->map.count;
  fi->subfile_stripe = sf(st)->map.stripe;
}

static void sf_open_direct(struct aggio__store *st) {
  int on = 1;
  sf_configured(st);
  for (int k = 0; k < sf(st)->map.count; k++) {
    struct aggio__store *c = child(st, k);
    c->ops->open_direct(c);
    on &= c->dio == AGGIO_DIO_ON;
  }
  st->dio = on ? AGGIO_DIO_ON : AGGIO_DIO_OFF;
}

static int sf_close(struct aggio__store *st, struct aggio__err *e) {
  struct subfiles *s = sf(st);
  if (!s)
    return 0;
  for (int k = 0; k < s->map.count; k++)
    s->child[k].ops->close(&s->child[k], e); /* the first error stays */
  if (s->layout_fd >= 0)
    close(s->layout_fd);
  s->layout_fd = -1;
  return e->code;
}

static void sf_release(struct aggio__store *st) {
  struct subfiles *s = sf(st);
  if (!s)
    return;
  if (s->layout_fd >= 0)
    close(s->layout_fd);
  children_free(s);
  free(s);
  st->state = NULL;
}

/* ---- transfers ------------------------------------------------------------------ */

/* The first write of this rank to subfile k counts one writer of it: the
 * sum over ranks says whether subfiles were shared (I/O threads write
 * too, hence the atomic exchange). */
static void note_writer(struct aggio__store *st, int k) {
  char one = 1, was;
  __atomic_exchange(&sf(st)->written[k], &one, &was, __ATOMIC_RELAXED);
  if (!was)
    aggio__obs_count(st->obs, AGGIO_C_SUBFILE_WRITERS, 1);
}

static int sf_pwrite(struct aggio__store *st, const void *vbuf, int64_t len, int64_t off,
                     int flags, struct aggio__err *e) {
  const char *buf = vbuf;
  while (len > 0) {
    int k;
    int64_t sub_off, n;
    aggio__subfile_piece(&sf(st)->map, off, len, &k, &sub_off, &n);
    struct aggio__store *c = child(st, k);
    if (c->ops->pwrite(c, buf, n, sub_off, flags, e) != 0)
      return e->code;
    note_writer(st, k);
    buf += n, off += n, len -= n;
  }
  return 0;
}

static int sf_size(struct aggio__store *st, int64_t *size, struct aggio__err *e);

/* Read-ahead over the subfiles: one process reading a subfiled file reads
 * one stripe at a time, one subfile after the other, each read waiting for
 * the device, where as many processes (file per process) would keep one
 * read per file in flight.  So a large buffered read first asks for its
 * own range in every subfile it touches, and, when it goes on from where
 * the last read ended (within a row of stripes), for what lies ahead too:
 * the next row, at most 4 times the read (a strided reader fetches at
 * most that much it will not use) and 32 MiB; the kernel reads them
 * together.  Not for reads that may go direct (they bypass the page
 * cache), nor small ones (the kernel's own read-ahead does those). */
#define PREFETCH_MIN (256 << 10)
#define PREFETCH_AHEAD_MAX (32 << 20)

static void prefetch(struct aggio__store *st, int64_t off, int64_t len, int flags) {
  struct subfiles *s = sf(st);
  const struct aggio__subfile_map *m = &s->map;
  if (len < PREFETCH_MIN || (flags & AGGIO_IO_DIRECT_OK))
    return;
  int64_t row = m->stripe * m->count, last = __atomic_load_n(&s->read_end, __ATOMIC_RELAXED);
  int64_t ahead = off >= last && off - last <= row ? row : 0;
  ahead = ahead < 4 * len ? ahead : 4 * len;
  ahead = ahead < PREFETCH_AHEAD_MAX ? ahead : PREFETCH_AHEAD_MAX;
  int64_t a = off, b = off + len > INT64_MAX - ahead ? INT64_MAX : off + len + ahead;
  /* subfile k holds [share(k, a), share(k, b)) of the logical [a, b) */
  int most = (b - a) / m->stripe + 2 < m->count ? (int)((b - a) / m->stripe + 2) : m->count;
  int k0 = (int)((a / m->stripe) % m->count);
  for (int i = 0; i < most; i++) {
    int k = (k0 + i) % m->count;
    struct aggio__store *c = child(st, k);
    int64_t lo = aggio__subfile_share(m, k, a), hi = aggio__subfile_share(m, k, b);
    if (c->ops->prefetch && hi > lo)
      c->ops->prefetch(c, lo, hi - lo);
  }
  __atomic_store_n(&s->read_end, off + len, __ATOMIC_RELAXED);
}

/* A subfile shorter than a piece: a hole up to the logical size, or the
 * logical end of file.  The pieces read short are zero-filled; *got is
 * what lies before the logical size. */
static int sf_pread(struct aggio__store *st, void *vbuf, int64_t len, int64_t off,
                    int64_t *got, int flags, struct aggio__err *e) {
  char *buf = vbuf;
  int64_t pos = 0;
  prefetch(st, off, len, flags);
  int shortened = 0;
  while (pos < len) {
    int k;
    int64_t sub_off, n, g = 0;
    aggio__subfile_piece(&sf(st)->map, off + pos, len - pos, &k, &sub_off, &n);
    struct aggio__store *c = child(st, k);
    if (c->ops->pread(c, buf + pos, n, sub_off, &g, flags, e) != 0)
      return e->code;
    if (g < n) {
      memset(buf + pos + g, 0, (size_t)(n - g));
      shortened = 1;
    }
    pos += n;
  }
  *got = len;
  if (shortened) {
    int64_t size = 0;
    if (sf_size(st, &size, e) != 0)
      return e->code;
    *got = size <= off ? 0 : size - off < len ? size - off : len;
  }
  return 0;
}

/* ---- the rest ------------------------------------------------------------------ */

static int sf_sync(struct aggio__store *st, struct aggio__err *e) {
  for (int k = 0; k < sf(st)->map.count; k++)
    child(st, k)->ops->sync(child(st, k), e); /* every subfile, the first error kept */
  return e->code;
}

/* The bytes of logical [off, off+len) in subfile k are its [share(off),
 * share(off+len)).  Null subfiles keep no page cache (no start_writeback). */
static void sf_start_writeback(struct aggio__store *st, int64_t off, int64_t len) {
  const struct aggio__subfile_map *m = &sf(st)->map;
  for (int k = 0; k < m->count; k++) {
    struct aggio__store *c = child(st, k);
    int64_t a = aggio__subfile_share(m, k, off), b = aggio__subfile_share(m, k, off + len);
    if (b > a && c->ops->start_writeback)
      c->ops->start_writeback(c, a, b - a);
  }
}

/* On a rank that did not open the file (romio_no_indep_rw), the layout
 * is read for the question; null subfiles it did not open hold nothing
 * this process wrote (a null store's size is its own process's). */
static int sf_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  struct subfiles *s = sf(st), *tmp = NULL;
  *size = 0;
  if (!s && !on_disk(st))
    return 0;
  if (!s) {
    char *text = read_text(st->path, LAYOUT_MAX);
    if (!text)
      return aggio__fail(e, aggio__errno_code(errno), "rank %d: reading the layout %s: %s",
                         st->rank, st->path, strerror(errno));
    s = tmp = state_for(st, text, e);
    free(text);
    if (!s)
      return e->code;
  }
  int64_t end = 0;
  for (int k = 0; k < s->map.count && e->code == 0; k++) {
    int64_t z = 0;
    if (s->child[k].ops->size(&s->child[k], &z, e) == 0) {
      int64_t x = aggio__subfile_logical_end(&s->map, k, z);
      end = x > end ? x : end;
    }
  }
  if (tmp) {
    children_free(tmp);
    free(tmp);
  }
  *size = end;
  return e->code;
}

static int sf_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  const struct aggio__subfile_map *m = &sf(st)->map;
  for (int k = 0; k < m->count; k++) {
    struct aggio__store *c = child(st, k);
    if (c->ops->truncate(c, aggio__subfile_share(m, k, size), e) != 0)
      return e->code;
  }
  return 0;
}

static int sf_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  const struct aggio__subfile_map *m = &sf(st)->map;
  for (int k = 0; k < m->count; k++) {
    struct aggio__store *c = child(st, k);
    if (c->ops->preallocate(c, aggio__subfile_share(m, k, size), e) != 0)
      return e->code;
  }
  return 0;
}

/* Atomic mode: record locks on the layout at logical offsets (a lock may
 * lie past a file's end), one lock per access as on an ordinary file.
 * Null subfiles store nothing, so there is nothing to order. */
static int sf_lock(struct aggio__store *st, int64_t off, int64_t len, int is_write,
                   struct aggio__err *e) {
  if (!on_disk(st))
    return 0;
  return aggio__storage_fcntl_lock(st, sf(st)->layout_fd, off, len, is_write, e);
}

static int sf_group_lock(struct aggio__store *st, long gid, int lock) {
  int rc = 0;
  for (int k = 0; k < sf(st)->map.count && rc == 0; k++) {
    struct aggio__store *c = child(st, k);
    rc = c->ops->group_lock ? c->ops->group_lock(c, gid, lock) : ENOTSUP;
  }
  return rc;
}

int aggio__subfile_remove(const char *path, struct aggio__err *e) {
  struct aggio__store st = {0};
  st.path = path;
  st.subfile_ops = &aggio__storage_posix;
  char *text = read_text(path, LAYOUT_MAX);
  struct subfiles *s = text ? state_for(&st, text, e) : NULL;
  free(text);
  for (int k = 0; s && k < s->map.count; k++)
    if (unlink(s->child[k].path) != 0 && errno != ENOENT && e->code == 0)
      aggio__fail(e, aggio__errno_code(errno), "unlink(%s): %s", s->child[k].path,
                  strerror(errno));
  if (s) {
    children_free(s);
    free(s);
  }
  if (unlink(path) != 0 && e->code == 0)
    aggio__fail(e, aggio__errno_code(errno), "unlink(%s): %s", path, strerror(errno));
  return e->code;
}

static int sf_remove(struct aggio__store *st, struct aggio__err *e) {
  return on_disk(st) ? aggio__subfile_remove(st->path, e) : 0; /* null: nothing there */
}

const struct aggio__storage_ops aggio__storage_subfile = {
    .name = "subfile",
    .open = sf_open,
    .probe = sf_probe,
    .open_direct = sf_open_direct,
    .close = sf_close,
    .group_lock = sf_group_lock,
    .pwrite = sf_pwrite,
    .pread = sf_pread,
    .sync = sf_sync,
    .start_writeback = sf_start_writeback,
    .size = sf_size,
    .truncate = sf_truncate,
    .preallocate = sf_preallocate,
    .lock = sf_lock,
    .remove = sf_remove,
    .release = sf_release,
    .configured = sf_configured,
};
