/*
 * node_plan.c - MPI-free planning for node-local aggregation (node_plan.h).
 *
 * Follows the HPE paper "MPI-IO Local Aggregation as Collective Buffering"
 * (each node writes its own ranks' data) with the refinement its future
 * work asks for: K aggregators per node, fed through shared memory, each
 * taking a contiguous share of the node's bytes.  Unlike two-phase's file
 * domains, which split the whole accessed range, the shares split only the
 * node's own bytes, and a buffer holds them packed (not at their file
 * distance), so that a node whose data is interleaved with other nodes'
 * still fills its buffers.
 */
#include "node_plan.h"

#include <stdlib.h>
#include <string.h>

#include "aggio_errno.h"
#include "vec.h"

/* ---- aggregators ------------------------------------------------------------ */

/* Picks k of the flagged ranks, spread evenly among them: the j-th pick is
 * flagged rank number floor(j * nf / k), increasing and distinct. */
static int pick_flagged(int n, const int *flagged, int nf, int k, int *out) {
  int next = 0, seen = 0;
  for (int i = 0; i < n && next < k; i++) {
    if (!flagged[i])
      continue;
    if (seen == (int)((int64_t)next * nf / k))
      out[next++] = i;
    seen++;
  }
  return next;
}

int aggio__nl_aggregators(int n, const int *flagged, int k, int *out) {
  if (n <= 0)
    return 0;
  int nf = 0;
  for (int i = 0; i < n; i++)
    nf += flagged[i] != 0;
  if (k <= 0 && nf == 0) {
    out[0] = 0;
    return 1;
  }
  if (k <= 0)
    return pick_flagged(n, flagged, nf, nf, out);
  if (k > n)
    k = n;
  if (k <= nf)
    return pick_flagged(n, flagged, nf, k, out);
  for (int j = 0; j < k; j++)
    out[j] = (int)((int64_t)j * n / k);
  return k;
}

/* ---- the plan ----------------------------------------------------------------- */

static int64_t mod64(int64_t x, int64_t a) { return ((x % a) + a) % a; }

static int64_t nearest(int64_t x, int64_t a) {
  if (a <= 1)
    return x;
  int64_t down = x - mod64(x, a);
  return 2 * (x - down) >= a && down <= INT64_MAX - a ? down + a : down;
}

static int push_piece(struct aggio__nl_plan *p, struct aggio__nl_piece pc) {
  return aggio__vec_push(p, pc);
}

/* bound[0..k]: the shares' edges, share j = [bound[j], bound[j+1]).  Edge j
 * is where the node's bytes reach j/k of their total, rounded to the
 * nearest cut_align and never before the previous edge. */
static void share_bounds(const struct aggio__extents *runs, const struct aggio__nl_plan *p,
                         int64_t cut_align, int64_t *bound) {
  int k = p->k;
  size_t i = 0;
  int64_t acc = 0;
  bound[0] = p->lo;
  bound[k] = p->hi;
  for (int j = 1; j < k; j++) {
    int64_t target = (int64_t)(((__int128)p->bytes * j) / k);
    while (i < runs->n && acc + runs->v[i].len <= target)
      acc += runs->v[i++].len;
    int64_t off = i < runs->n ? runs->v[i].off + (target - acc) : p->hi;
    off = nearest(off, cut_align);
    if (off < bound[j - 1])
      off = bound[j - 1];
    bound[j] = off > p->hi ? p->hi : off;
  }
}

/* Packs [a, b) into the rounds of one aggregator: each piece starts at a
 * position congruent to its offset modulo align, and a round ends when the
 * slot is full (a run longer than what is left is cut there). */
static int pack(struct aggio__nl_plan *p, int64_t a, int64_t b, int64_t slot, int64_t align,
                int64_t *round, int64_t *pos) {
  while (a < b) {
    int64_t pad = align > 1 ? mod64(a - *pos, align) : 0;
    if (*pos + pad >= slot) {
      if (*pos > 0) {
        (*round)++;
        *pos = 0;
        continue;
      }
      pad = 0; /* a slot smaller than the alignment: unaligned, but progress */
    }
    int64_t take = slot - (*pos + pad);
    if (take > b - a)
      take = b - a;
    if (push_piece(p, (struct aggio__nl_piece){a, take, *pos + pad, *round}) != 0)
      return AGGIO_ERR_NOMEM;
    *pos += pad + take;
    a += take;
    if (*pos >= slot) {
      (*round)++;
      *pos = 0;
    }
  }
  return 0;
}

/* Aggregator j's share: the runs clipped to [lo, hi), packed. */
static int plan_share(const struct aggio__extents *runs, size_t *cursor, int64_t lo,
                      int64_t hi, int64_t slot, int64_t align, struct aggio__nl_plan *p) {
  int64_t round = 0, pos = 0;
  size_t i = *cursor;
  for (; i < runs->n && runs->v[i].off < hi; i++) {
    int64_t a = runs->v[i].off, b = a + runs->v[i].len;
    a = a < lo ? lo : a;
    b = b > hi ? hi : b;
    if (a < b && pack(p, a, b, slot, align, &round, &pos) != 0)
      return AGGIO_ERR_NOMEM;
    if (runs->v[i].off + runs->v[i].len > hi)
      break; /* the rest of this run is the next share's */
  }
  *cursor = i;
  return 0;
}

int aggio__nl_plan_make(const struct aggio__extents *runs, int k, int64_t slot, int64_t align,
                        int64_t cut_align, struct aggio__nl_plan *p) {
  memset(p, 0, sizeof *p);
  p->k = k < 1 ? 1 : k;
  k = p->k;
  p->first = calloc((size_t)k + 1, sizeof *p->first);
  p->rounds = calloc((size_t)k, sizeof *p->rounds);
  int64_t *bound = malloc(((size_t)k + 1) * sizeof *bound);
  int rc = p->first && p->rounds && bound ? 0 : AGGIO_ERR_NOMEM;
  p->bytes = aggio__extents_bytes(runs);
  p->runs = (int64_t)runs->n;
  if (rc == 0 && runs->n > 0) {
    p->lo = runs->v[0].off;
    p->hi = runs->v[runs->n - 1].off + runs->v[runs->n - 1].len;
    share_bounds(runs, p, cut_align, bound);
  }
  size_t cursor = 0;
  for (int j = 0; rc == 0 && j < k; j++) {
    p->first[j] = p->n;
    if (runs->n > 0)
      rc = plan_share(runs, &cursor, bound[j], bound[j + 1], slot, align, p);
    p->rounds[j] = p->n > p->first[j] ? p->v[p->n - 1].round + 1 : 0;
    if (p->rounds[j] > p->nrounds)
      p->nrounds = p->rounds[j];
  }
  if (rc == 0)
    p->first[k] = p->n;
  free(bound);
  if (rc != 0)
    aggio__nl_plan_free(p);
  return rc;
}

void aggio__nl_plan_free(struct aggio__nl_plan *p) {
  free(p->v);
  free(p->first);
  free(p->rounds);
  memset(p, 0, sizeof *p);
}

/* ---- a rank's copies ------------------------------------------------------------- */

struct move_list {
  struct aggio__nl_move *v;
  size_t n, cap;
};

static int push_move(struct move_list *l, struct aggio__nl_move m) {
  return aggio__vec_push(l, m);
}

static int cmp_move(const void *a, const void *b) {
  const struct aggio__nl_move *x = a, *y = b;
  if (x->round != y->round)
    return x->round < y->round ? -1 : 1;
  if (x->aggr != y->aggr)
    return x->aggr < y->aggr ? -1 : 1;
  return (x->pos > y->pos) - (x->pos < y->pos);
}

/* Walks my ranges against aggregator j's pieces (both sorted by offset). */
static int moves_of(const struct aggio__nl_plan *p, int j, const struct aggio__extents *mine,
                    struct move_list *l) {
  size_t q = p->first[j], end = p->first[j + 1], i = 0;
  int64_t spos = 0;
  while (i < mine->n && q < end) {
    const struct aggio__extent *x = &mine->v[i];
    const struct aggio__nl_piece *pc = &p->v[q];
    int64_t a = x->off > pc->off ? x->off : pc->off;
    int64_t xe = x->off + x->len, pe = pc->off + pc->len;
    int64_t b = xe < pe ? xe : pe;
    if (a < b &&
        push_move(l, (struct aggio__nl_move){pc->round, pc->pos + (a - pc->off),
                                             spos + (a - x->off), b - a, a, j}) != 0)
      return AGGIO_ERR_NOMEM;
    if (xe <= pe) {
      spos += x->len;
      i++;
    } else {
      q++;
    }
  }
  return 0;
}

int aggio__nl_moves(const struct aggio__nl_plan *p, const struct aggio__extents *mine,
                    struct aggio__nl_move **moves, size_t *n) {
  struct move_list l = {0};
  for (int j = 0; j < p->k; j++)
    if (moves_of(p, j, mine, &l) != 0) {
      free(l.v);
      *moves = NULL;
      *n = 0;
      return AGGIO_ERR_NOMEM;
    }
  if (l.n > 1)
    qsort(l.v, l.n, sizeof *l.v, cmp_move);
  *moves = l.v;
  *n = l.n;
  return 0;
}

/* ---- fragmentation ----------------------------------------------------------------- */

int aggio__nl_fragmented(const int64_t *spans, int nnodes, int node, int64_t runs, int k) {
  int64_t lo = spans[2 * node], hi = spans[2 * node + 1];
  if (hi <= lo || runs <= k)
    return 0;
  for (int i = 0; i < nnodes; i++) {
    int64_t a = spans[2 * i], b = spans[2 * i + 1];
    if (i != node && a < b && a < hi && lo < b)
      return 1;
  }
  return 0;
}
