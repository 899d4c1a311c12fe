/*
 * node_ids.c - nodes numbered by first appearance in rank order, from each
 * rank's node key: sort the (key, rank) pairs so that each node's ranks are
 * adjacent, then walk the ranks in order giving each new node the next
 * number.  O(n log n) where a search of the earlier ranks was O(n^2).
 */
#include "node_ids.h"

#include <stdlib.h>

struct keyed_rank {
  int leader, emu, rank;
};

static int same_key(const struct keyed_rank *a, const struct keyed_rank *b) {
  return a->leader == b->leader && a->emu == b->emu;
}

static int by_key_then_rank(const void *pa, const void *pb) {
  const struct keyed_rank *a = pa, *b = pb;
  if (a->leader != b->leader)
    return a->leader < b->leader ? -1 : 1;
  if (a->emu != b->emu)
    return a->emu < b->emu ? -1 : 1;
  return (a->rank > b->rank) - (a->rank < b->rank);
}

int aggio__number_nodes(int n, const int *keys, int *node_of_rank) {
  size_t slots = (size_t)(n > 0 ? n : 1);
  struct keyed_rank *k = malloc(slots * sizeof *k);
  int *group_of = malloc(slots * sizeof *group_of);   /* rank -> distinct key */
  int *id_of_group = malloc(slots * sizeof *id_of_group);
  int next = -1;
  if (k && group_of && id_of_group) {
    for (int r = 0; r < n; r++)
      k[r] = (struct keyed_rank){keys[2 * r], keys[2 * r + 1], r};
    qsort(k, (size_t)n, sizeof *k, by_key_then_rank);
    int groups = 0;
    for (int i = 0; i < n; i++) {
      if (i > 0 && !same_key(&k[i - 1], &k[i]))
        groups++;
      group_of[k[i].rank] = groups;
      id_of_group[i] = -1;
    }
    next = 0;
    for (int r = 0; r < n; r++) {
      int *id = &id_of_group[group_of[r]];
      if (*id < 0)
        *id = next++;
      node_of_rank[r] = *id;
    }
  }
  free(k);
  free(group_of);
  free(id_of_group);
  return next;
}
