/*
 * storage_stage.c - the staging back end (storage.h, docs/staging.md): a
 * write lands in this rank's files of a node-local stage directory (its
 * bytes appended to <session>.<rank>.data, a checksummed record of where
 * they go to <session>.<rank>.index) and returns; movers, threads of this
 * process, copy the records in order to the final file, a store of
 * st->final_ops.  Reads read the final file and lay this rank's records
 * not moved yet over it.  Sync (aggio_stage_sync=final) and close wait for
 * the movers; a failure of theirs is kept and is the next flush's, sync's
 * or close's, and the records stay on disk for `aggio stage drain`.
 *
 * The directory as a whole (its lock and manifest, the replay of other
 * sessions' records) is stage_dir.c's.  With aggio_stage_merge=node a
 * rank has no movers of its own: those of its node's first process move
 * every rank's records of the node (stage_node.c), and the core tells
 * this back end when they have (aggio__stage_moved_all).
 *
 * Chosen by the core (core/staging.c) when aggio_stage_dir names a
 * directory; the core then writes through the independent strategy, so
 * that each byte's stage lies on its writer's node.
 *
 * Locking: one mutex per file guards the record list and the movers'
 * bookkeeping; the transfers themselves (appends, moves, overlay reads)
 * run outside it.  A record is taken by a mover only once its bytes and
 * its index record were written (ready), and never while an older record
 * over the same bytes is being moved, so the final file sees the writes
 * in their order.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "stage_dir.h"
#include "stage_format.h"
#include "stage_node.h"
#include "storage.h"

#define MOVERS_MAX 64

enum { REC_WRITING, REC_READY, REC_VOID }; /* a record's state; VOID: its write failed */

struct rec {
  int64_t offset, length, data_off;
  uint64_t calls, time_ns; /* its age (stage_format.h) */
  uint32_t epoch;
  char state;
  char moved;
};

struct stage {
  struct aggio__store final; /* the final file */
  char abs[PATH_MAX];        /* its absolute name */
  char dir[PATH_MAX];        /* its stage directory */
  char data_path[PATH_MAX], index_path[PATH_MAX], drained_path[PATH_MAX];
  int data_fd, index_fd, drained_fd; /* -1 until this rank's first staged write */
  pthread_mutex_t lock;
  pthread_cond_t cond;       /* a record became ready or moved, a mover stopped */
  struct rec *rec;           /* this rank's records since the files were made */
  int64_t nrec, cap, data_end;
  int64_t next;              /* the first record no mover took yet */
  int64_t moved_prefix;      /* records [0, moved_prefix) are all moved */
  int64_t moved_bytes;
  struct { int64_t lo, hi; } busy[MOVERS_MAX]; /* ranges movers write now */
  int nbusy;
  pthread_t mover[MOVERS_MAX];
  int nmovers, stop;
  int draining;              /* calls waiting for every record to move (with
                              * drain at_close or none, movers move only then) */
  int merged;                /* the node's movers move this rank's records
                              * (aggio_stage_merge=node): none of its own */
  struct aggio__stage_node *node; /* those movers, on the node's first process */
  int failed;                /* a mover failed: nothing more moves */
  struct aggio__err err;     /* its failure */
  uint32_t epoch;            /* syncs so far */
  int data_crc;              /* records carry their data's CRC (the hint, resolved) */
  double started, progress_at;
  double last_write;         /* when this rank's last staged write ended (wall) */
  uint64_t last_ns;          /* the newest record's time: records' times never go back */
};

static struct stage *sg(struct aggio__store *st) { return st->state; }

/* Movers move records while the program runs (not only when asked). */
static int background(const struct aggio__store *st) {
  return st->stage.drain == AGGIO_STAGE_BACKGROUND || st->stage.drain == AGGIO_STAGE_DETACH;
}

/* The wall clock in nanoseconds since 1970 (comparable across a node's
 * processes, and across nodes as far as their clocks agree). */
static uint64_t wall_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static double wall(void) { return 1e-9 * (double)wall_ns(); }

/* A new record's time: the clock, never before the last record's. */
static uint64_t age_now(uint64_t last) {
  uint64_t ns = wall_ns();
  return ns > last ? ns : last;
}

/* ---- this rank's stage files --------------------------------------------------- */

/* Made at this rank's first staged write: the directory, its manifest,
 * and this rank's three files, emptied. */
static int make_files(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  int rc = 0, lk = -1;
  for (int tries = 0; rc == 0 && lk < 0 && tries < 100; tries++) {
    rc = aggio__stage_make_dirs(s->dir);
    /* ENOENT: the last writer out removed the directory in between */
    if (rc == 0 && (lk = aggio__stage_lock(s->dir)) < 0 && errno != ENOENT)
      rc = errno ? errno : EIO;
  }
  if (rc == 0 && lk < 0)
    rc = ENOENT;
  if (rc == 0)
    rc = aggio__stage_write_manifest(s->dir, s->abs);
  int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC;
  if (rc == 0 && (s->data_fd = open(s->data_path, flags, 0600)) < 0)
    rc = errno;
  if (rc == 0 && (s->index_fd = open(s->index_path, flags, 0600)) < 0)
    rc = errno;
  if (rc == 0) /* before the directory's lock goes: no replay takes these files */
    rc = aggio__stage_hold_live(s->index_fd);
  if (rc == 0 && (s->drained_fd = open(s->drained_path, flags, 0600)) < 0)
    rc = errno;
  aggio__stage_unlock(lk);
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(rc), "rank %d: staging %s in %s: %s",
                       st->rank,
                       st->path, s->dir, strerror(rc));
  return 0;
}

static void close_files(struct stage *s) {
  int *fds[] = {&s->data_fd, &s->index_fd, &s->drained_fd};
  for (int i = 0; i < 3; i++) {
    if (*fds[i] >= 0)
      close(*fds[i]);
    *fds[i] = -1;
  }
}

/* Every record moved and the final file synced: this rank's files go,
 * and the next write starts new ones.  Lock held, no mover busy. */
static void forget_records(struct stage *s) {
  if (s->data_fd < 0)
    return;
  /* unlinked while still held live: a replay never sees them unheld */
  unlink(s->data_path);
  unlink(s->drained_path);
  unlink(s->index_path);
  close_files(s);
  s->nrec = s->next = s->moved_prefix = s->data_end = 0;
  aggio__stage_tidy(s->dir);
}

/* ---- the movers ---------------------------------------------------------------- */

static int overlaps_busy(const struct stage *s, int64_t lo, int64_t hi) {
  for (int i = 0; i < s->nbusy; i++)
    if (lo < s->busy[i].hi && s->busy[i].lo < hi)
      return 1;
  return 0;
}

/* Records [first, *end) a mover can take now: ready, none over bytes
 * another mover writes, those after the first continuing it in both files
 * (one transfer).  0 when the next record cannot be taken yet. */
static int64_t take(struct stage *s, int64_t first) {
  int64_t end = first, bytes = 0;
  while (end < s->nrec && bytes < AGGIO_STAGE_MOVE_MAX) {
    const struct rec *r = &s->rec[end];
    if (r->state == REC_WRITING || overlaps_busy(s, r->offset, r->offset + r->length))
      break;
    if (end > first && (r->state == REC_VOID || s->rec[end - 1].state == REC_VOID ||
                        r->offset != s->rec[end - 1].offset + s->rec[end - 1].length ||
                        r->data_off != s->rec[end - 1].data_off + s->rec[end - 1].length))
      break;
    bytes += r->length;
    end++;
  }
  return end;
}

/* Writes the records' bytes (one run in both files) to the final file. */
static int move_run(struct aggio__store *st, int64_t off, int64_t data_off, int64_t len,
                    char *buf, struct aggio__err *e) {
  struct stage *s = sg(st);
  for (int64_t done = 0; done < len;) {
    int64_t n = len - done < AGGIO_STAGE_MOVE_MAX ? len - done : AGGIO_STAGE_MOVE_MAX;
    int rc = aggio__stage_get_all(s->data_fd, buf, n, data_off + done);
    if (rc != 0)
      return aggio__fail(e, aggio__errno_code(rc), "rank %d: reading the stage %s: %s",
                         st->rank, s->data_path, strerror(rc));
    if (s->final.ops->pwrite(&s->final, buf, n, off + done,
                             AGGIO_IO_BEHIND | AGGIO_IO_DIRECT_OK | AGGIO_IO_DIRECT_EAGER,
                             e) != 0)
      return e->code;
    done += n;
  }
  return 0;
}

/* The movers' progress in .drained (a node's movers write it for a
 * merged rank).  Lock held. */
static void note_progress(struct stage *s, int force) {
  if (!s->merged)
    aggio__stage_put_drained(s->drained_fd, &s->progress_at, force, s->moved_prefix,
                             s->moved_bytes, s->started);
}

static void moved(struct stage *s, int64_t first, int64_t end, int slot) {
  for (int64_t i = first; i < end; i++) {
    s->rec[i].moved = 1;
    if (s->rec[i].state == REC_READY)
      s->moved_bytes += s->rec[i].length;
  }
  s->busy[slot] = s->busy[--s->nbusy];
  while (s->moved_prefix < s->nrec && s->rec[s->moved_prefix].moved)
    s->moved_prefix++;
  note_progress(s, s->moved_prefix == s->nrec);
}

static void *mover_main(void *arg) {
  struct aggio__store *st = arg;
  struct stage *s = sg(st);
  char *buf = NULL;
  size_t align = st->dio_align > 0 ? (size_t)st->dio_align : 4096;
  int nomem = aggio__fault(st->faults, AGGIO_FAULT_ALLOC) ||
              posix_memalign((void **)&buf, align, AGGIO_STAGE_MOVE_MAX) != 0;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    int64_t end = 0;
    double quiet_until = 0;
    while (!s->stop && !s->failed && !nomem &&
           ((!background(st) && !s->draining) ||
            s->next >= s->nrec || (end = take(s, s->next)) == s->next ||
            (!s->draining && (quiet_until = s->last_write + AGGIO_STAGE_QUIET_S) > wall()))) {
      if (quiet_until > 0) {
        struct timespec t = {(time_t)quiet_until,
                             (long)((quiet_until - (double)(time_t)quiet_until) * 1e9)};
        pthread_cond_timedwait(&s->cond, &s->lock, &t);
        quiet_until = 0;
      } else {
        pthread_cond_wait(&s->cond, &s->lock);
      }
    }
    if (nomem && !s->failed) {
      s->failed = 1;
      aggio__fail(&s->err, AGGIO_ERR_NOMEM, "rank %d: out of memory for a mover",
                  st->rank);
    }
    if (s->stop || s->failed)
      break;
    int64_t first = s->next, lo = s->rec[first].offset, hi = s->rec[end - 1].offset +
                                                              s->rec[end - 1].length;
    int slot = s->nbusy++;
    s->busy[slot].lo = lo, s->busy[slot].hi = hi;
    s->next = end;
    int64_t data_off = s->rec[first].data_off;
    int is_void = s->rec[first].state == REC_VOID;
    pthread_mutex_unlock(&s->lock);
    struct aggio__err e = {0};
    if (!is_void)
      move_run(st, lo, data_off, hi - lo, buf, &e);
    pthread_mutex_lock(&s->lock);
    for (int i = 0; i < s->nbusy; i++) /* the slot may have moved: find it */
      if (s->busy[i].lo == lo && s->busy[i].hi == hi)
        slot = i;
    if (e.code != 0 && !s->failed) {
      s->failed = 1;
      s->err = e;
    }
    if (e.code != 0)
      s->busy[slot] = s->busy[--s->nbusy];
    else
      moved(s, first, end, slot);
    pthread_cond_broadcast(&s->cond);
  }
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  free(buf);
  return NULL;
}

/* Lock held. */
static int start_movers(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  int want = st->stage.movers < 1 ? 1 : st->stage.movers > MOVERS_MAX ? MOVERS_MAX
                                                                      : st->stage.movers;
  if (s->started == 0)
    s->started = wall();
  while (s->nmovers < want) {
    int rc = pthread_create(&s->mover[s->nmovers], NULL, mover_main, st);
    if (rc != 0) {
      if (s->nmovers > 0)
        break; /* fewer movers still move everything */
      return aggio__fail(e, aggio__errno_code(rc), "rank %d: cannot start a mover: %s",
                         st->rank, strerror(rc));
    }
    s->nmovers++;
  }
  return 0;
}

static void stop_movers(struct stage *s) {
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->cond);
  int n = s->nmovers;
  s->nmovers = 0;
  pthread_mutex_unlock(&s->lock);
  for (int i = 0; i < n; i++)
    pthread_join(s->mover[i], NULL);
  pthread_mutex_lock(&s->lock);
  s->stop = 0;
  pthread_mutex_unlock(&s->lock);
}

/* The movers' failure as this call's, at every call that needs the bytes
 * in the file: they never will be (the movers stopped), and they stay in
 * the stage for `aggio stage drain`.  Lock held. */
static int report_failure(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  if (!s->failed)
    return 0;
  if (e->code == 0)
    *e = s->err;
  return e->code;
}

/* Waits until every record of this rank is in the final file (not
 * synced).  A failure of the movers, now or before, is e's. */
static int drain_all(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  if (s->merged) { /* the node's movers did it, at the ordering step before */
    int rc = report_failure(st, e);
    if (rc == 0 && s->moved_prefix < s->nrec)
      rc = aggio__fail(e, AGGIO_ERR_IO, "rank %d: %lld staged writes of %s were not moved "
                       "by the node's movers; they stay in %s", st->rank,
                       (long long)(s->nrec - s->moved_prefix), st->path, s->dir);
    pthread_mutex_unlock(&s->lock);
    return rc;
  }
  int rc = s->moved_prefix < s->nrec && !s->failed ? start_movers(st, e) : 0;
  s->draining++;
  pthread_cond_broadcast(&s->cond);
  while (rc == 0 && !s->failed && s->moved_prefix < s->nrec)
    pthread_cond_wait(&s->cond, &s->lock);
  s->draining--;
  if (rc == 0)
    rc = report_failure(st, e);
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* ---- the table's operations ---------------------------------------------------- */

/* calloc/realloc that AGGIO_FAULTS (alloc) can make fail, as the core's
 * small allocations: their failure paths are swept too. */
static void *st_calloc(struct aggio__store *st, size_t n) {
  return aggio__fault(st->faults, AGGIO_FAULT_ALLOC) ? NULL : calloc(1, n);
}

static void *st_realloc(struct aggio__store *st, void *p, size_t n) {
  return aggio__fault(st->faults, AGGIO_FAULT_ALLOC) ? NULL : realloc(p, n);
}

/* aggio_stage_checksum=auto: a memory file system keeps nothing through a
 * node's crash, and a killed process loses nothing it wrote, so there the
 * data's CRC would guard against no loss; elsewhere (a local drive) a crash
 * of the node may keep a record and lose its bytes, which the CRC shows.
 * Asked of the stage directory, or of its nearest existing parent. */
static int want_data_crc(const char *dir, int hint) {
  if (hint >= 0)
    return hint;
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s", dir);
  struct statfs sf;
  while (statfs(p, &sf) != 0) {
    char *slash = strrchr(p, '/');
    if (!slash || slash == p)
      return 1;
    *slash = '\0';
  }
  return sf.f_type != TMPFS_MAGIC && sf.f_type != RAMFS_MAGIC;
}

/* aggio_stage_merge=node: the node's movers, on its first rank, from the
 * open on (a writer's first record may come before this rank's). */
static int start_node(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  s->merged = 1;
  if (st->stage.node_ranks[0] != st->rank)
    return 0;
  struct aggio__stage_node_conf c = {&s->final, s->dir, st->stage.session,
                                     st->stage.node_ranks, st->stage.nnode,
                                     st->stage.movers, background(st), st->faults};
  s->node = aggio__stage_node_start(&c, e);
  return s->node ? 0 : e->code;
}

static int st_open(struct aggio__store *st, int create, struct aggio__err *e) {
  struct stage *s = st_calloc(st, sizeof *s);
  if (!s)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  s->data_fd = s->index_fd = s->drained_fd = -1;
  st->state = s;
  s->data_crc = want_data_crc(st->stage.dir, st->stage.data_crc);
  s->final = *st;
  s->final.ops = st->final_ops;
  s->final.state = NULL;
  s->final.opened = 0;
  if (s->final.ops->open(&s->final, create, e) != 0)
    return e->code;
  int rc = aggio__stage_absolute(st->path, s->abs, sizeof s->abs);
  if (rc == 0 && aggio__stage_dir_of(st->stage.dir, s->abs, s->dir, sizeof s->dir) != 0)
    rc = ENAMETOOLONG;
  const char *what[] = {"data", "index", "drained"};
  char *paths[] = {s->data_path, s->index_path, s->drained_path};
  for (int i = 0; i < 3 && rc == 0; i++)
    if (aggio__stage_writer_path(s->dir, st->stage.session, st->rank, what[i], paths[i],
                                 PATH_MAX) != 0)
      rc = ENAMETOOLONG;
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(rc), "rank %d: the stage of %s under %s: %s",
                       st->rank, st->path, st->stage.dir, strerror(rc));
  /* bytes an earlier job staged and never moved reach the file before
   * this one reads or writes it (every rank's open precedes any access) */
  rc = aggio__stage_replay(s->dir, s->abs, st->stage.session);
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(rc), "rank %d: %s holds bytes staged for %s "
                       "that could not be written there: %s (aggio stage drain %s)",
                       st->rank, s->dir, st->path, strerror(rc), s->dir);
  if (st->stage.merge && start_node(st, e) != 0)
    return e->code;
  st->opened = 1;
  return 0;
}

static void st_configured(struct aggio__store *st) {
  struct stage *s = sg(st);
  if (!s)
    return;
  s->final.block = st->block;
  s->final.dio_align = st->dio_align;
  s->final.align_unit = st->align_unit;
  s->final.direct_wanted = st->direct_wanted;
  if (s->final.ops->configured)
    s->final.ops->configured(&s->final);
}

static void st_probe(struct aggio__store *st, struct aggio__fs_info *fi) {
  sg(st)->final.ops->probe(&sg(st)->final, fi);
}

static void st_open_direct(struct aggio__store *st) {
  struct stage *s = sg(st);
  st_configured(st);
  s->final.ops->open_direct(&s->final);
  st->dio = s->final.dio;
}

/* A staged write: its bytes appended, then its record; it counts (a mover
 * may take it, a crash keeps it) once both are written. */
static int stage_write(struct aggio__store *st, const void *buf, int64_t len, int64_t off,
                       struct aggio__err *e) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  int rc = s->data_fd < 0 ? make_files(st, e) : 0;
  if (rc == 0 && s->nrec == s->cap) {
    int64_t c = s->cap ? 2 * s->cap : 256;
    struct rec *r = st_realloc(st, s->rec, (size_t)c * sizeof *r);
    if (!r)
      rc = aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
    else
      s->rec = r, s->cap = c;
  }
  if (rc != 0) {
    pthread_mutex_unlock(&s->lock);
    return rc;
  }
  int64_t seq = s->nrec++, data_off = s->data_end;
  s->data_end += len;
  s->last_ns = age_now(s->last_ns);
  uint64_t calls = (uint64_t)__atomic_load_n(&st->coll_calls, __ATOMIC_RELAXED);
  s->rec[seq] = (struct rec){off, len, data_off, calls, s->last_ns, s->epoch, REC_WRITING, 0};
  struct aggio__stage_rec r = {.epoch = s->epoch, .seq = (uint64_t)seq,
                               .offset = (uint64_t)off, .length = (uint64_t)len,
                               .data_off = (uint64_t)data_off, .calls = calls,
                               .time_ns = s->last_ns, .has_data_crc = s->data_crc};
  int data_fd = s->data_fd, index_fd = s->index_fd;
  pthread_mutex_unlock(&s->lock);

  /* not counted as a transfer: the movers' writes of these bytes to the
   * final file are (flagged behind), as the program's file sees them */
  int err = aggio__fault(st->faults, AGGIO_FAULT_PWRITE);
  if (!err)
    err = aggio__stage_put_all(data_fd, buf, len, data_off);
  unsigned char b[AGGIO_STAGE_REC];
  r.data_crc = err || !r.has_data_crc ? 0 : aggio__crc32(0, buf, (size_t)len);
  aggio__stage_rec_encode(&r, b);
  if (!err)
    err = aggio__stage_put_all(index_fd, b, AGGIO_STAGE_REC, seq * AGGIO_STAGE_REC);

  pthread_mutex_lock(&s->lock);
  s->rec[seq].state = err ? REC_VOID : REC_READY;
  s->last_write = wall();
  if (!err && background(st) && !s->merged && s->nmovers == 0 && !s->failed)
    start_movers(st, e); /* none could start: the next flush says so */
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  if (err)
    return aggio__fail(e, aggio__errno_code(err),
                       "rank %d: staging a write of %lld bytes at %lld of %s in %s: %s",
                       st->rank, (long long)len, (long long)off,
                       st->path, s->data_path, strerror(err));
  return e->code;
}

static int st_pwrite(struct aggio__store *st, const void *buf, int64_t len, int64_t off,
                     int flags, struct aggio__err *e) {
  if (st->write_through) /* atomic mode: flushed before it began */
    return sg(st)->final.ops->pwrite(&sg(st)->final, buf, len, off, flags, e);
  return stage_write(st, buf, len, off, e);
}

/* The end of this rank's records not moved yet.  Lock held. */
static int64_t unmoved_end(const struct stage *s) {
  int64_t end = 0;
  for (int64_t i = s->moved_prefix; i < s->nrec; i++)
    if (!s->rec[i].moved && s->rec[i].state != REC_VOID &&
        s->rec[i].offset + s->rec[i].length > end)
      end = s->rec[i].offset + s->rec[i].length;
  return end;
}

/* This rank's records not moved when the read began, over [off, off+len)
 * of buf, oldest first (the newest bytes win). */
static int overlay(struct aggio__store *st, char *buf, int64_t len, int64_t off,
                   int64_t from, struct aggio__err *e) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  for (int64_t i = from; i < s->nrec && rc == 0; i++) {
    struct rec r = s->rec[i];
    if (r.state != REC_READY || r.offset >= off + len || r.offset + r.length <= off)
      continue;
    int64_t a = r.offset > off ? r.offset : off;
    int64_t b = r.offset + r.length < off + len ? r.offset + r.length : off + len;
    rc = aggio__stage_get_all(s->data_fd, buf + (a - off), b - a,
                              r.data_off + (a - r.offset));
  }
  pthread_mutex_unlock(&s->lock);
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(rc), "rank %d: reading the stage %s: %s",
                       st->rank, s->data_path, strerror(rc));
  return 0;
}

static int st_pread(struct aggio__store *st, void *buf, int64_t len, int64_t off,
                    int64_t *got, int flags, struct aggio__err *e) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  int64_t from = s->moved_prefix; /* what was moved before is in the file */
  int64_t end = unmoved_end(s);
  pthread_mutex_unlock(&s->lock);
  int64_t g = 0;
  if (s->final.ops->pread(&s->final, buf, len, off, &g, flags, e) != 0)
    return e->code;
  if (g < len)
    memset((char *)buf + g, 0, (size_t)(len - g));
  if (end > off && overlay(st, buf, len, off, from, e) != 0)
    return e->code;
  int64_t staged = end > off ? (end - off < len ? end - off : len) : 0;
  *got = g > staged ? g : staged;
  return 0;
}

/* ---- the newest write across ranks (storage.h, core/staging.c) --------------- */

int aggio__stage_settle(struct aggio__store *st, struct aggio__err *e) {
  return drain_all(st, e);
}

int64_t aggio__stage_records(struct aggio__store *st, struct aggio__stage_rec **out) {
  struct stage *s = sg(st);
  *out = NULL;
  pthread_mutex_lock(&s->lock);
  int64_t n = 0;
  struct aggio__stage_rec *r = s->nrec ? st_calloc(st, (size_t)s->nrec * sizeof *r) : NULL;
  for (int64_t i = 0; r && i < s->nrec; i++) {
    const struct rec *x = &s->rec[i];
    if (x->state == REC_READY)
      r[n++] = (struct aggio__stage_rec){.epoch = x->epoch, .seq = (uint64_t)i,
                                         .offset = (uint64_t)x->offset,
                                         .length = (uint64_t)x->length,
                                         .calls = x->calls, .time_ns = x->time_ns};
  }
  int nomem = s->nrec && !r;
  pthread_mutex_unlock(&s->lock);
  *out = r;
  return nomem ? -1 : n;
}

int aggio__stage_rewrite(struct aggio__store *st, int64_t off, int64_t len,
                         struct aggio__err *e) {
  struct stage *s = sg(st);
  char *buf = NULL;
  size_t align = st->dio_align > 0 ? (size_t)st->dio_align : 4096;
  int64_t cap = len < AGGIO_STAGE_MOVE_MAX ? len : AGGIO_STAGE_MOVE_MAX;
  if (aggio__fault(st->faults, AGGIO_FAULT_ALLOC) ||
      posix_memalign((void **)&buf, align, (size_t)cap) != 0)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
  for (int64_t done = 0; done < len && e->code == 0;) {
    int64_t n = len - done < cap ? len - done : cap;
    memset(buf, 0, (size_t)n);
    if (overlay(st, buf, n, off + done, 0, e) == 0)
      s->final.ops->pwrite(&s->final, buf, n, off + done,
                           AGGIO_IO_BEHIND | AGGIO_IO_DIRECT_OK | AGGIO_IO_DIRECT_EAGER, e);
    done += n;
  }
  free(buf);
  return e->code;
}

int64_t aggio__stage_count(struct aggio__store *st) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  int64_t n = s->nrec;
  pthread_mutex_unlock(&s->lock);
  return n;
}

int aggio__stage_node_settle(struct aggio__store *st, const int64_t *counts,
                             struct aggio__err *e) {
  struct stage *s = sg(st);
  if (!s->node)
    return aggio__fail(e, AGGIO_ERR_IO, "rank %d: the node's movers of %s are not running",
                       st->rank, st->path);
  return aggio__stage_node_drain(s->node, counts, e);
}

void aggio__stage_moved_all(struct aggio__store *st) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  for (int64_t i = s->moved_prefix; i < s->nrec; i++) {
    if (!s->rec[i].moved && s->rec[i].state == REC_READY)
      s->moved_bytes += s->rec[i].length;
    s->rec[i].moved = 1;
  }
  s->moved_prefix = s->nrec;
  pthread_mutex_unlock(&s->lock);
}

int64_t aggio__stage_end(struct aggio__store *st) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  int64_t end = unmoved_end(s);
  pthread_mutex_unlock(&s->lock);
  return end;
}

void aggio__stage_fail(struct aggio__store *st, const struct aggio__err *e) {
  struct stage *s = sg(st);
  pthread_mutex_lock(&s->lock);
  if (!s->failed) {
    s->failed = 1;
    s->err = *e;
  }
  /* which of the moved bytes another rank's older write covers is not
   * known: none counts as in the file (MPI_Finalize's message counts
   * them; `aggio stage drain` writes them all, in order) */
  for (int64_t i = 0; i < s->nrec; i++)
    s->rec[i].moved = 0;
  s->moved_prefix = 0;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
}

/* set_size and atomic mode: every record in the file, synced, and the
 * stage files gone, so that no replay brings back bytes a set_size cut. */
static int st_flush(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  if (drain_all(st, e) != 0 || s->final.ops->sync(&s->final, e) != 0)
    return e->code;
  pthread_mutex_lock(&s->lock);
  forget_records(s);
  pthread_mutex_unlock(&s->lock);
  return 0;
}

/* aggio_stage_sync=final: every record in the final file, synced, and
 * this rank's stage files gone; =stage: the stage files synced. */
static int st_sync(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  if (!st->stage.sync_final) {
    pthread_mutex_lock(&s->lock);
    int rc = 0;
    if (s->data_fd >= 0 && (fsync(s->data_fd) != 0 || fsync(s->index_fd) != 0))
      rc = aggio__fail(e, aggio__errno_code(errno), "rank %d: fsync of the stage %s: %s",
                       st->rank, s->data_path, strerror(errno));
    s->epoch++;
    pthread_mutex_unlock(&s->lock);
    return rc;
  }
  if (drain_all(st, e) != 0 || s->final.ops->sync(&s->final, e) != 0)
    return e->code;
  pthread_mutex_lock(&s->lock);
  forget_records(s);
  s->epoch++;
  pthread_mutex_unlock(&s->lock);
  return 0;
}

/* Close: with drain none the stage stays for `aggio stage drain`, with
 * detach for the drainer the core starts next (aggio__stage_hand_over);
 * else every record reaches the final file, which is synced, and the
 * stage files go.  A failure keeps them. */
static int st_close(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  if (!s)
    return 0;
  int leave = st->stage.drain == AGGIO_STAGE_NONE || st->stage.drain == AGGIO_STAGE_DETACH;
  if (!leave && s->final.opened &&
      drain_all(st, e) == 0 && s->final.ops->sync(&s->final, e) == 0) {
    pthread_mutex_lock(&s->lock);
    forget_records(s);
    pthread_mutex_unlock(&s->lock);
  } else if (leave) {
    pthread_mutex_lock(&s->lock);
    report_failure(st, e);
    note_progress(s, 1);
    pthread_mutex_unlock(&s->lock);
  }
  stop_movers(s);
  aggio__stage_node_stop(s->node);
  s->node = NULL;
  pthread_mutex_lock(&s->lock);
  close_files(s);
  pthread_mutex_unlock(&s->lock);
  if (s->final.opened)
    s->final.ops->close(&s->final, e);
  return e->code;
}

int aggio__stage_hand_over(struct aggio__store *st, const char *drainer,
                           struct aggio__err *e) {
  struct stage *s = sg(st);
  char log[PATH_MAX];
  snprintf(log, sizeof log, "%s/aggio-stage-drain.log", st->stage.dir);
  if (drainer && aggio__stage_spawn_drainer(drainer, s->dir, log) == 0)
    return 0;
  /* no drainer: the bytes reach the file now, as with at_close */
  int rc = aggio__stage_replay(s->dir, s->abs, "");
  if (rc != 0)
    return aggio__fail(e, aggio__errno_code(rc), "rank %d: no drainer could be started "
                       "for %s (%s), and writing its staged bytes failed: %s (aggio stage "
                       "drain %s)", st->rank, st->path, drainer ? drainer : "none found",
                       strerror(rc), s->dir);
  return 0;
}

static int64_t st_unwritten(struct aggio__store *st, char *msg, size_t len) {
  struct stage *s = sg(st);
  if (!s)
    return 0;
  pthread_mutex_lock(&s->lock);
  int64_t n = 0;
  for (int64_t i = s->moved_prefix; s->failed && i < s->nrec; i++)
    if (s->rec[i].state == REC_READY && !s->rec[i].moved)
      n += s->rec[i].length;
  if (n > 0)
    snprintf(msg, len,
             "%s; the bytes are in the stage directory %s: `aggio stage drain %s` "
             "writes them to the file", s->err.msg, s->dir, s->dir);
  pthread_mutex_unlock(&s->lock);
  return n;
}

static int st_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  struct stage *s = sg(st);
  int64_t n = 0, end = s ? aggio__stage_end(st) : 0;
  if (s && s->final.ops->size(&s->final, &n, e) != 0)
    return e->code;
  *size = n > end ? n : end;
  return 0;
}

/* set_size: every rank flushed before rank 0 cuts (file.c). */
static int st_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  return sg(st)->final.ops->truncate(&sg(st)->final, size, e);
}

static int st_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  struct aggio__store *f = &sg(st)->final;
  return f->ops->preallocate ? f->ops->preallocate(f, size, e) : 0;
}

static int st_lock(struct aggio__store *st, int64_t off, int64_t len, int is_write,
                   struct aggio__err *e) {
  return sg(st)->final.ops->lock(&sg(st)->final, off, len, is_write, e);
}

static void st_prefetch(struct aggio__store *st, int64_t off, int64_t len) {
  struct aggio__store *f = &sg(st)->final;
  if (f->ops->prefetch)
    f->ops->prefetch(f, off, len);
}

static int st_remove(struct aggio__store *st, struct aggio__err *e) {
  struct stage *s = sg(st);
  if (!s)
    return 0;
  aggio__stage_remove_dir(s->dir);
  return s->final.ops->remove ? s->final.ops->remove(&s->final, e) : 0;
}

static void st_release(struct aggio__store *st) {
  struct stage *s = sg(st);
  if (!s)
    return;
  stop_movers(s);
  aggio__stage_node_stop(s->node);
  s->node = NULL;
  close_files(s);
  if (s->final.state)
    s->final.ops->release(&s->final);
  pthread_mutex_destroy(&s->lock);
  pthread_cond_destroy(&s->cond);
  free(s->rec);
  free(s);
  st->state = NULL;
}

const struct aggio__storage_ops aggio__storage_stage = {
    .name = "stage",
    .open = st_open,
    .probe = st_probe,
    .open_direct = st_open_direct,
    .close = st_close,
    .pwrite = st_pwrite,
    .pread = st_pread,
    .sync = st_sync,
    .prefetch = st_prefetch,
    .size = st_size,
    .truncate = st_truncate,
    .preallocate = st_preallocate,
    .lock = st_lock,
    .remove = st_remove,
    .release = st_release,
    .configured = st_configured,
    .flush = st_flush,
    .unwritten = st_unwritten,
};
