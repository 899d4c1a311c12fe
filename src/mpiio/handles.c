/*
 * handles.c - the table of aggio files: MPI_File <-> struct mpiio_file and
 * the Fortran handles (MPI_File_c2f/f2c).
 *
 * A handle is ours only if it is registered: the MPI library's handles are
 * pointers too, so nothing about the pointer itself can tell, and reading
 * a cookie through it (as ROMIO does with its own handles) could read past
 * an object of the MPI library's.  Every MPI_File_* call asks, so the
 * question is answered in O(1) without a lock: a hash set of our pointers
 * (open addressing, linear probing), read with atomic loads; registering
 * and unregistering take the lock.  A set that grows is replaced, and the
 * old one kept, never freed: a reader may still be probing it (it only
 * misses files registered since, which no thread can be using yet).  The
 * slot table gives the Fortran handles and the list at MPI_Finalize.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "mpiio.h"
#include "next.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mpiio_file **table; /* slot -> file; NULL: free slot */
static int table_cap;

/* The hash set: `cap` entries (a power of two), each a file, NULL (never
 * used) or TOMBSTONE (unregistered: probing goes on past it). */
struct set {
  size_t cap;
  struct mpiio_file **e;
};
#define TOMBSTONE ((struct mpiio_file *)1)
static struct set *set;   /* the current one (atomic) */
static size_t set_used;   /* entries not NULL, tombstones included (locked) */
static size_t set_live;   /* files in it (locked) */

static size_t hash_of(const void *p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

struct mpiio_file *mpiio_lookup(MPI_File fh) {
  if (fh == MPI_FILE_NULL)
    return NULL;
  struct set *s = __atomic_load_n(&set, __ATOMIC_ACQUIRE);
  if (!s)
    return NULL;
  for (size_t i = hash_of(fh, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
    struct mpiio_file *f = __atomic_load_n(&s->e[i], __ATOMIC_ACQUIRE);
    if (!f)
      return NULL;
    if ((MPI_File)f == fh)
      return f;
  }
  return NULL;
}

/* Puts f in s (locked; s has a free entry). */
static void set_put(struct set *s, struct mpiio_file *f) {
  size_t i = hash_of(f, s->cap);
  while (s->e[i] && s->e[i] != TOMBSTONE)
    i = (i + 1) & (s->cap - 1);
  if (!s->e[i])
    set_used++;
  __atomic_store_n(&s->e[i], f, __ATOMIC_RELEASE);
  set_live++;
}

/* Room for one more file, at most half full: a new set, twice as large
 * when half its entries hold files, of the live files only (locked).
 * -1 when memory runs out. */
static int set_room(void) {
  if (set && 2 * (set_used + 1) <= set->cap)
    return 0;
  size_t cap = 64;
  while (cap < 4 * (set_live + 1))
    cap *= 2;
  struct set *n = malloc(sizeof *n);
  struct mpiio_file **e = calloc(cap, sizeof *e);
  if (!n || !e) {
    free(n);
    free(e);
    return -1;
  }
  n->cap = cap;
  n->e = e;
  struct set *old = set;
  set_used = set_live = 0;
  for (size_t i = 0; old && i < old->cap; i++)
    if (old->e[i] && old->e[i] != TOMBSTONE)
      set_put(n, old->e[i]);
  __atomic_store_n(&set, n, __ATOMIC_RELEASE); /* the old one stays: see above */
  return 0;
}

static void set_remove(struct mpiio_file *f) {
  struct set *s = set; /* f is registered: there is one */
  for (size_t i = hash_of(f, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
    if (!s->e[i])
      return;
    if (s->e[i] == f) {
      __atomic_store_n(&s->e[i], TOMBSTONE, __ATOMIC_RELEASE);
      set_live--;
      return;
    }
  }
}

/* A free slot, growing the table; -1 when memory runs out (locked). */
static int free_slot(void) {
  for (int i = 0; i < table_cap; i++)
    if (!table[i])
      return i;
  int cap = table_cap ? 2 * table_cap : 16;
  struct mpiio_file **t = realloc(table, (size_t)cap * sizeof *t);
  if (!t)
    return -1;
  for (int i = table_cap; i < cap; i++)
    t[i] = NULL;
  table = t;
  int slot = table_cap;
  table_cap = cap;
  return slot;
}

MPI_File mpiio_register(struct mpiio_file *f) {
  pthread_mutex_lock(&lock);
  int slot = set_room() == 0 ? free_slot() : -1;
  if (slot >= 0) {
    table[slot] = f;
    f->slot = slot;
    set_put(set, f);
  }
  pthread_mutex_unlock(&lock);
  return slot >= 0 ? (MPI_File)f : MPI_FILE_NULL;
}

void mpiio_unregister(struct mpiio_file *f) {
  pthread_mutex_lock(&lock);
  if (f->slot >= 0 && f->slot < table_cap && table[f->slot] == f) {
    table[f->slot] = NULL;
    set_remove(f);
  }
  pthread_mutex_unlock(&lock);
}

struct mpiio_file *mpiio_from_fint(MPI_Fint fint) {
  struct mpiio_file *f = NULL;
  long slot = (long)fint - MPIIO_FINT_BASE;
  pthread_mutex_lock(&lock);
  if (slot >= 0 && slot < table_cap)
    f = table[slot];
  pthread_mutex_unlock(&lock);
  return f;
}

/* In slot order, which is not the order of opening once a slot was
 * reused: MPI_Finalize uses it only to free the handles of files that
 * libaggio has already closed in the order they were opened. */
int mpiio_all_files(struct mpiio_file **out, int cap) {
  int n = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < table_cap && n < cap; i++)
    if (table[i])
      out[n++] = table[i];
  pthread_mutex_unlock(&lock);
  return n;
}

int mpiio_file_count(void) {
  int n = 0;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < table_cap; i++)
    n += table[i] != NULL;
  pthread_mutex_unlock(&lock);
  return n;
}

/* ---- Fortran handles --------------------------------------------------- */

MPI_Fint MPI_File_c2f(MPI_File fh) {
  struct mpiio_file *f = mpiio_lookup(fh);
  return f ? (MPI_Fint)(MPIIO_FINT_BASE + f->slot) : MPIIO_NEXT(File_c2f)(fh);
}
MPIIO_PROFILED(File_c2f)

MPI_File MPI_File_f2c(MPI_Fint fint) {
  struct mpiio_file *f = mpiio_from_fint(fint);
  return f ? (MPI_File)f : MPIIO_NEXT(File_f2c)(fint);
}
MPIIO_PROFILED(File_f2c)
