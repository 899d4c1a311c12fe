/*
 * test_patterns.c - seeded random access patterns, written through every
 * aggregation strategy and compared byte for byte with the same writes done
 * by the MPI library's own MPI_File_write_at_all, and with the layout that
 * MPI's datatype engine predicts (MPI_Pack of the memory type, MPI_Unpack
 * through the file type); then read back through aggio and compared with the
 * memory buffer.  Holes keep the file's earlier contents.
 *
 * aggio-test-ranks: 1 2 4 8
 *
 * Options (argv or environment): --seed N (AGGIO_TEST_SEED), --cases N
 * (AGGIO_TEST_CASES), --case K to run only case K (AGGIO_TEST_CASE),
 * --max-bytes N per rank (AGGIO_TEST_MAX_BYTES), -v (AGGIO_TEST_VERBOSE=1).
 * A failure prints the seed, the case and every rank's view and memory type.
 *
 * The expected file comes from MPI's datatype engine, which defines what the
 * typemaps mean; the MPI-IO file must agree with it except in holes past the
 * old end of file, where ROMIO and OMPIO write back whatever their
 * read-modify-write buffer held.  aggio must leave zeros there, as POSIX
 * reads never-written bytes (AGGIO_TEST_LAX_EOF=1 relaxes that, to check the
 * test itself against an MPI-IO stand-in).  A reference that disagrees with
 * the engine elsewhere is reported as a warning (a failure with
 * AGGIO_TEST_STRICT_REFERENCE=1), and aggio is then judged by the engine.
 * AGGIO_TEST_REFERENCE=0 leaves the MPI-IO reference out altogether.
 */
#include <aggio.h>

#include "harness.h"
#include "rng.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define DESC_LEN 600
/* Slack around memory buffers: reads must not touch it, and buggy MPI-IO
 * implementations (ROMIO in MPICH 4.0 with darray memory types) read a few
 * bytes past the span without crashing the test. */
#define PAD 4096

/* ---- deterministic random numbers (rng.h) --------------------------------- */

static rng_t rng_make(uint64_t seed, uint64_t a, uint64_t b) {
  rng_t r = {seed ^ 0x5DEECE66Dull};
  r.s ^= rng_next(&r) + a * 0x100000001B3ull;
  r.s ^= rng_next(&r) + b * 0xC2B2AE3D27D4EB4Full;
  rng_next(&r);
  return r;
}

static int rng_int(rng_t *r, int lo, int hi) { return (int)rng_range(r, lo, hi); }
static int rng_coin(rng_t *r, int one_in) { return rng_int(r, 0, one_in - 1) == 0; }

/* ---- descriptions for failure reports ------------------------------------- */

typedef struct {
  char s[DESC_LEN];
  size_t len;
} desc_t;

static void dadd(desc_t *d, const char *fmt, ...) {
  va_list ap;
  if (d->len + 1 >= sizeof d->s)
    return;
  va_start(ap, fmt);
  int n = vsnprintf(d->s + d->len, sizeof d->s - d->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    d->len += (size_t)n;
  if (d->len >= sizeof d->s)
    d->len = sizeof d->s - 1;
}

/* ---- datatype helpers ----------------------------------------------------- */

static int is_named(MPI_Datatype t) {
  int ni, na, nd, comb;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
  return comb == MPI_COMBINER_NAMED;
}

static void tfree(MPI_Datatype *t) {
  if (*t != MPI_DATATYPE_NULL && !is_named(*t))
    MPI_Type_free(t);
  *t = MPI_DATATYPE_NULL;
}

/* B itself when it is a named type, else a dup of it: generators hand out
 * types their callers free, and a derived etype must outlive them. */
static MPI_Datatype same_type(MPI_Datatype B) {
  MPI_Datatype t;
  if (is_named(B))
    return B;
  MPI_Type_dup(B, &t);
  return t;
}

/* Resizes t (consumed) to [lb, lb + ext). */
static MPI_Datatype resize(MPI_Datatype t, MPI_Aint lb, MPI_Aint ext) {
  MPI_Datatype r;
  MPI_Type_create_resized(t, lb, ext, &r);
  tfree(&t);
  return r;
}

/* The typemap of t (consumed) moved up by shift bytes, as a type with lb 0
 * and extent ext: through hindexed, hindexed_block or struct. */
static MPI_Datatype shift_wrap(MPI_Datatype t, MPI_Aint shift, MPI_Aint ext,
                               rng_t *l, desc_t *d) {
  MPI_Datatype w;
  int one = 1;
  switch (rng_int(l, 0, 2)) {
  case 0:
    MPI_Type_create_hindexed(1, &one, &shift, t, &w);
    dadd(d, "@hindexed+%ld", (long)shift);
    break;
  case 1:
    MPI_Type_create_hindexed_block(1, 1, &shift, t, &w);
    dadd(d, "@hindexed_block+%ld", (long)shift);
    break;
  default:
    MPI_Type_create_struct(1, &one, &shift, &t, &w);
    dadd(d, "@struct+%ld", (long)shift);
    break;
  }
  tfree(&t);
  return resize(w, 0, ext);
}

/* Splits n into p positive parts at random; n >= p. */
static void split_parts(rng_t *g, int n, int p, int *parts) {
  for (int i = 0; i < p; i++)
    parts[i] = 1;
  for (int k = n - p; k > 0; k--)
    parts[rng_int(g, 0, p - 1)]++;
}

/* Factors np into nd grid dimensions at random (prime factors scattered). */
static void random_grid(rng_t *g, int np, int nd, int *psz) {
  for (int i = 0; i < nd; i++)
    psz[i] = 1;
  for (int f = 2; np > 1; f++)
    while (np % f == 0) {
      psz[rng_int(g, 0, nd - 1)] *= f;
      np /= f;
    }
}

/* ---- file views ----------------------------------------------------------- */
/*
 * Every generator runs on every rank with the same global stream g (so the
 * global layout is the same everywhere) and a per-rank stream l (so ranks may
 * describe their share with different type constructors).  Each returns this
 * rank's type with lb 0, extent *E (the same on every rank), and typemap
 * inside [0, *E), monotonically non-decreasing, disjoint from other ranks'.
 */

/* A cell: one or more etypes, possibly with holes nobody writes. */
static MPI_Datatype make_cell(rng_t *g, MPI_Datatype B, int es, MPI_Aint *ce,
                              desc_t *d) {
  MPI_Datatype t, c;
  switch (rng_int(g, 0, 8)) {
  case 0:
  case 1:
  case 2:
    *ce = es;
    dadd(d, "etype");
    return same_type(B);
  case 8: { /* big pieces: aligned, direct-I/O-sized runs */
    int k = rng_int(g, 64, 2048) * (rng_coin(g, 2) ? 8 / es : 1);
    MPI_Type_contiguous(k, B, &t);
    *ce = (MPI_Aint)k * es;
    dadd(d, "contig(%d)", k);
    return t;
  }
  case 3: {
    int k = rng_int(g, 2, 4);
    MPI_Type_contiguous(k, B, &t);
    *ce = (MPI_Aint)k * es;
    dadd(d, "contig(%d)", k);
    return t;
  }
  case 4:
    MPI_Type_vector(2, 1, 2, B, &t);
    *ce = 4 * es;
    dadd(d, "resized(vector(2,1,2),ext=4)");
    return resize(t, 0, *ce);
  case 5: {
    int bl[2] = {2, 1};
    MPI_Aint dp[2] = {0, 3 * es};
    MPI_Datatype ty[2] = {B, B};
    MPI_Type_create_struct(2, bl, dp, ty, &t);
    *ce = 5 * es;
    dadd(d, "resized(struct{2@0,1@3},ext=5)");
    return resize(t, 0, *ce);
  }
  case 6: {
    int bl[2] = {1, 1};
    MPI_Aint dp[2] = {0, 3 * es};
    MPI_Type_contiguous(2, B, &c);
    MPI_Type_create_hindexed(2, bl, dp, c, &t);
    tfree(&c);
    *ce = 6 * es;
    dadd(d, "resized(hindexed{0,3}(contig(2)),ext=6)");
    return resize(t, 0, *ce);
  }
  default:
    MPI_Type_vector(2, 2, 3, B, &c);
    MPI_Type_dup(c, &t);
    tfree(&c);
    *ce = 5 * es;
    dadd(d, "dup(vector(2,2,3))");
    return t;
  }
}

enum { ROW_VECTOR, ROW_HVECTOR, ROW_INDEXED, ROW_HINDEXED, ROW_IBLOCK,
       ROW_HIBLOCK, ROW_STRUCT, ROW_SUB_C, ROW_SUB_F, ROW_CONTIG, ROW_NKINDS };
static const char *row_kind_name[] = {"vector", "hvector", "indexed", "hindexed",
                                      "indexed_block", "hindexed_block", "struct",
                                      "subarray(C)", "subarray(F)", "contiguous"};

/* n rows of W cells; in every row, rank r owns columns [c, c + w), ranks in a
 * random order with random unowned gaps.  *shift: when allow_shift, the rank's
 * offset may be returned for the view's displacement instead of being built
 * into the type. */
static MPI_Datatype layout_rows(rng_t *g, rng_t *l, MPI_Datatype B, int es, int np,
                                int rank, int allow_shift, MPI_Aint *E,
                                MPI_Aint *shift, desc_t *d) {
  MPI_Aint ce;
  int n = rng_int(g, 1, 6), W = 0, c = 0, w = 0;
  int *perm = malloc(sizeof(int) * (size_t)np);
  for (int i = 0; i < np; i++)
    perm[i] = i;
  for (int i = np - 1; i > 0; i--) {
    int j = rng_int(g, 0, i), x = perm[i];
    perm[i] = perm[j];
    perm[j] = x;
  }
  for (int i = 0; i < np; i++) {
    int gap = rng_coin(g, 2) ? 0 : rng_int(g, 1, 3);
    int wi = rng_int(g, 1, 8);
    W += gap;
    if (perm[i] == rank) {
      c = W;
      w = wi;
    }
    W += wi;
  }
  W += rng_coin(g, 2) ? 0 : rng_int(g, 1, 3);
  free(perm);

  dadd(d, "rows(n=%d,W=%d,c=%d,w=%d,cell=", n, W, c, w);
  MPI_Datatype C = make_cell(g, B, es, &ce, d);
  int kind = rng_int(l, 0, ROW_NKINDS - 1);
  if (kind == ROW_CONTIG && n != 1)
    kind = ROW_VECTOR;
  dadd(d, ",%s", row_kind_name[kind]);
  *E = (MPI_Aint)n * W * ce;
  *shift = 0;

  MPI_Datatype t = MPI_DATATYPE_NULL;
  int needs_shift = 0;
  /* Indexed kinds: each row's piece in 1 or 2 blocks. */
  int nb = 0, *len = malloc(sizeof(int) * 2 * (size_t)n);
  int *dsp = malloc(sizeof(int) * 2 * (size_t)n);
  MPI_Aint *bdsp = malloc(sizeof(MPI_Aint) * 2 * (size_t)n);
  MPI_Datatype *tys = malloc(sizeof(MPI_Datatype) * 2 * (size_t)n);
  for (int j = 0; j < n; j++) {
    int a = (w >= 2 && rng_coin(l, 2)) ? rng_int(l, 1, w - 1) : w;
    len[nb] = a;
    dsp[nb] = j * W + c;
    nb++;
    if (a < w) {
      len[nb] = w - a;
      dsp[nb] = j * W + c + a;
      nb++;
    }
  }
  for (int i = 0; i < nb; i++)
    bdsp[i] = (MPI_Aint)dsp[i] * ce;

  switch (kind) {
  case ROW_VECTOR:
    MPI_Type_vector(n, w, W, C, &t);
    needs_shift = 1;
    break;
  case ROW_HVECTOR:
    MPI_Type_create_hvector(n, w, (MPI_Aint)W * ce, C, &t);
    needs_shift = 1;
    break;
  case ROW_CONTIG:
    MPI_Type_contiguous(w, C, &t);
    needs_shift = 1;
    break;
  case ROW_INDEXED:
    MPI_Type_indexed(nb, len, dsp, C, &t);
    break;
  case ROW_HINDEXED:
    MPI_Type_create_hindexed(nb, len, bdsp, C, &t);
    break;
  case ROW_IBLOCK:
  case ROW_HIBLOCK:
    for (int j = 0; j < n; j++) {
      dsp[j] = j * W + c;
      bdsp[j] = (MPI_Aint)dsp[j] * ce;
    }
    if (kind == ROW_IBLOCK)
      MPI_Type_create_indexed_block(n, w, dsp, C, &t);
    else
      MPI_Type_create_hindexed_block(n, w, bdsp, C, &t);
    break;
  case ROW_STRUCT:
    for (int i = 0; i < nb; i++) {
      if (rng_coin(l, 2)) {
        MPI_Type_contiguous(len[i], C, &tys[i]);
        len[i] = 1;
      } else {
        tys[i] = C;
      }
    }
    MPI_Type_create_struct(nb, len, bdsp, tys, &t);
    for (int i = 0; i < nb; i++)
      if (tys[i] != C)
        tfree(&tys[i]);
    break;
  case ROW_SUB_C: {
    int sz[2] = {n, W}, sub[2] = {n, w}, st[2] = {0, c};
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_C, C, &t);
    break;
  }
  default: {
    int sz[2] = {W, n}, sub[2] = {w, n}, st[2] = {c, 0};
    MPI_Type_create_subarray(2, sz, sub, st, MPI_ORDER_FORTRAN, C, &t);
    break;
  }
  }
  free(len);
  free(dsp);
  free(bdsp);
  free(tys);
  tfree(&C);
  if (needs_shift && c > 0) {
    if (allow_shift && rng_coin(l, 2)) {
      *shift = (MPI_Aint)c * ce;
      dadd(d, ",disp+%ld", (long)*shift);
      t = resize(t, 0, *E);
    } else {
      t = shift_wrap(t, (MPI_Aint)c * ce, *E, l, d);
    }
  } else {
    t = resize(t, 0, *E);
  }
  dadd(d, ")");
  return t;
}

/* An N-d array of cells cut into one box per rank (random cut points). */
static MPI_Datatype layout_subarray(rng_t *g, MPI_Datatype B, int es, int np,
                                    int rank, MPI_Aint *E, desc_t *d) {
  int nd = rng_int(g, 2, 3), psz[3], sz[3], sub[3], st[3], coord[3];
  MPI_Aint ce;
  random_grid(g, np, nd, psz);
  int cells = 1;
  for (int i = 0; i < nd; i++) {
    sz[i] = psz[i] + rng_int(g, 0, nd == 2 ? 12 : 4);
    cells *= sz[i];
  }
  for (int i = nd - 1, r = rank; i >= 0; i--) {
    coord[i] = r % psz[i];
    r /= psz[i];
  }
  for (int i = 0; i < nd; i++) {
    int parts[64];
    split_parts(g, sz[i], psz[i], parts);
    st[i] = 0;
    for (int k = 0; k < coord[i]; k++)
      st[i] += parts[k];
    sub[i] = parts[coord[i]];
  }
  int order = rng_coin(g, 2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
  dadd(d, "subarray(%s,", order == MPI_ORDER_C ? "C" : "F");
  for (int i = 0; i < nd; i++)
    dadd(d, "%s%d[%d+%d]", i ? "x" : "", sz[i], st[i], sub[i]);
  dadd(d, ",cell=");
  MPI_Datatype C = make_cell(g, B, es, &ce, d), t;
  dadd(d, ")");
  MPI_Type_create_subarray(nd, sz, sub, st, order, C, &t);
  tfree(&C);
  *E = (MPI_Aint)cells * ce;
  (void)E;
  return t;
}

/* MPI_Type_create_darray over the ranks, block / cyclic / none per dimension,
 * sized so that every rank owns something. */
static MPI_Datatype layout_darray(rng_t *g, MPI_Datatype B, int es, int np,
                                  int rank, MPI_Aint *E, desc_t *d) {
  int nd = rng_int(g, 1, 3), psz[3], gs[3], dist[3], darg[3];
  MPI_Aint ce;
  random_grid(g, np, nd, psz);
  int cells = 1;
  for (int i = 0; i < nd; i++) {
    int p = psz[i], pick = rng_int(g, 0, p == 1 ? 2 : 1);
    int big = nd == 1 ? 40 : nd == 2 ? 8 : 3;
    if (pick == 2) {
      dist[i] = MPI_DISTRIBUTE_NONE;
      darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
      gs[i] = rng_int(g, 1, big);
    } else if (pick == 1) {
      int k = rng_int(g, 1, 3);
      dist[i] = MPI_DISTRIBUTE_CYCLIC;
      darg[i] = (k == 1 && rng_coin(g, 2)) ? MPI_DISTRIBUTE_DFLT_DARG : k;
      gs[i] = rng_int(g, (p - 1) * k + 1, p * k * 2 + big / 2);
    } else {
      dist[i] = MPI_DISTRIBUTE_BLOCK;
      gs[i] = rng_int(g, p, p * (big / 2 + 1));
      int b = (gs[i] + p - 1) / p;
      if ((p - 1) * b >= gs[i])
        gs[i] = p * b;
      darg[i] = MPI_DISTRIBUTE_DFLT_DARG;
      if (rng_coin(g, 2) && (p - 1) * (b + 1) < gs[i])
        darg[i] = b + 1;
    }
    cells *= gs[i];
  }
  int order = rng_coin(g, 2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
  static const char *dn[] = {"block", "cyclic", "none"};
  dadd(d, "darray(%s,", order == MPI_ORDER_C ? "C" : "F");
  for (int i = 0; i < nd; i++)
    dadd(d, "%s%d/%d:%s(%d)", i ? "x" : "", gs[i], psz[i],
         dn[dist[i] == MPI_DISTRIBUTE_BLOCK ? 0 : dist[i] == MPI_DISTRIBUTE_CYCLIC ? 1 : 2],
         darg[i]);
  dadd(d, ",cell=");
  MPI_Datatype C = make_cell(g, B, es, &ce, d), t;
  dadd(d, ")");
  MPI_Type_create_darray(np, rank, nd, gs, dist, darg, psz, order, C, &t);
  tfree(&C);
  *E = (MPI_Aint)cells * ce;
  return t;
}

static MPI_Datatype layout_any(rng_t *g, rng_t *l, MPI_Datatype B, int es, int np,
                               int rank, int depth, MPI_Aint *E, MPI_Aint *shift,
                               desc_t *d) {
  int kind = rng_int(g, 0, depth > 0 ? 7 : 9);
  *shift = 0;
  if (kind <= 3)
    return layout_rows(g, l, B, es, np, rank, depth == 0, E, shift, d);
  if (kind <= 5)
    return layout_subarray(g, B, es, np, rank, E, d);
  if (kind <= 7)
    return layout_darray(g, B, es, np, rank, E, d);
  /* A struct of two layouts one after the other (with a gap). */
  MPI_Aint E1, E2, s;
  dadd(d, "struct{");
  MPI_Datatype t1 = layout_any(g, l, B, es, np, rank, depth + 1, &E1, &s, d);
  dadd(d, ", ");
  MPI_Datatype t2 = layout_any(g, l, B, es, np, rank, depth + 1, &E2, &s, d);
  MPI_Aint gap = (MPI_Aint)rng_int(g, 0, 3) * es, tail = (MPI_Aint)rng_int(g, 0, 2) * es;
  dadd(d, "} gap=%ld", (long)gap);
  int bl[2] = {1, 1};
  MPI_Aint dp[2] = {0, E1 + gap};
  MPI_Datatype ty[2] = {t1, t2}, t;
  MPI_Type_create_struct(2, bl, dp, ty, &t);
  tfree(&t1);
  tfree(&t2);
  *E = E1 + gap + E2 + tail;
  return resize(t, 0, *E);
}

/* ---- memory types ----------------------------------------------------------- */
/* Any constructor, nested up to depth 2; non-overlapping (reads need that),
 * not necessarily monotonic. */

static void shuffle_blocks(rng_t *l, int n, int *len, MPI_Aint *dsp) {
  for (int i = n - 1; i > 0; i--) {
    int j = rng_int(l, 0, i), x = len[i];
    MPI_Aint y = dsp[i];
    len[i] = len[j];
    len[j] = x;
    dsp[i] = dsp[j];
    dsp[j] = y;
  }
}

static MPI_Datatype make_mem(rng_t *l, MPI_Datatype B, int es, int depth, desc_t *d) {
  int kind = depth >= 2 ? 0 : rng_int(l, 0, 13);
  MPI_Datatype in, t;
  MPI_Aint lb, ext;
  if (kind == 0) {
    dadd(d, "etype");
    return same_type(B);
  }
  if (kind == 1 || kind == 2) { /* plain runs of etypes are common in practice */
    int k = rng_int(l, 1, 64);
    MPI_Type_contiguous(k, B, &t);
    dadd(d, "contig(%d)", k);
    return t;
  }
  switch (kind) {
  case 3: {
    int n = rng_int(l, 1, 5), bl = rng_int(l, 1, 4), st = bl + rng_int(l, 0, 3);
    dadd(d, "vector(%d,%d,%d,", n, bl, st);
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_vector(n, bl, st, in, &t);
    break;
  }
  case 4: {
    int n = rng_int(l, 1, 5), bl = rng_int(l, 1, 3);
    dadd(d, "hvector(%d,%d,", n, bl);
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_get_extent(in, &lb, &ext);
    MPI_Aint st = bl * ext + rng_int(l, 0, 9);
    dadd(d, ",stride=%ld", (long)st);
    MPI_Type_create_hvector(n, bl, st, in, &t);
    break;
  }
  case 5:
  case 6: { /* indexed / hindexed, blocks in random order */
    int n = rng_int(l, 1, 5), len[5], idsp[5];
    MPI_Aint dsp[5], pos = rng_int(l, 0, 3);
    dadd(d, "%s(", kind == 5 ? "indexed" : "hindexed");
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_get_extent(in, &lb, &ext);
    for (int i = 0; i < n; i++) {
      len[i] = rng_int(l, 1, 4);
      dsp[i] = pos;
      pos += len[i] + rng_int(l, 0, 3);
    }
    int shuffled = rng_coin(l, 3);
    if (shuffled)
      shuffle_blocks(l, n, len, dsp);
    for (int i = 0; i < n; i++) {
      dadd(d, "%s%d@%ld", i ? "," : ";", len[i], (long)dsp[i]);
      idsp[i] = (int)dsp[i];
      /* hindexed: one odd byte more per element of displacement, which
       * keeps the blocks disjoint and misaligns them */
      dsp[i] = (MPI_Aint)idsp[i] * (ext + (kind == 6));
    }
    if (kind == 5)
      MPI_Type_indexed(n, len, idsp, in, &t);
    else
      MPI_Type_create_hindexed(n, len, dsp, in, &t);
    if (shuffled)
      dadd(d, ",shuffled");
    break;
  }
  case 7:
  case 8: { /* indexed_block / hindexed_block */
    int n = rng_int(l, 1, 5), bl = rng_int(l, 1, 3), idsp[5];
    MPI_Aint dsp[5];
    dadd(d, "%s(%d,%d,", kind == 7 ? "indexed_block" : "hindexed_block", n, bl);
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_get_extent(in, &lb, &ext);
    int pos = 0;
    for (int i = 0; i < n; i++) {
      pos += rng_int(l, 0, 2);
      idsp[i] = pos;
      dsp[i] = (MPI_Aint)pos * ext + rng_int(l, 0, 1) * (i ? 1 : 0);
      pos += bl + 1; /* room for the nudge */
    }
    if (kind == 7)
      MPI_Type_create_indexed_block(n, bl, idsp, in, &t);
    else
      MPI_Type_create_hindexed_block(n, bl, dsp, in, &t);
    break;
  }
  case 9: { /* struct of 2..3 different members */
    int n = rng_int(l, 2, 3), bl[3];
    MPI_Aint dsp[3], pos = 0;
    MPI_Datatype ty[3];
    dadd(d, "struct{");
    for (int i = 0; i < n; i++) {
      if (i)
        dadd(d, ";");
      ty[i] = make_mem(l, B, es, depth + 1, d);
      MPI_Type_get_extent(ty[i], &lb, &ext);
      MPI_Aint tlb, text;
      MPI_Type_get_true_extent(ty[i], &tlb, &text);
      bl[i] = rng_int(l, 1, 3);
      pos += rng_int(l, 0, 5);
      dsp[i] = pos - tlb; /* member's data starts at pos */
      dadd(d, "x%d@%ld", bl[i], (long)dsp[i]);
      pos += (bl[i] - 1) * ext + text;
    }
    if (rng_coin(l, 3)) { /* members out of address order */
      int bl0 = bl[0];
      MPI_Aint d0 = dsp[0];
      MPI_Datatype t0 = ty[0];
      bl[0] = bl[n - 1], dsp[0] = dsp[n - 1], ty[0] = ty[n - 1];
      bl[n - 1] = bl0, dsp[n - 1] = d0, ty[n - 1] = t0;
      dadd(d, ",swapped");
    }
    dadd(d, "}");
    MPI_Type_create_struct(n, bl, dsp, ty, &t);
    for (int i = 0; i < n; i++)
      tfree(&ty[i]);
    return t;
  }
  case 10: { /* subarray */
    int nd = rng_int(l, 2, 3), sz[3], sub[3], st[3];
    int order = rng_coin(l, 2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    dadd(d, "subarray(%s,", order == MPI_ORDER_C ? "C" : "F");
    for (int i = 0; i < nd; i++) {
      sz[i] = rng_int(l, 1, 5);
      sub[i] = rng_int(l, 1, sz[i]);
      st[i] = rng_int(l, 0, sz[i] - sub[i]);
      dadd(d, "%s%d[%d+%d]", i ? "x" : "", sz[i], st[i], sub[i]);
    }
    dadd(d, ",");
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_create_subarray(nd, sz, sub, st, order, in, &t);
    break;
  }
  case 11: { /* darray: one piece of a block-cyclic distribution */
    int nd = rng_int(l, 1, 2), gs[2], dist[2], darg[2], psz[2], np = 1;
    for (int i = 0; i < nd; i++) {
      psz[i] = rng_int(l, 1, 3);
      np *= psz[i];
      dist[i] = rng_coin(l, 2) ? MPI_DISTRIBUTE_CYCLIC : MPI_DISTRIBUTE_BLOCK;
      darg[i] = dist[i] == MPI_DISTRIBUTE_CYCLIC ? rng_int(l, 1, 2) : MPI_DISTRIBUTE_DFLT_DARG;
      gs[i] = rng_int(l, psz[i] * 2, psz[i] * 4);
    }
    int r = rng_int(l, 0, np - 1);
    int order = rng_coin(l, 2) ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
    dadd(d, "darray(r=%d/%d,%s,", r, np, order == MPI_ORDER_C ? "C" : "F");
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_create_darray(np, r, nd, gs, dist, darg, psz, order, in, &t);
    int sz;
    MPI_Type_size(t, &sz);
    if (sz == 0) {
      MPI_Type_free(&t);
      MPI_Type_contiguous(2, in, &t);
      dadd(d, "->contig(2)");
    }
    break;
  }
  case 12: { /* resized: larger extent, lb moved down */
    dadd(d, "resized(");
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_get_extent(in, &lb, &ext);
    MPI_Aint a = rng_int(l, 0, 16), b = rng_int(l, 1, 24);
    dadd(d, ",lb-%ld,ext+%ld", (long)a, (long)(a + b));
    MPI_Type_create_resized(in, lb - a, ext + a + b, &t);
    break;
  }
  default: {
    dadd(d, "dup(");
    in = make_mem(l, B, es, depth + 1, d);
    MPI_Type_dup(in, &t);
    break;
  }
  }
  dadd(d, ")");
  tfree(&in);
  return t;
}

/* ---- one case --------------------------------------------------------------- */

struct opts {
  uint64_t seed;
  int ncases, only_case, verbose;
  int lax_eof, strict_ref;
  int reference; /* 0: no MPI-IO reference file (AGGIO_TEST_REFERENCE=0) */
  long max_bytes;
};

struct rank_case {
  MPI_Datatype etype, ftype, mtype;
  int es, count;
  MPI_Aint fext, mext, mtlb, mtext;
  MPI_Count fsize, msize;
  MPI_Offset disp, offset; /* offset in etypes; disp relative to base */
  MPI_Offset base;         /* where the case's file region starts (same on all ranks) */
  int64_t nbytes;
  unsigned char *alloc;    /* mem with PAD bytes on either side */
  unsigned char *mem;      /* the span the memory type touches */
  unsigned char *buf;      /* buffer pointer to pass (mem - true_lb) */
  unsigned char *cover;    /* 1 where the memory type touches mem */
  size_t span;
  desc_t fd, md;
};

struct config {
  const char *strategy;
  char hints[16][2][64];
  int nhints;
  int wmode, rmode, split, ignore_status;
  int reuse; /* read back through the handle that wrote */
  desc_t desc;
};

enum { M_AT_ALL, M_SEEK_ALL, M_AT, M_SEEK, M_NMODES };
static const char *mode_name[] = {"at_all", "seek+all", "at(indep)", "seek+indep"};

struct ctx {
  struct opts o;
  int rank, np;
  char pathA[512], pathB[512];
  int failed_cases;
};

static unsigned char bg_byte(uint64_t pos, uint64_t salt) {
  uint64_t z = (pos + 1) * 0x9E3779B97F4A7C15ull ^ salt;
  z ^= z >> 29;
  return (unsigned char)(z * 0xBF58476D1CE4E5B9ull >> 56);
}

/* Rank 0: writes the background (bg bytes at base, a hole before it) to
 * path, or removes the file. */
static int put_background(const char *path, int64_t base, int64_t bg, uint64_t salt,
                          int remove_it) {
  if (remove_it) {
    unlink(path);
    return 0;
  }
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return -1;
  unsigned char chunk[65536];
  for (int64_t pos = 0; pos < bg;) {
    int64_t n = bg - pos < (int64_t)sizeof chunk ? bg - pos : (int64_t)sizeof chunk;
    for (int64_t i = 0; i < n; i++)
      chunk[i] = bg_byte((uint64_t)(pos + i), salt);
    if (pwrite(fd, chunk, (size_t)n, base + pos) != n) {
      close(fd);
      return -1;
    }
    pos += n;
  }
  return close(fd);
}

/* Reads path from base on; *size: the file's size less base (0 for an
 * empty file).  *nonzero_before: bytes not 0 in the 64 KiB before base,
 * which must be a hole. */
static unsigned char *slurp(const char *path, int64_t base, int64_t *size,
                            int64_t *nonzero_before) {
  struct stat sb;
  int fd = open(path, O_RDONLY);
  *size = -1;
  *nonzero_before = 0;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  int64_t len = sb.st_size == 0 ? 0 : sb.st_size - base, got = 0;
  unsigned char *p = malloc(len > 0 ? (size_t)len + 1 : 1);
  while (got < len) {
    ssize_t n = pread(fd, p + got, (size_t)(len - got), base + got);
    if (n <= 0)
      break;
    got += n;
  }
  if (base > 0 && sb.st_size > 0) {
    int64_t from = base > 65536 ? base - 65536 : 0;
    unsigned char *q = calloc((size_t)(base - from), 1);
    if (pread(fd, q, (size_t)(base - from), from) == base - from)
      for (int64_t i = 0; i < base - from; i++)
        *nonzero_before += q[i] != 0;
    free(q);
  }
  close(fd);
  *size = len < 0 ? len : got;
  return p;
}

/* Builds this rank's side of case k. Returns 0, or -1 if the generator made
 * something unusable (reported as a failure). */
static int make_case(struct ctx *cx, int k, struct rank_case *rc) {
  rng_t g = rng_make(cx->o.seed, (uint64_t)k, 0xFFFFFFFFu);
  rng_t l = rng_make(cx->o.seed, (uint64_t)k, (uint64_t)cx->rank);
  /* MPI_BYTE half the time; a derived etype (two ints) now and then */
  static const char *ename[] = {"MPI_BYTE", "MPI_INT", "MPI_DOUBLE", "contig(2,MPI_INT)"};
  static const int esize[] = {1, 4, 8, 8};
  int ei = rng_int(&g, 0, 6);
  ei = ei <= 2 ? 0 : ei - 3;
  rc->es = esize[ei];
  if (ei == 3) {
    MPI_Type_contiguous(2, MPI_INT, &rc->etype);
    MPI_Type_commit(&rc->etype);
  } else {
    rc->etype = ei == 0 ? MPI_BYTE : ei == 1 ? MPI_INT : MPI_DOUBLE;
  }
  memset(&rc->fd, 0, sizeof rc->fd);
  memset(&rc->md, 0, sizeof rc->md);
  dadd(&rc->fd, "etype=%s ", ename[ei]);

  MPI_Aint E, shift;
  rc->ftype = layout_any(&g, &l, rc->etype, rc->es, cx->np, cx->rank, 0, &E, &shift, &rc->fd);
  if (rng_coin(&g, 5)) {
    MPI_Aint more = (MPI_Aint)rng_int(&g, 1, 64) * rc->es;
    dadd(&rc->fd, " resized(ext+%ld)", (long)more);
    E += more;
    rc->ftype = resize(rc->ftype, 0, E);
  }
  if (rng_coin(&l, 6)) {
    MPI_Datatype t;
    MPI_Type_dup(rc->ftype, &t);
    tfree(&rc->ftype);
    rc->ftype = t;
    dadd(&rc->fd, " dup");
  }
  MPI_Type_commit(&rc->ftype);
  MPI_Aint lb, tlb, text;
  MPI_Type_get_extent(rc->ftype, &lb, &rc->fext);
  MPI_Type_get_true_extent(rc->ftype, &tlb, &text);
  MPI_Type_size_x(rc->ftype, &rc->fsize);
  int bad = lb != 0 || rc->fext != E || tlb < 0 || tlb + text > E || rc->fsize <= 0 ||
            rc->fsize % rc->es != 0;
  CHECK(!bad, "seed %" PRIu64 " case %d rank %d: generator made a bad file type "
        "(lb %ld ext %ld/%ld true [%ld,+%ld) size %lld): %s", cx->o.seed, k, cx->rank,
        (long)lb, (long)rc->fext, (long)E, (long)tlb, (long)text, (long long)rc->fsize,
        rc->fd.s);
  rc->disp = rng_range(&g, 0, 3) == 0 ? 0 : rng_range(&g, 1, 5000);
  if (rc->es > 1 && rng_coin(&g, 2))
    rc->disp -= rc->disp % rc->es;
  rc->disp += shift;
  /* now and then, far out: across the 4 GiB line, in a sparse file */
  rc->base = rng_coin(&g, 6) ? ((MPI_Offset)1 << 32) - rng_range(&g, 0, 16384) : 0;
  if (rc->base)
    dadd(&rc->fd, " base=%lld", (long long)rc->base);

  /* memory type and count */
  rc->mtype = make_mem(&l, rc->etype, rc->es, 0, &rc->md);
  if (!is_named(rc->mtype))
    MPI_Type_commit(&rc->mtype);
  MPI_Type_get_extent(rc->mtype, &lb, &rc->mext);
  MPI_Type_get_true_extent(rc->mtype, &rc->mtlb, &rc->mtext);
  MPI_Type_size_x(rc->mtype, &rc->msize);
  int64_t target = 0;
  if (!rng_coin(&l, 6)) { /* some ranks have nothing to write */
    int bits = rng_int(&l, 0, 62);
    int64_t maxb = cx->o.max_bytes;
    int lg = 0;
    while ((1LL << lg) < maxb)
      lg++;
    target = rng_range(&l, 1, (int64_t)1 << (bits % (lg + 1)));
    if (target > maxb)
      target = maxb;
  }
  rc->count = rc->msize > 0 ? (int)((target + rc->msize - 1) / rc->msize) : 0;
  while (rc->count > 1 && (int64_t)(rc->count - 1) * rc->mext + rc->mtext > 16 << 20)
    rc->count /= 2;
  if (rc->count == 0 && target > 0)
    rc->count = 1;
  rc->nbytes = (int64_t)rc->count * rc->msize;
  rc->offset = rng_coin(&l, 3) ? 0 : rng_range(&l, 0, 2 * (rc->fsize / rc->es) + 3);
  dadd(&rc->md, " count=%d (%lld bytes) offset=%lld disp=%lld", rc->count,
       (long long)rc->nbytes, (long long)rc->offset, (long long)(rc->base + rc->disp));

  /* the memory buffer: random bytes everywhere, gaps included */
  rc->span = rc->count ? (size_t)((rc->count - 1) * rc->mext + rc->mtext) : 1;
  rc->alloc = malloc(rc->span + 2 * PAD);
  rc->mem = rc->alloc + PAD;
  rc->cover = calloc(rc->span, 1);
  for (size_t i = 0; i < rc->span; i++)
    rc->mem[i] = (unsigned char)rng_next(&l);
  rc->buf = rc->mem - rc->mtlb;
  if (rc->count) { /* which bytes the memory type covers */
    unsigned char *ones = malloc((size_t)rc->nbytes);
    memset(ones, 1, (size_t)rc->nbytes);
    int pos = 0;
    MPI_Unpack(ones, (int)rc->nbytes, &pos, rc->cover - rc->mtlb, rc->count, rc->mtype,
               MPI_COMM_SELF);
    free(ones);
  }
  return bad ? -1 : 0;
}

static void free_case(struct rank_case *rc) {
  tfree(&rc->etype);
  tfree(&rc->ftype);
  tfree(&rc->mtype);
  free(rc->alloc);
  free(rc->cover);
}

/* What the file must hold after the case's writes, on rank 0: MPI's datatype
 * engine packs each rank's memory type and unpacks the stream through its
 * file view.  Also checks that the ranks' views are disjoint.  *written_end:
 * one past the last byte any rank writes. */
static int expected_image(struct ctx *cx, int k, struct rank_case *rc, int64_t *F_out,
                          unsigned char **data_out, unsigned char **own_out,
                          int64_t *written_end) {
  int64_t skip = rc->offset * rc->es;
  int64_t ntiles = rc->nbytes ? (skip + rc->nbytes + rc->fsize - 1) / rc->fsize : 0;
  int64_t ub = rc->disp + ntiles * rc->fext, F;
  MPI_Allreduce(&ub, &F, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  unsigned char *data = calloc((size_t)F + 1, 1), *mask = calloc((size_t)F + 1, 1);
  unsigned char *own = calloc((size_t)F + 1, 1);
  if (ntiles) {
    int64_t slen = ntiles * rc->fsize;
    unsigned char *stream = calloc((size_t)slen, 1), *mstream = calloc((size_t)slen, 1);
    int pos = 0;
    MPI_Pack(rc->buf, rc->count, rc->mtype, stream + skip, (int)rc->nbytes, &pos,
             MPI_COMM_SELF);
    CHECK(pos == rc->nbytes, "MPI_Pack packed %d of %lld bytes", pos, (long long)rc->nbytes);
    memset(mstream + skip, 1, (size_t)rc->nbytes);
    pos = 0;
    MPI_Unpack(stream, (int)slen, &pos, data + rc->disp, (int)ntiles, rc->ftype, MPI_COMM_SELF);
    pos = 0;
    MPI_Unpack(mstream, (int)slen, &pos, mask + rc->disp, (int)ntiles, rc->ftype,
               MPI_COMM_SELF);
    for (int64_t i = 0; i < F; i++) {
      if (!mask[i])
        data[i] = 0;
      own[i] = mask[i] ? (unsigned char)(cx->rank + 1) : 0;
    }
    free(stream);
    free(mstream);
  }
  unsigned char *rdata = NULL, *rmask = NULL, *rown = NULL;
  if (cx->rank == 0) {
    rdata = calloc((size_t)F + 1, 1);
    rmask = calloc((size_t)F + 1, 1);
    rown = calloc((size_t)F + 1, 1);
  }
  MPI_Reduce(data, rdata, (int)F, MPI_UNSIGNED_CHAR, MPI_BOR, 0, MPI_COMM_WORLD);
  MPI_Reduce(mask, rmask, (int)F, MPI_UNSIGNED_CHAR, MPI_SUM, 0, MPI_COMM_WORLD);
  MPI_Reduce(own, rown, (int)F, MPI_UNSIGNED_CHAR, MPI_MAX, 0, MPI_COMM_WORLD);
  free(data);
  free(mask);
  free(own);
  int bad = 0;
  *written_end = 0;
  if (cx->rank == 0) {
    for (int64_t i = 0; i < F; i++) {
      if (rmask[i] > 1 && !bad) {
        bad = 1;
        fprintf(stderr, "seed %" PRIu64 " case %d: generator bug: byte %lld written by %d "
                "ranks\n", cx->o.seed, k, (long long)i, rmask[i]);
      }
      if (rmask[i])
        *written_end = i + 1;
      else
        rown[i] = 0;
    }
    free(rmask);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(written_end, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  CHECK(!bad, "seed %" PRIu64 " case %d: overlapping views", cx->o.seed, k);
  *F_out = F;
  *data_out = rdata;
  *own_out = rown;
  return bad ? -1 : 0;
}

/* Compares got (gsize bytes) with want; prints the first difference.  With
 * lax, holes past the original end of file (bg) are not compared: MPI-IO
 * implementations read-modify-write across them and may leave garbage there
 * (ROMIO and OMPIO both do), which POSIX would read as zeros. */
static int compare_bytes(const unsigned char *want, int64_t wsize, const unsigned char *got,
                         int64_t gsize, const unsigned char *own, int64_t F, int64_t bg,
                         int lax, const char *what) {
  int64_t ndiff = 0, first = -1;
  int64_t n = wsize < gsize ? wsize : gsize;
  for (int64_t i = 0; i < n; i++) {
    if (want[i] == got[i])
      continue;
    if (lax && i >= bg && !(i < F && own[i]))
      continue;
    if (first < 0)
      first = i;
    ndiff++;
  }
  if (wsize == gsize && ndiff == 0)
    return 0;
  fprintf(stderr, "  %s: size %lld (expected %lld), %lld bytes differ", what,
          (long long)gsize, (long long)wsize, (long long)ndiff);
  if (first >= 0) {
    int owner = first < F ? own[first] : 0;
    fprintf(stderr, "; first at file offset %lld: expected 0x%02x got 0x%02x (", (long long)first,
            want[first], got[first]);
    if (owner)
      fprintf(stderr, "written by rank %d)", owner - 1);
    else if (first < bg)
      fprintf(stderr, "hole: the old contents must survive)");
    else
      fprintf(stderr, "hole past the old end of file: never written, must read as 0)");
  }
  fprintf(stderr, "\n");
  return 1;
}

static void print_rank_lines(struct ctx *cx, int k, struct rank_case *rc, int any_fail) {
  int flag;
  MPI_Allreduce(&any_fail, &flag, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!flag)
    return;
  for (int r = 0; r < cx->np; r++) {
    if (r == cx->rank)
      fprintf(stderr, "  seed %" PRIu64 " case %d rank %d: view disp=%lld %s\n"
              "      memtype %s\n", cx->o.seed, k, r, (long long)(rc->base + rc->disp), rc->fd.s,
              rc->md.s);
    fflush(stderr);
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

/* Every rank must agree on success; a disagreement would hang the next
 * collective, so the test stops there. */
static int agree(struct ctx *cx, int rc, const char *call, int k, const char *cfg) {
  int bad = rc != 0, nbad;
  MPI_Allreduce(&bad, &nbad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  CHECK(rc == 0, "seed %" PRIu64 " case %d [%s]: %s returned %d (%s): %s", cx->o.seed, k,
        cfg, call, rc, aggio_strerror(rc), aggio_error_message());
  if (nbad != 0 && nbad != cx->np) {
    fprintf(stderr, "seed %" PRIu64 " case %d [%s]: %s: %d of %d ranks failed, the rest "
            "succeeded: collective outcome not agreed; stopping\n", cx->o.seed, k, cfg,
            call, nbad, cx->np);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return nbad ? -1 : 0;
}

static MPI_Info make_info(const struct config *c) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", c->strategy);
  for (int i = 0; i < c->nhints; i++)
    MPI_Info_set(info, c->hints[i][0], c->hints[i][1]);
  return info;
}

static void add_hint(struct config *c, const char *k, const char *v) {
  snprintf(c->hints[c->nhints][0], sizeof c->hints[0][0], "%s", k);
  snprintf(c->hints[c->nhints][1], sizeof c->hints[0][1], "%s", v);
  c->nhints++;
  dadd(&c->desc, " %s=%s", k, v);
}

/* strategy: a strategy's name, or "two_phase+rma" for two-phase with the
 * one-sided exchange (aggio_exchange=rma). */
static void make_config(rng_t *g, int np, const char *strategy, struct config *c) {
  char v[64];
  int rma = strcmp(strategy, "two_phase+rma") == 0;
  memset(c, 0, sizeof *c);
  if (rma)
    strategy = "two_phase";
  c->strategy = strategy;
  c->wmode = rng_int(g, 0, M_NMODES - 1);
  c->rmode = rng_int(g, 0, M_NMODES - 1);
  c->split = rng_coin(g, 2);
  c->ignore_status = rng_coin(g, 4);
  c->reuse = rng_coin(g, 3);
  dadd(&c->desc, "aggio_strategy=%s", strategy);
  if (rma)
    add_hint(c, "aggio_exchange", "rma");
  if (strcmp(strategy, "independent") != 0) {
    static const int cbs[] = {4096, 8192, 16384, 65536, 5000, 1 << 20};
    snprintf(v, sizeof v, "%d", cbs[rng_int(g, 0, 5)]);
    add_hint(c, "cb_buffer_size", v);
    if (rng_coin(g, 3) == 0) {
      snprintf(v, sizeof v, "%d", rng_int(g, 1, np));
      add_hint(c, "cb_nodes", v);
    }
    static const char *cfl[] = {"*:1", "*:2", "*:*"};
    if (!rng_coin(g, 3))
      add_hint(c, "cb_config_list", cfl[rng_int(g, 0, 2)]);
    if (!rng_coin(g, 3)) {
      snprintf(v, sizeof v, "%d", rng_int(g, 1, 4));
      add_hint(c, "aggio_emulate_nodes", v);
    }
    static const char *su[] = {"0", "4096", "65536"};
    add_hint(c, "striping_unit", su[rng_int(g, 0, 2)]);
    /* both data paths (same-node shared memory or messages only) and both
     * write modes (I/O threads or in the main thread) */
    static const char *tri2[] = {"enable", "disable", "automatic"};
    add_hint(c, "aggio_node_shm", tri2[rng_int(g, 0, 2)]);
    add_hint(c, "aggio_pipeline", tri2[rng_int(g, 0, 2)]);
  }
  if (strcmp(strategy, "write_behind") == 0 && rng_coin(g, 2)) {
    /* a node cache of few or many blocks (with a 4 KiB stripe, 4 MiB is
     * 1024 slots: long hash chains of its block index are walked) */
    static const char *wbs[] = {"16384", "262144", "4194304"};
    add_hint(c, "aggio_write_behind_size", wbs[rng_int(g, 0, 2)]);
  }
  if (strcmp(strategy, "node_local") == 0) {
    /* it needs its shared window; K aggregators of each node */
    add_hint(c, "aggio_node_shm", "automatic");
    snprintf(v, sizeof v, "%d", rng_int(g, 0, 4));
    add_hint(c, "aggio_node_aggregators", v);
  }
  static const char *tri[] = {"enable", "disable", "automatic"};
  add_hint(c, "romio_ds_write", tri[rng_int(g, 0, 2)]);
  if (!rng_coin(g, 3))
    add_hint(c, "romio_ds_read", tri[rng_int(g, 0, 2)]);
  add_hint(c, "aggio_direct_io", tri[rng_int(g, 0, 1)]);
  dadd(&c->desc, " write=%s read=%s%s%s%s", mode_name[c->wmode], mode_name[c->rmode],
       c->split ? " split-in-two-calls" : "", c->ignore_status ? " STATUS_IGNORE" : "",
       c->reuse ? " read-through-same-handle" : "");
}

/* One access (write or read) in mode m, possibly split into two calls. */
static int do_access(aggio_file fh, struct rank_case *rc, int is_write, int m, int split,
                     unsigned char *buf, MPI_Status *st, int ignore_status, int nullbuf,
                     int64_t *got) {
  int c1 = split ? rc->count / 2 : rc->count, c2 = rc->count - c1, e = 0;
  MPI_Offset off2 = rc->offset + (MPI_Offset)c1 * rc->msize / rc->es;
  unsigned char *b2 = buf + (ptrdiff_t)c1 * rc->mext;
  MPI_Status *s = ignore_status ? MPI_STATUS_IGNORE : st;
  MPI_Count n;
  *got = 0;
  if (m == M_SEEK_ALL || m == M_SEEK) {
    e = aggio_file_seek(fh, rc->offset, MPI_SEEK_SET);
    if (e)
      return e;
  }
  for (int part = 0; part < (split ? 2 : 1); part++) {
    int c = part ? c2 : c1;
    unsigned char *b = part ? b2 : buf;
    MPI_Offset o = part ? off2 : rc->offset;
    if (rc->count == 0 && nullbuf)
      b = NULL; /* count 0: any buffer, NULL too */
    switch (m) {
    case M_AT_ALL:
      e = is_write ? aggio_file_write_at_all(fh, o, b, c, rc->mtype, s)
                   : aggio_file_read_at_all(fh, o, b, c, rc->mtype, s);
      break;
    case M_SEEK_ALL:
      e = is_write ? aggio_file_write_all(fh, b, c, rc->mtype, s)
                   : aggio_file_read_all(fh, b, c, rc->mtype, s);
      break;
    case M_AT:
      e = is_write ? aggio_file_write_at(fh, o, b, c, rc->mtype, s)
                   : aggio_file_read_at(fh, o, b, c, rc->mtype, s);
      break;
    default:
      e = is_write ? aggio_file_write(fh, b, c, rc->mtype, s)
                   : aggio_file_read(fh, b, c, rc->mtype, s);
      break;
    }
    if (e)
      return e;
    if (!ignore_status) {
      MPI_Get_elements_x(st, MPI_BYTE, &n);
      *got += n;
    } else {
      *got += (int64_t)c * rc->msize;
    }
  }
  return 0;
}

/* One data access through fh with the config's mode, checked and agreed. */
static int access_checked(struct ctx *cx, int k, struct rank_case *rc, const struct config *c,
                          aggio_file fh, int is_write, unsigned char *buf) {
  const char *cd = c->desc.s;
  int m = is_write ? c->wmode : c->rmode;
  MPI_Status st;
  int64_t got;
  int e = do_access(fh, rc, is_write, m, c->split, buf, &st, c->ignore_status, cx->rank % 2,
                    &got);
  if (m == M_AT_ALL || m == M_SEEK_ALL)
    agree(cx, e, is_write ? "collective write" : "collective read", k, cd);
  else
    CHECK(e == 0, "seed %" PRIu64 " case %d rank %d [%s]: independent %s: %d %s", cx->o.seed,
          k, cx->rank, cd, is_write ? "write" : "read", e, aggio_error_message());
  if (e != 0)
    return e;
  CHECK(got == rc->nbytes, "seed %" PRIu64 " case %d rank %d [%s]: %s status says %lld "
        "bytes, expected %lld", cx->o.seed, k, cx->rank, cd, is_write ? "write" : "read",
        (long long)got, (long long)rc->nbytes);
  if (m == M_SEEK_ALL || m == M_SEEK) {
    MPI_Offset p = -1, want_p = rc->offset + rc->nbytes / rc->es;
    aggio_file_get_position(fh, &p);
    CHECK(p == want_p, "seed %" PRIu64 " case %d rank %d [%s]: file pointer %lld after %s, "
          "expected %lld", cx->o.seed, k, cx->rank, cd, (long long)p,
          is_write ? "write" : "read", (long long)want_p);
  }
  return 0;
}

/* Compares a read-back buffer with the memory buffer: covered bytes equal,
 * gaps and the slack around them untouched. */
static void check_readback(struct ctx *cx, int k, struct rank_case *rc, const char *cd,
                           const unsigned char *ralloc) {
  const unsigned char *rmem = ralloc + PAD;
  int64_t ndiff = 0, first = -1, outside = 0;
  for (size_t i = 0; i < PAD; i++)
    outside += (ralloc[i] != 0xA5) + (rmem[rc->span + i] != 0xA5);
  CHECK(outside == 0, "seed %" PRIu64 " case %d rank %d [%s]: read wrote %lld bytes outside "
        "the span of the memory type", cx->o.seed, k, cx->rank, cd, (long long)outside);
  for (size_t i = 0; i < rc->span; i++) {
    unsigned char w = rc->cover[i] ? rc->mem[i] : 0xA5;
    if (rmem[i] != w) {
      if (first < 0)
        first = (int64_t)i;
      ndiff++;
    }
  }
  CHECK(ndiff == 0, "seed %" PRIu64 " case %d rank %d [%s]: read-back buffer: %lld bytes "
        "differ, first at buffer byte %lld (%s): expected 0x%02x got 0x%02x", cx->o.seed, k,
        cx->rank, cd, (long long)ndiff, (long long)first,
        first >= 0 && rc->cover[first] ? "data" : "gap, must stay untouched",
        first >= 0 ? (rc->cover[first] ? rc->mem[first] : 0xA5) : 0,
        first >= 0 ? rmem[first] : 0);
}

/* Rank 0: compares file B with the expected contents and the reference. */
static int check_file(struct ctx *cx, int k, const char *cd, const unsigned char *want,
                      int64_t wsize, const unsigned char *ref, int64_t rsize,
                      const unsigned char *own, int64_t F, int64_t bg, int64_t base) {
  int bad = 0;
  if (cx->rank == 0) {
    int64_t gsize, nz;
    unsigned char *gotf = slurp(cx->pathB, base, &gsize, &nz);
    if (!gotf) {
      fprintf(stderr, "  cannot read %s: %s\n", cx->pathB, strerror(errno));
      bad = 1;
    } else {
      bad = compare_bytes(want, wsize, gotf, gsize, own, F, bg, cx->o.lax_eof,
                          "aggio file vs datatype engine");
      if (!bad && ref)
        bad = compare_bytes(ref, rsize, gotf, gsize, own, F, bg, 1,
                            "aggio file vs MPI-IO reference file");
    }
    free(gotf);
    CHECK(!bad, "seed %" PRIu64 " case %d [%s]: file differs from the expected contents "
          "(offsets above are from %lld)", cx->o.seed, k, cd, (long long)base);
    CHECK(nz == 0, "seed %" PRIu64 " case %d [%s]: %lld bytes not zero in the hole before "
          "%lld", cx->o.seed, k, cd, (long long)nz, (long long)base);
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return bad;
}

/* Writes through aggio with config c into B, compares B with the expected
 * contents, reads back (through the same handle, or after reopening).
 * Collective.  Returns 1 if this config failed somewhere. */
static int run_config(struct ctx *cx, int k, struct rank_case *rc, const struct config *c,
                      uint64_t salt, int64_t bg, int remove_bg, const unsigned char *want,
                      int64_t wsize, const unsigned char *ref, int64_t rsize,
                      const unsigned char *own, int64_t F) {
  const char *cd = c->desc.s;
  int fails0 = test_failures, wrote = 0, read = 0;
  if (cx->rank == 0)
    CHECK(put_background(cx->pathB, rc->base, bg, salt, remove_bg) == 0, "background of %s: %s",
          cx->pathB, strerror(errno));
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Info info = make_info(c);
  aggio_file fh = AGGIO_FILE_NULL;
  unsigned char *ralloc = malloc(rc->span + 2 * PAD), *rmem = ralloc + PAD;
  memset(ralloc, 0xA5, rc->span + 2 * PAD);
  int e = aggio_file_open(MPI_COMM_WORLD, cx->pathB, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
  if (agree(cx, e, "aggio_file_open(write)", k, cd) == 0) {
    e = aggio_file_set_view(fh, rc->base + rc->disp, rc->etype, rc->ftype, "native", MPI_INFO_NULL);
    if (agree(cx, e, "aggio_file_set_view", k, cd) == 0) {
      wrote = access_checked(cx, k, rc, c, fh, 1, rc->buf) == 0;
      if (c->reuse) /* same handle, view set again */
        read = agree(cx, aggio_file_set_view(fh, rc->base + rc->disp, rc->etype, rc->ftype, "native",
                                             MPI_INFO_NULL), "set_view again", k, cd) == 0 &&
               access_checked(cx, k, rc, c, fh, 0, rmem - rc->mtlb) == 0;
    }
    agree(cx, aggio_file_close(&fh), "aggio_file_close(write)", k, cd);
  }
  int bad = check_file(cx, k, cd, want, wsize, ref, rsize, own, F, bg, rc->base);
  if (!c->reuse) {
    e = aggio_file_open(MPI_COMM_WORLD, cx->pathB, MPI_MODE_RDONLY, info, &fh);
    if (agree(cx, e, "aggio_file_open(read)", k, cd) == 0) {
      e = aggio_file_set_view(fh, rc->base + rc->disp, rc->etype, rc->ftype, "native", MPI_INFO_NULL);
      if (agree(cx, e, "aggio_file_set_view(read)", k, cd) == 0)
        read = access_checked(cx, k, rc, c, fh, 0, rmem - rc->mtlb) == 0;
      agree(cx, aggio_file_close(&fh), "aggio_file_close(read)", k, cd);
    }
  }
  if (read && wrote && !bad)
    check_readback(cx, k, rc, cd, ralloc);
  free(ralloc);
  MPI_Info_free(&info);
  return test_failures != fails0;
}

static int run_case(struct ctx *cx, int k) {
  struct rank_case rc;
  int fails0 = test_failures;
  memset(&rc, 0, sizeof rc);
  if (make_case(cx, k, &rc) != 0) {
    print_rank_lines(cx, k, &rc, 1);
    free_case(&rc);
    return 1;
  }
  int gen_bad = 0;
  /* every rank needs a non-empty view: if not, the generator is wrong */
  rng_t g = rng_make(cx->o.seed, (uint64_t)k, 0xABCDEFu);
  int64_t F, written_end;
  unsigned char *data = NULL, *own = NULL;
  if (expected_image(cx, k, &rc, &F, &data, &own, &written_end) != 0)
    gen_bad = 1;

  /* background: shorter, as long as, or longer than what is written */
  int64_t bg;
  switch (rng_int(&g, 0, 4)) {
  case 0:
    bg = 0;
    break;
  case 1:
    bg = written_end / 2;
    break;
  case 2:
    bg = written_end;
    break;
  default:
    bg = written_end + rng_int(&g, 1, 70000);
    break;
  }
  int remove_bg = bg == 0 && rng_coin(&g, 2);
  uint64_t salt = rng_next(&g);

  /* the expected file: background overlaid with every rank's data */
  int64_t wsize = bg > written_end ? bg : written_end;
  unsigned char *want = NULL, *ref = NULL;
  int64_t rsize = 0;
  if (cx->rank == 0) {
    want = malloc((size_t)wsize + 1);
    for (int64_t i = 0; i < wsize; i++)
      want[i] = (i < F && own[i]) ? data[i] : i < bg ? bg_byte((uint64_t)i, salt) : 0;
  }

  /* the reference: MPI-IO into A (left out under AGGIO_TEST_REFERENCE=0: the
   * sanitizer builds with MPICH, whose ROMIO reads past the user's buffer for
   * some memory types; aggio is then judged by the datatype engine alone) */
  int ref_bad = !cx->o.reference;
  if (cx->o.reference) {
    if (cx->rank == 0)
      CHECK(put_background(cx->pathA, rc.base, bg, salt, remove_bg) == 0, "background of %s",
            cx->pathA);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File mf;
    int e = MPI_File_open(MPI_COMM_WORLD, cx->pathA, MPI_MODE_RDWR | MPI_MODE_CREATE,
                          MPI_INFO_NULL, &mf);
    CHECK(e == MPI_SUCCESS, "MPI_File_open(%s) failed", cx->pathA);
    if (e == MPI_SUCCESS) {
      e = MPI_File_set_view(mf, rc.base + rc.disp, rc.etype, rc.ftype, "native", MPI_INFO_NULL);
      CHECK(e == MPI_SUCCESS, "MPI_File_set_view failed");
      e = MPI_File_write_at_all(mf, rc.offset, rc.buf, rc.count, rc.mtype, MPI_STATUS_IGNORE);
      CHECK(e == MPI_SUCCESS, "MPI_File_write_at_all failed");
      MPI_File_close(&mf);
    }
    if (cx->rank == 0) {
      int64_t nz;
      ref = slurp(cx->pathA, rc.base, &rsize, &nz);
      ref_bad = !ref || compare_bytes(want, wsize, ref, rsize, own, F, bg, 1,
                                      "MPI-IO reference file");
      /* The datatype engine defines what the typemaps mean; an MPI-IO that
       * disagrees with it is the MPI library's bug (ROMIO 3.2.1 in Open MPI
       * 4.1 mishandles memory types with a negative lb, for one), so aggio is
       * then judged by the engine alone. */
      if (ref_bad) {
        fprintf(stderr, "WARNING seed %" PRIu64 " case %d: the MPI library's MPI-IO "
                "disagrees with its own datatype engine; aggio is compared with the "
                "engine only%s\n", cx->o.seed, k,
                cx->o.strict_ref ? " (AGGIO_TEST_STRICT_REFERENCE: failure)" : "");
        CHECK(!cx->o.strict_ref, "seed %" PRIu64 " case %d: MPI-IO reference is wrong",
              cx->o.seed, k);
      }
    }
  }
  MPI_Bcast(&ref_bad, 1, MPI_INT, 0, MPI_COMM_WORLD);

  if (cx->o.verbose && cx->rank == 0)
    printf("case %d: rank 0: view %s\n    memtype %s\n", k, rc.fd.s, rc.md.s);
  /* aggio: independent, two_phase twice with different hints and once with
   * the one-sided exchange, write_behind, auto, node_local (last, so that
   * the others' random hints stay as they were) */
  static const char *strategies[] = {"independent", "two_phase",    "two_phase", "two_phase+rma",
                                     "write_behind", "auto", "node_local"};
  int ncfg = (int)(sizeof strategies / sizeof *strategies), cfg_fail = 0;
  for (int i = 0; i < ncfg && !gen_bad; i++) {
    struct config c;
    make_config(&g, cx->np, strategies[i], &c);
    if (cx->o.verbose && cx->rank == 0)
      printf("case %d cfg %d: %s\n", k, i, c.desc.s);
    cfg_fail |= run_config(cx, k, &rc, &c, salt, bg, remove_bg, want, wsize,
                           ref_bad ? NULL : ref, rsize, own, F);
  }
  print_rank_lines(cx, k, &rc, test_failures != fails0);
  free(want);
  free(ref);
  free(data);
  free(own);
  free_case(&rc);
  (void)cfg_fail;
  return test_failures != fails0;
}

static void parse_opts(int argc, char **argv, struct opts *o) {
  const char *s;
  o->seed = 20240611;
  o->ncases = 0;
  o->only_case = -1;
  o->verbose = 0;
  o->max_bytes = 0;
  o->lax_eof = 0;
  o->strict_ref = 0;
  o->reference = 1;
  if ((s = getenv("AGGIO_TEST_SEED")) && *s)
    o->seed = strcmp(s, "random") == 0 ? (uint64_t)time(NULL) : strtoull(s, NULL, 0);
  if ((s = getenv("AGGIO_TEST_CASES")) && *s)
    o->ncases = atoi(s);
  if ((s = getenv("AGGIO_TEST_CASE")) && *s)
    o->only_case = atoi(s);
  if ((s = getenv("AGGIO_TEST_MAX_BYTES")) && *s)
    o->max_bytes = atol(s);
  if ((s = getenv("AGGIO_TEST_LAX_EOF")) && *s)
    o->lax_eof = atoi(s);
  if ((s = getenv("AGGIO_TEST_STRICT_REFERENCE")) && *s)
    o->strict_ref = atoi(s);
  if ((s = getenv("AGGIO_TEST_REFERENCE")) && *s)
    o->reference = atoi(s);
  if ((s = getenv("AGGIO_TEST_VERBOSE")) && *s)
    o->verbose = atoi(s);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      o->seed = strtoull(argv[++i], NULL, 0);
    else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
      o->ncases = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      o->only_case = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--max-bytes") && i + 1 < argc)
      o->max_bytes = atol(argv[++i]);
    else if (!strcmp(argv[i], "-v"))
      o->verbose = 1;
  }
}

int main(int argc, char **argv) {
  struct ctx cx;
  memset(&cx, 0, sizeof cx);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &cx.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &cx.np);
  parse_opts(argc, argv, &cx.o);
  /* every rank must use rank 0's seed ("random" differs per rank) */
  MPI_Bcast(&cx.o.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  /* defaults: about 10 s at 8 ranks oversubscribed on 2 cores */
  if (cx.o.ncases <= 0)
    cx.o.ncases = cx.np >= 8 ? 20 : cx.np >= 4 ? 30 : 40;
  if (cx.o.max_bytes <= 0)
    cx.o.max_bytes = cx.np >= 8 ? 65536 : cx.np >= 4 ? 131072 : 262144;

  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(cx.pathA, sizeof cx.pathA, "%s/patterns.%d.mpiio", test_dir(), id);
  snprintf(cx.pathB, sizeof cx.pathB, "%s/patterns.%d.aggio", test_dir(), id);
  if (cx.rank == 0)
    printf("test_patterns: %d ranks, seed %" PRIu64 ", %d cases%s (reproduce: "
           "AGGIO_TEST_SEED=%" PRIu64 " AGGIO_TEST_CASE=<case>)\n", cx.np, cx.o.seed,
           cx.o.ncases, cx.o.only_case >= 0 ? " (one case)" : "", cx.o.seed);

  double t0 = MPI_Wtime();
  for (int k = 0; k < cx.o.ncases || (cx.o.only_case >= cx.o.ncases && k <= cx.o.only_case);
       k++) {
    if (cx.o.only_case >= 0 && k != cx.o.only_case)
      continue;
    cx.failed_cases += run_case(&cx, k);
  }
  if (cx.rank == 0) {
    printf("test_patterns: %.1f s\n", MPI_Wtime() - t0);
    unlink(cx.pathA);
    unlink(cx.pathB);
  }
  int rcode = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rcode;
}
