/* aggio-test-ranks: 1
 * test_flatten.c - aggio__flatten against the MPI library's own MPI_Pack.
 *
 * Ground truth: a buffer covering everything `count` instances can touch is
 * filled so that byte i holds byte k of i, MPI_Pack'ed once per k; stacking
 * the passes gives, exactly, the buffer position of every byte of the packed
 * stream.  The flat's tiled pieces must produce that same sequence, and
 * flat_map/flat_pack must agree with it too.  Every combiner is covered,
 * alone and nested, plus the cache, huge counts, error cases, and the cost
 * of many pieces (linear to flatten, logarithmic to map: ratios of times,
 * never a wall-clock budget).
 */
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aggio.h"
#include "flatten.h"
#include "harness.h"

/* The buffer positions (relative to the origin) of the bytes MPI_Pack
 * produces for count instances of type (none when the type packs nothing). */
static int64_t *pack_positions(MPI_Datatype type, int count, int64_t *nbytes,
                               int64_t *lo_out, int64_t *span_out) {
  MPI_Count tlb, text, lb, ext, size;
  MPI_Type_size_x(type, &size);
  if (size == 0 || count == 0) {
    /* Nothing packs.  The true extent of an empty type is not meaningful
     * (Open MPI gives INT64_MAX), and adding to it would overflow. */
    *nbytes = *lo_out = 0;
    *span_out = 1;
    return calloc(1, sizeof(int64_t));
  }
  MPI_Type_get_true_extent_x(type, &tlb, &text);
  MPI_Type_get_extent_x(type, &lb, &ext);
  int64_t last = (int64_t)(count > 0 ? count - 1 : 0) * ext;
  int64_t lo = tlb + (last < 0 ? last : 0);
  int64_t hi = tlb + text + (last > 0 ? last : 0);
  int64_t span = hi > lo ? hi - lo : 1;
  int psize;
  MPI_Pack_size(count, type, MPI_COMM_SELF, &psize);
  unsigned char *buf = malloc((size_t)span);
  unsigned char *packed = malloc((size_t)psize + 1);
  int64_t *posn = calloc((size_t)psize + 1, sizeof *posn);
  int passes = 1;
  while (passes < 8 && (span - 1) >> (8 * passes))
    passes++;
  int pos = 0;
  for (int k = 0; k < passes; k++) {
    for (int64_t i = 0; i < span; i++)
      buf[i] = (unsigned char)(i >> (8 * k));
    pos = 0;
    MPI_Pack(buf - lo, count, type, packed, psize, &pos, MPI_COMM_SELF);
    for (int j = 0; j < pos; j++)
      posn[j] |= (int64_t)packed[j] << (8 * k);
  }
  for (int j = 0; j < pos; j++)
    posn[j] += lo;
  free(buf);
  free(packed);
  *nbytes = pos;
  *lo_out = lo;
  *span_out = span;
  return posn;
}

/* The buffer position of stream byte p according to the flat. */
static int64_t flat_position(const struct aggio__flat *f, int64_t p) {
  int64_t tile = p / f->size, r = p % f->size;
  int64_t i = 0;
  while (r >= f->len[i]) /* linear: only used on a few bytes */
    r -= f->len[i++];
  return tile * f->extent + f->off[i] + r;
}

/* flat_map of a few sub-ranges of the stream must list the same positions. */
static int check_map(const struct aggio__flat *f, const int64_t *posn,
                     int64_t nbytes) {
  int bad = 0;
  int64_t ranges[][2] = {{0, nbytes},
                         {nbytes / 3, nbytes / 2},
                         {nbytes - 1, 1},
                         {1, nbytes > 2 ? nbytes - 2 : 0}};
  for (size_t r = 0; r < sizeof ranges / sizeof ranges[0]; r++) {
    int64_t pos = ranges[r][0], len = ranges[r][1];
    if (pos < 0 || len <= 0 || pos + len > nbytes)
      continue;
    struct aggio__extents out = {0};
    if (aggio__flat_map(f, 1000, pos, len, &out) != 0)
      return 1;
    int64_t p = pos;
    for (size_t k = 0; k < out.n; k++)
      for (int64_t b = 0; b < out.v[k].len; b++, p++)
        bad += out.v[k].off + b != 1000 + posn[p];
    bad += p != pos + len;
    aggio__extents_free(&out);
  }
  return bad;
}

/* aggio__flat_pack of a patterned buffer must equal MPI_Pack's output. */
static int check_pack(const struct aggio__flat *f, MPI_Datatype type,
                      int count, int64_t lo, int64_t span, int64_t nbytes) {
  unsigned char *buf = malloc((size_t)span);
  unsigned char *a = malloc((size_t)nbytes + 1), *b = malloc((size_t)nbytes + 1);
  for (int64_t i = 0; i < span; i++)
    buf[i] = (unsigned char)(i * 7 + 3);
  int pos = 0;
  MPI_Pack(buf - lo, count, type, a, (int)nbytes, &pos, MPI_COMM_SELF);
  aggio__flat_pack(f, count, buf - lo, b);
  int bad = memcmp(a, b, (size_t)nbytes) != 0;
  /* unpack into a zeroed buffer and repack: the same stream again */
  memset(buf, 0, (size_t)span);
  aggio__flat_unpack(f, count, b, nbytes, buf - lo);
  aggio__flat_pack(f, count, buf - lo, a);
  bad += memcmp(a, b, (size_t)nbytes) != 0;
  free(buf);
  free(a);
  free(b);
  return bad;
}

/* Flattens type and compares with MPI for 1 and `count` instances. */
static void check_type_count(const char *name, MPI_Datatype type, int count) {
  char err[256] = "";
  struct aggio__flat *f = NULL;
  int rc = aggio__flatten(type, &f, err, sizeof err);
  CHECK(rc == 0, "%s: flatten rc %d: %s", name, rc, err);
  if (rc)
    return;
  MPI_Count lb, ext, size;
  MPI_Type_get_extent_x(type, &lb, &ext);
  MPI_Type_size_x(type, &size);
  CHECK(f->lb == lb && f->extent == ext && f->size == size,
        "%s: lb/extent/size %lld/%lld/%lld vs MPI %lld/%lld/%lld", name,
        (long long)f->lb, (long long)f->extent, (long long)f->size,
        (long long)lb, (long long)ext, (long long)size);
  int64_t nbytes, lo, span;
  int64_t *posn = pack_positions(type, count, &nbytes, &lo, &span);
  CHECK(nbytes == count * f->size, "%s x%d: packed %lld bytes, flat says %lld",
        name, count, (long long)nbytes, (long long)(count * f->size));
  int64_t j = 0, bad = 0;
  for (int64_t t = 0; t < count && j <= nbytes; t++)
    for (int64_t i = 0; i < f->n; i++)
      for (int64_t b = 0; b < f->len[i]; b++, j++)
        bad += j >= nbytes || posn[j] != t * f->extent + f->off[i] + b;
  CHECK(bad == 0 && j == nbytes, "%s x%d: %lld stream bytes differ", name,
        count, (long long)bad);
  for (int64_t i = 1; i < f->n; i++) /* coalesced: no touching neighbours */
    bad += f->off[i - 1] + f->len[i - 1] == f->off[i];
  CHECK(bad == 0, "%s: pieces not fully coalesced", name);
  if (nbytes > 0 && bad == 0) {
    CHECK(flat_position(f, nbytes - 1) == posn[nbytes - 1], "%s: last byte",
          name);
    CHECK(check_map(f, posn, nbytes) == 0, "%s x%d: map differs", name, count);
    CHECK(check_pack(f, type, count, lo, span, nbytes) == 0,
          "%s x%d: pack differs from MPI_Pack", name, count);
  }
  free(posn);
  aggio__flat_release(f);
}

static void check_type(const char *name, MPI_Datatype type) {
  check_type_count(name, type, 1);
  check_type_count(name, type, 3);
}

/* Commits, checks and frees a derived type. */
static void check_free(const char *name, MPI_Datatype type) {
  MPI_Type_commit(&type);
  check_type(name, type);
  MPI_Type_free(&type);
}

/* ---- types with gaps, used as children ----------------------------------- */

/* {int @0, double @8, char @20}: gaps inside, extent 24 */
static MPI_Datatype gappy_struct(void) {
  int bl[] = {1, 1, 1};
  MPI_Aint d[] = {0, 8, 20};
  MPI_Datatype ts[] = {MPI_INT, MPI_DOUBLE, MPI_CHAR}, t;
  MPI_Type_create_struct(3, bl, d, ts, &t);
  return t;
}

static void test_named(void) {
  struct { MPI_Datatype t; const char *name; } named[] = {
      {MPI_CHAR, "char"},         {MPI_INT, "int"},
      {MPI_DOUBLE, "double"},     {MPI_LONG_DOUBLE, "long double"},
      {MPI_BYTE, "byte"},         {MPI_C_DOUBLE_COMPLEX, "double complex"},
      {MPI_SHORT_INT, "short_int"}, {MPI_FLOAT_INT, "float_int"},
      {MPI_DOUBLE_INT, "double_int"}, {MPI_LONG_INT, "long_int"},
      {MPI_LONG_DOUBLE_INT, "long_double_int"}, {MPI_2INT, "2int"},
  };
  for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
    check_type(named[i].name, named[i].t);
  struct aggio__flat *a, *b;
  aggio__flatten(MPI_INT, &a, NULL, 0);
  aggio__flatten(MPI_INT, &b, NULL, 0);
  CHECK(a != b && a->n == 1 && a->refs == 1, "named: fresh flat, n=1");
  aggio__flat_release(a);
  aggio__flat_release(b);
}

static void test_basic_combiners(void) {
  MPI_Datatype t, c;
  MPI_Type_contiguous(5, MPI_INT, &t);
  check_free("contiguous", t);
  MPI_Type_contiguous(0, MPI_INT, &t);
  check_free("contiguous(0)", t);
  MPI_Type_dup(MPI_DOUBLE, &t);
  check_free("dup(double)", t);
  MPI_Type_vector(4, 2, 3, MPI_INT, &t);
  check_free("vector", t);
  MPI_Type_vector(4, 2, -3, MPI_SHORT, &t);
  check_free("vector negative stride", t);
  MPI_Type_vector(5, 3, 3, MPI_INT, &t);
  MPI_Type_commit(&t);
  struct aggio__flat *f;
  aggio__flatten(t, &f, NULL, 0);
  CHECK(f->n == 1 && f->len[0] == 60, "vector stride==blocklen is one piece");
  aggio__flat_release(f);
  MPI_Type_free(&t);
  MPI_Type_create_hvector(3, 2, -20, MPI_DOUBLE, &t);
  check_free("hvector negative stride", t);
  int bl[] = {2, 0, 3, 1}, di[] = {5, 1, -2, 4};
  MPI_Type_indexed(4, bl, di, MPI_INT, &t);
  check_free("indexed with zero-length and negative blocks", t);
  int bl2[] = {2, 2}, di2[] = {0, 1};
  MPI_Type_indexed(2, bl2, di2, MPI_INT, &t);
  check_free("indexed overlapping", t);
  MPI_Aint hd[] = {-16, 40, 8};
  int hbl[] = {1, 2, 0};
  MPI_Type_create_hindexed(3, hbl, hd, MPI_DOUBLE, &t);
  check_free("hindexed", t);
  int ib[] = {7, 0, 3};
  MPI_Type_create_indexed_block(3, 2, ib, MPI_FLOAT, &t);
  check_free("indexed_block", t);
  MPI_Aint hb[] = {100, -50, 3};
  MPI_Type_create_hindexed_block(3, 3, hb, MPI_CHAR, &t);
  check_free("hindexed_block", t);
  check_free("struct", gappy_struct());
  c = gappy_struct();
  MPI_Type_create_resized(c, -8, 40, &t);
  check_free("struct resized lb -8 extent 40", t);
  MPI_Type_create_resized(c, 4, 12, &t);
  check_free("struct resized smaller than its data", t);
  MPI_Type_free(&c);
  /* single-piece children that do not fill their extent must not be
   * tiled as one run */
  MPI_Type_create_resized(MPI_INT, 0, 8, &c);
  MPI_Type_contiguous(3, c, &t);
  check_free("contiguous of resized int", t);
  MPI_Type_vector(2, 3, 4, c, &t);
  check_free("vector of resized int", t);
  MPI_Type_free(&c);
  MPI_Type_create_resized(MPI_INT, -4, 4, &c);
  MPI_Type_contiguous(3, c, &t);
  check_free("contiguous of int with lb -4", t);
  MPI_Type_free(&c);
  MPI_Type_vector(3, 1, 2, MPI_INT, &c);
  MPI_Type_create_resized(c, 0, 4, &t);
  check_free("resized vector (interleaving tiles)", t);
  MPI_Type_free(&c);
}

static void test_subarray(void) {
  int sizes[] = {4, 5, 6}, subs[] = {2, 3, 2}, starts[] = {1, 2, 3};
  MPI_Datatype t, c = gappy_struct();
  for (int o = 0; o < 2; o++) {
    int order = o ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
    MPI_Type_create_subarray(3, sizes, subs, starts, order, MPI_INT, &t);
    check_free(o ? "subarray F" : "subarray C", t);
    MPI_Type_create_subarray(3, sizes, subs, starts, order, c, &t);
    check_free(o ? "subarray F of struct" : "subarray C of struct", t);
    int s1[] = {10}, u1[] = {10}, z1[] = {0};
    MPI_Type_create_subarray(1, s1, u1, z1, order, MPI_DOUBLE, &t);
    check_free("subarray 1d full", t);
  }
  /* hindexed of subarray */
  MPI_Datatype sub;
  MPI_Type_create_subarray(3, sizes, subs, starts, MPI_ORDER_C, MPI_SHORT, &sub);
  int bl[] = {2, 1};
  MPI_Aint d[] = {0, 1000};
  MPI_Type_create_hindexed(2, bl, d, sub, &t);
  check_free("hindexed of subarray", t);
  MPI_Type_free(&sub);
  MPI_Type_free(&c);
}

/* darray over every rank of several process grids, distributions and both
 * orders; oldtype int and a struct with gaps. */
static void test_darray(void) {
  struct grid { int nd, gs[3], ps[3]; } grids[] = {
      {1, {11}, {1}},        {1, {11}, {3}},       {1, {12}, {4}},
      {2, {7, 10}, {2, 2}},  {2, {9, 5}, {3, 1}},  {2, {6, 8}, {1, 3}},
      {3, {5, 6, 4}, {2, 1, 2}},
  };
  struct dist { int d, arg; const char *name; } dists[] = {
      {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_DFLT_DARG, "block"},
      {MPI_DISTRIBUTE_BLOCK, 4, "block(4)"},
      {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_DFLT_DARG, "cyclic"},
      {MPI_DISTRIBUTE_CYCLIC, 2, "cyclic(2)"},
      {MPI_DISTRIBUTE_CYCLIC, 3, "cyclic(3)"},
      {MPI_DISTRIBUTE_NONE, MPI_DISTRIBUTE_DFLT_DARG, "none"},
  };
  int nd_ = sizeof dists / sizeof dists[0];
  MPI_Datatype old[2] = {MPI_INT, gappy_struct()};
  char name[160];
  for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++) {
    const struct grid *G = &grids[g];
    int size = 1;
    for (int i = 0; i < G->nd; i++)
      size *= G->ps[i];
    for (int combo = 0; combo < nd_ * nd_; combo++) {
      int distrib[3], dargs[3], ok = 1;
      for (int i = 0; i < G->nd; i++) {
        const struct dist *D = &dists[i == 0 ? combo % nd_ : combo / nd_ % nd_];
        if (i == 2)
          D = &dists[(combo + 2) % nd_];
        distrib[i] = D->d;
        dargs[i] = D->arg;
        if (D->d == MPI_DISTRIBUTE_NONE && G->ps[i] != 1)
          ok = 0;
        if (D->d == MPI_DISTRIBUTE_BLOCK && D->arg != MPI_DISTRIBUTE_DFLT_DARG &&
            D->arg * G->ps[i] < G->gs[i])
          ok = 0;
      }
      if (!ok || (G->nd == 1 && combo >= nd_))
        continue;
      for (int rank = 0; rank < size; rank++)
        for (int o = 0; o < 2; o++)
          for (int ot = 0; ot < 2; ot++) {
            int order = o ? MPI_ORDER_FORTRAN : MPI_ORDER_C;
            MPI_Datatype t;
            MPI_Type_create_darray(size, rank, G->nd, G->gs, distrib, dargs,
                                   G->ps, order, old[ot], &t);
            snprintf(name, sizeof name,
                     "darray grid %zu dists %s/%s rank %d %s %s", g,
                     dists[combo % nd_].name, dists[combo / nd_ % nd_].name,
                     rank, o ? "F" : "C", ot ? "struct" : "int");
            check_free(name, t);
          }
    }
  }
  /* dup of darray */
  int gs[] = {9, 7}, ds[] = {MPI_DISTRIBUTE_CYCLIC, MPI_DISTRIBUTE_BLOCK};
  int da[] = {2, MPI_DISTRIBUTE_DFLT_DARG}, ps[] = {2, 2};
  MPI_Datatype d, t;
  MPI_Type_create_darray(4, 3, 2, gs, ds, da, ps, MPI_ORDER_FORTRAN, MPI_INT, &d);
  MPI_Type_dup(d, &t);
  check_free("dup of darray", t);
  MPI_Type_free(&d);
  MPI_Type_free(&old[1]);
}

static void test_nested(void) {
  /* vector of struct of {indexed, resized vector} */
  MPI_Datatype ix, rv, v, st, t;
  int bl[] = {1, 2}, di[] = {3, 0};
  MPI_Type_indexed(2, bl, di, MPI_SHORT, &ix);
  MPI_Type_vector(2, 1, 3, MPI_INT, &v);
  MPI_Type_create_resized(v, -4, 28, &rv);
  int sbl[] = {2, 1};
  MPI_Aint sd[] = {-30, 50};
  MPI_Datatype sts[] = {ix, rv};
  MPI_Type_create_struct(2, sbl, sd, sts, &st);
  MPI_Type_vector(3, 2, 4, st, &t);
  check_free("vector of struct of indexed+resized vector", t);
  /* children stay uncommitted: only the outer type is committed */
  MPI_Type_contiguous(2, st, &t);
  check_free("contiguous of uncommitted struct", t);
  MPI_Type_free(&st);
  MPI_Type_free(&rv);
  MPI_Type_free(&v);
  MPI_Type_free(&ix);
}

static void test_f90(void) {
  MPI_Datatype r, c, i;
  MPI_Type_create_f90_real(6, MPI_UNDEFINED, &r);
  MPI_Type_create_f90_complex(15, MPI_UNDEFINED, &c);
  MPI_Type_create_f90_integer(5, &i);
  check_type("f90 real", r);
  check_type("f90 complex", c);
  check_type("f90 integer", i);
  MPI_Datatype t;
  MPI_Type_vector(3, 1, 2, c, &t);
  check_free("vector of f90 complex", t);
}

static void test_cache(void) {
  MPI_Datatype t;
  MPI_Type_vector(3, 1, 2, MPI_INT, &t);
  MPI_Type_commit(&t);
  struct aggio__flat *a, *b;
  CHECK(aggio__flatten(t, &a, NULL, 0) == 0, "flatten");
  CHECK(aggio__flatten(t, &b, NULL, 0) == 0, "flatten again");
  CHECK(a == b, "second call returns the cached flat");
  CHECK(a->refs == 3, "refs %d: two callers and the cache", a->refs);
  aggio__flat_release(b);
  MPI_Type_free(&t); /* drops the cache's reference */
  CHECK(a->refs == 1 && a->n == 3, "flat outlives its type: refs %d", a->refs);
  aggio__flat_release(a);

  /* a type freed while only the cache holds its flat */
  MPI_Type_contiguous(2, MPI_DOUBLE, &t);
  MPI_Type_commit(&t);
  aggio__flatten(t, &a, NULL, 0);
  aggio__flat_release(a);
  MPI_Type_free(&t);

  /* the dup of a cached type does not inherit the cache (NULL_COPY_FN), and
   * its flat is still right */
  MPI_Datatype d;
  MPI_Type_vector(2, 1, 3, MPI_INT, &t);
  MPI_Type_commit(&t);
  aggio__flatten(t, &a, NULL, 0);
  MPI_Type_dup(t, &d);
  aggio__flatten(d, &b, NULL, 0);
  CHECK(a != b && b->n == 2 && b->off[1] == 12, "dup flattened on its own");
  aggio__flat_release(a);
  aggio__flat_release(b);
  MPI_Type_free(&d);
  MPI_Type_free(&t);
}

static void test_errors(void) {
  char err[256] = "";
  struct aggio__flat *f = (void *)1;
  int rc = aggio__flatten(MPI_DATATYPE_NULL, &f, err, sizeof err);
  CHECK(rc == AGGIO_ERR_TYPE && f == NULL && err[0], "null type: %d %s", rc,
        err);
  MPI_Datatype t;
  MPI_Type_vector(2, 1, 2, MPI_INT, &t);
  err[0] = 0;
  rc = aggio__flatten(t, &f, err, sizeof err);
  CHECK(rc == AGGIO_ERR_TYPE && strstr(err, "commit"), "uncommitted: %d %s",
        rc, err);
  MPI_Type_commit(&t);
  rc = aggio__flatten(t, &f, err, sizeof err);
  CHECK(rc == 0, "committed after all: %d %s", rc, err);
  aggio__flat_release(f);
  MPI_Type_free(&t);
#if MPI_VERSION >= 4
  MPI_Type_contiguous_c(5, MPI_INT, &t);
  MPI_Type_commit(&t);
  err[0] = 0;
  rc = aggio__flatten(t, &f, err, sizeof err);
  CHECK(rc == 0 || (rc == AGGIO_ERR_TYPE && strstr(err, "large-count")),
        "large-count constructor: %d %s", rc, err);
  if (rc == 0)
    aggio__flat_release(f);
  MPI_Type_free(&t);
#endif
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A fresh n-piece vector of ints (a new type each time: the cache would
 * answer a type flattened before), flattened; its time in *dt. */
static struct aggio__flat *flatten_vector(int n, MPI_Datatype *t, double *dt) {
  struct aggio__flat *f = NULL;
#ifdef __GLIBC__
  /* Hand freed memory back to the system first, so that every run pays
   * for fresh pages, as a run of 4M pieces (beyond glibc's mmap threshold)
   * always does: otherwise small runs reuse warm memory and the ratio
   * below measures page faults, not the algorithm. */
  malloc_trim(0);
#endif
  double t0 = now();
  MPI_Type_vector(n, 1, 2, MPI_INT, t);
  MPI_Type_commit(t);
  int rc = aggio__flatten(*t, &f, NULL, 0);
  *dt = now() - t0;
  CHECK(rc == 0 && f->n == n && f->off[n - 1] == 8LL * (n - 1), "%d-piece vector", n);
  return rc == 0 ? f : NULL;
}

/* The fastest of reps flattenings of an n-piece vector; the last flat and
 * its type are kept in *last and *t when last is not NULL. */
static double best_flatten_time(int n, int reps, struct aggio__flat **last,
                                MPI_Datatype *t) {
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    MPI_Datatype type;
    double dt;
    struct aggio__flat *f = flatten_vector(n, &type, &dt);
    best = dt < best ? dt : best;
    if (last && r == reps - 1) {
      *last = f;
      *t = type;
      break;
    }
    if (f)
      aggio__flat_release(f);
    MPI_Type_free(&type);
  }
  return best;
}

/* The fastest of 5 batches of 1000 one-byte maps at positions first +
 * k * step (k < 1000) of f, each checked. */
static double best_map_time(const struct aggio__flat *f, int64_t first, int64_t step,
                            int *bad) {
  struct aggio__extents out = {0};
  double best = 1e30;
  for (int r = 0; r < 5; r++) {
    double t0 = now();
    for (int64_t k = 0; k < 1000; k++) {
      int64_t pos = 4 * (first + step * k) + 3;
      aggio__flat_map(f, 0, pos, 1, &out);
      *bad += out.n != 1 || out.v[0].off != 2 * (pos - 3) + 3;
      aggio__extents_clear(&out);
    }
    double dt = now() - t0;
    best = dt < best ? dt : best;
  }
  aggio__extents_free(&out);
  return best;
}

/* Linear flattening and logarithmic mapping, asserted as ratios of times
 * measured here, not as wall-clock budgets (which a loaded machine or a
 * sanitizer breaks, and a fast one passes by luck).  Flattening 8 times
 * the pieces takes about 8 times as long when it is linear (measured: 8 to
 * 10) and 64 times when it is quadratic: the bound 24 is between.  A
 * one-byte map deep in 4M pieces costs a binary search, like one near the
 * start, where a scan would cost a million times more: the bound 500 is
 * far from both (measured: 1 to 2, the deep searches missing the cache
 * more often).  Each time is the fastest of several runs, so that a pause of
 * the machine does not count. */
static void test_linear(void) {
  enum { N = 500000, BIG = 8 * N };
  MPI_Datatype t;
  struct aggio__flat *f = NULL;
  double small = best_flatten_time(N, 5, NULL, NULL);
  double big = best_flatten_time(BIG, 3, &f, &t);
  if (getenv("AGGIO_TEST_VERBOSE"))
    printf("flatten: %d pieces %.4f s, %d pieces %.4f s\n", N, small, BIG, big);
  CHECK(big < 24 * small,
        "flattening %d pieces took %.1f times as long as %d: not linear", BIG,
        big / small, N);
  if (!f) {
    MPI_Type_free(&t);
    return;
  }
  struct aggio__extents out = {0};
  aggio__flat_map(f, 0, 4 * (BIG / 2LL) + 2, 4 * 1000, &out);
  CHECK(out.n == 1001 && out.v[0].off == 8 * (BIG / 2LL) + 2, "map deep into %d pieces",
        BIG);
  aggio__extents_free(&out);
  int bad = 0;
  double shallow = best_map_time(f, 0, 1, &bad);
  double deep = best_map_time(f, BIG / 2, (BIG / 2 - 1) / 1000, &bad);
  if (getenv("AGGIO_TEST_VERBOSE"))
    printf("map: 1000 near the start %.6f s, 1000 deep %.6f s\n", shallow, deep);
  CHECK(bad == 0, "%d one-byte maps wrong", bad);
  CHECK(deep < 500 * shallow + 1e-3, "deep maps took %.0f times as long as shallow ones: "
        "a scan, not a binary search", deep / shallow);
  aggio__flat_release(f);
  MPI_Type_free(&t);
}

static void test_huge(void) {
  /* 2^35 bytes: counts x sizes beyond INT_MAX, one piece, instantly */
  MPI_Datatype in, t;
  MPI_Type_contiguous(1 << 12, MPI_DOUBLE, &in);
  MPI_Type_contiguous(1 << 20, in, &t);
  MPI_Type_commit(&t);
  struct aggio__flat *f;
  char err[256] = "";
  int rc = aggio__flatten(t, &f, err, sizeof err);
  CHECK(rc == 0 && f->n == 1 && f->size == (int64_t)1 << 35 &&
            f->extent == (int64_t)1 << 35,
        "2^35-byte contiguous: rc %d %s", rc, err);
  aggio__flat_release(f);
  MPI_Type_free(&t);
  /* offsets beyond 2^32 */
  MPI_Type_create_hvector(3, 1, (MPI_Aint)1 << 33, in, &t);
  MPI_Type_commit(&t);
  rc = aggio__flatten(t, &f, err, sizeof err);
  CHECK(rc == 0 && f->n == 3 && f->off[2] == (int64_t)1 << 34 &&
            f->len[2] == 8 << 12,
        "hvector with 8 GiB stride");
  aggio__flat_release(f);
  MPI_Type_free(&t);
  MPI_Type_free(&in);
  /* a big vector checked byte for byte too */
  MPI_Type_vector(200000, 3, 5, MPI_CHAR, &t);
  check_free("vector 200000 x 3 chars", t);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  test_named();
  test_basic_combiners();
  test_subarray();
  test_darray();
  test_nested();
  test_f90();
  test_cache();
  test_errors();
  test_huge();
  test_linear();
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
