/*
 * trace.h - the per-operation trace (AGGIO_TRACE / hint aggio_trace).
 *
 * Two layers of records: the API call and the POSIX calls beneath it, on one
 * clock shared by all ranks.  Memory per rank is bounded; records past the
 * bound are counted as dropped, never silently lost.  The job's trace is one
 * file written in parallel at close.  Format: docs/trace-format.md.
 *
 * Off means free: fh->obs.trace is NULL unless tracing is on, and callers read
 * the clock only when it is not.
 *
 * Not thread-safe: one thread at a time records into a file's trace (the
 * two-phase I/O thread records its pwrites while the main thread does not).
 * Path patterns (%f, %p, %t), clocks and the write at close:
 * docs/trace-format.md; how to use it: docs/observability.md.
 */
#ifndef AGGIO_TRACE_H
#define AGGIO_TRACE_H

#include <stddef.h>
#include <stdint.h>

struct aggio__trace;

/* ---- the file format, declared once ---------------------------------------
 * docs/trace-format.md describes these lists in words and tables; the Python
 * reader (python/aggio/trace.py) has its own NumPy dtypes, and
 * python/tests/test_trace_format.py checks the dtypes and the document's
 * tables against the lists below.  tests/trace_check.py stays an independent
 * reader of the document on purpose.  All fields are little-endian. */

#define AGGIO_TRACE_MAGIC "AGGIOTRC"
#define AGGIO_TRACE_VERSION 1
#define AGGIO_TRACE_HEADER_SIZE 64
#define AGGIO_TRACE_RANK_ENTRY_SIZE 32
#define AGGIO_TRACE_RECORD_SIZE 48

/* X(field, byte offset, type); types: char8 (8 bytes of text), u16, u32,
 * u64, i32, i64, f64.  Header, at byte 0 of the file: */
#define AGGIO_TRACE_HEADER_FIELDS(X)                                              \
  X(magic, 0, char8)                                                              \
  X(version, 8, u32)                                                              \
  X(nranks, 12, u32)                                                              \
  X(record_size, 16, u32)                                                         \
  X(flags, 20, u32)                                                               \
  X(total_records, 24, u64)                                                       \
  X(total_dropped, 32, u64)                                                       \
  X(meta_len, 40, u64)                                                            \
  X(records_offset, 48, u64)                                                      \
  X(clock_base, 56, f64)

/* One entry per rank, in rank order, right after the header: */
#define AGGIO_TRACE_RANK_FIELDS(X)                                                \
  X(first, 0, u64)                                                                \
  X(count, 8, u64)                                                                \
  X(dropped, 16, u64)                                                             \
  X(node, 24, i32)                                                                \
  X(aggregator, 28, i32)

/* One record per operation, from records_offset on, grouped by rank: */
#define AGGIO_TRACE_RECORD_FIELDS(X)                                              \
  X(t_start, 0, f64)                                                              \
  X(t_end, 8, f64)                                                                \
  X(offset, 16, i64)                                                              \
  X(length, 24, i64)                                                              \
  X(type_size, 32, i64)                                                           \
  X(op, 40, u16)                                                                  \
  X(flags, 42, u16)                                                               \
  X(rank, 44, i32)

/* Byte offsets of the header's and the rank entry's fields, by name. */
enum {
#define AGGIO__TRACE_OFFSET(field, offset, type) AGGIO_TRACE_HDR_##field = offset,
  AGGIO_TRACE_HEADER_FIELDS(AGGIO__TRACE_OFFSET)
#undef AGGIO__TRACE_OFFSET
#define AGGIO__TRACE_OFFSET(field, offset, type) AGGIO_TRACE_RANK_##field = offset,
  AGGIO_TRACE_RANK_FIELDS(AGGIO__TRACE_OFFSET)
#undef AGGIO__TRACE_OFFSET
};

/* A record as it is kept in memory and written (little-endian hosts write
 * it as is; big-endian hosts swap at close); laid out as the list says. */
struct aggio__trace_rec {
  double t_start, t_end;
  int64_t offset, length, type_size;
  uint16_t op, flags;
  int32_t rank;
};
_Static_assert(sizeof(struct aggio__trace_rec) == AGGIO_TRACE_RECORD_SIZE,
               "trace record size");
#define AGGIO__TRACE_CHECK(field, off, type)                                      \
  _Static_assert(offsetof(struct aggio__trace_rec, field) == (off), "trace record field");
AGGIO_TRACE_RECORD_FIELDS(AGGIO__TRACE_CHECK)
#undef AGGIO__TRACE_CHECK

/* Record flags: API records of collective calls; POSIX records of a rank
 * acting as aggregator. */
#define AGGIO_TRACE_FLAG_AGGREGATOR 1
#define AGGIO_TRACE_FLAG_COLLECTIVE 2

/* X(NAME, code, "name in the document", layer): the operations recorded.
 * API codes are below 32, POSIX codes from 32 on. */
#define AGGIO_TRACE_OPS(X)                                                        \
  X(WRITE_AT, 1, "write_at", API)                                                 \
  X(READ_AT, 2, "read_at", API)                                                   \
  X(WRITE_AT_ALL, 3, "write_at_all", API)                                         \
  X(READ_AT_ALL, 4, "read_at_all", API)                                           \
  X(OPEN, 5, "open", API)                                                         \
  X(CLOSE, 6, "close", API)                                                       \
  X(SYNC, 7, "sync", API)                                                         \
  X(SET_VIEW, 8, "set_view", API)                                                 \
  X(SET_SIZE, 9, "set_size", API)                                                 \
  X(IWRITE_AT, 10, "iwrite_at", API)                                              \
  X(IREAD_AT, 11, "iread_at", API)                                                \
  X(IWRITE_AT_ALL, 12, "iwrite_at_all", API)                                      \
  X(IREAD_AT_ALL, 13, "iread_at_all", API)                                        \
  X(WAIT, 14, "wait", API)                                                        \
  X(WRITE_SHARED, 15, "write_shared", API)                                        \
  X(READ_SHARED, 16, "read_shared", API)                                          \
  X(IWRITE_SHARED, 17, "iwrite_shared", API)                                      \
  X(IREAD_SHARED, 18, "iread_shared", API)                                        \
  X(WRITE_ORDERED, 19, "write_ordered", API)                                      \
  X(READ_ORDERED, 20, "read_ordered", API)                                        \
  X(SEEK_SHARED, 21, "seek_shared", API)                                          \
  X(PREALLOCATE, 22, "preallocate", API)                                          \
  X(POSIX_OPEN, 32, "open", POSIX)                                                \
  X(POSIX_PREAD, 33, "pread", POSIX)                                              \
  X(POSIX_PWRITE, 34, "pwrite", POSIX)                                            \
  X(POSIX_FSYNC, 35, "fsync", POSIX)                                              \
  X(POSIX_CLOSE, 36, "close", POSIX)                                              \
  X(POSIX_FTRUNCATE, 37, "ftruncate", POSIX)                                      \
  X(POSIX_FALLOCATE, 38, "fallocate", POSIX)

enum aggio__trace_op {
#define AGGIO__TRACE_OP(name, code, text, layer) AGGIO_OP_##name = code,
  AGGIO_TRACE_OPS(AGGIO__TRACE_OP)
#undef AGGIO__TRACE_OP
};

/* Seconds on this rank's monotonic clock (CLOCK_MONOTONIC). */
double aggio__now(void);

/* Records one operation; t0/t1 from aggio__now().  No-op when tr is NULL.
 * flags: AGGIO_TRACE_FLAG_AGGREGATOR when the rank acted as aggregator for
 * this POSIX call (collective API calls get AGGIO_TRACE_FLAG_COLLECTIVE). */
void aggio__trace_record(struct aggio__trace *tr, int op, int64_t offset,
                         int64_t length, int64_t type_size, double t0,
                         double t1, int flags);

/* Frees a trace without writing it (a failed open after the trace
 * started, and the close once written).  No-op when tr is NULL. */
void aggio__trace_free(struct aggio__trace *tr);

/* The buffer, shared with core/trace_file.c, which sets it up at open and
 * writes it at close. */
struct aggio__trace {
  char *path;          /* expanded trace path (same on all ranks) */
  int rank;
  double delta;        /* local clock + delta = seconds since rank 0's base */
  double clock_base;   /* rank 0's CLOCK_MONOTONIC at open */
  double offset_max;   /* rank 0: largest |clock correction| over ranks */
  int64_t memory;      /* the bound in bytes, for the metadata */
  struct aggio__trace_rec *rec;
  uint64_t n, cap, max; /* stored, allocated, allowed (memory / 48) */
  uint64_t dropped;
  void *aux;           /* rank 0: nprocs x 16 bytes of scratch for the
                          exchanges at open and close */
};

/* Grows the buffer by doubling up to its bound; 0 when there is room. */
int aggio__trace_grow(struct aggio__trace *tr);

#endif
