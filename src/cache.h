/*
 * cache.h - the node cache behind write-behind and read-ahead: file blocks
 * held in a shared-memory window of one node (the emulated node when node
 * emulation is on), reachable by every rank of that node, written out and
 * loaded by I/O threads of the node's aggregators.
 *
 * Why per node: MPI-IO requires a process to see its own writes in its own
 * later reads and writes, collective or not (MPI 3.1 section 13.6.1, case
 * 1).  A rank can always reach its own node's cache, so an independent
 * access can flush or drop the blocks it touches itself; data held on
 * another node could only be reached with that node's cooperation, i.e. a
 * progress thread calling MPI, which an application at a lower thread
 * level forbids.  So the cache holds only what ranks of its own node wrote,
 * and data never crosses nodes to reach it.
 *
 * Synchronisation: one process-shared mutex and condition variable in the
 * window's header guard the slot table; data is copied outside the lock,
 * with the slot pinned.  A rank that must wait for a slot takes queued work
 * itself when it has the file open, so no rank ever depends on another
 * process being scheduled to make progress.
 */
#ifndef AGGIO_CACHE_H
#define AGGIO_CACHE_H

#include "internal.h"

struct aggio__cache;

/* The bytes of the cache's header: fixed, and per slot (for
 * aggio__cache_geometry, which keeps the whole window within the budget). */
void aggio__cache_header(int64_t *fixed, int64_t *per_slot);
/* Collective over `comm` (the ranks sharing the cache): makes the window of
 * nslots blocks of `block` bytes; `host` ranks run the I/O threads.
 * Returns 0, or an error (nothing is left allocated then). */
int aggio__cache_new(aggio_file fh, MPI_Comm comm, int64_t block, int nslots, int host,
                     struct aggio__cache **out, struct aggio__err *e);
/* Collective over the cache's ranks: stops the threads and frees the
 * window.  The caller flushed first. */
void aggio__cache_free(struct aggio__cache *c);

int64_t aggio__cache_block(const struct aggio__cache *c);
/* Seconds this rank spent waiting for blocks (or writing them for others)
 * since the last call: the timers count them as waiting for I/O. */
double aggio__cache_take_waited(struct aggio__cache *c);

/* Copies src into the file range [off, off + len) of the cache, waiting
 * for blocks where it must.  Never fails: write failures of the blocks it
 * helps write are deferred errors (aggio__cache_error). */
void aggio__cache_put(struct aggio__cache *c, int64_t off, int64_t len, const char *src);
/* The same, copying what fits without waiting when may_wait is 0 (a
 * non-blocking operation goes on once blocks are free).  Returns the bytes
 * copied, from the start of the range. */
int64_t aggio__cache_put_some(struct aggio__cache *c, int64_t off, int64_t len, const char *src,
                              int may_wait);

/* Copies [off, off + len) of the file into dst through the cache, loading
 * blocks (and the next ones ahead of the reader).  Stops at end of file:
 * *eof is then where the file ends (else unchanged).  Returns 0 or the
 * error of a load. */
int aggio__cache_get(struct aggio__cache *c, int64_t off, int64_t len, char *dst,
                     int64_t *eof, struct aggio__err *e);

/* Writes out every dirty block and waits for the node's writes to end; with
 * `drop`, forgets every block read or written.  0, or a deferred error
 * that happened meanwhile is left for aggio__cache_error. */
void aggio__cache_flush(struct aggio__cache *c, int drop);

/* Before this rank's own access to [off, off + len): dirty blocks it
 * touches reach the file; with `writing`, loaded blocks it touches are
 * forgotten (they would go stale). */
void aggio__cache_settle(struct aggio__cache *c, int64_t off, int64_t len, int writing);

/* Forgets loaded copies of blocks overlapping [lo, hi) (another node
 * writes there); written data stays. */
void aggio__cache_forget(struct aggio__cache *c, int64_t lo, int64_t hi);

/* What the cache holds: ORs AGGIO_SF_CACHE_DIRTY / _CLEAN into *flags and
 * widens [*lo, *hi) to cover the written data it holds. */
void aggio__cache_held(struct aggio__cache *c, int64_t *flags, int64_t *lo, int64_t *hi);
/* On the node's first rank, a failure of a deferred write not reported yet
 * (each is reported once; the caller's agreement spreads it): fills e and
 * returns its code, else 0.  0 on the other ranks. */
int aggio__cache_error(struct aggio__cache *c, struct aggio__err *e);

#endif
