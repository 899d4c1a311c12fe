/*
 * plan.h - MPI-free planning for collective buffering: aggregator selection
 * from the node map and cb_config_list, file domains (ROMIO's even split,
 * boundaries aligned to the stripe or file-system block), the round schedule
 * of cb_buffer_size windows, and the coverage of a window by the pieces that
 * ranks send, which decides between writing runs and read-modify-write.
 */
#ifndef AGGIO_PLAN_H
#define AGGIO_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"
#include "strategy_ids.h"

/* What the ranks access in one collective call, reduced over all ranks
 * in one MPI_Allreduce at the start of every collective operation (engine.c):
 * it also carries the agreement on the arguments (err) and the flags of
 * data held between calls.  Each rank fills its own with
 * aggio__summary_mine; aggio__summary_merge is the reduction. */
struct aggio__call_summary {
  int64_t err;         /* MIN: encoded error (aggio__err_encode), 0 none */
  int64_t lo;          /* MIN over ranks with data of their first byte (INT64_MAX: none) */
  int64_t hi;          /* MAX of one past their last byte */
  int64_t bytes;       /* SUM of bytes */
  int64_t pieces;      /* SUM of file ranges */
  int64_t most_pieces; /* MAX of file ranges of one rank */
  int64_t span;        /* SUM of (hi - lo) per rank: > hi - lo when ranges overlap */
  int64_t ranks;       /* SUM of ranks with data */
  int64_t flags;       /* OR of AGGIO_SF_* (engine.h) */
  int64_t held_lo;     /* MIN of the first byte of written data held in node caches */
  int64_t held_hi;     /* MAX of the end of it (held_lo = INT64_MAX, held_hi = 0: none) */
  int64_t mergeable;   /* MIN: operations this call may merge (engine.h, merge.c) */
  int64_t offered_max; /* MAX of the same: equal to it when every rank offered as many */
  int64_t eof;         /* MIN: reads done before the summary (core/one_round.c): the
                        * smallest end of file a short read saw (INT64_MAX: none) */
};
#define AGGIO_SUMMARY_FIELDS 14

/* This rank's summary of `file` (sorted ranges, `bytes` in all). */
void aggio__summary_mine(struct aggio__call_summary *s, const struct aggio__extents *file,
                         int64_t bytes, int64_t err, int64_t flags);
/* inout = merge(in, inout), field by field as the comments above say. */
void aggio__summary_merge(const struct aggio__call_summary *in,
                          struct aggio__call_summary *inout);
/* 1 when some ranks' [lo, hi) ranges overlap (they interleave); exact when
 * no gaps separate the ranges, a lower bound otherwise. */
int aggio__summary_interleaved(const struct aggio__call_summary *s);

/* ---- merging non-blocking operations (merge.c) ------------------------------ */

/* ranges: n pairs (lo, -hi) of operations' agreed ranges [lo, hi) (empty
 * when lo >= hi).  Returns the length m of the longest prefix whose
 * ranges are pairwise disjoint, and order[0..m) = those operations sorted
 * by lo (empty ones last). */
int aggio__merge_prefix(const int64_t *ranges, int n, int *order);

/* ---- the auto rule (docs/strategies.md) ------------------------------------ */

/* What auto's rule returns: the id of the strategy that runs the call
 * (strategy_ids.h), one of those auto may choose. */
enum aggio__auto_choice {
  AGGIO_AUTO_INDEPENDENT = AGGIO_STRAT_INDEPENDENT,
  AGGIO_AUTO_TWO_PHASE = AGGIO_STRAT_TWO_PHASE,
  AGGIO_AUTO_WRITE_BEHIND = AGGIO_STRAT_WRITE_BEHIND,
  AGGIO_AUTO_NODE_LOCAL = AGGIO_STRAT_NODE_LOCAL
};

struct aggio__auto_in {
  int is_write;
  int cb;           /* romio_cb_write / romio_cb_read tristate */
  int wb;           /* aggio_write_behind tristate */
  int wb_usable;    /* the node cache can run: not atomic, shared memory works */
  int no_indep_rw;
  int striped;      /* the file system stripes (or striping_unit is set) */
  int nnodes;
  int nl_usable;    /* node_local can run: not atomic, its set-up not refused */
  int nodes_blocked; /* every node holds consecutive ranks (rank order) */
  int subfiled;     /* a subfiled file: striped over its subfiles, whose
                     * stripes no node's region matches */
  int64_t cache_bytes; /* the node cache's size per aggregator */
  int previous;     /* the file's last choice, or -1 */
  int mixed_reads;  /* a rank has also read the file independently (agreed) */
};

/* Picks the strategy of one collective call from the agreed summary.
 * Returns an enum aggio__auto_choice and says why. */
int aggio__auto_decide(const struct aggio__call_summary *s, const struct aggio__auto_in *in,
                       char *why, size_t whylen);

/* Requests smaller than this on average, in calls of at most a quarter of
 * the node cache per node, go through the node cache; measured here (4
 * ranks, ext4, durable write): 47008-byte records 1.4-1.5 GB/s through it
 * against 0.9 for independent writes; at 128 KiB a tie; from 256 KiB on
 * independent writes are faster (docs/strategies.md). */
#define AGGIO_AUTO_WB_SMALL (128 << 10)
/* Interleaved pieces smaller than this on average are merged by two-phase
 * aggregators within the call. */
#define AGGIO_AUTO_SMALL (1 << 20)
/* The same on one node and a file system that does not stripe, where no
 * stripe lock is shared and each rank's own buffered writes lose nothing
 * to a merge: measured here (4 pieces a rank per call, interleaved, 2 / 4 /
 * 8 ranks, both MPI libraries; PnetCDF's merged record variables), two-phase
 * led only below 256 KiB (docs/strategies.md). */
#define AGGIO_AUTO_SMALL_ONE_NODE (256 << 10)

/* ---- the write path the hints ask for (Cray's combinations) ---------------- */

/* Values are the strategies' ids (strategy_ids.h): a path names the
 * strategy that runs it. */
enum aggio__write_path {
  AGGIO_PATH_AUTO = AGGIO_STRAT_AUTO,                 /* no combination decides: auto's rules do */
  AGGIO_PATH_INDEPENDENT = AGGIO_STRAT_INDEPENDENT,   /* every rank writes its own data */
  AGGIO_PATH_TWO_PHASE = AGGIO_STRAT_TWO_PHASE,       /* collective buffering across nodes */
  AGGIO_PATH_WRITE_BEHIND = AGGIO_STRAT_WRITE_BEHIND, /* the node cache */
  AGGIO_PATH_NODE_LOCAL = AGGIO_STRAT_NODE_LOCAL      /* each node's aggregators write that
                                                       * node's data */
};

struct aggio__hints;

/* The write path a hint combination selects, before any look at the data:
 *   aggio_strategy other than auto           -> that strategy;
 *   romio_cb_write=disable with romio_no_indep_rw=true
 *                                            -> node-local: collective
 *      buffering is off, yet only aggregators may touch the file, which is
 *      Cray's local aggregation (the HPE seed's
 *      "*:romio_cb_write=disable:romio_no_indep_rw=true:...");
 *   romio_cb_write=enable, or romio_no_indep_rw=true alone -> two-phase;
 *   romio_cb_write=disable                   -> independent;
 *   aggio_write_behind=enable                -> write-behind;
 *   otherwise                                -> auto (decided per call).
 * The lock-mode and data-sieving hints of those strings change how the
 * chosen path writes, not which path.  Returns an enum aggio__write_path
 * and says why (why may be NULL). */
int aggio__select_write_path(const struct aggio__hints *h, char *why, size_t whylen);

/* cray_cb_nodes_multiplier: Cray's "aggregators per stripe".  Rewrites
 * cb_config_list so that every node may take `mult` times as many
 * aggregators ("host" counts 1, "host:k" becomes k*mult, "host:*" stays
 * every rank) and multiplies a cb_nodes cap, capped by nprocs (0 stays no
 * cap).  Pure; mult <= 1 copies.  0, or -1 with a message (malformed list,
 * or `out` of `cap` bytes too small). */
int aggio__cb_multiply(const char *config, int cb_nodes, int mult, int nprocs, char *out,
                       size_t cap, int *cb_nodes_out, char *err, size_t errlen);

/* ---- the node cache (write-behind, read-ahead) ------------------------------ */

/* Block size and slot count of a node cache of `budget` bytes: the stripe
 * when one is set (so that blocks never straddle stripe locks), else
 * AGGIO_CACHE_BLOCK, halved until at least AGGIO_CACHE_MIN_SLOTS blocks fit
 * (never below `align`, the direct-I/O unit); at least 2 slots.  The
 * budget holds the cache's header too (`hdr_fixed` + `hdr_per_slot` bytes
 * per slot, rounded up to `align`, plus `align` to align the window), so
 * the whole window stays within it: the budget is what the hints promise
 * the user's memory. */
#define AGGIO_CACHE_BLOCK (4 << 20)
#define AGGIO_CACHE_MIN_SLOTS 4
void aggio__cache_geometry(int64_t budget, int64_t stripe, int64_t align, int64_t hdr_fixed,
                           int64_t hdr_per_slot, int64_t *block, int *nslots);
/* The window's bytes for that geometry (header, alignment and blocks). */
int64_t aggio__cache_window_bytes(int64_t block, int nslots, int64_t align, int64_t hdr_fixed,
                                  int64_t hdr_per_slot);

/* ---- aggregators ---------------------------------------------------------- */

/* Chooses aggregator ranks.
 *   node_of_rank[r] : node index of rank r (0 .. nnodes-1)
 *   node_names[i]   : host name of node i (emulated nodes have their own)
 *   config          : cb_config_list, e.g. "*:1", "*:4", "nid0001:2,*:1",
 *                     "*:*" (all ranks of every node)
 *   cb_nodes        : cap on the total (0: no cap)
 * Within a node, aggregators are spread evenly over its ranks (lowest rank
 * first); when cb_nodes caps the total, nodes take turns so the aggregators
 * spread over as many nodes as possible.  Output sorted by rank.
 * Returns the count (>= 1) in *naggr, or -1 with a message for a malformed
 * list. aggr must hold nprocs entries. */
int aggio__select_aggregators(int nprocs, const int *node_of_rank, int nnodes,
                              const char *const *node_names, const char *config,
                              int cb_nodes, int *aggr, int *naggr, char *err,
                              size_t errlen);

/* Splits ranks 0..n-1 of a node into k emulated nodes of consecutive local
 * ranks (block distribution, sizes differ by at most one); returns the
 * emulated-node index (0..k-1) of local rank i.  k <= 0 or k > n: k = n or 1. */
int aggio__emulated_node(int i, int n, int k);

/* ---- file domains --------------------------------------------------------- */

/* Splits [gmin, gmax) into naggr contiguous domains [start[i], end[i]).
 * Interior boundaries are multiples of `align` (when align > 0), so that no
 * two aggregators share a stripe/block; some domains may then be empty
 * (start == end).  Domains are as equal as the alignment allows. */
void aggio__file_domains(int64_t gmin, int64_t gmax, int naggr, int64_t align,
                         int64_t *start, int64_t *end);

/* Index of the domain holding byte `off` (binary search; -1 if outside). */
int aggio__domain_of(int64_t off, int naggr, const int64_t *start,
                     const int64_t *end);

/* ---- rounds --------------------------------------------------------------- */

/* Bytes per round.  cb_buffer_size caps it; when the aggregators pipeline
 * (write one buffer while the next fills), a call needs enough rounds for
 * the pipeline to fill, so the round shrinks towards `largest` /
 * AGGIO_ROUNDS_TARGET but not below AGGIO_ROUND_MIN (smaller writes cost
 * more per byte than they gain in overlap).  A multiple of `align`. */
#define AGGIO_ROUNDS_TARGET 16
#define AGGIO_ROUND_MIN (4 << 20)
int64_t aggio__round_size(int64_t largest, int64_t cb, int64_t align, int pipeline);

/* Number of rounds: max over domains of ceil(size / cb). */
int64_t aggio__round_count(int naggr, const int64_t *start, const int64_t *end,
                           int64_t cb);

/* Window of domain [start, end) in round k: [*lo, *hi), empty when past end.
 * Windows after the first start on multiples of cb from the domain's aligned
 * start, so that they stay aligned when the domain is. */
void aggio__round_window(int64_t start, int64_t end, int64_t cb, int64_t k,
                         int64_t *lo, int64_t *hi);

/* Appends to out the parts of `src` (sorted, non-overlapping) inside
 * [lo, hi), starting the scan at *cursor and advancing it past ranges that
 * end at or before hi (so successive windows scan each list once). */
int aggio__clip(const struct aggio__extents *src, size_t *cursor, int64_t lo,
                int64_t hi, struct aggio__extents *out);

/* ---- coverage and read-modify-write --------------------------------------- */

/* Merges k sorted lists of ranges into the sorted union of covered runs
 * (touching/overlapping ranges merge).  Returns 0 or AGGIO_ERR_NOMEM. */
int aggio__coverage(const struct aggio__extents *lists, int k,
                    struct aggio__extents *runs);

/* Decides how an aggregator writes a window [lo, hi) covered by `runs`:
 * 1 = read the window, overlay, write it whole (read-modify-write);
 * 0 = write each run.  ds is the romio_ds_write tristate (0 disable,
 * 1 enable, 2 automatic).  Automatic chooses read-modify-write when the runs
 * are many and small and the holes between them small: the cost model is
 * seeks (runs) against extra bytes read and written (holes). */
int aggio__rmw_decide(const struct aggio__extents *runs, int64_t lo, int64_t hi,
                      int ds);

#endif
