/*
 * test_node_ids.c - unit tests of aggio__number_nodes: nodes numbered by
 * first appearance in rank order, checked against the obvious quadratic
 * search on hand-made and random layouts.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "node_ids.h"

/* The definition, the slow way: a rank's node is the node of the first
 * earlier rank with the same key, else the next new number. */
static int reference(int n, const int *keys, int *node_of_rank) {
  int count = 0;
  for (int r = 0; r < n; r++) {
    node_of_rank[r] = -1;
    for (int q = 0; q < r && node_of_rank[r] < 0; q++)
      if (keys[2 * q] == keys[2 * r] && keys[2 * q + 1] == keys[2 * r + 1])
        node_of_rank[r] = node_of_rank[q];
    if (node_of_rank[r] < 0)
      node_of_rank[r] = count++;
  }
  return count;
}

static void test_hand_made(void) {
  /* ranks 0,2 on leader 0; 1,3 on leader 1; rank 4 on leader 0 emulated 1 */
  int keys[] = {0, 0, 1, 0, 0, 0, 1, 0, 0, 1};
  int got[5];
  int n = aggio__number_nodes(5, keys, got);
  CHECK(n == 3, "3 nodes, got %d", n);
  CHECK(got[0] == 0 && got[1] == 1 && got[2] == 0 && got[3] == 1 && got[4] == 2,
        "numbered by first appearance: %d %d %d %d %d", got[0], got[1], got[2], got[3],
        got[4]);
  /* the leader values themselves do not matter, only equality */
  int keys2[] = {7, 3, 5, 0, 7, 3};
  n = aggio__number_nodes(3, keys2, got);
  CHECK(n == 2 && got[0] == 0 && got[1] == 1 && got[2] == 0, "arbitrary keys");
  CHECK(aggio__number_nodes(0, keys2, got) == 0, "no ranks, no nodes");
}

static void test_random_against_reference(void) {
  uint64_t x = 88172645463325252ULL;
  int bad = 0;
  for (int trial = 0; trial < 200; trial++) {
    int n = 1 + trial * 7 % 300;
    int *keys = malloc(sizeof(int) * 2 * (size_t)n);
    int *a = malloc(sizeof(int) * (size_t)n), *b = malloc(sizeof(int) * (size_t)n);
    int leaders = 1 + trial % 17, emus = 1 + trial % 3;
    for (int r = 0; r < n; r++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      keys[2 * r] = (int)(x % (uint64_t)leaders) * 1000;
      keys[2 * r + 1] = (int)((x >> 20) % (uint64_t)emus);
    }
    int na = aggio__number_nodes(n, keys, a), nb = reference(n, keys, b);
    bad += na != nb;
    for (int r = 0; r < n && na == nb; r++)
      bad += a[r] != b[r];
    free(keys);
    free(a);
    free(b);
  }
  CHECK(bad == 0, "%d differences from the quadratic definition", bad);
}

int main(void) {
  test_hand_made();
  test_random_against_reference();
  return test_summary();
}
