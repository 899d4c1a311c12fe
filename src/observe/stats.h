/*
 * stats.h - per-file statistics counters (AGGIO_STATS) and phase timers
 * (AGGIO_TIMERS).  The counter list below is the single source of truth:
 * the struct, the reduction at close and the printed block all come from it.
 *
 * Off means free: fh->obs.stats is NULL unless statistics or timers are on, and
 * every hook below tests that pointer before anything else.
 */
#ifndef AGGIO_STATS_H
#define AGGIO_STATS_H

#include <stdint.h>

/* X(NAME, "description") - all int64_t, summed over ranks unless noted in
 * core/stats_report.c's printing code. */
#define AGGIO_COUNTER_LIST(X)                                                  \
  X(IND_WRITES, "independent write calls")                                     \
  X(IND_READS, "independent read calls")                                       \
  X(COLL_WRITES, "collective write calls")                                     \
  X(COLL_READS, "collective read calls")                                       \
  X(API_BYTES_WRITTEN, "bytes written through the API")                        \
  X(API_BYTES_READ, "bytes read through the API")                              \
  X(SYS_WRITES, "system (POSIX) writes")                                       \
  X(SYS_WRITE_BYTES, "bytes in system writes")                                 \
  X(SYS_READS, "system (POSIX) reads")                                         \
  X(SYS_READ_BYTES, "bytes in system reads")                                   \
  X(SYS_WRITES_ALIGNED, "system writes aligned to the stripe/block")           \
  X(SYS_READS_ALIGNED, "system reads aligned to the stripe/block")             \
  X(DIRECT_WRITES, "system writes through O_DIRECT")                           \
  X(DIRECT_WRITE_BYTES, "bytes written through O_DIRECT")                      \
  X(DIRECT_READS, "system reads through O_DIRECT")                             \
  X(DIRECT_READ_BYTES, "bytes read through O_DIRECT")                          \
  X(BEHIND_WRITES, "system writes by I/O threads after the call returned")     \
  X(BEHIND_READS, "system reads by I/O threads ahead of the calls")            \
  X(CACHE_FULL_BLOCKS, "whole node-cache blocks written")                      \
  X(CACHE_PARTIAL_BLOCKS, "partly filled node-cache blocks written")           \
  X(CACHE_WAITS, "times a call waited for a node-cache block")                 \
  X(CACHE_HITS, "collective reads served from a loaded node-cache block")      \
  X(RMW_COUNT, "read-modify-write windows")                                    \
  X(RMW_BYTES, "bytes read for read-modify-write")                             \
  X(WRITE_GAPS, "holes inside aggregator windows")                             \
  X(WRITE_GAP_BYTES, "bytes in holes inside aggregator windows")               \
  X(COLL_ROUNDS, "two-phase rounds")                                           \
  X(AGGR_ACTIVE, "aggregator-calls that moved data")                           \
  X(ACTIVE_ONE, "collective-buffering calls with 1 aggregator active")          \
  X(ACTIVE_FEW, "... with 2 to 4 active (not all)")                            \
  X(ACTIVE_MANY, "... with more than 4 active (not all)")                      \
  X(ACTIVE_ALL, "... with every aggregator active")                            \
  X(CROSS_NODE_BYTES, "file data bytes exchanged between (emulated) nodes")     \
  X(NODE_LOCAL_BYTES, "file data bytes moved within a node (copies, messages)") \
  X(NODE_LOCAL_FRAGMENTED, "node_local node-calls whose data was fragmented and " \
    "interleaved with other nodes' (two-phase fits better)")                     \
  X(SUBFILE_WRITERS, "subfiles each rank wrote to, once per file: the subfile count "  \
                     "when every subfile had one writer")                             \
  X(AGGR_WRITES, "system writes made as an aggregator")                        \
  X(AGGR_WRITE_BYTES, "bytes in system writes made as an aggregator")          \
  X(SYNCS, "fsync calls")                                                      \
  X(WRITEBACK_STARTS, "early write-backs started by an I/O thread")            \
  X(WRITEBACK_BYTES, "bytes of the ranges those write-backs covered")          \
  X(NB_STARTED, "non-blocking and split collective operations started")         \
  X(NB_MERGED, "non-blocking collective operations merged into an earlier one")  \
  X(IO_FIRST, "collective calls whose I/O ran before their summary (a guess)")    \
  X(ONE_ROUND, "... agreed once: every rank's I/O had run before the summary")     \
  X(ONE_ROUND_REDONE, "... whose summary chose otherwise, so the I/O ran again")   \
  X(TP_KEPT, "two-phase calls set up in memory kept from earlier ones, not agreed")

enum aggio__counter {
#define AGGIO__CTR_ENUM(name, doc) AGGIO_C_##name,
  AGGIO_COUNTER_LIST(AGGIO__CTR_ENUM)
#undef AGGIO__CTR_ENUM
  AGGIO_C_COUNT
};

/* Phases timed by AGGIO_TIMERS: X(NAME, "description") */
#define AGGIO_PHASE_LIST(X)                                                    \
  X(OPEN, "open")                                                              \
  X(PLAN, "planning: strategy choice, file domains, offset lists")            \
  X(AGREE, "agreement on the arguments and the outcome")                       \
  X(PACK, "packing and unpacking non-contiguous memory")                       \
  X(EXCHANGE, "data exchange: messages and copies into shared buffers")        \
  X(WRITE, "file writes by the calling thread")                                \
  X(READ, "file reads by the calling thread")                                  \
  X(IO_WAIT, "waiting for I/O threads and node-cache blocks")                  \
  X(WAIT, "waiting for other ranks of the node")                               \
  X(SYNC, "sync")                                                              \
  X(CLOSE, "close")

enum aggio__phase {
#define AGGIO__PH_ENUM(name, doc) AGGIO_P_##name,
  AGGIO_PHASE_LIST(AGGIO__PH_ENUM)
#undef AGGIO__PH_ENUM
  AGGIO_P_COUNT
};

struct aggio__stats {
  int64_t c[AGGIO_C_COUNT];
  double t[AGGIO_P_COUNT];   /* seconds spent per phase on this rank */
  int timers;                /* phase timing on */
  double api_time;           /* seconds inside data-access calls (io.c adds
                                each call's duration); the phases of the
                                calls add up to it */
  double behind_time;        /* seconds I/O threads spent in system calls
                                after the calls had returned (overlapped
                                with the application: not a phase) */
  double sys_write_time;     /* seconds in pwrite on any thread of this rank */
  double sys_read_time;      /* seconds in pread on any thread of this rank */
  char auto_choice[192];     /* last strategy chosen by auto, and why */
  /* File domains of the last collective call with collective buffering:
   * aggregator i (fh->topo.aggr[i]) owned [fd_start[i], fd_end[i]).  Filled by
   * the two-phase strategy through aggio__stats_set_domains (rank 0's copy
   * is the one displayed); nfd is 0 until then. */
  int64_t *fd_start, *fd_end;
  int nfd, fd_cap;
  /* With stripe-cyclic domains (cyclic.h) the ranges are in the call's
   * domain space: aggregator i had stripes i, i + fd_groups, ... of
   * fd_unit bytes, fd_end[i] - fd_start[i] bytes of them.  0: contiguous. */
  int64_t fd_unit;
  int fd_groups;
};

static inline void aggio__count(struct aggio__stats *s, enum aggio__counter c,
                                int64_t v) {
  if (s)
    s->c[c] += v;
}

static inline void aggio__phase_add(struct aggio__stats *s, enum aggio__phase p,
                                    double seconds) {
  if (s)
    s->t[p] += seconds;
}

/* Cray's "aggregators active" bucket of a collective-buffering call in
 * which `active` of `naggr` aggregators had data: all, 1, 2-4, more.
 * Every rank counts the same calls (the domains are computed everywhere),
 * so the printed value is the maximum over ranks. */
static inline enum aggio__counter aggio__active_bucket(int active, int naggr) {
  if (active == naggr)
    return AGGIO_C_ACTIVE_ALL;
  if (active <= 1)
    return AGGIO_C_ACTIVE_ONE;
  return active <= 4 ? AGGIO_C_ACTIVE_FEW : AGGIO_C_ACTIVE_MANY;
}

/* Allocates the statistics of a file (stats or timers on); NULL on failure. */
struct aggio__stats *aggio__stats_new(int timers);

/* Records the file domains of a collective call (copied; n entries, one per
 * aggregator in fh->topo.aggr order).  No-op when s is NULL.  0, or
 * AGGIO_ERR_NOMEM (the previous domains are then kept; nothing else fails). */
int aggio__stats_set_domains(struct aggio__stats *s, int n,
                             const int64_t *start, const int64_t *end);
/* The domains just recorded are stripe-cyclic (unit > 0) or not (0). */
void aggio__stats_set_cyclic(struct aggio__stats *s, int64_t unit, int groups);

/* Frees the statistics (NULL: nothing). */
void aggio__stats_free(struct aggio__stats *s);

#endif
