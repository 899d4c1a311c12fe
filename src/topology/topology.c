/*
 * topology.c - nodes of a topology and the hop distance between them
 * (topology.h).  The distance is computed from coordinates, switches or
 * groups when asked, not stored as a matrix: 100,000 nodes cost their list,
 * not 10^10 entries.
 */
#include "topology.h"

#include <stdlib.h>
#include <string.h>

void aggio__topo_init(struct aggio__topology *t, enum aggio__topo_shape shape) {
  memset(t, 0, sizeof *t);
  t->shape = shape;
  t->latency = AGGIO_TOPO_LATENCY;
  t->bandwidth = AGGIO_TOPO_BANDWIDTH;
  t->io_bandwidth = AGGIO_TOPO_BANDWIDTH;
}

void aggio__topo_free(struct aggio__topology *t) {
  free(t->by_name);
  free(t->compute);
  free(t->ios);
  free(t->nodes);
  free(t->switch_name);
  free(t->switch_parent);
  memset(t, 0, sizeof *t);
}

int aggio__topo_add_node(struct aggio__topology *t, const struct aggio__topo_node *n) {
  if (t->nnodes == t->cap) {
    int cap = t->cap ? 2 * t->cap : 64;
    struct aggio__topo_node *nn = realloc(t->nodes, (size_t)cap * sizeof *nn);
    if (!nn)
      return -1;
    t->nodes = nn;
    t->cap = cap;
  }
  t->nodes[t->nnodes] = *n;
  return t->nnodes++;
}

static int cmp_node_name(const void *a, const void *b) {
  const struct aggio__topo_node *x = *(const struct aggio__topo_node *const *)a;
  const struct aggio__topo_node *y = *(const struct aggio__topo_node *const *)b;
  int c = strcmp(x->name, y->name);
  return c ? c : (x < y ? -1 : x > y); /* equal names: declaration order */
}

int aggio__topo_finish(struct aggio__topology *t, int *first, int *second) {
  size_t n = (size_t)t->nnodes;
  const struct aggio__topo_node **sorted = malloc((n ? n : 1) * sizeof *sorted);
  t->by_name = malloc((n ? n : 1) * sizeof *t->by_name);
  t->compute = malloc((n ? n : 1) * sizeof *t->compute);
  t->ios = malloc((n ? n : 1) * sizeof *t->ios);
  if (!sorted || !t->by_name || !t->compute || !t->ios) {
    free(sorted);
    return -1;
  }
  t->ncompute = t->nio = 0;
  for (size_t i = 0; i < n; i++) {
    sorted[i] = &t->nodes[i];
    if (t->nodes[i].io)
      t->ios[t->nio++] = (int)i;
    else
      t->compute[t->ncompute++] = (int)i;
  }
  qsort(sorted, n, sizeof *sorted, cmp_node_name);
  int rc = 0;
  for (size_t i = 0; i < n; i++) {
    t->by_name[i] = (int)(sorted[i] - t->nodes);
    if (rc == 0 && i > 0 && strcmp(sorted[i]->name, sorted[i - 1]->name) == 0) {
      *first = t->by_name[i - 1];
      *second = t->by_name[i];
      rc = -2;
    }
  }
  free(sorted);
  return rc;
}

int aggio__topo_find(const struct aggio__topology *t, const char *name) {
  if (t && t->by_name) {
    int lo = 0, hi = t->nnodes - 1;
    while (lo <= hi) {
      int mid = lo + (hi - lo) / 2;
      int c = strcmp(t->nodes[t->by_name[mid]].name, name);
      if (c == 0)
        return t->by_name[mid];
      if (c < 0)
        lo = mid + 1;
      else
        hi = mid - 1;
    }
    return -1;
  }
  for (int i = 0; t && i < t->nnodes; i++)
    if (strcmp(t->nodes[i].name, name) == 0)
      return i;
  return -1;
}

int aggio__topo_find_switch(const struct aggio__topology *t, const char *name) {
  for (int i = 0; t && i < t->nswitches; i++)
    if (strcmp(t->switch_name[i], name) == 0)
      return i;
  return -1;
}

static int torus_distance(const struct aggio__topology *t, const int *a, const int *b) {
  int d = 0;
  for (int k = 0; k < t->ndims; k++) {
    int x = abs(a[k] - b[k]);
    if (t->wrap[k] && t->dims[k] - x < x)
      x = t->dims[k] - x;
    d += x;
  }
  return d;
}

/* Hops between two nodes through the switch tree: up from each leaf switch
 * to their lowest common ancestor and down again, plus the two node links.
 * Leaves in separate trees are joined as if by one more switch above both
 * roots (Slurm would not route between them; a cost, not an error). */
static int tree_distance(const struct aggio__topology *t, int sa, int sb) {
  if (sa < 0 || sb < 0)
    return 1;
  if (sa == sb)
    return 2;
  int up_a = 0;
  for (int s = sa; s >= 0 && up_a <= t->nswitches; s = t->switch_parent[s], up_a++) {
    int up_b = 0;
    for (int q = sb; q >= 0 && up_b <= t->nswitches; q = t->switch_parent[q], up_b++)
      if (q == s)
        return 2 + up_a + up_b;
  }
  int root_a = 0, root_b = 0;
  for (int s = sa; s >= 0 && root_a <= t->nswitches; s = t->switch_parent[s])
    root_a++;
  for (int s = sb; s >= 0 && root_b <= t->nswitches; s = t->switch_parent[s])
    root_b++;
  return 2 + root_a + root_b;
}

int aggio__topo_distance(const struct aggio__topology *t, int a, int b) {
  if (a == b)
    return 0;
  if (!t || a < 0 || b < 0 || a >= t->nnodes || b >= t->nnodes)
    return 1;
  const struct aggio__topo_node *na = &t->nodes[a], *nb = &t->nodes[b];
  switch (t->shape) {
  case AGGIO_TOPO_TORUS:
    return torus_distance(t, na->coord, nb->coord);
  case AGGIO_TOPO_TREE:
    return tree_distance(t, na->place, nb->place);
  case AGGIO_TOPO_DRAGONFLY:
    /* one local link inside a group; local, global, local between groups
     * (the minimal route's longest case) */
    return na->place == nb->place ? 1 : 3;
  }
  return 1;
}

int aggio__topo_nearest_io(const struct aggio__topology *t, int a) {
  int best = -1, best_d = 0;
  for (int k = 0; t && k < (t->ios ? t->nio : t->nnodes); k++) {
    int i = t->ios ? t->ios[k] : k;
    if (!t->nodes[i].io)
      continue;
    int d = aggio__topo_distance(t, a, i);
    if (best < 0 || d < best_d) {
      best = i;
      best_d = d;
    }
  }
  return best;
}

int aggio__topo_compute_node(const struct aggio__topology *t, int k) {
  if (t && t->compute)
    return k >= 0 && k < t->ncompute ? t->compute[k] : -1;
  for (int i = 0; t && i < t->nnodes; i++)
    if (!t->nodes[i].io && k-- == 0)
      return i;
  return -1;
}
