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

#include "engine.h"

struct aggio__cache;

/* The bytes of the cache's header for nranks ranks sharing it: fixed, and
 * per slot (for aggio__cache_geometry, which keeps the whole window within
 * the budget). */
void aggio__cache_header(int nranks, int64_t *fixed, int64_t *per_slot);
/* A cache of nslots blocks of `block` bytes, its window not made yet:
 * `host` ranks will run the I/O threads; written data waits at most
 * max_age seconds in the cache (0: no bound).  Local; NULL without
 * memory. */
struct aggio__cache *aggio__cache_alloc(aggio_file fh, int64_t block, int nslots, int host,
                                        double max_age);
/* Steps of op (a strategy's set-up, engine.h) that make c's window, shared
 * by the ranks of `comm` (the node's, or MPI_COMM_SELF for a cache of one
 * rank), then go on with `then`; op->err says when it could not be made
 * (the set-up's agreement follows).  Posted collectives only. */
int aggio__cache_make_window(struct aggio__op *op, struct aggio__cache *c, MPI_Comm comm,
                             aggio__step_fn then);
/* Local: stops this process's threads and unmaps the window.  The caller
 * flushed first (collectively), or the set-up failed. */
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

/* Copies [off, off + len) of the file into dst when the cache holds all
 * of it in loaded blocks (a block loaded, or loaded ahead, and perhaps
 * written over since); loads nothing, waits for nothing.  1 when it
 * copied it all, else 0 (dst then holds nothing meaningful). */
int aggio__cache_peek(struct aggio__cache *c, int64_t off, int64_t len, char *dst);

/* This rank's blocking collective write has all its data in the cache. */
void aggio__cache_copied(struct aggio__cache *c);
/* Waits until every rank of the cache has copied in `writes` blocking
 * collective writes: a rank that returned from a collective write may then
 * read what the others wrote in it, as MPI libraries that write through
 * allow (ROMIO's collective write ends with an agreement). */
void aggio__cache_quiesce(struct aggio__cache *c, int64_t writes);

/* Writes out every dirty block and waits for the node's writes to end; with
 * `drop`, forgets every block read or written.  0, or a deferred error
 * that happened meanwhile is left for aggio__cache_error. */
void aggio__cache_flush(struct aggio__cache *c, int drop);

/* Before this rank's own access to [off, off + len): dirty blocks it
 * touches reach the file; with `writing`, loaded blocks it touches are
 * forgotten (they would go stale).  A read makes later loads buffered
 * (load_slot says why). */
void aggio__cache_settle(struct aggio__cache *c, int64_t off, int64_t len, int writing);

/* Forgets loaded copies of blocks overlapping [lo, hi) (another node
 * writes there); written data stays. */
void aggio__cache_forget(struct aggio__cache *c, int64_t lo, int64_t hi);

/* What the cache holds: ORs AGGIO_SF_CACHE_DIRTY / _CLEAN into *flags and
 * widens [*lo, *hi) to cover the written data it holds. */
void aggio__cache_held(struct aggio__cache *c, int64_t *flags, int64_t *lo, int64_t *hi);
/* The failures of deferred writes not reported yet, as one report (the
 * bytes that could not be written, the first failure's text): fills e
 * when it holds no error (e NULL or set: nothing) and returns the code,
 * else 0.  It counts as reported once aggio__cache_reported says the
 * agreement chose it; until then every call reports it again. */
int aggio__cache_error(struct aggio__cache *c, struct aggio__err *e);
void aggio__cache_reported(struct aggio__cache *c);
/* The node cache of fh's write-behind state, or NULL when it has none
 * (strategy_write_behind.c; for the test suite). */
struct aggio__cache *aggio__write_behind_cache(aggio_file fh);
/* Takes the cache's lock and returns holding it: the test suite's way to
 * have a process die holding it (the lock is robust). */
void aggio__cache_lock_for_test(struct aggio__cache *c);

/* Bytes of deferred writes that failed and were not reported yet, and
 * the first failure's text; *speaker is 1 on one rank of the cache's. */
int64_t aggio__cache_unwritten(struct aggio__cache *c, char *msg, size_t len, int *speaker);

#endif
