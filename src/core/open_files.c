/*
 * open_files.c - the files this process has open, oldest first
 * (open_files.h):
 *   - the end of the program (finalize.c) walks them: MPI_Finalize closes
 *     what the program left open, in open order, and before MPI_Abort what
 *     write-behind holds on this node is written out;
 *   - a file opened twice in one process (PnetCDF opens a second handle on
 *     MPI_COMM_SELF for independent access) shows one content: before an
 *     access through one handle, the others make what they hold on this
 *     node visible (the MPI libraries write through, and programs rely on
 *     it beyond MPI's sync-barrier-sync rule).
 * The list is short (a program holds few files open), guarded by one lock;
 * the data path looks at it only when a file is open more than once.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "engine.h"
#include "open_files.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static aggio_file oldest, newest;

static int same_file(aggio_file a, aggio_file b) {
  if (a->open.dev || a->open.ino)
    return a->open.dev == b->open.dev && a->open.ino == b->open.ino;
  return strcmp(a->path, b->path) == 0;
}

/* Tells every open handle of fh's file how many others it has (locked). */
static void recount(aggio_file fh) {
  int n = 0;
  for (aggio_file f = oldest; f; f = f->open.next)
    n += same_file(f, fh);
  for (aggio_file f = oldest; f; f = f->open.next)
    if (same_file(f, fh))
      __atomic_store_n(&f->open.twins, n - 1, __ATOMIC_RELAXED);
}

void aggio__files_add(aggio_file fh) {
  struct stat st;
  if (fh->st.opened && stat(fh->path, &st) == 0) {
    fh->open.dev = (uint64_t)st.st_dev;
    fh->open.ino = (uint64_t)st.st_ino;
  }
  pthread_mutex_lock(&lock);
  fh->open.prev = newest;
  fh->open.next = NULL;
  if (newest)
    newest->open.next = fh;
  else
    oldest = fh;
  newest = fh;
  recount(fh);
  pthread_mutex_unlock(&lock);
}

void aggio__files_remove(aggio_file fh) {
  pthread_mutex_lock(&lock);
  if (fh->open.prev)
    fh->open.prev->open.next = fh->open.next;
  else if (oldest == fh)
    oldest = fh->open.next;
  if (fh->open.next)
    fh->open.next->open.prev = fh->open.prev;
  else if (newest == fh)
    newest = fh->open.prev;
  fh->open.prev = fh->open.next = NULL;
  for (aggio_file f = oldest; f; f = f->open.next)
    if (same_file(f, fh)) {
      recount(f);
      break;
    }
  pthread_mutex_unlock(&lock);
}

void aggio__files_lock(void) { pthread_mutex_lock(&lock); }
void aggio__files_unlock(void) { pthread_mutex_unlock(&lock); }

/* ---- the other handles of a file ------------------------------------------------------ */

void aggio__files_settle_twins(aggio_file fh, const struct aggio__access *acc) {
  if (__atomic_load_n(&fh->open.twins, __ATOMIC_RELAXED) == 0)
    return;
  pthread_mutex_lock(&lock);
  for (aggio_file f = oldest; f; f = f->open.next) {
    if (f == fh || !same_file(f, fh))
      continue;
    struct aggio__err ignored = {0}; /* the twin's failures are the twin's to report */
    for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
      const struct aggio__strategy_ops *s = aggio__strategy_at(f, i);
      if (s && s->before_independent && aggio__ready(f, i))
        s->before_independent(f, f->strategy_state[i], acc, &ignored);
    }
  }
  pthread_mutex_unlock(&lock);
}

int64_t aggio__files_twins_end(aggio_file fh) {
  int64_t end = 0;
  if (__atomic_load_n(&fh->open.twins, __ATOMIC_RELAXED) == 0)
    return 0;
  pthread_mutex_lock(&lock);
  for (aggio_file f = oldest; f; f = f->open.next) {
    if (f == fh || !same_file(f, fh))
      continue;
    for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
      const struct aggio__strategy_ops *s = aggio__strategy_at(f, i);
      if (s && s->held_end && aggio__ready(f, i)) {
        int64_t e = s->held_end(f, f->strategy_state[i]);
        end = e > end ? e : end;
      }
    }
  }
  pthread_mutex_unlock(&lock);
  return end;
}

/* ---- for the end of the program (finalize.c) ------------------------------------------ */

aggio_file aggio__files_oldest(void) {
  pthread_mutex_lock(&lock);
  aggio_file fh = oldest;
  pthread_mutex_unlock(&lock);
  return fh;
}

void aggio__files_each(void (*fn)(aggio_file fh, void *arg), void *arg) {
  pthread_mutex_lock(&lock);
  for (aggio_file f = oldest; f; f = f->open.next)
    fn(f, arg);
  pthread_mutex_unlock(&lock);
}
