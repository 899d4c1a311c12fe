/*
 * open_files.h - the files this process has open, oldest first
 * (open_files.c), which the end of the program walks (finalize.c: closing
 * what the program left open at MPI_Finalize, in open order; draining held
 * data before MPI_Abort); and the other handles of the same file (twins),
 * which must see each other's data on a node.
 */
#ifndef AGGIO_OPEN_FILES_H
#define AGGIO_OPEN_FILES_H

#include <stdint.h>

#include "aggio.h"

struct aggio__access;

/* The file handle's part (fh->open, under the list's lock). */
struct aggio__open_entry {
  aggio_file prev, next;  /* open order */
  uint64_t dev, ino;      /* the file's identity (0 0: its path) */
  int twins;              /* other handles of the same file open here */
  int finalizing;         /* closed by MPI_Finalize: nobody to report to */
};

/* At the end of a successful open, and at the start of close. */
void aggio__files_add(aggio_file fh);
void aggio__files_remove(aggio_file fh);

/* Before this rank accesses acc through fh: the other handles of the same
 * file in this process make what they hold of those bytes on this node
 * visible (written out; loaded copies forgotten where acc writes).  Their
 * failures stay theirs to report.  Costs nothing for a file open once. */
void aggio__files_settle_twins(aggio_file fh, const struct aggio__access *acc);
/* The end of the data the other handles of fh's file hold on this node
 * (get_size), or 0. */
int64_t aggio__files_twins_end(aggio_file fh);

/* Held while a file's per-file state changes (hints, close), so that a
 * twin never looks at state being freed. */
void aggio__files_lock(void);
void aggio__files_unlock(void);

/* The oldest open file, or NULL (MPI_Finalize closes them in open order). */
aggio_file aggio__files_oldest(void);
/* fn(fh, arg) for every open file, oldest first, under the list's lock
 * (fn must not open or close a file). */
void aggio__files_each(void (*fn)(aggio_file fh, void *arg), void *arg);

/* At every open (finalize.c): MPI_Finalize will close what the program
 * left open, with close (aggio_file_close, which sits above the core). */
void aggio__finalize_hook(int (*close)(aggio_file *fh));

#endif
