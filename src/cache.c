/*
 * cache.c - the node cache (cache.h): a table of block-sized slots in a
 * shared-memory window, a process-shared lock, and I/O threads in the
 * node's aggregators that write full or evicted blocks behind the calls
 * and load blocks ahead of readers.
 *
 * A slot's life:  FREE -> OPEN (data being written into it, or a loaded
 * copy of the file) -> QUEUED (a write or a load waits for a thread) ->
 * BUSY (a thread, or a rank that had to wait, does it) -> OPEN (loaded, or
 * a whole block written: kept as a clean copy) or FREE.  A block is in at
 * most one slot, so the writes of a block happen in order.  Written ranges
 * are kept as sorted runs; a slot is written when its runs cover the whole
 * block (one large aligned write, direct I/O where allowed), when it must
 * make room (least recently used first) or at a flush.  Runs are written
 * as they are, never with the holes between them: a read-modify-write
 * long after the call would overwrite what others wrote into the holes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "engine.h"

#define MAX_RUNS 64      /* runs per slot before the slot is written out */
#define THREADS 2        /* I/O threads per host rank: two writes in flight */
#define READ_AHEAD 4     /* blocks loaded ahead of a reader, at most */

enum state { FREE, OPEN, QUEUED, BUSY };
enum job { JOB_NONE, JOB_WRITE, JOB_LOAD };

struct slot {
  int state;           /* enum state */
  int job;             /* QUEUED/BUSY: enum job */
  int pins;            /* ranks copying into or out of it now */
  int valid;           /* bytes [0, valid_len) are the file's (loaded or written) */
  int stale;           /* BUSY loading: forgotten meanwhile, drop the result */
  int ahead;           /* loaded ahead of the readers and not read yet */
  int64_t valid_len;
  int64_t block;       /* block index, -1 when FREE */
  uint64_t used;       /* clock of the last use (least recently used goes first) */
  int nruns;
  int64_t run[MAX_RUNS][2]; /* written ranges, block-relative: sorted, disjoint, not touching */
};

struct shared {
  pthread_mutex_t lock;
  pthread_cond_t work;  /* I/O threads wait here for queued slots */
  pthread_cond_t change; /* ranks wait here for a slot to change state */
  int waiting;          /* ranks waiting on `change`: wake them only then */
  uint64_t clock;
  int stop;             /* threads finish the queue and leave */
  int64_t err_count;    /* deferred failures so far */
  int64_t reported;     /* of which a rank has reported (the agreement
                         * brings that rank's report to every rank) */
  int err_code;
  char err_msg[256];
  struct slot slot[];
};

struct aggio__cache {
  aggio_file fh;
  MPI_Comm comm;
  MPI_Win win;
  struct shared *sh;
  char *data;          /* nslots blocks, aligned for direct I/O */
  int64_t block;
  int nslots;
  pthread_t thread[THREADS];
  int nthreads;
  double waited;       /* seconds this rank waited or helped (timers) */
};

static char *slot_data(const struct aggio__cache *c, const struct slot *s) {
  return c->data + (int64_t)(s - c->sh->slot) * c->block;
}

static void count(struct aggio__cache *c, enum aggio__counter k) {
  if (c->fh->stats)
    __atomic_fetch_add(&c->fh->stats->c[k], 1, __ATOMIC_RELAXED);
}

/* The node cache is shared within a node only: what passes through it
 * never crosses nodes. */
static void count_local(struct aggio__cache *c, int64_t bytes) {
  if (c->fh->stats)
    __atomic_fetch_add(&c->fh->stats->c[AGGIO_C_NODE_LOCAL_BYTES], bytes, __ATOMIC_RELAXED);
}

/* ---- runs ------------------------------------------------------------------------ */

/* Adds [a, b) to the slot's runs, merging touching and overlapping ones.
 * Returns -1 (nothing changed) when the runs are full. */
static int add_run(struct slot *s, int64_t a, int64_t b) {
  int i = 0;
  while (i < s->nruns && s->run[i][1] < a)
    i++; /* runs ending before a, not touching */
  int j = i;
  while (j < s->nruns && s->run[j][0] <= b)
    j++; /* runs i..j-1 touch or overlap [a, b) */
  if (j > i) {
    a = a < s->run[i][0] ? a : s->run[i][0];
    b = b > s->run[j - 1][1] ? b : s->run[j - 1][1];
  } else if (s->nruns == MAX_RUNS) {
    return -1;
  }
  int shift = 1 - (j - i); /* runs added (1) minus runs merged away */
  memmove(&s->run[i + 1], &s->run[j], (size_t)(s->nruns - j) * sizeof s->run[0]);
  s->run[i][0] = a;
  s->run[i][1] = b;
  s->nruns += shift;
  return 0;
}

static int full(const struct aggio__cache *c, const struct slot *s) {
  return s->nruns == 1 && s->run[0][0] == 0 && s->run[0][1] == c->block;
}

/* ---- slots --------------------------------------------------------------------------- */

static struct slot *find(struct aggio__cache *c, int64_t block) {
  for (int i = 0; i < c->nslots; i++)
    if (c->sh->slot[i].state != FREE && c->sh->slot[i].block == block)
      return &c->sh->slot[i];
  return NULL;
}

static void reset(struct slot *s) {
  s->ahead = 0;
  s->state = FREE;
  s->job = JOB_NONE;
  s->block = -1;
  s->nruns = 0;
  s->valid = 0;
  s->stale = 0;
  s->valid_len = 0;
}

/* A loaded copy that ends short of its block also says where the file
 * ended; any write may move that end, so such copies go (locked). */
static void drop_short(struct aggio__cache *c) {
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == OPEN && s->valid && s->valid_len < c->block) {
      s->valid = 0;
      if (s->nruns == 0 && s->pins == 0)
        reset(s);
    }
  }
}

static void claim(struct aggio__cache *c, struct slot *s, int64_t block) {
  reset(s);
  s->state = OPEN;
  s->block = block;
  s->used = ++c->sh->clock;
}

/* Wakes the ranks waiting for a slot to change, if any (a wake-up costs
 * a context switch, on every call when nobody waits). */
static void changed(struct aggio__cache *c) {
  if (c->sh->waiting > 0)
    pthread_cond_broadcast(&c->sh->change);
}

static void queue(struct aggio__cache *c, struct slot *s, int job) {
  s->state = QUEUED;
  s->job = job;
  pthread_cond_signal(&c->sh->work);
  changed(c); /* a waiting rank may do it itself */
}

/* A free slot, or a clean one to reuse (least recently used), or NULL.
 * With `evict`, the least recently used dirty slot is queued to be written
 * when nothing else is free (the caller then waits).  Without it (read-ahead)
 * blocks loaded ahead and not read yet are kept: several readers' read-ahead
 * must not evict each other's. */
static struct slot *room(struct aggio__cache *c, int evict) {
  struct slot *clean = NULL, *ahead = NULL, *dirty = NULL;
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == FREE)
      return s;
    if (s->state != OPEN || s->pins > 0)
      continue;
    struct slot **best = s->nruns > 0 ? &dirty : s->ahead ? &ahead : &clean;
    if (!*best || s->used < (*best)->used)
      *best = s;
  }
  if (clean)
    return clean; /* a block already read: the cheapest to lose */
  if (evict && ahead)
    return ahead;
  if (evict && dirty) {
    queue(c, dirty, JOB_WRITE);
    count(c, AGGIO_C_CACHE_WAITS);
  }
  return NULL;
}

/* ---- the work: writing and loading slots ------------------------------------------------ */

static void deferred_failure(struct aggio__cache *c, const struct aggio__err *e) {
  struct shared *sh = c->sh;
  if (sh->err_count++ == 0 || sh->err_code == 0) {
    sh->err_code = e->code;
    snprintf(sh->err_msg, sizeof sh->err_msg, "%.255s", e->msg);
  }
}

/* Writes the slot's runs (called unlocked, slot BUSY). */
static int write_slot(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int64_t base = s->block * c->block;
  char *d = slot_data(c, s);
  flags |= AGGIO_IO_AGGREGATOR | AGGIO_IO_DIRECT_OK;
  for (int i = 0; i < s->nruns; i++) {
    int64_t a = s->run[i][0], b = s->run[i][1];
    if (aggio__pwrite(c->fh, d + a, b - a, base + a, flags, e) != 0)
      return e->code;
  }
  count(c, full(c, s) ? AGGIO_C_CACHE_FULL_BLOCKS : AGGIO_C_CACHE_PARTIAL_BLOCKS);
  return 0;
}

static int load_slot(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int64_t got = 0;
  int rc = aggio__pread(c->fh, slot_data(c, s), c->block, s->block * c->block, &got,
                        flags | AGGIO_IO_AGGREGATOR | AGGIO_IO_DIRECT_OK, e);
  s->valid_len = got;
  return rc;
}

/* Does a BUSY slot's job unlocked, then records the result (locked on
 * return).  A failed write is a deferred failure, reported by the next
 * collective call of every rank; a failed load is the reader's error. */
static int work(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int job = s->job;
  pthread_mutex_unlock(&c->sh->lock);
  struct aggio__err mine = {0};
  int rc = job == JOB_WRITE ? write_slot(c, s, flags, &mine) : load_slot(c, s, flags, &mine);
  pthread_mutex_lock(&c->sh->lock);
  if (job == JOB_WRITE) {
    int whole = full(c, s);
    if (rc != 0)
      deferred_failure(c, &mine);
    if (rc == 0 && (whole || s->valid)) { /* now a clean copy of the file */
      s->state = OPEN;
      s->nruns = 0;
      if (whole)
        s->valid_len = c->block;
      s->valid = 1;
    } else {
      reset(s);
    }
  } else if (rc == 0 && !s->stale) {
    s->state = OPEN;
    s->valid = 1;
  } else if (rc == 0) {
    reset(s); /* forgotten while it loaded: the file may have changed since */
  } else {
    if (e && e->code == 0)
      *e = mine;
    reset(s);
  }
  s->job = JOB_NONE;
  changed(c);
  return rc;
}

static struct slot *oldest_queued(struct aggio__cache *c) {
  struct slot *best = NULL;
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == QUEUED && (!best || s->used < best->used))
      best = s;
  }
  return best;
}

/* A rank that would wait does queued work instead, when it can reach the
 * file; else it sleeps until a slot changes.  Called locked. */
static void help_or_wait(struct aggio__cache *c) {
  double t0 = c->fh->stats ? aggio__now() : 0.0;
  struct slot *s = c->fh->opened ? oldest_queued(c) : NULL;
  if (!s) {
    c->sh->waiting++;
    pthread_cond_wait(&c->sh->change, &c->sh->lock);
    c->sh->waiting--;
  } else {
    s->state = BUSY;
    work(c, s, 0, NULL);
  }
  if (c->fh->stats)
    c->waited += aggio__now() - t0;
}

double aggio__cache_take_waited(struct aggio__cache *c) {
  double w = c->waited;
  c->waited = 0;
  return w;
}

static void *thread_main(void *arg) {
  struct aggio__cache *c = arg;
  pthread_mutex_lock(&c->sh->lock);
  for (;;) {
    struct slot *s = oldest_queued(c);
    if (!s && c->sh->stop)
      break;
    if (!s) {
      pthread_cond_wait(&c->sh->work, &c->sh->lock);
      continue;
    }
    s->state = BUSY;
    work(c, s, AGGIO_IO_BEHIND, NULL);
  }
  pthread_mutex_unlock(&c->sh->lock);
  return NULL;
}

/* The last copy into or out of a slot ended: a whole block goes to be
 * written, and ranks waiting to write or evict the slot wake (locked). */
static void unpinned(struct aggio__cache *c, struct slot *s) {
  if (full(c, s))
    queue(c, s, JOB_WRITE);
  else
    changed(c);
}

/* ---- writing into the cache ------------------------------------------------------------- */

/* The slot of `block` with [a, b) recorded and pinned (locked); NULL
 * when it would have to wait and may not. */
static struct slot *slot_for_write(struct aggio__cache *c, int64_t block, int64_t a, int64_t b,
                                   int may_wait) {
  for (;;) {
    struct slot *s = find(c, block);
    if (s && s->state == OPEN) {
      if (add_run(s, a, b) == 0) {
        s->pins++;
        s->used = ++c->sh->clock;
        return s;
      }
      if (s->pins == 0) /* its runs are full: write it out, then start anew */
        queue(c, s, JOB_WRITE);
    } else if (!s) {
      s = room(c, 1);
      if (s) {
        claim(c, s, block);
        continue;
      }
    } /* else queued or busy: its data reaches the file before ours */
    if (!may_wait)
      return NULL;
    help_or_wait(c);
  }
}

int64_t aggio__cache_put_some(struct aggio__cache *c, int64_t off, int64_t len, const char *src,
                              int may_wait) {
  int64_t done = 0;
  if (len > 0) {
    pthread_mutex_lock(&c->sh->lock);
    drop_short(c);
    pthread_mutex_unlock(&c->sh->lock);
  }
  while (done < len) {
    int64_t block = off / c->block, a = off - block * c->block;
    int64_t n = len - done < c->block - a ? len - done : c->block - a;
    pthread_mutex_lock(&c->sh->lock);
    struct slot *s = slot_for_write(c, block, a, a + n, may_wait);
    pthread_mutex_unlock(&c->sh->lock);
    if (!s)
      break;
    memcpy(slot_data(c, s) + a, src, (size_t)n);
    count_local(c, n);
    pthread_mutex_lock(&c->sh->lock);
    if (s->valid && a + n > s->valid_len)
      s->valid = 0; /* past the loaded end: the copy no longer tells the file's bytes */
    if (--s->pins == 0)
      unpinned(c, s);
    pthread_mutex_unlock(&c->sh->lock);
    off += n;
    src += n;
    done += n;
  }
  return done;
}

void aggio__cache_put(struct aggio__cache *c, int64_t off, int64_t len, const char *src) {
  aggio__cache_put_some(c, off, len, src, 1);
}

/* ---- reading through the cache ---------------------------------------------------------- */

/* Queues loads of the blocks after `block` that are not held, into free or
 * already-read slots only: read-ahead never waits, never evicts written data
 * or another reader's blocks loaded ahead, and keeps at most half the slots
 * loaded ahead and unread (several readers' streams then share the cache
 * instead of evicting each other's blocks before they are read). */
static void read_ahead(struct aggio__cache *c, int64_t block) {
  int ahead = c->nslots / 2 < READ_AHEAD ? c->nslots / 2 : READ_AHEAD, unread = 0;
  for (int i = 0; i < c->nslots; i++)
    unread += c->sh->slot[i].state != FREE && c->sh->slot[i].ahead;
  for (int64_t b = block + 1; b <= block + ahead && unread < c->nslots / 2; b++) {
    if (find(c, b))
      continue;
    struct slot *s = room(c, 0);
    if (!s)
      return;
    claim(c, s, b);
    s->ahead = 1;
    unread++;
    queue(c, s, JOB_LOAD);
  }
}

/* The slot of `block` holding the file's bytes, pinned (locked). */
static struct slot *slot_for_read(struct aggio__cache *c, int64_t block, int *rc,
                                  struct aggio__err *e) {
  for (;;) {
    struct slot *s = find(c, block);
    if (s && s->state == OPEN && s->valid) {
      s->ahead = 0;
      s->pins++;
      s->used = ++c->sh->clock;
      count(c, AGGIO_C_CACHE_HITS);
      return s;
    }
    if (s && s->state == OPEN) { /* written, not loaded: to the file first */
      if (s->pins == 0)
        queue(c, s, JOB_WRITE);
      help_or_wait(c);
      continue;
    }
    if (s && s->state == QUEUED && s->job == JOB_LOAD && c->fh->opened) {
      s->state = BUSY; /* load it here rather than wait for a thread */
      if ((*rc = work(c, s, 0, e)) != 0)
        return NULL;
      continue;
    }
    if (s) {
      help_or_wait(c);
      continue;
    }
    s = room(c, 1);
    if (!s) {
      help_or_wait(c);
      continue;
    }
    claim(c, s, block);
    s->state = BUSY;
    s->job = JOB_LOAD;
    if ((*rc = work(c, s, 0, e)) != 0)
      return NULL;
  }
}

int aggio__cache_get(struct aggio__cache *c, int64_t off, int64_t len, char *dst,
                     int64_t *eof, struct aggio__err *e) {
  while (len > 0) {
    int64_t block = off / c->block, a = off - block * c->block;
    int64_t n = len < c->block - a ? len : c->block - a;
    int rc = 0;
    pthread_mutex_lock(&c->sh->lock);
    struct slot *s = slot_for_read(c, block, &rc, e);
    if (s)
      read_ahead(c, block);
    pthread_mutex_unlock(&c->sh->lock);
    if (!s)
      return rc;
    int64_t have = s->valid_len - a;
    if (have > 0) {
      memcpy(dst, slot_data(c, s) + a, (size_t)(have < n ? have : n));
      count_local(c, have < n ? have : n);
    }
    pthread_mutex_lock(&c->sh->lock);
    if (--s->pins == 0)
      unpinned(c, s);
    pthread_mutex_unlock(&c->sh->lock);
    if (have < n) { /* the file ends inside this block */
      *eof = block * c->block + s->valid_len;
      return 0;
    }
    off += n;
    dst += n;
    len -= n;
  }
  return 0;
}

/* ---- consistency ---------------------------------------------------------------------------- */

static int dirty(const struct slot *s) {
  return (s->state == OPEN && s->nruns > 0) || ((s->state == QUEUED || s->state == BUSY) &&
                                                 s->job == JOB_WRITE);
}

/* Queues every unpinned dirty slot in [first, last] and waits until none
 * is left (locked). */
static void write_out(struct aggio__cache *c, int64_t first, int64_t last) {
  for (;;) {
    int left = 0;
    for (int i = 0; i < c->nslots; i++) {
      struct slot *s = &c->sh->slot[i];
      if (s->state == FREE || s->block < first || s->block > last || !dirty(s))
        continue;
      left = 1;
      if (s->state == OPEN && s->pins == 0)
        queue(c, s, JOB_WRITE);
    }
    if (!left)
      return;
    help_or_wait(c);
  }
}

/* Forgets loaded copies in [first, last], and loads queued or under way
 * there; written runs stay (locked). */
static void drop_clean(struct aggio__cache *c, int64_t first, int64_t last) {
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == FREE || s->block < first || s->block > last)
      continue;
    if (s->state == QUEUED && s->job == JOB_LOAD)
      reset(s);
    else if (s->state == BUSY && s->job == JOB_LOAD)
      s->stale = 1;
    if (s->state != OPEN)
      continue;
    s->valid = 0;
    if (s->nruns == 0 && s->pins == 0)
      reset(s);
  }
  changed(c);
}

void aggio__cache_flush(struct aggio__cache *c, int drop) {
  pthread_mutex_lock(&c->sh->lock);
  write_out(c, 0, INT64_MAX);
  if (drop) {
    /* loads still queued or running are done first, then forgotten */
    for (int busy = 1; busy;) {
      busy = 0;
      for (int i = 0; i < c->nslots; i++)
        busy |= c->sh->slot[i].state == QUEUED || c->sh->slot[i].state == BUSY;
      if (busy)
        help_or_wait(c);
    }
    drop_clean(c, 0, INT64_MAX);
  }
  pthread_mutex_unlock(&c->sh->lock);
}

void aggio__cache_settle(struct aggio__cache *c, int64_t off, int64_t len, int writing) {
  if (len <= 0)
    return;
  int64_t first = off / c->block, last = (off + len - 1) / c->block;
  pthread_mutex_lock(&c->sh->lock);
  write_out(c, first, last);
  if (writing) {
    drop_clean(c, first, last);
    drop_short(c);
  }
  pthread_mutex_unlock(&c->sh->lock);
}

void aggio__cache_forget(struct aggio__cache *c, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return;
  pthread_mutex_lock(&c->sh->lock);
  drop_clean(c, lo / c->block, (hi - 1) / c->block);
  drop_short(c);
  pthread_mutex_unlock(&c->sh->lock);
}

void aggio__cache_held(struct aggio__cache *c, int64_t *flags, int64_t *lo, int64_t *hi) {
  pthread_mutex_lock(&c->sh->lock);
  for (int i = 0; i < c->nslots; i++) {
    const struct slot *s = &c->sh->slot[i];
    if (dirty(s) && s->nruns > 0) {
      int64_t base = s->block * c->block;
      *flags |= AGGIO_SF_CACHE_DIRTY;
      *lo = base + s->run[0][0] < *lo ? base + s->run[0][0] : *lo;
      *hi = base + s->run[s->nruns - 1][1] > *hi ? base + s->run[s->nruns - 1][1] : *hi;
    }
    if (s->state != FREE && (s->valid || s->job == JOB_LOAD))
      *flags |= AGGIO_SF_CACHE_CLEAN;
  }
  pthread_mutex_unlock(&c->sh->lock);
}

/* The first rank of the node to look after a failure reports it: whichever
 * rank flushes last in a collective flush has waited for every write of
 * the node, so no failure escapes the agreement that follows (a leader
 * that looked before another rank's write failed would miss it). */
int aggio__cache_error(struct aggio__cache *c, struct aggio__err *e) {
  pthread_mutex_lock(&c->sh->lock);
  int64_t n = c->sh->err_count;
  int fresh = n > c->sh->reported;
  c->sh->reported = n;
  int code = c->sh->err_code;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", c->sh->err_msg);
  pthread_mutex_unlock(&c->sh->lock);
  if (!fresh)
    return 0;
  return aggio__fail(e, code, "rank %d: an earlier collective write, held by write-behind, "
                     "failed to reach the file: %s", c->fh->rank, msg);
}

int64_t aggio__cache_block(const struct aggio__cache *c) { return c->block; }

/* ---- making and freeing ---------------------------------------------------------------------- */

void aggio__cache_header(int64_t *fixed, int64_t *per_slot) {
  *fixed = (int64_t)sizeof(struct shared);
  *per_slot = (int64_t)sizeof(struct slot);
}

static int64_t header_bytes(int nslots, int64_t align) {
  int64_t fixed, per_slot;
  aggio__cache_header(&fixed, &per_slot);
  return aggio__round_up(fixed + nslots * per_slot, align);
}

static int init_shared(struct shared *sh, int nslots) {
  pthread_mutexattr_t ma;
  pthread_condattr_t ca;
  /* the window's memory is not always zeroed (a one-rank window is malloc'd) */
  memset(sh, 0, sizeof *sh + (size_t)nslots * sizeof sh->slot[0]);
  if (pthread_mutexattr_init(&ma) != 0 || pthread_condattr_init(&ca) != 0)
    return -1;
  pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
  pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED);
  int rc = pthread_mutex_init(&sh->lock, &ma) | pthread_cond_init(&sh->work, &ca) |
           pthread_cond_init(&sh->change, &ca);
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_destroy(&ca);
  for (int i = 0; i < nslots; i++)
    reset(&sh->slot[i]);
  return rc ? -1 : 0;
}

/* Rank 0 of the cache's ranks allocates it all and initialises the header;
 * the others map it. */
static int make_window(struct aggio__cache *c, int64_t align) {
  int me;
  MPI_Comm_rank(c->comm, &me);
  int64_t hdr = header_bytes(c->nslots, align);
  int64_t fixed, per_slot;
  aggio__cache_header(&fixed, &per_slot);
  MPI_Aint bytes = me == 0 ? (MPI_Aint)aggio__cache_window_bytes(c->block, c->nslots, align,
                                                                 fixed, per_slot) : 0;
  char *base = NULL;
  int ok = MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, c->comm, &base, &c->win) ==
           MPI_SUCCESS;
  if (!ok)
    c->win = MPI_WIN_NULL;
  if (ok) {
    MPI_Aint size;
    int disp;
    MPI_Win_shared_query(c->win, 0, &size, &disp, &base);
    char *p = (char *)aggio__round_up((int64_t)(uintptr_t)base, align);
    c->sh = (struct shared *)p;
    c->data = p + hdr;
    if (me == 0)
      ok = init_shared(c->sh, c->nslots) == 0;
  }
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, c->comm);
  return ok ? 0 : -1;
}

static void start_threads(struct aggio__cache *c) {
  while (c->nthreads < THREADS &&
         pthread_create(&c->thread[c->nthreads], NULL, thread_main, c) == 0)
    c->nthreads++;
}

int aggio__cache_new(aggio_file fh, MPI_Comm comm, int64_t block, int nslots, int host,
                     struct aggio__cache **out, struct aggio__err *e) {
  struct aggio__cache *c = calloc(1, sizeof *c);
  int ok = c != NULL;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (!ok) {
    free(c);
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory for the node cache",
                       fh->rank);
  }
  c->fh = fh;
  c->comm = comm;
  c->block = block;
  c->nslots = nslots;
  c->win = MPI_WIN_NULL;
  if (make_window(c, fh->dio_align > 4096 ? fh->dio_align : 4096) != 0) {
    if (c->win != MPI_WIN_NULL)
      MPI_Win_free(&c->win);
    free(c);
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: the node cache's shared memory "
                       "(%d blocks of %lld bytes) could not be allocated", fh->rank,
                       nslots, (long long)block);
  }
  if (host)
    start_threads(c);
  *out = c;
  return 0;
}

void aggio__cache_free(struct aggio__cache *c) {
  if (!c)
    return;
  pthread_mutex_lock(&c->sh->lock);
  c->sh->stop = 1;
  pthread_cond_broadcast(&c->sh->work);
  pthread_mutex_unlock(&c->sh->lock);
  for (int i = 0; i < c->nthreads; i++)
    pthread_join(c->thread[i], NULL);
  /* every rank's threads are gone before the lock and memory go */
  MPI_Barrier(c->comm);
  int me;
  MPI_Comm_rank(c->comm, &me);
  if (me == 0) {
    pthread_cond_destroy(&c->sh->work);
    pthread_cond_destroy(&c->sh->change);
    pthread_mutex_destroy(&c->sh->lock);
  }
  MPI_Win_free(&c->win);
  free(c);
}
