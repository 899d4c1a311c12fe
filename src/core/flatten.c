/*
 * flatten.c - decodes an MPI datatype into a struct aggio__flat with
 * MPI_Type_get_envelope/get_contents, recursively, and caches the result as
 * an attribute of the type.  Like ROMIO's adio/common/flatten.c, each
 * constructor replicates its children's pieces at its displacements; unlike
 * it, a child is flattened once (and cached) and then tiled, so the cost is
 * linear in the number of output pieces.  subarray and darray are expanded
 * from their parameters as per-dimension runs of owned indices, the index
 * sets ROMIO's darray code builds its block/cyclic types from.
 */
#include "flatten.h"

#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggio.h"

/* ---- the process-wide cache key ---------------------------------------------
 * Created once (pthread_once), never changed afterwards.  probe_comm is a
 * private dup of MPI_COMM_SELF whose errors return instead of aborting: it
 * lets MPI_Pack tell us whether a type is committed, which MPI has no query
 * for.  Both are released when MPI_Finalize deletes MPI_COMM_SELF's
 * attributes (the standard's hook for library cleanup). */
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;
static int cache_keyval = MPI_KEYVAL_INVALID;
static int cleanup_keyval = MPI_KEYVAL_INVALID;
static MPI_Comm probe_comm = MPI_COMM_NULL;
static int cache_init_failed;

/* The cache's lookups and its reference's release, so that a hit is
 * retained before another thread (freeing or re-caching the type) can
 * drop the last reference. */
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int cache_delete(MPI_Datatype type, int keyval, void *val, void *extra) {
  (void)type, (void)keyval, (void)extra;
  pthread_mutex_lock(&cache_lock);
  aggio__flat_release(val);
  pthread_mutex_unlock(&cache_lock);
  return MPI_SUCCESS;
}

static int cleanup_at_finalize(MPI_Comm comm, int keyval, void *val,
                               void *extra) {
  (void)comm, (void)keyval, (void)val, (void)extra;
  if (probe_comm != MPI_COMM_NULL)
    MPI_Comm_free(&probe_comm);
  MPI_Type_free_keyval(&cache_keyval);
  MPI_Comm_free_keyval(&cleanup_keyval);
  return MPI_SUCCESS;
}

static void cache_init(void) {
  if (MPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, cache_delete,
                             &cache_keyval, NULL) != MPI_SUCCESS ||
      MPI_Comm_dup(MPI_COMM_SELF, &probe_comm) != MPI_SUCCESS ||
      MPI_Comm_set_errhandler(probe_comm, MPI_ERRORS_RETURN) != MPI_SUCCESS ||
      MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, cleanup_at_finalize,
                             &cleanup_keyval, NULL) != MPI_SUCCESS ||
      MPI_Comm_set_attr(MPI_COMM_SELF, cleanup_keyval, NULL) != MPI_SUCCESS)
    cache_init_failed = 1;
}

void aggio__flat_release(struct aggio__flat *f) {
  if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0)
    aggio__flat_free(f);
}

static void flat_retain(struct aggio__flat *f) {
  __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED);
}

/* ---- recursion state ------------------------------------------------------ */

/* What every level of the recursion shares: where the message goes. */
struct ctx {
  char *err;
  size_t errlen;
};

static int fail(struct ctx *x, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(struct ctx *x, int code, const char *fmt, ...) {
  if (x->err && x->errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, x->errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

/* One type's constructor arguments, as MPI_Type_get_contents returns them. */
struct contents {
  MPI_Datatype type; /* the type being decoded */
  int combiner;
  int ni, na, nd;
  int *ints;
  MPI_Aint *addrs;
  MPI_Datatype *types;
};

/* A growing piece list; pushes merge a piece into the previous one when they
 * touch, so contiguous runs stay one piece however they are built. */
struct pieces {
  int64_t *off, *len;
  int64_t n, cap;
};

static int get_flat(struct ctx *x, MPI_Datatype type, struct aggio__flat **out);

/* ---- piece lists ----------------------------------------------------------- */

static int pieces_push(struct pieces *p, int64_t off, int64_t len) {
  if (len <= 0)
    return 0;
  if (p->n > 0 && p->off[p->n - 1] + p->len[p->n - 1] == off) {
    p->len[p->n - 1] += len;
    return 0;
  }
  if (p->n == p->cap) {
    int64_t cap = p->cap ? 2 * p->cap : 64;
    int64_t *o = realloc(p->off, (size_t)cap * sizeof *o);
    if (!o)
      return AGGIO_ERR_NOMEM;
    p->off = o;
    int64_t *l = realloc(p->len, (size_t)cap * sizeof *l);
    if (!l)
      return AGGIO_ERR_NOMEM;
    p->len = l;
    p->cap = cap;
  }
  p->off[p->n] = off;
  p->len[p->n] = len;
  p->n++;
  return 0;
}

static void pieces_free(struct pieces *p) {
  free(p->off);
  free(p->len);
}

/* Appends `count` instances of child c tiled by its extent from disp. */
static int pieces_tile(struct pieces *p, const struct aggio__flat *c,
                       int64_t disp, int64_t count) {
  if (count <= 0 || c->n == 0)
    return 0;
  /* a child filling its extent tiles into one piece: O(1), not O(count) */
  if (c->n == 1 && c->len[0] == c->extent)
    return pieces_push(p, disp + c->off[0], count * c->len[0]);
  for (int64_t k = 0; k < count; k++) {
    int64_t base = disp + k * c->extent;
    for (int64_t i = 0; i < c->n; i++) {
      int rc = pieces_push(p, base + c->off[i], c->len[i]);
      if (rc)
        return rc;
    }
  }
  return 0;
}

/* ---- envelope and contents ------------------------------------------------- */

/* MPI-4 types built by the large-count (_c) constructors keep their counts
 * in a separate array that the int interface cannot return; refuse them by
 * name rather than misread them. */
static int envelope(struct ctx *x, MPI_Datatype t, struct contents *ct) {
#if MPI_VERSION >= 4
  MPI_Count ni, na, nc, nd;
  if (MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &ct->combiner) !=
      MPI_SUCCESS)
    return fail(x, AGGIO_ERR_TYPE, "MPI_Type_get_envelope_c failed");
  if (nc > 0)
    return fail(x, AGGIO_ERR_TYPE,
                "datatype built by an MPI-4 large-count (_c) constructor "
                "(combiner %d) is not supported",
                ct->combiner);
  ct->ni = (int)ni, ct->na = (int)na, ct->nd = (int)nd;
#else
  if (MPI_Type_get_envelope(t, &ct->ni, &ct->na, &ct->nd, &ct->combiner) !=
      MPI_SUCCESS)
    return fail(x, AGGIO_ERR_TYPE, "MPI_Type_get_envelope failed");
#endif
  return 0;
}

static int combiner_of(MPI_Datatype t) {
  int combiner;
#if MPI_VERSION >= 4
  MPI_Count ni, na, nc, nd;
  MPI_Type_get_envelope_c(t, &ni, &na, &nc, &nd, &combiner);
#else
  int ni, na, nd;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
#endif
  return combiner;
}

static int is_named(MPI_Datatype t) {
  return combiner_of(t) == MPI_COMBINER_NAMED;
}

/* Named and F90 types are predefined: get_contents returns them as they are
 * and they must not be freed. */
static int is_predefined(MPI_Datatype t) {
  int c = combiner_of(t);
  return c == MPI_COMBINER_NAMED || c == MPI_COMBINER_F90_REAL ||
         c == MPI_COMBINER_F90_COMPLEX || c == MPI_COMBINER_F90_INTEGER;
}

/* Frees the arrays and the derived types get_contents handed out. */
static void contents_free(struct contents *ct) {
  for (int i = 0; ct->types && i < ct->nd; i++)
    if (ct->types[i] != MPI_DATATYPE_NULL && !is_predefined(ct->types[i]))
      MPI_Type_free(&ct->types[i]);
  free(ct->ints);
  free(ct->addrs);
  free(ct->types);
}

static int contents_get(struct ctx *x, MPI_Datatype t, struct contents *ct) {
  memset(ct, 0, sizeof *ct);
  ct->type = t;
  int rc = envelope(x, t, ct);
  if (rc)
    return rc;
  ct->ints = malloc(((size_t)ct->ni + 1) * sizeof *ct->ints);
  ct->addrs = malloc(((size_t)ct->na + 1) * sizeof *ct->addrs);
  ct->types = malloc(((size_t)ct->nd + 1) * sizeof *ct->types);
  if (!ct->ints || !ct->addrs || !ct->types) {
    ct->nd = 0; /* nothing to free yet */
    contents_free(ct);
    return fail(x, AGGIO_ERR_NOMEM, "out of memory decoding a datatype");
  }
  for (int i = 0; i < ct->nd; i++)
    ct->types[i] = MPI_DATATYPE_NULL;
  if (ct->combiner == MPI_COMBINER_NAMED)
    return 0; /* get_contents is erroneous for named types */
  if (MPI_Type_get_contents(t, ct->ni, ct->na, ct->nd, ct->ints, ct->addrs,
                            ct->types) != MPI_SUCCESS) {
    contents_free(ct);
    return fail(x, AGGIO_ERR_TYPE, "MPI_Type_get_contents failed");
  }
  return 0;
}

/* ---- the constructors ----------------------------------------------------- *
 * Each appends the typemap of ct->type to p, given c = the flat of its one
 * child (types[0]); struct fetches its several children itself. */

static int build_contiguous(const struct contents *ct,
                            const struct aggio__flat *c, struct pieces *p) {
  return pieces_tile(p, c, 0, ct->ints[0]);
}

static int build_vector(const struct contents *ct, const struct aggio__flat *c,
                        struct pieces *p) {
  int64_t stride = ct->combiner == MPI_COMBINER_VECTOR
                       ? (int64_t)ct->ints[2] * c->extent
                       : (int64_t)ct->addrs[0];
  for (int64_t i = 0; i < ct->ints[0]; i++) {
    int rc = pieces_tile(p, c, i * stride, ct->ints[1]);
    if (rc)
      return rc;
  }
  return 0;
}

/* indexed and hindexed: blocklengths ints[1..n], displacements in extents
 * (ints[n+1..2n]) or bytes (addrs). */
static int build_indexed(const struct contents *ct, const struct aggio__flat *c,
                         struct pieces *p) {
  int n = ct->ints[0];
  for (int i = 0; i < n; i++) {
    int64_t disp = ct->combiner == MPI_COMBINER_INDEXED
                       ? (int64_t)ct->ints[n + 1 + i] * c->extent
                       : (int64_t)ct->addrs[i];
    int rc = pieces_tile(p, c, disp, ct->ints[1 + i]);
    if (rc)
      return rc;
  }
  return 0;
}

/* indexed_block and hindexed_block: one blocklength ints[1]. */
static int build_block(const struct contents *ct, const struct aggio__flat *c,
                       struct pieces *p) {
  for (int i = 0; i < ct->ints[0]; i++) {
    int64_t disp = ct->combiner == MPI_COMBINER_INDEXED_BLOCK
                       ? (int64_t)ct->ints[2 + i] * c->extent
                       : (int64_t)ct->addrs[i];
    int rc = pieces_tile(p, c, disp, ct->ints[1]);
    if (rc)
      return rc;
  }
  return 0;
}

static int build_struct(struct ctx *x, const struct contents *ct,
                        struct pieces *p) {
  for (int i = 0; i < ct->ints[0]; i++) {
    struct aggio__flat *c;
    int rc = get_flat(x, ct->types[i], &c);
    if (rc)
      return rc;
    rc = pieces_tile(p, c, ct->addrs[i], ct->ints[1 + i]);
    aggio__flat_release(c);
    if (rc)
      return rc;
  }
  return 0;
}

/* ---- multi-dimensional arrays (subarray, darray) --------------------------- */

/* One array dimension: its global size and the runs [start, start+len) of
 * indices this type selects, ascending; `at`/`in` walk them. */
struct dim {
  int64_t gsize;
  int64_t nruns;
  int64_t *start, *len;
  int64_t at, in; /* current run, offset inside it */
};

/* An array of nd dimensions, fastest-varying first. */
struct grid {
  int nd;
  struct dim *d;
};

static void grid_free(struct grid *g) {
  for (int i = 0; g->d && i < g->nd; i++) {
    free(g->d[i].start);
    free(g->d[i].len);
  }
  free(g->d);
}

static int dim_runs(struct dim *d, int64_t nruns) {
  d->start = malloc(((size_t)nruns + 1) * sizeof *d->start);
  d->len = malloc(((size_t)nruns + 1) * sizeof *d->len);
  d->nruns = 0;
  return d->start && d->len ? 0 : AGGIO_ERR_NOMEM;
}

static void dim_add(struct dim *d, int64_t start, int64_t len) {
  if (len > 0) {
    d->start[d->nruns] = start;
    d->len[d->nruns] = len;
    d->nruns++;
  }
}

/* Advances the odometer over dimensions 1..nd-1; 0 when it wraps. */
static int grid_next(struct grid *g) {
  for (int k = 1; k < g->nd; k++) {
    struct dim *d = &g->d[k];
    if (++d->in < d->len[d->at])
      return 1;
    d->in = 0;
    if (++d->at < d->nruns)
      return 1;
    d->at = 0;
  }
  return 0;
}

/* Emits the selected elements in typemap order: the outer dimensions by
 * odometer, the fastest one run by run (each run is one pieces_tile). */
static int grid_emit(const struct grid *gc, const struct aggio__flat *c,
                     struct pieces *p) {
  struct grid g = *gc;
  for (int k = 0; k < g.nd; k++)
    if (g.d[k].nruns == 0)
      return 0; /* empty selection */
  int rc = 0;
  do {
    int64_t base = 0, stride = c->extent;
    for (int k = 0; k < g.nd; k++) {
      if (k > 0)
        base += (g.d[k].start[g.d[k].at] + g.d[k].in) * stride;
      stride *= g.d[k].gsize;
    }
    const struct dim *d0 = &g.d[0];
    for (int64_t r = 0; r < d0->nruns && !rc; r++)
      rc = pieces_tile(p, c, base + d0->start[r] * c->extent, d0->len[r]);
  } while (!rc && grid_next(&g));
  return rc;
}

/* Dimension i of the constructor's arguments, for the fastest-first index k. */
static int dim_index(int k, int nd, int order) {
  return order == MPI_ORDER_C ? nd - 1 - k : k;
}

static int grid_alloc(struct grid *g, int nd) {
  g->nd = nd;
  g->d = calloc((size_t)nd, sizeof *g->d);
  return g->d ? 0 : AGGIO_ERR_NOMEM;
}

/* subarray: ndims, sizes[], subsizes[], starts[], order. */
static int build_subarray(const struct contents *ct,
                          const struct aggio__flat *c, struct pieces *p) {
  const int *v = ct->ints;
  int nd = v[0], order = v[1 + 3 * nd];
  struct grid g;
  int rc = grid_alloc(&g, nd);
  for (int k = 0; !rc && k < nd; k++) {
    int i = dim_index(k, nd, order);
    g.d[k].gsize = v[1 + i];
    rc = dim_runs(&g.d[k], 1);
    if (!rc)
      dim_add(&g.d[k], v[1 + 2 * nd + i], v[1 + nd + i]);
  }
  if (!rc)
    rc = grid_emit(&g, c, p);
  grid_free(&g);
  return rc;
}

/* The indices of one darray dimension that process coordinate `coord` of
 * `np` owns, by the standard's block / cyclic(k) / none rules. */
static int darray_dim(struct dim *d, int distrib, int darg, int np,
                      int coord) {
  int64_t g = d->gsize;
  if (distrib == MPI_DISTRIBUTE_NONE) {
    int rc = dim_runs(d, 1);
    if (!rc)
      dim_add(d, 0, g);
    return rc;
  }
  if (distrib == MPI_DISTRIBUTE_BLOCK) {
    int64_t b = darg == MPI_DISTRIBUTE_DFLT_DARG ? (g + np - 1) / np : darg;
    int64_t s = coord * b, e = s + b < g ? s + b : g;
    int rc = dim_runs(d, 1);
    if (!rc)
      dim_add(d, s, e - s);
    return rc;
  }
  /* cyclic(k): blocks of k every np*k, starting at coord*k */
  int64_t k = darg == MPI_DISTRIBUTE_DFLT_DARG ? 1 : darg;
  int64_t step = k * np;
  int rc = dim_runs(d, g / step + 1);
  for (int64_t s = coord * k; !rc && s < g; s += step)
    dim_add(d, s, s + k < g ? k : g - s);
  return rc;
}

/* This rank's coordinate in dimension i of the process grid, which is
 * row-major (the last dimension varies fastest). */
static int darray_coord(int rank, const int *psizes, int nd, int i) {
  int below = 1;
  for (int j = i + 1; j < nd; j++)
    below *= psizes[j];
  return rank / below % psizes[i];
}

/* darray: size, rank, ndims, gsizes[], distribs[], dargs[], psizes[], order
 * (size is implied by psizes). */
static int build_darray(const struct contents *ct, const struct aggio__flat *c,
                        struct pieces *p) {
  const int *v = ct->ints;
  int rank = v[1], nd = v[2], order = v[3 + 4 * nd];
  const int *gsizes = v + 3, *distribs = v + 3 + nd, *dargs = v + 3 + 2 * nd,
            *psizes = v + 3 + 3 * nd;
  struct grid g;
  int rc = grid_alloc(&g, nd);
  for (int k = 0; !rc && k < nd; k++) {
    int i = dim_index(k, nd, order);
    g.d[k].gsize = gsizes[i];
    rc = darray_dim(&g.d[k], distribs[i], dargs[i], psizes[i],
                    darray_coord(rank, psizes, nd, i));
  }
  if (!rc)
    rc = grid_emit(&g, c, p);
  grid_free(&g);
  return rc;
}

/* ---- named types ------------------------------------------------------------ */

/* The C pair types used by MINLOC/MAXLOC are named but not always dense:
 * MPI lays them out like the C struct {T value; int index;}, so
 * MPI_SHORT_INT has padding between its two parts. */
struct pair_short { short v; int i; };
struct pair_float { float v; int i; };
struct pair_double { double v; int i; };
struct pair_long { long v; int i; };
struct pair_ldouble { long double v; int i; };

static int named_pieces(MPI_Datatype t, int64_t size, struct pieces *p) {
  struct { MPI_Datatype t; int64_t vsize, ioff; } pairs[] = {
      {MPI_SHORT_INT, sizeof(short), offsetof(struct pair_short, i)},
      {MPI_FLOAT_INT, sizeof(float), offsetof(struct pair_float, i)},
      {MPI_DOUBLE_INT, sizeof(double), offsetof(struct pair_double, i)},
      {MPI_LONG_INT, sizeof(long), offsetof(struct pair_long, i)},
      {MPI_LONG_DOUBLE_INT, sizeof(long double),
       offsetof(struct pair_ldouble, i)},
  };
  for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
    if (t != pairs[k].t)
      continue;
    int rc = pieces_push(p, 0, pairs[k].vsize);
    return rc ? rc : pieces_push(p, pairs[k].ioff, size - pairs[k].vsize);
  }
  return pieces_push(p, 0, size);
}

/* ---- decoding one type ------------------------------------------------------ */

static int build_one_child(struct ctx *x, const struct contents *ct,
                           struct pieces *p) {
  struct aggio__flat *c;
  int rc = get_flat(x, ct->types[0], &c);
  if (rc)
    return rc;
  switch (ct->combiner) {
  case MPI_COMBINER_DUP:
  case MPI_COMBINER_RESIZED: rc = pieces_tile(p, c, 0, 1); break;
  case MPI_COMBINER_CONTIGUOUS: rc = build_contiguous(ct, c, p); break;
  case MPI_COMBINER_VECTOR:
  case MPI_COMBINER_HVECTOR: rc = build_vector(ct, c, p); break;
  case MPI_COMBINER_INDEXED:
  case MPI_COMBINER_HINDEXED: rc = build_indexed(ct, c, p); break;
  case MPI_COMBINER_INDEXED_BLOCK:
  case MPI_COMBINER_HINDEXED_BLOCK: rc = build_block(ct, c, p); break;
  case MPI_COMBINER_SUBARRAY: rc = build_subarray(ct, c, p); break;
  case MPI_COMBINER_DARRAY: rc = build_darray(ct, c, p); break;
  }
  aggio__flat_release(c);
  if (rc == AGGIO_ERR_NOMEM)
    fail(x, rc, "out of memory flattening a datatype");
  return rc;
}

/* Appends the typemap of ct->type, by combiner. */
static int build(struct ctx *x, const struct contents *ct, int64_t size,
                 struct pieces *p) {
  switch (ct->combiner) {
  case MPI_COMBINER_NAMED: return named_pieces(ct->type, size, p);
  case MPI_COMBINER_F90_REAL:
  case MPI_COMBINER_F90_COMPLEX:
  case MPI_COMBINER_F90_INTEGER: return pieces_push(p, 0, size);
  case MPI_COMBINER_STRUCT: return build_struct(x, ct, p);
  case MPI_COMBINER_DUP:
  case MPI_COMBINER_RESIZED:
  case MPI_COMBINER_CONTIGUOUS:
  case MPI_COMBINER_VECTOR:
  case MPI_COMBINER_HVECTOR:
  case MPI_COMBINER_INDEXED:
  case MPI_COMBINER_HINDEXED:
  case MPI_COMBINER_INDEXED_BLOCK:
  case MPI_COMBINER_HINDEXED_BLOCK:
  case MPI_COMBINER_SUBARRAY:
  case MPI_COMBINER_DARRAY: return build_one_child(x, ct, p);
  default:
    return fail(x, AGGIO_ERR_TYPE, "unsupported datatype combiner %d",
                ct->combiner);
  }
}

/* Decodes `type` into a new flat (one reference, not cached). */
static int decode(struct ctx *x, MPI_Datatype type, struct aggio__flat **out) {
  MPI_Count lb, extent, size;
  if (MPI_Type_get_extent_x(type, &lb, &extent) != MPI_SUCCESS ||
      MPI_Type_size_x(type, &size) != MPI_SUCCESS || size == MPI_UNDEFINED)
    return fail(x, AGGIO_ERR_TYPE, "cannot get the datatype's extent/size");
  struct contents ct;
  int rc = contents_get(x, type, &ct);
  if (rc)
    return rc;
  struct pieces p = {0};
  rc = build(x, &ct, size, &p);
  contents_free(&ct);
  if (!rc) {
    *out = aggio__flat_new(p.off, p.len, p.n, lb, extent);
    if (!*out)
      rc = fail(x, AGGIO_ERR_NOMEM, "out of memory flattening a datatype");
  }
  pieces_free(&p);
  if (!rc && (*out)->size != size) {
    rc = fail(x, AGGIO_ERR_TYPE,
              "flattened %lld bytes but MPI_Type_size says %lld (combiner %d)",
              (long long)(*out)->size, (long long)size, ct.combiner);
    aggio__flat_free(*out);
    *out = NULL;
  }
  return rc;
}

/* The flat of any type, committed or not (children need not be): named
 * types fresh each time, derived ones from the cache or decoded and cached. */
static int get_flat(struct ctx *x, MPI_Datatype type, struct aggio__flat **out) {
  if (is_named(type))
    return decode(x, type, out);
  void *val;
  int found = 0;
  pthread_mutex_lock(&cache_lock);
  MPI_Type_get_attr(type, cache_keyval, &val, &found);
  if (found) {
    *out = val;
    flat_retain(*out);
  }
  pthread_mutex_unlock(&cache_lock);
  if (found)
    return 0;
  int rc = decode(x, type, out);
  if (rc)
    return rc;
  flat_retain(*out); /* the cache's reference, dropped by cache_delete */
  if (MPI_Type_set_attr(type, cache_keyval, *out) != MPI_SUCCESS)
    aggio__flat_release(*out);
  return 0;
}

/* MPI has no "is committed" query, but MPI_Pack refuses uncommitted types
 * even for count 0; on probe_comm that error returns instead of aborting. */
static int is_committed(MPI_Datatype type) {
  char byte = 0;
  int pos = 0;
  return MPI_Pack(&byte, 0, type, &byte, 0, &pos, probe_comm) == MPI_SUCCESS;
}

void aggio__flatten_init(void) { pthread_once(&cache_once, cache_init); }

int aggio__flatten(MPI_Datatype type, struct aggio__flat **out, char *err,
                   size_t errlen) {
  struct ctx x = {err, errlen};
  *out = NULL;
  if (type == MPI_DATATYPE_NULL)
    return fail(&x, AGGIO_ERR_TYPE, "datatype is MPI_DATATYPE_NULL");
  pthread_once(&cache_once, cache_init);
  if (cache_init_failed)
    return fail(&x, AGGIO_ERR_MPI, "cannot create the datatype cache keyval");
  if (!is_committed(type))
    return fail(&x, AGGIO_ERR_TYPE,
                "datatype is not committed (call MPI_Type_commit first)");
  return get_flat(&x, type, out);
}
