/*
 * stage_node.c - a node's movers (stage_node.h; docs/staging.md, "A
 * node's movers").
 *
 * Each writer of the node is a peer: its index and data files, opened
 * read-only by path, and the records read from the index so far (by
 * seq).  A scan reads each peer's index from its first record not read
 * yet, and stops at the first that is not valid: not written yet (a
 * writer writes its bytes, then the record, so a valid record's bytes are
 * there), torn while being written, or never to be written (its write
 * failed; a drain, which knows how many records the writer made, skips
 * those).  A mover takes a run (plan/stage_merge.h) from the records read,
 * gathers its bytes from the peers' data files into one buffer and writes
 * it to the final file with this process's store.
 *
 * The files of a peer change under a mover's feet only at a sync or a
 * close: once a drain has moved every record the writer made, the writer
 * removes its files, and its next write makes new ones.  A peer's
 * descriptors are kept open until a scan finds that its index path names
 * another file (or none), so the old file's inode cannot be taken by the
 * new one meanwhile; then they are closed and the new files opened.  A
 * drain first brings every peer to its writer's current files (the writer
 * waits in the same collective call, so it cannot change them), so that
 * the counts it was given are counted against the right files.
 *
 * Locking: one mutex guards the peers and the movers' bookkeeping; scans
 * run under it (a few reads of index records on the node's own stage),
 * the transfers outside it.  A peer's descriptors are never closed while
 * a run holds records of it (inflight).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fault.h"
#include "stage_dir.h"
#include "stage_format.h"
#include "stage_merge.h"
#include "stage_node.h"
#include "storage.h"

#define MOVERS_MAX 64
#define SCAN_BATCH 256      /* index records read at a time */
#define RUN_RECORDS 4096    /* records of one run at most */
#define SCAN_EVERY 0.001    /* seconds between scans while movers look for work */
#define POLL_MIN 0.005      /* seconds between scans when nothing is new ... */
#define POLL_MAX 0.1        /* ... growing to this while nothing is written */

struct peer {
  int rank;
  char index_path[PATH_MAX], data_path[PATH_MAX], drained_path[PATH_MAX];
  int index_fd, data_fd, drained_fd;
  struct aggio__merge_rec *m; /* record seq's bytes in the final file */
  int64_t *data_off;          /* where they lie in .data; -1: never written */
  char *moved;
  int64_t nrec, cap;          /* records read from the index */
  int64_t next;               /* the first one no mover took */
  int64_t moved_prefix, moved_bytes;
  int64_t limit;              /* while a drain waits: the records the writer made */
  int inflight;               /* runs holding records of this peer */
  double started, progress_at;
};

/* One mover's run: which record of which peer, in file order. */
struct mover {
  struct aggio__stage_node *nd;
  pthread_t thread;
  int *order;
  struct { int peer; int64_t seq; } *item;
  char *holds;  /* holds[i]: the run holds records of peer i */
  int64_t n, lo, hi;
  char *buf;
};

struct aggio__stage_node {
  struct aggio__store *final;
  struct aggio__faults *faults;
  struct peer *peer;
  int npeers, background;
  struct aggio__merge_queue *q;  /* scratch of take_run, lock held */
  int64_t *taken;
  struct aggio__merge_range busy[MOVERS_MAX];
  int nbusy;
  struct mover mover[MOVERS_MAX];
  int nmovers, stop, draining, failed;
  struct aggio__err err;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  uint64_t newest_ns;   /* the newest record read: the writers' quiet spell */
  double scanned_at, poll;
};

static double wall(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void fail(struct aggio__stage_node *nd, int code, const char *what, int rank, int err) {
  if (!nd->failed)
    aggio__fail(&nd->err, code, "the node's movers, rank %d's stage: %s: %s", rank, what,
                strerror(err));
  nd->failed = 1;
}

/* ---- a peer's files ------------------------------------------------------------ */

/* Whether fd is still the file at path. */
static int same_file(int fd, const char *path) {
  struct stat a, b;
  return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
         a.st_ino == b.st_ino;
}

/* Its descriptors closed and its records forgotten: the writer removed
 * the files after a drain moved them all.  No run holds any. */
static void close_peer(struct peer *p) {
  int *fds[] = {&p->index_fd, &p->data_fd, &p->drained_fd};
  for (int i = 0; i < 3; i++) {
    if (*fds[i] >= 0)
      close(*fds[i]);
    *fds[i] = -1;
  }
  p->nrec = p->next = p->moved_prefix = p->moved_bytes = 0;
  p->started = 0;
}

/* The writer's files, when it made them: the index first, then the data
 * (the writer makes the data file first, and a new pair only after a
 * drain, so both are of the same pair).  0, or the errno of the open that
 * failed (ENOENT: not there yet). */
static int open_peer(struct peer *p) {
  int index_fd = open(p->index_path, O_RDONLY | O_CLOEXEC);
  if (index_fd < 0)
    return errno;
  int data_fd = open(p->data_path, O_RDONLY | O_CLOEXEC);
  if (data_fd < 0) {
    int err = errno;
    close(index_fd);
    return err == ENOENT ? EIO : err; /* an index without its data */
  }
  close_peer(p); /* what it held was of files the writer no longer has */
  p->index_fd = index_fd;
  p->data_fd = data_fd;
  p->drained_fd = open(p->drained_path, O_WRONLY | O_CLOEXEC); /* progress only */
  return 0;
}

static int add_record(struct aggio__stage_node *nd, struct peer *p, int64_t off, int64_t len,
                      int64_t data_off) {
  if (p->nrec == p->cap) {
    int64_t c = p->cap ? 2 * p->cap : 1024;
    int nomem = aggio__fault(nd->faults, AGGIO_FAULT_ALLOC);
    void *m = nomem ? NULL : realloc(p->m, (size_t)c * sizeof *p->m);
    if (m)
      p->m = m;
    void *d = m ? realloc(p->data_off, (size_t)c * sizeof *p->data_off) : NULL;
    if (d)
      p->data_off = d;
    void *v = d ? realloc(p->moved, (size_t)c) : NULL;
    if (!v) {
      fail(nd, AGGIO_ERR_NOMEM, "reading its index", p->rank, ENOMEM);
      return -1;
    }
    p->moved = v, p->cap = c;
  }
  p->m[p->nrec] = (struct aggio__merge_rec){off, len};
  p->data_off[p->nrec] = data_off;
  p->moved[p->nrec++] = 0;
  return 0;
}

/* The writer's progress in its .drained, as its own movers would write it. */
static void note_progress(struct peer *p, int force) {
  aggio__stage_put_drained(p->drained_fd, &p->progress_at, force, p->moved_prefix,
                           p->moved_bytes, p->started);
}

static void advance_prefix(struct peer *p) {
  while (p->moved_prefix < p->nrec && p->moved[p->moved_prefix])
    p->moved_prefix++;
}

/* Reads the peer's new records.  Lock held. */
static void scan_peer(struct aggio__stage_node *nd, struct peer *p) {
  unsigned char buf[SCAN_BATCH * AGGIO_STAGE_REC];
  while (!nd->failed) {
    int err = p->index_fd < 0 ? open_peer(p) : 0;
    if (err == ENOENT) { /* no files: the writer's records (if any) never were */
      while (p->nrec < p->limit && add_record(nd, p, 0, 0, -1) == 0)
        ;
      return;
    }
    if (err != 0) {
      if (p->limit > 0)
        fail(nd, aggio__errno_code(err), "opening its stage files", p->rank, err);
      return;
    }
    ssize_t got = pread(p->index_fd, buf, sizeof buf, p->nrec * AGGIO_STAGE_REC);
    struct stat ds;
    int64_t data_size = fstat(p->data_fd, &ds) == 0 ? ds.st_size : -1; /* after the index */
    int64_t k = 0, whole = got > 0 ? got / AGGIO_STAGE_REC : 0;
    for (; k < whole; k++) {
      struct aggio__stage_rec r;
      if (aggio__stage_rec_decode(buf + k * AGGIO_STAGE_REC, (uint64_t)p->nrec, data_size,
                                  &r) != 0)
        break;
      if (add_record(nd, p, (int64_t)r.offset, (int64_t)r.length, (int64_t)r.data_off) != 0)
        return;
      nd->newest_ns = r.time_ns > nd->newest_ns ? r.time_ns : nd->newest_ns;
      nd->poll = POLL_MIN;
    }
    if (k == SCAN_BATCH)
      continue;
    int current = same_file(p->index_fd, p->index_path);
    if (current && p->nrec < p->limit) { /* the writer is done: never written */
      if (add_record(nd, p, 0, 0, -1) != 0)
        return;
      continue;
    }
    if (current || p->inflight > 0 || p->next < p->nrec)
      return;
    /* the writer made new files (or has none): those records were all
     * moved by the drain before it removed them */
    close_peer(p);
  }
}

static void scan(struct aggio__stage_node *nd) {
  nd->scanned_at = wall();
  for (int i = 0; i < nd->npeers; i++)
    scan_peer(nd, &nd->peer[i]);
}

/* ---- runs ---------------------------------------------------------------------- */

/* Records that were never written count as moved once they are a peer's
 * next.  Lock held. */
static void skip_void(struct peer *p) {
  while (p->next < p->nrec && p->data_off[p->next] < 0) {
    p->moved[p->next++] = 1;
    advance_prefix(p);
  }
}

/* The next run into mv (plan/stage_merge.h); 0 when none can be taken.
 * Lock held. */
static int64_t take_run(struct aggio__stage_node *nd, struct mover *mv) {
  for (int i = 0; i < nd->npeers; i++) {
    struct peer *p = &nd->peer[i];
    skip_void(p);
    int64_t n = 0;
    while (p->next + n < p->nrec && p->data_off[p->next + n] >= 0)
      n++;
    nd->q[i] = (struct aggio__merge_queue){p->m + p->next, n};
  }
  int64_t n = aggio__stage_merge_run(nd->q, nd->npeers, nd->busy, nd->nbusy,
                                     AGGIO_STAGE_MOVE_MAX, mv->order, RUN_RECORDS, nd->taken);
  for (int64_t k = 0; k < n; k++) {
    struct peer *p = &nd->peer[mv->order[k]];
    mv->item[k].peer = mv->order[k];
    mv->item[k].seq = p->next++;
  }
  for (int i = 0; i < nd->npeers; i++) {
    mv->holds[i] = nd->taken[i] > 0;
    nd->peer[i].inflight += mv->holds[i];
  }
  if (n == 0)
    return 0;
  const struct peer *first = &nd->peer[mv->item[0].peer];
  const struct peer *last = &nd->peer[mv->item[n - 1].peer];
  mv->lo = first->m[mv->item[0].seq].offset;
  mv->hi = last->m[mv->item[n - 1].seq].offset + last->m[mv->item[n - 1].seq].length;
  mv->n = n;
  nd->busy[nd->nbusy++] = (struct aggio__merge_range){mv->lo, mv->hi};
  for (int i = 0; i < nd->npeers; i++)
    if (nd->taken[i] > 0 && nd->peer[i].started == 0)
      nd->peer[i].started = wall();
  return n;
}

/* The run's bytes, gathered from the peers' data files, written to the
 * final file in transfers of at most AGGIO_STAGE_MOVE_MAX bytes (a run
 * of several records fits one).  Lock not held: the descriptors stay open
 * while the run holds records of their peer. */
static int move_run(struct aggio__stage_node *nd, struct mover *mv, struct aggio__err *e) {
  int64_t at = mv->lo, k = 0, in_rec = 0;
  while (at < mv->hi) {
    int64_t len = 0;
    while (k < mv->n && len < AGGIO_STAGE_MOVE_MAX) {
      const struct peer *p = &nd->peer[mv->item[k].peer];
      int64_t seq = mv->item[k].seq, rec_len = p->m[seq].length;
      int64_t n = rec_len - in_rec;
      n = n < AGGIO_STAGE_MOVE_MAX - len ? n : AGGIO_STAGE_MOVE_MAX - len;
      int rc = aggio__stage_get_all(p->data_fd, mv->buf + len, n, p->data_off[seq] + in_rec);
      if (rc != 0)
        return aggio__fail(e, aggio__errno_code(rc), "the node's movers: reading rank "
                           "%d's stage %s: %s", p->rank, p->data_path, strerror(rc));
      len += n;
      in_rec += n;
      if (in_rec == rec_len)
        k++, in_rec = 0;
    }
    if (nd->final->ops->pwrite(nd->final, mv->buf, len, at,
                               AGGIO_IO_BEHIND | AGGIO_IO_DIRECT_OK | AGGIO_IO_DIRECT_EAGER,
                               e) != 0)
      return e->code;
    at += len;
  }
  return 0;
}

/* The run is in the file (ok) or not: its records moved, its peers free.
 * Lock held. */
static void finish_run(struct aggio__stage_node *nd, struct mover *mv, int ok) {
  for (int64_t k = 0; ok && k < mv->n; k++) {
    struct peer *p = &nd->peer[mv->item[k].peer];
    p->moved[mv->item[k].seq] = 1;
    p->moved_bytes += p->m[mv->item[k].seq].length;
  }
  for (int i = 0; i < nd->npeers; i++) {
    struct peer *p = &nd->peer[i];
    if (!mv->holds[i])
      continue;
    mv->holds[i] = 0;
    p->inflight--;
    advance_prefix(p);
    note_progress(p, p->moved_prefix == p->nrec);
  }
  for (int i = 0; i < nd->nbusy; i++)
    if (nd->busy[i].lo == mv->lo && nd->busy[i].hi == mv->hi) {
      nd->busy[i] = nd->busy[--nd->nbusy];
      break;
    }
  mv->n = 0;
}

/* ---- the movers ---------------------------------------------------------------- */

/* How long a mover waits before it looks again.  Lock held. */
static double pause_for(struct aggio__stage_node *nd, int quiet_left) {
  if (nd->draining)
    return SCAN_EVERY;
  if (quiet_left)
    return AGGIO_STAGE_QUIET_S;
  double p = nd->poll;
  nd->poll = nd->poll * 2 < POLL_MAX ? nd->poll * 2 : POLL_MAX;
  return p;
}

static void wait_for(struct aggio__stage_node *nd, double s) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  double end = (double)t.tv_sec + 1e-9 * (double)t.tv_nsec + s;
  t.tv_sec = (time_t)end;
  t.tv_nsec = (long)((end - (double)t.tv_sec) * 1e9);
  pthread_cond_timedwait(&nd->cond, &nd->lock, &t);
}

static void *mover_main(void *arg) {
  struct mover *mv = arg;
  struct aggio__stage_node *nd = mv->nd;
  pthread_mutex_lock(&nd->lock);
  while (!nd->stop && !nd->failed) {
    int active = nd->background || nd->draining;
    double now = wall();
    /* scans run between drains too (drain at_close or none): they let go
     * of the files a writer removed after a drain, whose space the stage
     * tier then gets back */
    if (now - nd->scanned_at >= SCAN_EVERY)
      scan(nd);
    int quiet_left = !nd->draining && 1e-9 * (double)nd->newest_ns + AGGIO_STAGE_QUIET_S > now;
    if (active && !quiet_left && take_run(nd, mv) > 0) {
      pthread_mutex_unlock(&nd->lock);
      struct aggio__err e = {0};
      int rc = move_run(nd, mv, &e);
      pthread_mutex_lock(&nd->lock);
      if (rc != 0 && !nd->failed) {
        nd->failed = 1;
        nd->err = e;
      }
      finish_run(nd, mv, rc == 0);
      pthread_cond_broadcast(&nd->cond);
      continue;
    }
    /* a drain looks every SCAN_EVERY itself */
    wait_for(nd, active ? pause_for(nd, quiet_left) : POLL_MAX);
  }
  pthread_cond_broadcast(&nd->cond);
  pthread_mutex_unlock(&nd->lock);
  return NULL;
}

static void free_node(struct aggio__stage_node *nd) {
  for (int i = 0; nd->peer && i < nd->npeers; i++) {
    close_peer(&nd->peer[i]);
    free(nd->peer[i].m);
    free(nd->peer[i].data_off);
    free(nd->peer[i].moved);
  }
  for (int i = 0; i < MOVERS_MAX; i++) {
    free(nd->mover[i].order);
    free(nd->mover[i].item);
    free(nd->mover[i].holds);
    free(nd->mover[i].buf);
  }
  free(nd->peer);
  free(nd->q);
  free(nd->taken);
  pthread_mutex_destroy(&nd->lock);
  pthread_cond_destroy(&nd->cond);
  free(nd);
}

static void *node_calloc(struct aggio__faults *f, size_t n, size_t size) {
  return aggio__fault(f, AGGIO_FAULT_ALLOC) ? NULL : calloc(n, size);
}

/* The peers' paths and the movers' buffers.  0, or -1 out of memory. */
static int make_peers(struct aggio__stage_node *nd, const struct aggio__stage_node_conf *c,
                      int want) {
  nd->peer = node_calloc(c->faults, (size_t)c->nranks, sizeof *nd->peer);
  nd->q = node_calloc(c->faults, (size_t)c->nranks, sizeof *nd->q);
  nd->taken = node_calloc(c->faults, (size_t)c->nranks, sizeof *nd->taken);
  if (!nd->peer || !nd->q || !nd->taken)
    return -1;
  nd->npeers = c->nranks;
  for (int i = 0; i < c->nranks; i++) {
    struct peer *p = &nd->peer[i];
    p->rank = c->ranks[i];
    p->index_fd = p->data_fd = p->drained_fd = -1;
    p->limit = -1;
    const char *what[] = {"index", "data", "drained"};
    char *paths[] = {p->index_path, p->data_path, p->drained_path};
    for (int k = 0; k < 3; k++)
      if (aggio__stage_writer_path(c->dir, c->session, p->rank, what[k], paths[k],
                                   PATH_MAX) != 0)
        return -1;
  }
  size_t align = nd->final->dio_align > 0 ? (size_t)nd->final->dio_align : 4096;
  for (int i = 0; i < want; i++) {
    struct mover *mv = &nd->mover[i];
    mv->nd = nd;
    mv->order = node_calloc(c->faults, RUN_RECORDS, sizeof *mv->order);
    mv->item = node_calloc(c->faults, RUN_RECORDS, sizeof *mv->item);
    mv->holds = node_calloc(c->faults, (size_t)c->nranks, 1);
    if (!mv->order || !mv->item || !mv->holds || aggio__fault(c->faults, AGGIO_FAULT_ALLOC) ||
        posix_memalign((void **)&mv->buf, align, AGGIO_STAGE_MOVE_MAX) != 0)
      return -1;
  }
  return 0;
}

struct aggio__stage_node *aggio__stage_node_start(const struct aggio__stage_node_conf *c,
                                                  struct aggio__err *e) {
  struct aggio__stage_node *nd = node_calloc(c->faults, 1, sizeof *nd);
  if (!nd) {
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory for the node's movers",
                c->ranks[0]);
    return NULL;
  }
  nd->final = c->final;
  nd->faults = c->faults;
  nd->background = c->background;
  nd->poll = POLL_MIN;
  pthread_mutex_init(&nd->lock, NULL);
  pthread_cond_init(&nd->cond, NULL);
  int want = c->movers < 1 ? 1 : c->movers > MOVERS_MAX ? MOVERS_MAX : c->movers;
  if (make_peers(nd, c, want) != 0) {
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory for the node's movers",
                c->ranks[0]);
    free_node(nd);
    return NULL;
  }
  for (int i = 0; i < want; i++) {
    int rc = pthread_create(&nd->mover[i].thread, NULL, mover_main, &nd->mover[i]);
    if (rc != 0 && nd->nmovers == 0) {
      aggio__fail(e, aggio__errno_code(rc), "rank %d: cannot start the node's movers: %s",
                  c->ranks[0], strerror(rc));
      free_node(nd);
      return NULL;
    }
    if (rc != 0)
      break; /* fewer movers still move everything */
    nd->nmovers++;
  }
  return nd;
}

/* Every peer on its writer's current files (the writer waits in the
 * drain's collective call).  Lock held. */
static void current_files(struct aggio__stage_node *nd) {
  for (int i = 0; i < nd->npeers; i++) {
    struct peer *p = &nd->peer[i];
    while (p->index_fd >= 0 && !same_file(p->index_fd, p->index_path) &&
           (p->inflight > 0 || p->next < p->nrec) && !nd->failed)
      pthread_cond_wait(&nd->cond, &nd->lock); /* its runs end first */
    if (p->index_fd >= 0 && !same_file(p->index_fd, p->index_path))
      close_peer(p);
  }
}

static int drained(const struct aggio__stage_node *nd) {
  for (int i = 0; i < nd->npeers; i++)
    if (nd->peer[i].moved_prefix < nd->peer[i].limit)
      return 0;
  return 1;
}

int aggio__stage_node_drain(struct aggio__stage_node *nd, const int64_t *counts,
                            struct aggio__err *e) {
  pthread_mutex_lock(&nd->lock);
  nd->draining++;
  pthread_cond_broadcast(&nd->cond);
  current_files(nd);
  for (int i = 0; i < nd->npeers; i++)
    nd->peer[i].limit = counts[i];
  nd->scanned_at = 0; /* look now */
  pthread_cond_broadcast(&nd->cond);
  while (!nd->failed && nd->nmovers > 0 && !drained(nd))
    wait_for(nd, SCAN_EVERY);
  for (int i = 0; i < nd->npeers; i++) {
    nd->peer[i].limit = -1;
    note_progress(&nd->peer[i], 1);
  }
  nd->draining--;
  int rc = 0;
  if (nd->failed)
    rc = e->code ? e->code : (*e = nd->err, e->code);
  pthread_mutex_unlock(&nd->lock);
  return rc;
}

void aggio__stage_node_stop(struct aggio__stage_node *nd) {
  if (!nd)
    return;
  pthread_mutex_lock(&nd->lock);
  nd->stop = 1;
  pthread_cond_broadcast(&nd->cond);
  pthread_mutex_unlock(&nd->lock);
  for (int i = 0; i < nd->nmovers; i++)
    pthread_join(nd->mover[i].thread, NULL);
  free_node(nd);
}
