/*
 * writeback.c - early write-back: large writes that went through the page
 * cache start their write-out at once, on an I/O thread, so that the
 * device works while the program goes on writing, instead of all of it
 * waiting for the program's sync (or for the kernel's flusher, which
 * starts only at its dirty thresholds).
 *
 * Why: ranks writing one shared file through the page cache copy one at a
 * time (ext4 takes the inode's lock for every buffered write), while file
 * per process copies into N files at once; a durable run then pays the
 * copies and the device one after the other.  Started early, the device's
 * time hides the copies'.  Measured here (ext4, 512 MiB in 1 MiB requests,
 * 4 processes, fsync at the end): one shared file 1558-1616 MiB/s, with
 * early write-back 1880-2158, file per process 1897-1969 (BENCHMARKS.md,
 * issue 25).  Called on the writer's own thread, sync_file_range blocks
 * while the device's queue is full, which cut the non-durable rate from
 * 5.3 to 2.1 GB/s: hence the I/O thread, which nobody waits for.
 *
 * One job per file at a time: writes that come while it runs widen the
 * range it takes next, so that the pool's queue never holds more than one
 * job per file.  Best effort by design: a write-back not started is done
 * by sync; an error of a write-back started here stays recorded in the
 * file system for sync (fsync) to report.
 */
#include <stdlib.h>

#include "engine.h"
#include "pool.h"
#include "writeback.h"

struct aggio__writeback {
  struct aggio__job job;      /* first: the pool hands it back */
  struct aggio__batch batch;  /* never waited on: close quiets the pool */
  aggio_file fh;
  pthread_mutex_t lock;
  int64_t lo, hi;             /* what the next job starts; lo == hi: nothing */
  int queued;                 /* a job is queued or running */
};

/* The writers read it on any thread (non-blocking writes run on the I/O
 * threads); the hints change on the calling thread. */
static int64_t smallest(aggio_file fh) {
  return __atomic_load_n(&fh->early_wb_min, __ATOMIC_RELAXED);
}

/* The smallest write aggio_early_writeback starts early; -1 none (disable,
 * or a back end without a page cache). */
static int64_t smallest_wanted(aggio_file fh) {
  if (!fh->st.ops->start_writeback)
    return -1;
  if (fh->hints.early_writeback.num == AGGIO_ENABLE)
    return 1;
  if (fh->hints.early_writeback.num == AGGIO_AUTOMATIC)
    return AGGIO_EARLY_WRITEBACK_MIN;
  return -1;
}

void aggio__writeback_configure(aggio_file fh) {
  __atomic_store_n(&fh->early_wb_min, smallest_wanted(fh), __ATOMIC_RELAXED);
}

/* Takes the range gathered so far, or says the job is done (under the lock,
 * so that a writer that widens the range after it finds no job queued). */
static int take(struct aggio__writeback *w, int64_t *lo, int64_t *hi) {
  pthread_mutex_lock(&w->lock);
  *lo = w->lo;
  *hi = w->hi;
  w->lo = w->hi = 0;
  if (*lo == *hi)
    w->queued = 0;
  pthread_mutex_unlock(&w->lock);
  return *lo != *hi;
}

static void run(struct aggio__job *job, struct aggio__err *e) {
  struct aggio__writeback *w = (struct aggio__writeback *)job;
  struct aggio__store *st = &w->fh->st;
  int64_t lo, hi;
  (void)e; /* nothing to report: sync reports what write-back could not do */
  while (take(w, &lo, &hi)) {
    st->ops->start_writeback(st, lo, hi - lo);
    struct aggio__stats *s = st->obs->stats; /* other threads count too */
    if (s) {
      __atomic_fetch_add(&s->c[AGGIO_C_WRITEBACK_STARTS], 1, __ATOMIC_RELAXED);
      __atomic_fetch_add(&s->c[AGGIO_C_WRITEBACK_BYTES], hi - lo, __ATOMIC_RELAXED);
    }
  }
}

/* The file's state, made at its first large buffered write; NULL without
 * memory (then nothing starts early).  Two threads may write the file at
 * once: the first to install its copy wins, the other frees its own. */
static struct aggio__writeback *state(aggio_file fh) {
  struct aggio__writeback *w = __atomic_load_n(&fh->early_wb, __ATOMIC_ACQUIRE);
  if (w)
    return w;
  struct aggio__writeback *made = calloc(1, sizeof *made);
  if (!made)
    return NULL;
  made->fh = fh;
  made->job.run = run;
  pthread_mutex_init(&made->lock, NULL);
  if (__atomic_compare_exchange_n(&fh->early_wb, &w, made, 0, __ATOMIC_ACQ_REL,
                                  __ATOMIC_ACQUIRE))
    return made;
  pthread_mutex_destroy(&made->lock); /* another thread made it first: w is its */
  free(made);
  return w;
}

void aggio__writeback_note(aggio_file fh, int64_t off, int64_t len) {
  int64_t min = smallest(fh);
  if (min < 0 || len < min)
    return;
  struct aggio__writeback *w = state(fh);
  struct aggio__pool *p = w ? aggio__file_pool(fh) : NULL;
  if (!p)
    return;
  pthread_mutex_lock(&w->lock);
  if (w->lo == w->hi) {
    w->lo = off;
    w->hi = off + len;
  } else { /* the hull: the pages between are clean or another rank's, both harmless */
    w->lo = off < w->lo ? off : w->lo;
    w->hi = off + len > w->hi ? off + len : w->hi;
  }
  int submit = !w->queued;
  w->queued = 1;
  if (submit && aggio__pool_submit(p, &w->job, &w->batch) != 0) {
    w->queued = 0; /* no thread: sync writes it */
    w->lo = w->hi = 0;
  }
  pthread_mutex_unlock(&w->lock);
}

void aggio__writeback_free(aggio_file fh) {
  struct aggio__writeback *w = fh->early_wb;
  fh->early_wb = NULL;
  if (!w)
    return;
  pthread_mutex_destroy(&w->lock);
  free(w);
}
