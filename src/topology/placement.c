/*
 * placement.c - TAPIOCA's aggregator placement strategies (placement.h).
 * A partition's candidates are weighed per node: the ranks of one node are
 * equally far from everything, so the node's lowest rank in the partition
 * stands for it, and ties go to the lowest rank (what greedy would pick).
 */
#include "placement.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"greedy", "shortest", "longest", "topology", "auto"};

int aggio__placement_parse(const char *name) {
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++)
    if (strcmp(name, names[i]) == 0)
      return i;
  return -1;
}

const char *aggio__placement_name(int p) {
  return p >= 0 && p < (int)(sizeof names / sizeof names[0]) ? names[p] : NULL;
}

/* The nodes of one partition, with the bytes each sends and its first rank. */
struct part {
  double *vol;    /* per node (nnodes), zero outside the partition */
  int *first;     /* per node: lowest rank in the partition, -1 outside */
  int *nodes;     /* the partition's nodes in order of first rank */
  int n;
  double total;
};

static int part_alloc(struct part *p, int nnodes) {
  p->vol = calloc((size_t)nnodes, sizeof *p->vol);
  p->first = malloc((size_t)nnodes * sizeof *p->first);
  p->nodes = malloc((size_t)nnodes * sizeof *p->nodes);
  if (!p->vol || !p->first || !p->nodes)
    return -1;
  for (int i = 0; i < nnodes; i++)
    p->first[i] = -1;
  p->n = 0;
  return 0;
}

static void part_free(struct part *p) {
  free(p->vol);
  free(p->first);
  free(p->nodes);
}

static void part_fill(struct part *p, const struct aggio__place_in *in, int lo, int hi) {
  for (int i = 0; i < p->n; i++) { /* clear the previous partition's nodes only */
    p->vol[p->nodes[i]] = 0;
    p->first[p->nodes[i]] = -1;
  }
  p->n = 0;
  p->total = 0;
  for (int r = lo; r < hi; r++) {
    int nd = in->node_of_rank[r];
    double v = (double)(in->volume ? in->volume[r] : in->uniform);
    if (p->first[nd] < 0) {
      p->first[nd] = r;
      p->nodes[p->n++] = nd;
    }
    p->vol[nd] += v;
    p->total += v;
  }
}

static int topo_of(const struct aggio__place_in *in, int nd) {
  return in->topo_node ? in->topo_node[nd] : -1;
}

/* Hops between two of the file's nodes: 0 for the same node, 1 when the
 * topology does not know one of them. */
static int hops(const struct aggio__place_in *in, int a, int b) {
  if (a == b)
    return 0;
  int ta = topo_of(in, a), tb = topo_of(in, b);
  if (!in->topo || ta < 0 || tb < 0)
    return 1;
  return aggio__topo_distance(in->topo, ta, tb);
}

static int io_hops(const struct aggio__place_in *in, int nd) {
  int ta = topo_of(in, nd);
  int io = ta < 0 ? -1 : aggio__topo_nearest_io(in->topo, ta);
  return io < 0 ? 0 : aggio__topo_distance(in->topo, ta, io);
}

/* C1 + C2 of node `a` for the partition in p. */
static double node_cost(const struct aggio__place_in *in, const struct part *p, int a) {
  const struct aggio__topology *t = in->topo;
  double l = t ? t->latency : AGGIO_TOPO_LATENCY;
  double b = t ? t->bandwidth : AGGIO_TOPO_BANDWIDTH;
  double bio = t ? t->io_bandwidth : AGGIO_TOPO_BANDWIDTH;
  double c1 = 0;
  for (int k = 0; k < p->n; k++) {
    int i = p->nodes[k];
    int d = hops(in, i, a);
    /* data that stays on the aggregator's node crosses no link */
    double c = d > 0 ? l * d + p->vol[i] / b : 0;
    if (c > c1)
      c1 = c;
  }
  double c2 = l * io_hops(in, a) + p->total / ((p->n > 0 ? p->n : 1) * bio);
  return c1 + c2;
}

/* The node of the partition that strategy s prefers. */
static int choose(const struct aggio__place_in *in, const struct part *p, int s) {
  int best = p->nodes[0];
  double best_v = 0;
  for (int k = 0; k < p->n; k++) {
    int nd = p->nodes[k];
    double v = s == AGGIO_PLACE_TOPOLOGY ? node_cost(in, p, nd)
               : s == AGGIO_PLACE_LONGEST ? -(double)io_hops(in, nd)
                                          : (double)io_hops(in, nd);
    if (k == 0 || v < best_v) {
      best = nd;
      best_v = v;
    }
  }
  return best;
}

int aggio__place(const struct aggio__place_in *in, int s, int naggr, int *aggr) {
  if (naggr > in->nprocs)
    naggr = in->nprocs;
  struct part p;
  if (part_alloc(&p, in->nnodes) != 0) {
    part_free(&p);
    return -1;
  }
  for (int k = 0; k < naggr; k++) {
    int lo = (int)((int64_t)k * in->nprocs / naggr);
    int hi = (int)((int64_t)(k + 1) * in->nprocs / naggr);
    if (s == AGGIO_PLACE_GREEDY) {
      aggr[k] = lo;
      continue;
    }
    part_fill(&p, in, lo, hi);
    aggr[k] = p.first[choose(in, &p, s)];
  }
  part_free(&p);
  return 0;
}

double aggio__place_cost(const struct aggio__place_in *in, int lo, int hi, int a) {
  struct part p;
  double c = -1;
  if (part_alloc(&p, in->nnodes) == 0) {
    part_fill(&p, in, lo, hi);
    c = node_cost(in, &p, in->node_of_rank[a]);
  }
  part_free(&p);
  return c;
}

void aggio__format_ranks(const int *r, int n, char *buf, size_t len) {
  size_t used = 0;
  if (len == 0)
    return;
  buf[0] = '\0';
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && r[j + 1] == r[j] + 1)
      j++;
    char item[32];
    int k = j > i ? snprintf(item, sizeof item, "%s%d-%d", i ? "," : "", r[i], r[j])
                  : snprintf(item, sizeof item, "%s%d", i ? "," : "", r[i]);
    if (used + (size_t)k + 5 > len && j + 1 < n) { /* room for ",..." kept */
      if (used + 5 <= len)
        snprintf(buf + used, len - used, ",...");
      return;
    }
    if (used + (size_t)k >= len)
      return;
    memcpy(buf + used, item, (size_t)k + 1);
    used += (size_t)k;
    i = j + 1;
  }
}
