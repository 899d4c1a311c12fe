/*
 * test_placement.c - the placement strategies and TAPIOCA's cost model on
 * small topologies whose costs are computed by hand below.  Latency 1 s and
 * 1000 B/s links keep every cost a small exact number, so ties are exact
 * and the tie rule (lowest rank) is tested too.
 */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "placement.h"
#include "topology.h"

/* A line: nodes n0..n3 at x = 0..3 of a 5-long mesh, the I/O node at x = 4. */
static const char line_topo[] = "shape mesh 5\n"
                                "latency 1\nbandwidth 1000\nio_bandwidth 1000\n"
                                "node n0 0\nnode n1 1\nnode n2 2\nnode n3 3\n"
                                "io bridge 4\n";

struct layout {
  struct aggio__topology t;
  int node_of_rank[8];
  int topo_node[4];
  struct aggio__place_in in;
};

/* 8 ranks, 2 per node, nodes 0..3 are the topology's n0..n3. */
static int line_layout(struct layout *L) {
  char err[200];
  if (aggio__topo_parse_file(line_topo, strlen(line_topo), &L->t, err, sizeof err) != 0) {
    CHECK(0, "line topology parses: %s", err);
    return -1;
  }
  for (int r = 0; r < 8; r++)
    L->node_of_rank[r] = r / 2;
  for (int i = 0; i < 4; i++)
    L->topo_node[i] = i;
  struct aggio__place_in in = {.nprocs = 8, .node_of_rank = L->node_of_rank, .nnodes = 4,
                               .topo_node = L->topo_node, .topo = &L->t, .uniform = 500};
  L->in = in;
  return 0;
}

/* One partition of all 8 ranks, 500 bytes each (1 s per node's 1000 bytes):
 *   A on node k: C1 = max over the other nodes of (|i-k| + 1)
 *                C2 = (4 - k) + 4000 / (4 nodes * 1000) = (4 - k) + 1
 *   k = 0: 4 + 5 = 9;  k = 1: 3 + 4 = 7;  k = 2: 3 + 3 = 6;  k = 3: 4 + 2 = 6. */
static void test_cost_model(void) {
  struct layout L;
  if (line_layout(&L) != 0)
    return;
  const double want[4] = {9, 7, 6, 6};
  for (int k = 0; k < 4; k++) {
    double c = aggio__place_cost(&L.in, 0, 8, 2 * k);
    CHECK(c == want[k], "cost of an aggregator on node %d: %g, want %g", k, c, want[k]);
  }
  int a = -1;
  CHECK(aggio__place(&L.in, AGGIO_PLACE_TOPOLOGY, 1, &a) == 0 && a == 4,
        "topology: node 2 wins the tie with node 3 by its lower rank (4), got %d", a);
  CHECK(aggio__place(&L.in, AGGIO_PLACE_SHORTEST, 1, &a) == 0 && a == 6,
        "shortest: node 3 is next to the I/O node (rank 6), got %d", a);
  CHECK(aggio__place(&L.in, AGGIO_PLACE_LONGEST, 1, &a) == 0 && a == 0,
        "longest: node 0 (rank 0), got %d", a);
  CHECK(aggio__place(&L.in, AGGIO_PLACE_GREEDY, 1, &a) == 0 && a == 0,
        "greedy: the lowest rank, got %d", a);
  aggio__topo_free(&L.t);
}

/* The call's volumes move the aggregator to the data: node 3 sends 100 s
 * worth (50000 bytes a rank), so an aggregator elsewhere pays 100 + hops in
 * C1, one on node 3 only max(3, 2, 1) + 1 = 4 (its own data stays put). */
static void test_volumes(void) {
  struct layout L;
  if (line_layout(&L) != 0)
    return;
  int64_t vol[8] = {500, 500, 500, 500, 500, 500, 50000, 50000};
  L.in.volume = vol;
  /* C2 = 1 + 103000 / 4000 = 26.75; C1 = 3 + 1 */
  double c = aggio__place_cost(&L.in, 0, 8, 6);
  CHECK(c == 4 + 1 + 103000.0 / 4000, "cost on node 3: %g", c);
  int a = -1;
  CHECK(aggio__place(&L.in, AGGIO_PLACE_TOPOLOGY, 1, &a) == 0 && a == 6,
        "the heavy node aggregates: rank 6, got %d", a);
  aggio__topo_free(&L.t);
}

/* Partitions are consecutive ranks; with ranks dealt round-robin over two
 * nodes, both partitions' best candidate is on node 1, next to the I/O
 * node: two aggregators on one node (TAPIOCA allowed one). */
static void test_two_per_node(void) {
  const char *topo = "shape mesh 3\nnode a 0\nnode b 1\nio io 2\n";
  struct aggio__topology t;
  char err[200];
  if (aggio__topo_parse_file(topo, strlen(topo), &t, err, sizeof err) != 0) {
    CHECK(0, "parses: %s", err);
    return;
  }
  int node_of_rank[4] = {0, 1, 0, 1}, topo_node[2] = {0, 1}, aggr[2] = {-1, -1};
  struct aggio__place_in in = {.nprocs = 4, .node_of_rank = node_of_rank, .nnodes = 2,
                               .topo_node = topo_node, .topo = &t, .uniform = 1 << 20};
  CHECK(aggio__place(&in, AGGIO_PLACE_SHORTEST, 2, aggr) == 0 && aggr[0] == 1 && aggr[1] == 3,
        "shortest: ranks 1 and 3, both on node b: %d %d", aggr[0], aggr[1]);
  CHECK(aggio__place(&in, AGGIO_PLACE_GREEDY, 2, aggr) == 0 && aggr[0] == 0 && aggr[1] == 2,
        "greedy: the first rank of each partition: %d %d", aggr[0], aggr[1]);
  CHECK(aggio__place(&in, AGGIO_PLACE_TOPOLOGY, 2, aggr) == 0 && aggr[0] == 1 && aggr[1] == 3,
        "topology: node b (nearer the I/O node, same C1): %d %d", aggr[0], aggr[1]);
  aggio__topo_free(&t);
}

/* Without a topology: 0 hops in a node, 1 between, no I/O node.  The node
 * sending most is the cheapest place to gather; shortest and longest have
 * nothing to tell apart and pick the lowest rank. */
static void test_default_topology(void) {
  int node_of_rank[6] = {0, 0, 1, 1, 2, 2}, aggr[3];
  int64_t vol[6] = {10, 10, 10 << 20, 10 << 20, 10, 10};
  struct aggio__place_in in = {.nprocs = 6, .node_of_rank = node_of_rank, .nnodes = 3,
                               .volume = vol};
  CHECK(aggio__place(&in, AGGIO_PLACE_TOPOLOGY, 1, aggr) == 0 && aggr[0] == 2,
        "the node with the data: rank 2, got %d", aggr[0]);
  CHECK(aggio__place(&in, AGGIO_PLACE_SHORTEST, 1, aggr) == 0 && aggr[0] == 0, "shortest: 0");
  CHECK(aggio__place(&in, AGGIO_PLACE_LONGEST, 1, aggr) == 0 && aggr[0] == 0, "longest: 0");
  /* three partitions of two ranks: each its own node, lowest rank */
  CHECK(aggio__place(&in, AGGIO_PLACE_TOPOLOGY, 3, aggr) == 0 && aggr[0] == 0 &&
            aggr[1] == 2 && aggr[2] == 4,
        "one per partition: %d %d %d", aggr[0], aggr[1], aggr[2]);
  /* more aggregators than ranks: one per rank */
  int all[6];
  CHECK(aggio__place(&in, AGGIO_PLACE_TOPOLOGY, 9, all) == 0 && all[5] == 5, "capped");
}

/* Nodes the topology does not know are 1 hop from everything. */
static void test_unknown_nodes(void) {
  struct layout L;
  if (line_layout(&L) != 0)
    return;
  L.topo_node[0] = -1; /* node 0 unknown: 1 hop from each node */
  double c = aggio__place_cost(&L.in, 0, 8, 0);
  /* C1 = 1 + 1 = 2; C2 = 0 hops (no I/O node reachable) + 1 */
  CHECK(c == 3, "unknown node: cost %g, want 3", c);
  aggio__topo_free(&L.t);
}

static void test_names_and_format(void) {
  CHECK(aggio__placement_parse("topology") == AGGIO_PLACE_TOPOLOGY, "parse topology");
  CHECK(aggio__placement_parse("auto") == AGGIO_PLACE_AUTO, "parse auto");
  CHECK(aggio__placement_parse("nearest") == -1, "unknown name");
  CHECK(strcmp(aggio__placement_name(AGGIO_PLACE_LONGEST), "longest") == 0, "name");
  char buf[64];
  int r[] = {0, 1, 2, 5, 7, 8};
  aggio__format_ranks(r, 6, buf, sizeof buf);
  CHECK(strcmp(buf, "0-2,5,7-8") == 0, "ranges: %s", buf);
  aggio__format_ranks(r, 0, buf, sizeof buf);
  CHECK(buf[0] == '\0', "empty");
  int many[100];
  for (int i = 0; i < 100; i++)
    many[i] = 3 * i;
  aggio__format_ranks(many, 100, buf, 20);
  CHECK(strlen(buf) < 20 && strstr(buf, "...") != NULL, "cut to fit: %s", buf);
}

int main(void) {
  test_cost_model();
  test_volumes();
  test_two_per_node();
  test_default_topology();
  test_unknown_nodes();
  test_names_and_format();
  return test_summary();
}
