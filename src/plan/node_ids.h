/*
 * node_ids.h - numbering the nodes of a file's ranks from what each rank
 * knows of its node (pure: no MPI, unit-tested in tests/unit/test_node_ids.c).
 */
#ifndef AGGIO_NODE_IDS_H
#define AGGIO_NODE_IDS_H

/* Ranks r and q share a node when keys[2r], keys[2r+1] (the real node's
 * leader, the emulated node's index) equal keys[2q], keys[2q+1].  Numbers
 * the nodes 0, 1, ... by first appearance in rank order into node_of_rank
 * (n entries) and returns how many there are, or -1 when out of memory.
 * O(n log n): a sort of the keys, not a search per rank. */
int aggio__number_nodes(int n, const int *keys, int *node_of_rank);

#endif
