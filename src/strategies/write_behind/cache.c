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
 *
 * Acknowledged data stays in this memory for a bounded time: a slot
 * written into and not written out for `max_age` seconds (the hint
 * aggio_write_behind_delay) is queued by the I/O threads, so that a kill
 * or MPI_Abort loses at most that much of the program's recent writes.
 * The window is node-shared memory made without blocking (shm.h) and let
 * go without communicating; its lock is robust: a process that dies
 * holding it does not wedge the node's others.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "engine.h"
#include "shm.h"

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
  double dirty_since;  /* when its first run not yet written was added */
  pid_t worker;        /* BUSY: the process doing its job */
  int32_t next;        /* the next slot in its block's hash chain, or -1 */
  int nruns;
  int64_t run[MAX_RUNS][2]; /* written ranges, block-relative: sorted, disjoint, not touching */
};

struct shared {
  pthread_mutex_t lock;
  pthread_cond_t work;  /* I/O threads wait here for queued slots */
  pthread_cond_t change; /* ranks wait here for a slot to change state */
  int waiting;          /* ranks waiting on `change`: wake them only then */
  uint64_t clock;
  int64_t err_count;    /* deferred failures so far */
  int64_t err_bytes;    /* bytes they failed to write */
  int64_t reported;     /* failures an agreement reported to every rank */
  int64_t reported_bytes;
  int64_t owner_deaths; /* processes that died holding the lock */
  int mixed_reads;      /* an independent read of the node went to the file:
                         * loads go through the page cache from then on */
  int err_code;
  char err_msg[256];
  struct slot slot[];
};

struct aggio__cache {
  aggio_file fh;
  struct aggio__shm shm; /* the window */
  struct shared *sh;
  char *data;          /* nslots blocks, aligned for direct I/O */
  int64_t block;
  int nslots;
  int host;            /* this rank runs I/O threads */
  int nranks;          /* ranks sharing the cache */
  int64_t *done;       /* [nranks], in the window: each rank's blocking
                        * collective writes whose data is in the cache */
  int32_t *bucket;     /* [nbuckets], in the window: the first slot of each
                        * hash chain of blocks, or -1 */
  uint64_t nbuckets;   /* a power of two, at least twice nslots */
  double max_age;      /* seconds written data may wait in a slot (0: no bound) */
  pthread_t thread[THREADS];
  int nthreads;
  int stop;            /* this process's threads finish the queue and leave */
  int64_t peeked;      /* deferred failures this rank gave to an agreement */
  double waited;       /* seconds this rank waited or helped (timers) */
  aggio__step_fn then; /* set-up: the step after the window (aggio__cache_make) */
};

/* ---- the lock: robust, so that a process that died holding it does not
 * wedge the node; a slot it was writing is queued again ------------------------ */

static void index_rebuild(struct aggio__cache *c);

static void owner_died(struct aggio__cache *c) {
  pthread_mutex_consistent(&c->sh->lock);
  c->sh->owner_deaths++;
  index_rebuild(c); /* it may have died halfway through a chain's update */
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == BUSY && s->worker > 0 && kill(s->worker, 0) != 0 && errno == ESRCH)
      s->state = QUEUED; /* its job is done again, by the living */
  }
}

static void lock_cache(struct aggio__cache *c) {
  if (pthread_mutex_lock(&c->sh->lock) == EOWNERDEAD)
    owner_died(c);
}

static void unlock_cache(struct aggio__cache *c) { pthread_mutex_unlock(&c->sh->lock); }

static void wait_on(struct aggio__cache *c, pthread_cond_t *cond) {
  if (pthread_cond_wait(cond, &c->sh->lock) == EOWNERDEAD)
    owner_died(c);
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A wait of at most `seconds` (the I/O threads' look at old slots). */
static void wait_on_for(struct aggio__cache *c, pthread_cond_t *cond, double seconds) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  long long ns = (long long)ts.tv_nsec + (long long)(seconds * 1e9);
  ts.tv_sec += (time_t)(ns / 1000000000LL);
  ts.tv_nsec = (long)(ns % 1000000000LL);
  if (pthread_cond_timedwait(cond, &c->sh->lock, &ts) == EOWNERDEAD)
    owner_died(c);
}

static char *slot_data(const struct aggio__cache *c, const struct slot *s) {
  return c->data + (int64_t)(s - c->sh->slot) * c->block;
}

static void count(struct aggio__cache *c, enum aggio__counter k) {
  if (c->fh->obs.stats)
    __atomic_fetch_add(&c->fh->obs.stats->c[k], 1, __ATOMIC_RELAXED);
}

/* The node cache is shared within a node only: what passes through it
 * never crosses nodes. */
static void count_local(struct aggio__cache *c, int64_t bytes) {
  if (c->fh->obs.stats)
    __atomic_fetch_add(&c->fh->obs.stats->c[AGGIO_C_NODE_LOCAL_BYTES], bytes,
                       __ATOMIC_RELAXED);
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

/* The index of blocks to slots: a hash table of chains through the
 * slots, in the window (under the lock), so that the lookup every copy
 * makes costs the same with 8 slots or 1024.  A slot is in its block's
 * chain exactly while it holds a block (block >= 0). */
static uint64_t nbuckets_for(int nslots) {
  uint64_t n = 2;
  while (n < 2 * (uint64_t)nslots)
    n *= 2;
  return n;
}

static int32_t *chain_of(const struct aggio__cache *c, int64_t block) {
  uint64_t h = (uint64_t)block * 0x9E3779B97F4A7C15ull; /* Fibonacci hashing */
  return &c->bucket[(h >> 32) & (c->nbuckets - 1)];
}

static void index_add(struct aggio__cache *c, struct slot *s) {
  int32_t *head = chain_of(c, s->block);
  s->next = *head;
  *head = (int32_t)(s - c->sh->slot);
}

static void index_remove(struct aggio__cache *c, struct slot *s) {
  int32_t me = (int32_t)(s - c->sh->slot);
  for (int32_t *p = chain_of(c, s->block); *p >= 0; p = &c->sh->slot[*p].next)
    if (*p == me) {
      *p = s->next;
      break;
    }
  s->next = -1;
}

static void index_rebuild(struct aggio__cache *c) {
  for (uint64_t i = 0; i < c->nbuckets; i++)
    c->bucket[i] = -1;
  for (int i = 0; i < c->nslots; i++)
    if (c->sh->slot[i].block >= 0)
      index_add(c, &c->sh->slot[i]);
}

static struct slot *find(struct aggio__cache *c, int64_t block) {
  for (int32_t i = *chain_of(c, block); i >= 0; i = c->sh->slot[i].next)
    if (c->sh->slot[i].block == block)
      return &c->sh->slot[i];
  return NULL;
}

/* Empties a slot (locked). */
static void reset(struct aggio__cache *c, struct slot *s) {
  if (s->block >= 0)
    index_remove(c, s);
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
        reset(c, s);
    }
  }
}

static void claim(struct aggio__cache *c, struct slot *s, int64_t block) {
  reset(c, s);
  s->state = OPEN;
  s->block = block;
  index_add(c, s);
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

/* Queues the written slots the writers have left (locked): untouched
 * while more blocks' worth of copies than the cache holds went elsewhere.
 * Why: a block with a hole (HDF5 leaves room for metadata it writes only
 * at close; PnetCDF for its header) never fills, and would otherwise wait
 * for eviction, the age bound or the sync, where the writers wait for it;
 * written now, it goes while they copy on.  A rank that writes its own
 * region touches its block once per copy of each rank of the node, far
 * within the bound. */
static void queue_left(struct aggio__cache *c) {
  uint64_t idle = (uint64_t)c->nslots * (uint64_t)(c->nranks + 1);
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == OPEN && s->nruns > 0 && s->pins == 0 && c->sh->clock - s->used > idle)
      queue(c, s, JOB_WRITE);
  }
}

/* ---- the work: writing and loading slots ------------------------------------------------ */

static int64_t run_bytes(const struct slot *s) {
  int64_t n = 0;
  for (int i = 0; i < s->nruns; i++)
    n += s->run[i][1] - s->run[i][0];
  return n;
}

/* Locked.  The first failure's text stands for those reported with it. */
static void deferred_failure(struct aggio__cache *c, const struct slot *s,
                             const struct aggio__err *e) {
  struct shared *sh = c->sh;
  if (sh->err_count == sh->reported || sh->err_code == 0) {
    sh->err_code = e->code;
    snprintf(sh->err_msg, sizeof sh->err_msg, "%.255s", e->msg);
  }
  sh->err_count++;
  sh->err_bytes += run_bytes(s);
}

/* A slot's job is this process's now (locked). */
static void take(struct slot *s) {
  s->state = BUSY;
  s->worker = getpid();
}

/* Writes the slot's runs (called unlocked, slot BUSY). */
static int write_slot(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int64_t base = s->block * c->block;
  char *d = slot_data(c, s);
  flags |= AGGIO_IO_AGGREGATOR | AGGIO_IO_DIRECT_OK | AGGIO_IO_DIRECT_EAGER;
  for (int i = 0; i < s->nruns; i++) {
    int64_t a = s->run[i][0], b = s->run[i][1];
    if (aggio__pwrite(c->fh, d + a, b - a, base + a, flags, e) != 0)
      return e->code;
  }
  count(c, full(c, s) ? AGGIO_C_CACHE_FULL_BLOCKS : AGGIO_C_CACHE_PARTIAL_BLOCKS);
  return 0;
}

/* Loads go to the device (direct I/O for aligned blocks) while the file
 * is read through the cache alone; once an independent read of the node
 * has gone to the file, through the page cache, where those reads then
 * find the pages around the loaded blocks (HDF5 reads object headers and
 * B-tree nodes between its datasets' data).  Measured cold: aggio-bench's
 * ior-hard read, Open MPI 2 ranks, 1916-2025 MiB/s direct against 616-1819
 * buffered; HDF5's, MPICH 2 ranks, 898 buffered against 693 direct (the
 * MPI library's 882; BENCHMARKS.md, issue 25). */
static int load_slot(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int64_t got = 0;
  int direct = __atomic_load_n(&c->sh->mixed_reads, __ATOMIC_RELAXED) ? 0 : AGGIO_IO_DIRECT_OK;
  int rc = aggio__pread(c->fh, slot_data(c, s), c->block, s->block * c->block, &got,
                        flags | AGGIO_IO_AGGREGATOR | direct, e);
  s->valid_len = got;
  return rc;
}

/* Does a BUSY slot's job unlocked, then records the result (locked on
 * return).  A failed write is a deferred failure, reported by the next
 * collective call of every rank; a failed load is the reader's error. */
static int work(struct aggio__cache *c, struct slot *s, int flags, struct aggio__err *e) {
  int job = s->job;
  unlock_cache(c);
  struct aggio__err mine = {0};
  int rc = job == JOB_WRITE ? write_slot(c, s, flags, &mine) : load_slot(c, s, flags, &mine);
  lock_cache(c);
  if (job == JOB_WRITE) {
    int whole = full(c, s);
    if (rc != 0)
      deferred_failure(c, s, &mine);
    if (rc == 0 && (whole || s->valid)) { /* now a clean copy of the file */
      s->state = OPEN;
      s->nruns = 0;
      if (whole)
        s->valid_len = c->block;
      s->valid = 1;
    } else {
      reset(c, s);
    }
  } else if (rc == 0 && !s->stale) {
    s->state = OPEN;
    s->valid = 1;
  } else if (rc == 0) {
    reset(c, s); /* forgotten while it loaded: the file may have changed since */
  } else {
    if (e && e->code == 0)
      *e = mine;
    reset(c, s);
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
  double t0 = c->fh->obs.stats ? aggio__now() : 0.0;
  struct slot *s = c->fh->st.opened ? oldest_queued(c) : NULL;
  if (!s) {
    c->sh->waiting++;
    wait_on(c, &c->sh->change);
    c->sh->waiting--;
  } else {
    take(s);
    work(c, s, 0, NULL);
  }
  if (c->fh->obs.stats)
    c->waited += aggio__now() - t0;
}

double aggio__cache_take_waited(struct aggio__cache *c) {
  double w = c->waited;
  c->waited = 0;
  return w;
}

/* Queues the slots whose written data has waited max_age (locked): the
 * bound on how long acknowledged data stays in memory only. */
static void queue_old(struct aggio__cache *c) {
  double now = mono_now();
  for (int i = 0; i < c->nslots; i++) {
    struct slot *s = &c->sh->slot[i];
    if (s->state == OPEN && s->nruns > 0 && s->pins == 0 && now - s->dirty_since >= c->max_age)
      queue(c, s, JOB_WRITE);
  }
}

static void *thread_main(void *arg) {
  struct aggio__cache *c = arg;
  lock_cache(c);
  for (;;) {
    struct slot *s = oldest_queued(c);
    if (!s && c->stop)
      break;
    if (!s && c->max_age > 0) {
      wait_on_for(c, &c->sh->work, c->max_age / 2);
      queue_old(c);
      continue;
    }
    if (!s) {
      wait_on(c, &c->sh->work);
      continue;
    }
    take(s);
    work(c, s, AGGIO_IO_BEHIND, NULL);
  }
  unlock_cache(c);
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
      if (s->nruns == 0)
        s->dirty_since = mono_now();
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
        queue_left(c);
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
    lock_cache(c);
    drop_short(c);
    unlock_cache(c);
  }
  while (done < len) {
    int64_t block = off / c->block, a = off - block * c->block;
    int64_t n = len - done < c->block - a ? len - done : c->block - a;
    lock_cache(c);
    struct slot *s = slot_for_write(c, block, a, a + n, may_wait);
    unlock_cache(c);
    if (!s)
      break;
    memcpy(slot_data(c, s) + a, src, (size_t)n);
    count_local(c, n);
    lock_cache(c);
    if (s->valid && a + n > s->valid_len)
      s->valid = 0; /* past the loaded end: the copy no longer tells the file's bytes */
    if (--s->pins == 0)
      unpinned(c, s);
    unlock_cache(c);
    off += n;
    src += n;
    done += n;
  }
  return done;
}

void aggio__cache_put(struct aggio__cache *c, int64_t off, int64_t len, const char *src) {
  aggio__cache_put_some(c, off, len, src, 1);
}

/* A reader is done copying out of s (unlocked). */
static void unpin(struct aggio__cache *c, struct slot *s) {
  lock_cache(c);
  if (--s->pins == 0)
    unpinned(c, s);
  unlock_cache(c);
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
    if (s && s->state == QUEUED && s->job == JOB_LOAD && c->fh->st.opened) {
      take(s); /* load it here rather than wait for a thread */
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
    take(s);
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
    lock_cache(c);
    struct slot *s = slot_for_read(c, block, &rc, e);
    if (s)
      read_ahead(c, block);
    unlock_cache(c);
    if (!s)
      return rc;
    int64_t have = s->valid_len - a;
    if (have > 0) {
      memcpy(dst, slot_data(c, s) + a, (size_t)(have < n ? have : n));
      count_local(c, have < n ? have : n);
    }
    unpin(c, s);
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

/* The piece [a, a + n) of block `block` when the cache holds it loaded
 * (or written over a loaded copy), pinned; else NULL (locked). */
static struct slot *slot_holding(struct aggio__cache *c, int64_t block, int64_t a, int64_t n) {
  struct slot *s = find(c, block);
  if (!s || s->state != OPEN || !s->valid || a + n > s->valid_len)
    return NULL;
  s->pins++;
  s->used = ++c->sh->clock;
  count(c, AGGIO_C_CACHE_HITS);
  return s;
}

int aggio__cache_peek(struct aggio__cache *c, int64_t off, int64_t len, char *dst) {
  while (len > 0) {
    int64_t block = off / c->block, a = off - block * c->block;
    int64_t n = len < c->block - a ? len : c->block - a;
    lock_cache(c);
    struct slot *s = slot_holding(c, block, a, n);
    unlock_cache(c);
    if (!s)
      return 0;
    memcpy(dst, slot_data(c, s) + a, (size_t)n);
    count_local(c, n);
    unpin(c, s);
    off += n;
    dst += n;
    len -= n;
  }
  return 1;
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
      reset(c, s);
    else if (s->state == BUSY && s->job == JOB_LOAD)
      s->stale = 1;
    if (s->state != OPEN)
      continue;
    s->valid = 0;
    if (s->nruns == 0 && s->pins == 0)
      reset(c, s);
  }
  changed(c);
}

void aggio__cache_flush(struct aggio__cache *c, int drop) {
  lock_cache(c);
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
  unlock_cache(c);
}

void aggio__cache_settle(struct aggio__cache *c, int64_t off, int64_t len, int writing) {
  if (len <= 0)
    return;
  if (!writing)
    __atomic_store_n(&c->sh->mixed_reads, 1, __ATOMIC_RELAXED);
  int64_t first = off / c->block, last = (off + len - 1) / c->block;
  lock_cache(c);
  write_out(c, first, last);
  if (writing) {
    drop_clean(c, first, last);
    drop_short(c);
  }
  unlock_cache(c);
}

void aggio__cache_forget(struct aggio__cache *c, int64_t lo, int64_t hi) {
  if (hi <= lo)
    return;
  lock_cache(c);
  drop_clean(c, lo / c->block, (hi - 1) / c->block);
  drop_short(c);
  unlock_cache(c);
}

void aggio__cache_held(struct aggio__cache *c, int64_t *flags, int64_t *lo, int64_t *hi) {
  lock_cache(c);
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
  unlock_cache(c);
}

/* Every rank of the node sees the failures not reported yet (any of them
 * may be the one whose report the agreement chooses, and whichever rank
 * flushes last in a collective flush has waited for every write of the
 * node, so no failure escapes the agreement that follows).  They count as
 * reported only once an agreement chose this rank's report
 * (aggio__cache_reported): a report that lost to another rank's error
 * waits for the next call. */
int aggio__cache_error(struct aggio__cache *c, struct aggio__err *e) {
  lock_cache(c);
  int64_t n = c->sh->err_count, bytes = c->sh->err_bytes - c->sh->reported_bytes;
  int fresh = n > c->sh->reported;
  int code = c->sh->err_code;
  char msg[256];
  snprintf(msg, sizeof msg, "%s", c->sh->err_msg);
  unlock_cache(c);
  if (!fresh || !e || e->code != 0)
    return 0;
  c->peeked = n;
  return aggio__fail(e, code, "rank %d: %lld bytes of earlier writes, held by "
                     "write-behind, failed to reach the file %s: %s", c->fh->rank,
                     (long long)bytes, c->fh->path, msg);
}

void aggio__cache_lock_for_test(struct aggio__cache *c) { lock_cache(c); }

void aggio__cache_reported(struct aggio__cache *c) {
  lock_cache(c);
  if (c->peeked > c->sh->reported) {
    /* the bytes up to the failures this report covered */
    c->sh->reported_bytes = c->peeked == c->sh->err_count ? c->sh->err_bytes
                                                           : c->sh->reported_bytes;
    c->sh->reported = c->peeked;
  }
  unlock_cache(c);
  c->peeked = 0;
}

int64_t aggio__cache_unwritten(struct aggio__cache *c, char *msg, size_t len, int *speaker) {
  lock_cache(c);
  int64_t bytes = c->sh->err_count > c->sh->reported ? c->sh->err_bytes - c->sh->reported_bytes
                                                     : 0;
  snprintf(msg, len, "%s", c->sh->err_msg);
  unlock_cache(c);
  *speaker = c->shm.me == 0; /* one rank per cache: the one that made it */
  return bytes;
}

int64_t aggio__cache_block(const struct aggio__cache *c) { return c->block; }

/* ---- blocking collective writes, seen by the node's other ranks -------------------------- */

void aggio__cache_copied(struct aggio__cache *c) {
  lock_cache(c);
  c->done[c->shm.me]++;
  changed(c);
  unlock_cache(c);
}

/* Only blocking writes are waited for: their writers finish the copy in
 * the call, needing no other rank, so the wait ends; a non-blocking
 * write's data is MPI's to show only once its writer has completed it
 * (and synced), and its copy may wait for the writer's next aggio call. */
void aggio__cache_quiesce(struct aggio__cache *c, int64_t writes) {
  lock_cache(c);
  for (int j = 0; j < c->nranks;)
    if (c->done[j] < writes)
      help_or_wait(c);
    else
      j++;
  unlock_cache(c);
}

/* ---- making and freeing ---------------------------------------------------------------------- */

void aggio__cache_header(int nranks, int64_t *fixed, int64_t *per_slot) {
  *fixed = (int64_t)sizeof(struct shared) + nranks * (int64_t)sizeof(int64_t);
  /* a slot, and its share of the hash buckets (fewer than 4 a slot) */
  *per_slot = (int64_t)sizeof(struct slot) + 4 * (int64_t)sizeof(int32_t);
}

static int64_t header_bytes(int nranks, int nslots, int64_t align) {
  int64_t fixed, per_slot;
  aggio__cache_header(nranks, &fixed, &per_slot);
  return aggio__round_up(fixed + nslots * per_slot, align);
}

/* The header, by the rank that created the window: a robust
 * process-shared lock, and condition variables on the monotonic clock. */
static int init_shared(struct shared *sh, int nslots) {
  pthread_mutexattr_t ma;
  pthread_condattr_t ca;
  memset(sh, 0, sizeof *sh + (size_t)nslots * sizeof sh->slot[0]);
  if (pthread_mutexattr_init(&ma) != 0)
    return -1;
  if (pthread_condattr_init(&ca) != 0) {
    pthread_mutexattr_destroy(&ma);
    return -1;
  }
  int rc = pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) |
           pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST) |
           pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED) |
           pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (rc == 0)
    rc = pthread_mutex_init(&sh->lock, &ma) | pthread_cond_init(&sh->work, &ca) |
         pthread_cond_init(&sh->change, &ca);
  pthread_mutexattr_destroy(&ma);
  pthread_condattr_destroy(&ca);
  for (int i = 0; i < nslots; i++) { /* FREE, no job: zero */
    sh->slot[i].block = -1;
    sh->slot[i].next = -1;
  }
  return rc ? -1 : 0;
}

static void start_threads(struct aggio__cache *c) {
  while (c->nthreads < THREADS &&
         pthread_create(&c->thread[c->nthreads], NULL, thread_main, c) == 0)
    c->nthreads++;
}

static int window_made(struct aggio__op *op);

static char *header_at(const struct aggio__cache *c, char *base) {
  int64_t align = c->fh->st.dio_align > 4096 ? c->fh->st.dio_align : 4096;
  return (char *)aggio__round_up((int64_t)(uintptr_t)base, align);
}

/* On the rank that creates the window, before any other can map it: the
 * lock must be whole before the first thread takes it. */
static int init_header(char *base, void *arg) {
  struct aggio__cache *c = arg;
  struct shared *sh = (struct shared *)header_at(c, base);
  int rc = init_shared(sh, c->nslots);
  int64_t *done = (int64_t *)(void *)&sh->slot[c->nslots];
  memset(done, 0, (size_t)c->nranks * sizeof(int64_t));
  int32_t *bucket = (int32_t *)(void *)(done + c->nranks);
  for (uint64_t i = 0; i < nbuckets_for(c->nslots); i++)
    bucket[i] = -1;
  return rc;
}

struct aggio__cache *aggio__cache_alloc(aggio_file fh, int64_t block, int nslots, int host,
                                        double max_age) {
  struct aggio__cache *c = aggio__calloc(fh, 1, sizeof *c);
  if (!c)
    return NULL;
  c->fh = fh;
  c->block = block;
  c->nslots = nslots;
  c->host = host;
  c->max_age = max_age;
  return c;
}

int aggio__cache_make_window(struct aggio__op *op, struct aggio__cache *c, MPI_Comm comm,
                             aggio__step_fn then) {
  aggio_file fh = op->fh;
  int64_t fixed, per_slot, align = fh->st.dio_align > 4096 ? fh->st.dio_align : 4096;
  MPI_Comm_size(comm, &c->nranks);
  aggio__cache_header(c->nranks, &fixed, &per_slot);
  size_t bytes = (size_t)aggio__cache_window_bytes(c->block, c->nslots, align, fixed, per_slot);
  c->then = then;
  c->shm.init = init_header;
  c->shm.init_arg = c;
  op->sdata = c; /* the set-up's own: no operation state exists yet */
  return aggio__shm_make(op, &c->shm, comm, bytes, window_made, AGGIO_P_PLAN);
}

/* Every rank of the node mapped the window (or none keeps it), its header
 * made by the rank that created it (init_header): hosts start their
 * threads. */
static int window_made(struct aggio__op *op) {
  struct aggio__cache *c = op->sdata;
  op->sdata = NULL;
  aggio_file fh = c->fh;
  int64_t align = fh->st.dio_align > 4096 ? fh->st.dio_align : 4096;
  if (!c->shm.base) {
    aggio__fail(&op->err, AGGIO_ERR_NOMEM, "rank %d: the node cache's shared memory (%d "
                "blocks of %lld bytes) could not be made", fh->rank, c->nslots,
                (long long)c->block);
    return aggio__then(op, c->then, AGGIO_P_PLAN);
  }
  char *p = header_at(c, c->shm.base);
  c->sh = (struct shared *)p;
  c->done = (int64_t *)(void *)&c->sh->slot[c->nslots];
  c->bucket = (int32_t *)(void *)(c->done + c->nranks);
  c->nbuckets = nbuckets_for(c->nslots);
  c->data = p + header_bytes(c->nranks, c->nslots, align);
  if (c->host && op->err.code == 0)
    start_threads(c);
  return aggio__then(op, c->then, AGGIO_P_PLAN);
}

/* Local: this process's threads finish what is queued and go, and the
 * window is unmapped (the node's memory goes with its last mapping).  The
 * caller flushed first, collectively, at close; after a failed set-up
 * nothing was written. */
void aggio__cache_free(struct aggio__cache *c) {
  if (!c)
    return;
  if (c->nthreads > 0) {
    lock_cache(c);
    c->stop = 1;
    pthread_cond_broadcast(&c->sh->work);
    unlock_cache(c);
    for (int i = 0; i < c->nthreads; i++)
      pthread_join(c->thread[i], NULL);
  }
  aggio__shm_free(&c->shm);
  free(c);
}
