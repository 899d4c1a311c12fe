/*
 * topology.h - the machine's network as aggregator placement sees it
 * (pure: no MPI, unit-tested in tests/unit/test_topology.c).
 *
 * A topology is a list of nodes (compute nodes and I/O nodes: BG/Q bridge
 * nodes, Lustre LNET routers) and a hop distance between any two of them,
 * from one of three shapes: coordinates on an N-D torus or mesh, a switch
 * tree (Slurm's topology.conf, or the description file), or dragonfly
 * groups.  Links have one latency and bandwidth, and the links into the I/O
 * nodes their own bandwidth.  Without a topology (NULL) the distance is 0
 * inside a node and 1 between nodes.  Sources: topology_file.c (aggio's
 * description file, docs/topology.md) and topology_slurm.c.
 */
#ifndef AGGIO_TOPOLOGY_H
#define AGGIO_TOPOLOGY_H

#include <stddef.h>

#define AGGIO_TOPO_MAXDIM 8
#define AGGIO_TOPO_NAMELEN 64

enum aggio__topo_shape {
  AGGIO_TOPO_TORUS = 1,     /* coordinates; per-dimension wraparound */
  AGGIO_TOPO_TREE = 2,      /* nodes under leaf switches of a switch tree */
  AGGIO_TOPO_DRAGONFLY = 3  /* groups, all-to-all inside and between groups */
};

struct aggio__topo_node {
  char name[AGGIO_TOPO_NAMELEN];
  int io;                       /* 1: an I/O node, not a compute node */
  int coord[AGGIO_TOPO_MAXDIM]; /* torus */
  int place;                    /* tree: leaf switch index; dragonfly: group */
  int line;                     /* where the source declared it (for errors) */
};

struct aggio__topology {
  enum aggio__topo_shape shape;
  int ndims;                  /* torus */
  int dims[AGGIO_TOPO_MAXDIM];
  int wrap[AGGIO_TOPO_MAXDIM];
  int nswitches;              /* tree */
  char (*switch_name)[AGGIO_TOPO_NAMELEN];
  int *switch_parent;         /* -1 at a root */
  int nnodes, cap;
  struct aggio__topo_node *nodes;
  /* built by aggio__topo_finish, so that lookups stay O(log n) and O(1)
   * on machines of 10^4-10^5 nodes: */
  int *by_name;  /* node indices sorted by name */
  int *compute;  /* compute node indices in order (ncompute) */
  int *ios;      /* I/O node indices (nio) */
  int ncompute, nio;
  double latency;      /* seconds per hop (l) */
  double bandwidth;    /* bytes/s of a link between nodes (B(i->A)) */
  double io_bandwidth; /* bytes/s into an I/O node (B(A->IO)) */
};

/* Defaults of the link parameters when a source does not give them: a
 * 1 us hop and 10 GB/s links (an InfiniBand HDR or Slingshot link's order). */
#define AGGIO_TOPO_LATENCY 1e-6
#define AGGIO_TOPO_BANDWIDTH 1e10

void aggio__topo_init(struct aggio__topology *t, enum aggio__topo_shape shape);
void aggio__topo_free(struct aggio__topology *t);

/* Appends a node (a copy of *n); returns its index, or -1 out of memory. */
int aggio__topo_add_node(struct aggio__topology *t, const struct aggio__topo_node *n);
/* After the last node: builds the lookup tables.  Returns 0; -1 out of
 * memory; -2 when two nodes share a name (*first, *second: their indices,
 * second declared later). */
int aggio__topo_finish(struct aggio__topology *t, int *first, int *second);
/* Index of the node or switch called `name`, or -1 (nodes: binary search
 * once finished, a scan before). */
int aggio__topo_find(const struct aggio__topology *t, const char *name);
int aggio__topo_find_switch(const struct aggio__topology *t, const char *name);

/* Hop distance between nodes a and b (indices into t->nodes).  t NULL, or a
 * or b negative (a node the topology does not know): 0 when a == b, else 1. */
int aggio__topo_distance(const struct aggio__topology *t, int a, int b);

/* The I/O node nearest to node a (lowest index on ties), or -1 when the
 * topology has none. */
int aggio__topo_nearest_io(const struct aggio__topology *t, int a);

/* The k-th compute node (I/O nodes skipped), or -1: emulated nodes map to
 * the topology's compute nodes in order. */
int aggio__topo_compute_node(const struct aggio__topology *t, int k);

/* ---- sources ---------------------------------------------------------------- */

/* Parses aggio's topology description (docs/topology.md): `len` bytes of
 * text, no NUL needed.  Returns 0 and a topology in *t, or -1 with
 * "line N: why" in err (and *t empty). */
int aggio__topo_parse_file(const char *text, size_t len, struct aggio__topology *t,
                           char *err, size_t errlen);

/* Parses Slurm's topology.conf (topology/tree): SwitchName=, Switches=,
 * Nodes= with hostlist ranges; other keys (LinkSpeed=) are accepted and
 * ignored.  Same contract as aggio__topo_parse_file. */
int aggio__topo_parse_slurm(const char *text, size_t len, struct aggio__topology *t,
                            char *err, size_t errlen);

/* Expands one Slurm hostlist ("n[01-16,20],login1") calling cb for each
 * name.  Returns 0, or -1 with a reason in err.  Used by the Slurm parser,
 * exported for its tests. */
typedef int (*aggio__hostname_cb)(void *ctx, const char *name);
int aggio__hostlist_expand(const char *list, aggio__hostname_cb cb, void *ctx, char *err,
                           size_t errlen);

#endif
