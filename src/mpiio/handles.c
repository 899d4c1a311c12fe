/*
 * handles.c - the table of aggio files: MPI_File <-> struct mpiio_file and
 * the Fortran handles (MPI_File_c2f/f2c).
 *
 * A handle is ours only if it is in the table: the MPI library's handles
 * are pointers too, so nothing about the pointer itself can tell.  Programs
 * hold few files open, so a linear scan under a lock is cheap and lets any
 * thread call MPI_File_* (MPI_THREAD_MULTIPLE).
 */
#include <pthread.h>
#include <stdlib.h>

#include "mpiio.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mpiio_file **table; /* slot -> file; NULL: free slot */
static int table_cap;

struct mpiio_file *mpiio_lookup(MPI_File fh) {
  struct mpiio_file *found = NULL;
  if (fh == MPI_FILE_NULL)
    return NULL;
  pthread_mutex_lock(&lock);
  for (int i = 0; i < table_cap && !found; i++)
    if (table[i] && (MPI_File)table[i] == fh)
      found = table[i];
  pthread_mutex_unlock(&lock);
  return found;
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
  int slot = free_slot();
  if (slot >= 0) {
    table[slot] = f;
    f->slot = slot;
  }
  pthread_mutex_unlock(&lock);
  return slot >= 0 ? (MPI_File)f : MPI_FILE_NULL;
}

void mpiio_unregister(struct mpiio_file *f) {
  pthread_mutex_lock(&lock);
  if (f->slot >= 0 && f->slot < table_cap && table[f->slot] == f)
    table[f->slot] = NULL;
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
  return f ? (MPI_Fint)(MPIIO_FINT_BASE + f->slot) : PMPI_File_c2f(fh);
}

MPI_File MPI_File_f2c(MPI_Fint fint) {
  struct mpiio_file *f = mpiio_from_fint(fint);
  return f ? (MPI_File)f : PMPI_File_f2c(fint);
}
