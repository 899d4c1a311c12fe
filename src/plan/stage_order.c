/*
 * stage_order.c - the staged bytes to write again (stage_order.h).
 *
 * The pieces' ends cut the file into elementary ranges.  Two sweeps over
 * them: how many ranks cover each (each rank's pieces joined first, so a
 * rank that wrote a byte twice counts once), and which piece is the
 * newest over each (pieces taken newest first, each claiming the ranges
 * no newer piece claimed; a "next unclaimed" forest keeps that linear).
 */
#include <stdlib.h>
#include <string.h>

#include "stage_order.h"

static int64_t piece_end(const struct aggio__stage_piece *p) {
  return (int64_t)(p->r.offset + p->r.length);
}

static int64_t owner(int64_t x, int64_t lo, int64_t domain, int ndomains) {
  int64_t d = (x - lo) / domain;
  return d < 0 ? 0 : d >= ndomains ? ndomains - 1 : d;
}

int aggio__stage_split(const struct aggio__stage_piece *p, int64_t n, int64_t lo,
                       int64_t domain, int ndomains, struct aggio__stage_piece **out,
                       int64_t *nout, int64_t *owner_count) {
  memset(owner_count, 0, (size_t)ndomains * sizeof *owner_count);
  int64_t total = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t a = owner((int64_t)p[i].r.offset, lo, domain, ndomains);
    int64_t b = owner(piece_end(&p[i]) - 1, lo, domain, ndomains);
    for (int64_t d = a; d <= b; d++)
      owner_count[d]++;
    total += b - a + 1;
  }
  int64_t *at = malloc(((size_t)ndomains + 1) * sizeof *at);
  struct aggio__stage_piece *o = malloc((size_t)(total ? total : 1) * sizeof *o);
  if (!at || !o) {
    free(at);
    free(o);
    return -1;
  }
  at[0] = 0;
  for (int d = 0; d < ndomains; d++)
    at[d + 1] = at[d] + owner_count[d];
  for (int64_t i = 0; i < n; i++) {
    int64_t off = (int64_t)p[i].r.offset, end = piece_end(&p[i]);
    for (int64_t d = owner(off, lo, domain, ndomains); off < end; d++) {
      /* the last domain takes everything past its start */
      int64_t cut = d == ndomains - 1 ? end : lo + (d + 1) * domain;
      cut = cut < end ? cut : end;
      struct aggio__stage_piece *q = &o[at[d]++];
      *q = p[i];
      q->r.offset = (uint64_t)off;
      q->r.length = (uint64_t)(cut - off);
      off = cut;
    }
  }
  free(at);
  *out = o;
  *nout = total;
  return 0;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int by_rank_offset(const void *a, const void *b) {
  const struct aggio__stage_piece *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return x->r.offset < y->r.offset ? -1 : x->r.offset > y->r.offset;
}

static int newest_first(const void *a, const void *b) {
  const struct aggio__stage_piece *x = a, *y = b;
  return -aggio__stage_rec_older(&x->r, x->rank, &y->r, y->rank);
}

static int fix_order(const void *a, const void *b) {
  const struct aggio__stage_fix *x = a, *y = b;
  if (x->rank != y->rank)
    return x->rank < y->rank ? -1 : 1;
  return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The index of x among the k sorted boundaries b. */
static int64_t at_of(const int64_t *b, int64_t k, int64_t x) {
  int64_t lo = 0, hi = k - 1;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (b[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The first unclaimed range at or after i (path halving). */
static int64_t unclaimed(int64_t *next, int64_t i) {
  while (next[i] != i) {
    next[i] = next[next[i]];
    i = next[i];
  }
  return i;
}

/* cover[i]: the ranks whose pieces cover range i (q sorted by rank and
 * offset; each rank's overlapping or touching pieces joined first). */
static void count_cover(const struct aggio__stage_piece *q, int64_t n, const int64_t *b,
                        int64_t k, int64_t *cover) {
  memset(cover, 0, (size_t)k * sizeof *cover);
  for (int64_t i = 0; i < n;) {
    int64_t lo = (int64_t)q[i].r.offset, hi = piece_end(&q[i]);
    int64_t j = i + 1;
    for (; j < n && q[j].rank == q[i].rank && (int64_t)q[j].r.offset <= hi; j++)
      hi = piece_end(&q[j]) > hi ? piece_end(&q[j]) : hi;
    cover[at_of(b, k, lo)]++;
    cover[at_of(b, k, hi)]--;
    i = j;
  }
  for (int64_t i = 1; i < k; i++)
    cover[i] += cover[i - 1];
}

/* winner[i]: the rank of the newest piece over range i, -1 for none (q
 * sorted newest first). */
static void claim(const struct aggio__stage_piece *q, int64_t n, const int64_t *b,
                  int64_t k, int *winner, int64_t *next) {
  for (int64_t i = 0; i < k; i++) {
    winner[i] = -1;
    next[i] = i;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t end = at_of(b, k, piece_end(&q[i]));
    for (int64_t j = unclaimed(next, at_of(b, k, (int64_t)q[i].r.offset)); j < end;
         j = unclaimed(next, j + 1)) {
      winner[j] = q[i].rank;
      next[j] = j + 1;
    }
  }
}

static int collect(const int64_t *b, int64_t k, const int64_t *cover, const int *winner,
                   struct aggio__stage_fix **out, int64_t *nout) {
  int64_t m = 0;
  struct aggio__stage_fix *f = NULL;
  for (int64_t i = 0; i + 1 < k; i++) {
    if (cover[i] < 2)
      continue;
    if (m > 0 && f[m - 1].rank == winner[i] && f[m - 1].offset + f[m - 1].length == b[i]) {
      f[m - 1].length += b[i + 1] - b[i];
      continue;
    }
    if (!f && !(f = malloc((size_t)k * sizeof *f)))
      return -1;
    f[m++] = (struct aggio__stage_fix){b[i], b[i + 1] - b[i], winner[i]};
  }
  if (m > 1)
    qsort(f, (size_t)m, sizeof *f, fix_order);
  *out = f;
  *nout = m;
  return 0;
}

int aggio__stage_conflicts(const struct aggio__stage_piece *p, int64_t n,
                           struct aggio__stage_fix **out, int64_t *nout) {
  *out = NULL;
  *nout = 0;
  if (n < 2)
    return 0;
  size_t k2 = 2 * (size_t)n;
  struct aggio__stage_piece *q = malloc((size_t)n * sizeof *q);
  int64_t *b = malloc(k2 * sizeof *b), *cover = malloc(k2 * sizeof *cover);
  int64_t *next = malloc((k2 + 1) * sizeof *next);
  int *winner = malloc(k2 * sizeof *winner);
  int rc = -1;
  if (q && b && cover && next && winner) {
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
      b[k++] = (int64_t)p[i].r.offset;
      b[k++] = piece_end(&p[i]);
    }
    qsort(b, (size_t)k, sizeof *b, cmp_i64);
    int64_t u = 0;
    for (int64_t i = 0; i < k; i++)
      if (u == 0 || b[i] != b[u - 1])
        b[u++] = b[i];
    memcpy(q, p, (size_t)n * sizeof *q);
    qsort(q, (size_t)n, sizeof *q, by_rank_offset);
    count_cover(q, n, b, u, cover);
    qsort(q, (size_t)n, sizeof *q, newest_first);
    claim(q, n, b, u, winner, next);
    rc = collect(b, u, cover, winner, out, nout);
  }
  free(q);
  free(b);
  free(cover);
  free(next);
  free(winner);
  return rc;
}
