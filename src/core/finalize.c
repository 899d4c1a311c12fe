/*
 * finalize.c - the end of the program (aggio.h: aggio_init,
 * aggio_finalize, aggio_drain):
 *   - MPI_Finalize closes what the program left open, in open order: every
 *     rank of a file's communicator opened its files in the same order
 *     (open is collective), so they close them in the same order too, and
 *     a close at finalize that finds acknowledged data it could not write
 *     says so on stderr (the program cannot be told any more);
 *   - before MPI_Abort (under aggio-run) what write-behind holds on this
 *     node is written out, without communicating.
 */
#include <pthread.h>
#include <stdio.h>

#include "engine.h"
#include "flatten.h"
#include "open_files.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int finalize_key = MPI_KEYVAL_INVALID;
static int finalize_rc = AGGIO_SUCCESS; /* the first failure of the closes at the end */
/* how a file is closed: aggio_file_close, which sits above the core, given
 * at every open (aggio__finalize_hook); none before the first open */
static int (*closer)(aggio_file *fh);

static int at_finalize(MPI_Comm comm, int key, void *value, void *extra);

/* MPI_Finalize deletes MPI_COMM_SELF's attributes first, while MPI still
 * works, the last set first: the hook that closes what the program left
 * open.  Set at aggio_init (aggio-run calls it right after MPI_Init), it
 * runs after the hooks of libraries initialised later: HDF5 closes its
 * files from its own, through the MPI-IO calls aggio serves (locked). */
static void hook_finalize(void) {
  if (finalize_key != MPI_KEYVAL_INVALID)
    return;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &finalize_key, NULL) !=
      MPI_SUCCESS)
    return;
  if (MPI_Comm_set_attr(MPI_COMM_SELF, finalize_key, NULL) != MPI_SUCCESS)
    MPI_Comm_free_keyval(&finalize_key);
}

void aggio__finalize_hook(int (*close)(aggio_file *fh)) {
  pthread_mutex_lock(&lock);
  closer = close;
  hook_finalize();
  pthread_mutex_unlock(&lock);
}

int aggio_init(void) {
  aggio__flatten_init();
  pthread_mutex_lock(&lock);
  hook_finalize();
  pthread_mutex_unlock(&lock);
  return AGGIO_SUCCESS;
}

int aggio_finalize(void) {
  int rc = AGGIO_SUCCESS;
  int finalized = 0;
  MPI_Finalized(&finalized);
  pthread_mutex_lock(&lock);
  int (*close)(aggio_file *fh) = closer;
  pthread_mutex_unlock(&lock);
  for (; !finalized && close;) {
    aggio_file fh = aggio__files_oldest();
    if (!fh)
      break;
    fh->open.finalizing = 1;
    int r = close(&fh);
    if (r != AGGIO_SUCCESS && rc == AGGIO_SUCCESS)
      rc = r;
  }
  pthread_mutex_lock(&lock);
  if (finalize_rc == AGGIO_SUCCESS)
    finalize_rc = rc;
  rc = finalize_rc;
  pthread_mutex_unlock(&lock);
  return rc;
}

/* The attribute's delete callback: MPI_Finalize is under way.  Its result
 * cannot reach the program (an error here would be the MPI library's,
 * under its error handler); what could not be written was said on
 * stderr. */
static int at_finalize(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  aggio_finalize();
  pthread_mutex_lock(&lock);
  MPI_Comm_free_keyval(&finalize_key);
  pthread_mutex_unlock(&lock);
  return MPI_SUCCESS;
}

/* One file's part of aggio_drain: its node's held data written out, and
 * what could not be, said on stderr. */
static void drain_one(aggio_file f, void *arg) {
  int *rc = arg;
  struct aggio__err e = {0};
  aggio__flush_local(f, &e);
  if (aggio__report_unwritten(f, stderr) > 0 && *rc == AGGIO_SUCCESS)
    *rc = e.code ? e.code : AGGIO_ERR_IO;
}

int aggio_drain(void) {
  int rc = AGGIO_SUCCESS;
  aggio__files_each(drain_one, &rc);
  return rc;
}
