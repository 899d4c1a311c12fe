/*
 * writeback.h - early write-back (writeback.c): the large writes a rank
 * sent through the page cache are handed to the device by an I/O thread
 * as they come, instead of all at the program's sync.
 */
#ifndef AGGIO_WRITEBACK_H
#define AGGIO_WRITEBACK_H

#include "internal.h"

/* The smallest write (bytes) whose write-back starts at once under
 * aggio_early_writeback = automatic. */
#define AGGIO_EARLY_WRITEBACK_MIN (1 << 20)

/* Reads aggio_early_writeback from fh->hints into what the writers look at
 * (any thread, atomics); called where the hints are applied. */
void aggio__writeback_configure(aggio_file fh);
/* A write of [off, off+len) went through the page cache (not O_DIRECT):
 * when large enough, an I/O thread starts its write-back.  Any thread. */
void aggio__writeback_note(aggio_file fh, int64_t off, int64_t len);
/* At close, after the I/O threads are quiet: frees the file's state. */
void aggio__writeback_free(aggio_file fh);

#endif
