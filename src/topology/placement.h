/*
 * placement.h - where the aggregators sit (pure: no MPI, unit-tested in
 * tests/unit/test_placement.c).  TAPIOCA's four strategies (Tessier et
 * al., "Topology-Aware Data Aggregation for Intensive I/O on Large-Scale
 * Supercomputers"), on a topology from topology.h:
 *
 *   greedy    the lowest rank of each partition (as MPICH places them)
 *   shortest  the candidate nearest to its I/O node
 *   longest   the candidate farthest from its I/O node
 *   topology  the candidate of least cost C1 + C2, where
 *     C1 = max over the partition's nodes i of (l d(i,A) + w(i,A) / B(i->A))
 *     C2 = l d(A,IO) + w(A,IO) / (|V_C| B(A->IO))
 *
 * The ranks split into naggr partitions of consecutive ranks, one per
 * aggregator (the ranks whose data an aggregator gathers when each rank's
 * data follows the previous rank's, the common layout).  The candidates of
 * a partition are its own ranks; each partition chooses alone, so several
 * aggregators may share a node (TAPIOCA allowed one per node).  Every rank
 * runs the same code on the same input and so chooses the same ranks.
 * Cost: O(k^2) per partition of k nodes, O(P) for P ranks in all when the
 * partitions hold a bounded number of nodes.
 */
#ifndef AGGIO_PLACEMENT_H
#define AGGIO_PLACEMENT_H

#include <stddef.h>
#include <stdint.h>

#include "topology.h"

enum aggio__placement {
  AGGIO_PLACE_GREEDY = 0,
  AGGIO_PLACE_SHORTEST = 1,
  AGGIO_PLACE_LONGEST = 2,
  AGGIO_PLACE_TOPOLOGY = 3,
  AGGIO_PLACE_AUTO = 4
};

/* Name <-> value ("greedy", ...); -1 / NULL when unknown. */
int aggio__placement_parse(const char *name);
const char *aggio__placement_name(int p);

struct aggio__place_in {
  int nprocs;
  const int *node_of_rank;  /* node (0..nnodes-1) of each rank */
  int nnodes;
  const int *topo_node;     /* topology node of each node, -1 unknown; NULL: all unknown */
  const struct aggio__topology *topo; /* NULL: 0 hops inside a node, 1 between */
  const int64_t *volume;    /* bytes each rank sends; NULL: `uniform` each */
  int64_t uniform;
};

/* Chooses naggr (1..nprocs) aggregators with strategy p (not AUTO) into
 * aggr[0..naggr), ascending.  Returns 0, or -1 out of memory. */
int aggio__place(const struct aggio__place_in *in, int p, int naggr, int *aggr);

/* The cost C1 + C2 of rank `a` aggregating ranks [lo, hi) (exported for the
 * unit tests, which check it against hand-computed values).  Returns a
 * negative value out of memory. */
double aggio__place_cost(const struct aggio__place_in *in, int lo, int hi, int a);

/* "0,4,8-11": ranks (ascending) with runs as ranges, cut with "..." to fit
 * len bytes. */
void aggio__format_ranks(const int *r, int n, char *buf, size_t len);

#endif
