/*
 * node_plan.h - MPI-free planning for node-local aggregation (the
 * node_local strategy, strategy_node_local.c): which ranks of a node
 * aggregate, how the node's own byte ranges are split between them, how
 * each one's share is packed into rounds of its buffer, and which bytes
 * of a rank's data stream go where.  Every rank of a node computes the
 * same plan from the same gathered offset lists, so the node needs no
 * message to agree on it.
 */
#ifndef AGGIO_NODE_PLAN_H
#define AGGIO_NODE_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "extent.h"

/* The node's aggregators, as indices of its ranks (0 .. n-1, sorted).
 *   flagged[i] : 1 when local rank i is one of the file's aggregators
 *                (cb_config_list, cb_nodes, cray_cb_nodes_multiplier);
 *   k          : aggio_node_aggregators, or 0 to take the flagged ranks.
 * k > 0 takes k ranks (at most n): spread evenly over the flagged ranks
 * when k of them exist (only they may have opened the file under
 * romio_no_indep_rw), else spread evenly over all the node's ranks.  A node
 * without a flagged rank and k = 0 gets its first rank.  Returns the count
 * (>= 1 when n >= 1); out holds n entries. */
int aggio__nl_aggregators(int n, const int *flagged, int k, int *out);

/* One piece of an aggregator's share: file bytes [off, off+len) lie at byte
 * `pos` of its buffer in round `round`; one system call each. */
struct aggio__nl_piece {
  int64_t off, len, pos, round;
};

struct aggio__nl_plan {
  int k;                      /* aggregators */
  struct aggio__nl_piece *v;  /* aggregator 0's pieces, then 1's, ... each by offset */
  size_t n, cap;
  size_t *first;              /* [k + 1]: aggregator j has v[first[j] .. first[j+1]) */
  int64_t *rounds;            /* [k]: rounds of aggregator j */
  int64_t nrounds;            /* the most of any aggregator: the node's rounds */
  int64_t bytes;              /* bytes the node's ranks access (overlaps once) */
  int64_t runs;               /* contiguous runs they form */
  int64_t lo, hi;             /* the node's span (lo = hi = 0: no data) */
};

/* Plans a node.
 *   runs      : the sorted union of the node's ranks' ranges (aggio__coverage)
 *   k         : aggregators (>= 1)
 *   slot      : buffer bytes per aggregator and round (> 0)
 *   align     : memory alignment of file offsets (direct I/O), 1 or 0: none.
 *               A piece lies at a buffer position congruent to its offset
 *               modulo align, so that aligned file offsets fall on aligned
 *               memory; the padding costs under align bytes per piece.
 *   cut_align : the shares' boundaries are rounded to the nearest multiple
 *               (stripe or file-system block) so that two aggregators
 *               never write into one stripe; 0: exact byte split.
 * The shares are as equal in bytes as the rounding allows and contiguous
 * in file order, so each aggregator's share is the node's data between two
 * offsets; a round packs as many of its runs as fit.  0 or AGGIO_ERR_NOMEM. */
int aggio__nl_plan_make(const struct aggio__extents *runs, int k, int64_t slot, int64_t align,
                        int64_t cut_align, struct aggio__nl_plan *p);
void aggio__nl_plan_free(struct aggio__nl_plan *p);

/* One copy of a rank: `len` bytes at `spos` of its data stream (file
 * offset `off`) to or from byte `pos` of aggregator `aggr`'s buffer in
 * round `round`. */
struct aggio__nl_move {
  int64_t round, pos, spos, len, off;
  int aggr;
};

/* The copies of a rank whose ranges `mine` (sorted, in stream order) are
 * part of the plan, sorted by round (then aggregator and position).
 * *moves is malloc'd (free it); 0 or AGGIO_ERR_NOMEM. */
int aggio__nl_moves(const struct aggio__nl_plan *p, const struct aggio__extents *mine,
                    struct aggio__nl_move **moves, size_t *n);

/* 1 when a node's data is fragmented and interleaved with other nodes':
 * its span overlaps another node's span and it forms more runs than it has
 * aggregators, so each aggregator writes several pieces that two-phase
 * would have merged with the other nodes' bytes between them.  spans holds
 * nnodes pairs (lo, hi), hi <= lo meaning no data. */
int aggio__nl_fragmented(const int64_t *spans, int nnodes, int node, int64_t runs, int k);

#endif
