/*
 * patterns.c - the access patterns of aggio-bench: which file extents each
 * rank owns and in what calls it moves them.  IOR's segmented layout, IO-500's
 * ior-hard (47008-byte records interleaved across ranks), HACC-IO's AoS and
 * SoA particle layouts, Tessier et al.'s random-size packed micro-benchmark
 * and a 3-D block decomposition written through a subarray file view.
 * Every pattern repeats its layout -s times one after another in the file.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* ---- layout building ------------------------------------------------------ */

static void *grow(void *p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return p;
  size_t n = *cap ? *cap * 2 : 64;
  while (n < need) n *= 2;
  void *q = realloc(p, n * elem);
  if (!q) {
    fprintf(stderr, "aggio-bench: out of memory for the layout\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  *cap = n;
  return q;
}

static void add_extent(struct bench_layout *l, int64_t off, int64_t len) {
  if (len <= 0) return;
  l->ext = grow(l->ext, &l->ext_cap, l->next + 1, sizeof *l->ext);
  l->ext[l->next++] = (struct bench_extent){.off = off, .len = len};
  l->bytes += len;
}

/* Closes a call covering everything added since the previous one. */
static void end_call(struct bench_layout *l, int64_t *call_start) {
  l->calls = grow(l->calls, &l->call_cap, l->ncalls + 1, sizeof *l->calls);
  l->calls[l->ncalls++] =
      (struct bench_call){.pos = *call_start, .len = l->bytes - *call_start, .off = -1};
  *call_start = l->bytes;
}

void bench_layout_free(struct bench_layout *l) {
  free(l->ext);
  free(l->calls);
  memset(l, 0, sizeof *l);
}

void bench_layout_cap_calls(struct bench_layout *l, int64_t cap) {
  size_t n = 0;
  for (size_t i = 0; i < l->ncalls; i++)
    n += l->calls[i].len > cap ? (size_t)((l->calls[i].len + cap - 1) / cap) : 1;
  if (n == l->ncalls) return;
  struct bench_call *c = malloc(n * sizeof *c);
  if (!c) MPI_Abort(MPI_COMM_WORLD, 2);
  size_t k = 0;
  for (size_t i = 0; i < l->ncalls; i++) {
    int64_t pos = l->calls[i].pos, left = l->calls[i].len;
    do {
      int64_t len = left > cap ? cap : left;
      c[k++] = (struct bench_call){.pos = pos, .len = len, .off = -1};
      pos += len;
      left -= len;
    } while (left > 0);
  }
  free(l->calls);
  l->calls = c;
  l->ncalls = l->call_cap = n;
}

/* Does the call [pos, pos + len) of the stream, which starts in extent e
 * (at stream position epos), cover one contiguous piece of the file? */
static int call_contiguous(const struct bench_layout *l, size_t e, int64_t epos,
                           const struct bench_call *c) {
  for (; epos + l->ext[e].len < c->pos + c->len; epos += l->ext[e++].len)
    if (l->ext[e].off + l->ext[e].len != l->ext[e + 1].off) return 0;
  return 1;
}

int bench_layout_map_calls(struct bench_layout *l) {
  size_t e = 0;     /* the extent holding the call's first byte */
  int64_t epos = 0; /* its stream position */
  int all = 1;
  for (size_t i = 0; i < l->ncalls; i++) {
    struct bench_call *c = &l->calls[i];
    if (c->len == 0) {
      c->off = 0;
      continue;
    }
    while (epos + l->ext[e].len <= c->pos) epos += l->ext[e++].len;
    int whole = call_contiguous(l, e, epos, c);
    c->off = whole ? l->ext[e].off + (c->pos - epos) : -1;
    all &= whole;
  }
  return all;
}

/* ---- segmented: IOR's layout ----------------------------------------------- */

static void segmented_defaults(struct bench_params *p, int nranks) {
  (void)nranks;
  if (!p->transfer) p->transfer = 256 * BENCH_KIB;
  if (!p->block) p->block = BENCH_MIB;
}

/* Segment s holds every rank's block in rank order; a block is moved in
 * transfers of -t bytes, each its own call (IOR). */
static int segmented_layout(const struct bench_params *p, int rank, int nranks,
                            struct bench_layout *l) {
  if (p->block % p->transfer) return -1;
  int64_t start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    int64_t base = (s * nranks + rank) * p->block;
    for (int64_t o = 0; o < p->block; o += p->transfer) {
      add_extent(l, base + o, p->transfer);
      end_call(l, &start);
    }
  }
  l->file_bytes = p->segments * nranks * p->block;
  return 0;
}

/* A checkpoint: IOR's layout with one call per rank per segment (-t = -b
 * by default), a segment being one iteration's checkpoint (--compute). */
static void checkpoint_defaults(struct bench_params *p, int nranks) {
  (void)nranks;
  if (!p->block) p->block = 16 * BENCH_MIB;
  if (!p->transfer) p->transfer = p->block;
}

/* ---- strided: IO-500 ior-hard ---------------------------------------------- */

static void strided_defaults(struct bench_params *p, int nranks) {
  (void)nranks;
  if (!p->transfer) p->transfer = 47008;
  if (!p->block) p->block = p->transfer;
}

/* Records of -t bytes dealt round-robin over the ranks: record j of rank r
 * in segment s sits at ((s * k + j) * nranks + r) * t, k = b / t.  One call
 * per segment. */
static int strided_layout(const struct bench_params *p, int rank, int nranks,
                          struct bench_layout *l) {
  if (p->block % p->transfer) return -1;
  int64_t k = p->block / p->transfer, t = p->transfer, start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    for (int64_t j = 0; j < k; j++) add_extent(l, ((s * k + j) * nranks + rank) * t, t);
    end_call(l, &start);
  }
  l->file_bytes = p->segments * k * nranks * t;
  return 0;
}

/* ---- HACC-IO ---------------------------------------------------------------- */

/* xx yy zz vx vy vz phi (float), pid (int64), mask (uint16): 38 bytes. */
static const int hacc_var_size[] = {4, 4, 4, 4, 4, 4, 4, 8, 2};
#define HACC_NVARS ((int)(sizeof hacc_var_size / sizeof hacc_var_size[0]))
#define HACC_RECORD 38

static void hacc_defaults(struct bench_params *p, int nranks) {
  (void)nranks;
  if (!p->block) p->block = BENCH_MIB;
  if (!p->particles) p->particles = p->block / HACC_RECORD;
  if (!p->particles) p->particles = 1;
  p->block = p->particles * HACC_RECORD;
}

/* Array of structures: each rank's particles as whole records, in rank
 * order; one call per segment. */
static int hacc_aos_layout(const struct bench_params *p, int rank, int nranks,
                           struct bench_layout *l) {
  int64_t n = p->particles, seg = n * HACC_RECORD * nranks, start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    add_extent(l, s * seg + rank * n * HACC_RECORD, n * HACC_RECORD);
    end_call(l, &start);
  }
  l->file_bytes = p->segments * seg;
  return 0;
}

/* Structure of arrays: variable v of every rank, in rank order, then
 * variable v + 1; one call per variable (as HACC-IO does). */
static int hacc_soa_layout(const struct bench_params *p, int rank, int nranks,
                           struct bench_layout *l) {
  int64_t n = p->particles, seg = n * HACC_RECORD * nranks, start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    int64_t base = s * seg;
    for (int v = 0; v < HACC_NVARS; v++) {
      int64_t sz = hacc_var_size[v];
      add_extent(l, base + rank * n * sz, n * sz);
      end_call(l, &start);
      base += n * sz * nranks;
    }
  }
  l->file_bytes = p->segments * seg;
  return 0;
}

/* ---- random: Tessier et al.'s topology-aware aggregation benchmark --------- */

static void random_defaults(struct bench_params *p, int nranks) {
  (void)nranks;
  if (!p->block) p->block = 2 * BENCH_MIB;
}

/* splitmix64's finaliser: a counter-based generator. */
static uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static int64_t random_amount(const struct bench_params *p, int64_t s, int r,
                             int nranks) {
  uint64_t x = mix64(p->seed ^ mix64((uint64_t)(s * nranks + r) + 0x5151));
  return (int64_t)(x % (uint64_t)(p->block + 1));
}

/* In segment s every rank writes random_amount() bytes in [0, b], packed in
 * rank order; one call per segment. */
static int random_layout(const struct bench_params *p, int rank, int nranks,
                         struct bench_layout *l) {
  int64_t base = 0, start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    int64_t before = 0, total = 0;
    for (int r = 0; r < nranks; r++) {
      int64_t a = random_amount(p, s, r, nranks);
      if (r < rank) before += a;
      total += a;
    }
    add_extent(l, base + before, random_amount(p, s, rank, nranks));
    end_call(l, &start);
    base += total;
  }
  l->file_bytes = base;
  return 0;
}

/* ---- subarray: 3-D block decomposition ------------------------------------- */

#define SUB_ELEM 8 /* bytes per element (a double) */

static void subarray_defaults(struct bench_params *p, int nranks) {
  if (!p->block) p->block = BENCH_MIB;
  if (!p->sub[0]) {
    int n = (int)floor(cbrt((double)(p->block / SUB_ELEM)) + 1e-9);
    if (n < 1) n = 1;
    p->sub[0] = p->sub[1] = p->sub[2] = n;
  }
  for (int d = 0; d < 3; d++)
    if (p->sub[d] < 1) p->sub[d] = 1;
  if (!p->grid[0]) {
    int dims[3] = {0, 0, 0};
    MPI_Dims_create(nranks, 3, dims);
    memcpy(p->grid, dims, sizeof dims);
  }
  p->block = (int64_t)p->sub[0] * p->sub[1] * p->sub[2] * SUB_ELEM;
}

static void subarray_coords(const struct bench_params *p, int rank, int c[3]) {
  c[2] = rank % p->grid[2];
  c[1] = rank / p->grid[2] % p->grid[1];
  c[0] = rank / (p->grid[2] * p->grid[1]);
}

/* The global array is sub[d] * grid[d] elements in each dimension, C order;
 * a rank owns the block at its (row-major) grid coordinates.  One call per
 * segment (time step). */
static int subarray_layout(const struct bench_params *p, int rank, int nranks,
                           struct bench_layout *l) {
  if (p->grid[0] * p->grid[1] * p->grid[2] != nranks) return -1;
  int c[3];
  subarray_coords(p, rank, c);
  int64_t L0 = p->sub[0], L1 = p->sub[1], L2 = p->sub[2];
  int64_t G1 = L1 * p->grid[1], G2 = L2 * p->grid[2];
  int64_t seg = L0 * p->grid[0] * G1 * G2 * SUB_ELEM, start = 0;
  for (int64_t s = 0; s < p->segments; s++) {
    for (int64_t i = 0; i < L0; i++)
      for (int64_t j = 0; j < L1; j++) {
        int64_t e = ((c[0] * L0 + i) * G1 + c[1] * L1 + j) * G2 + c[2] * L2;
        add_extent(l, s * seg + e * SUB_ELEM, L2 * SUB_ELEM);
      }
    end_call(l, &start);
  }
  l->file_bytes = p->segments * seg;
  return 0;
}

static int subarray_filetype(const struct bench_params *p, int rank, int nranks,
                             const struct bench_layout *l, MPI_Datatype *type) {
  (void)nranks;
  (void)l;
  int c[3], gsize[3], start[3];
  subarray_coords(p, rank, c);
  for (int d = 0; d < 3; d++) {
    gsize[d] = p->sub[d] * p->grid[d];
    start[d] = c[d] * p->sub[d];
  }
  MPI_Datatype elem, one;
  MPI_Type_contiguous(SUB_ELEM, MPI_BYTE, &elem);
  MPI_Type_create_subarray(3, gsize, (int *)p->sub, start, MPI_ORDER_C, elem, &one);
  /* The subarray type's extent is the whole global array: time steps tile. */
  int rc = MPI_Type_contiguous((int)p->segments, one, type);
  MPI_Type_free(&one);
  MPI_Type_free(&elem);
  return rc == MPI_SUCCESS ? MPI_Type_commit(type) : -1;
}

/* ---- the generic view ------------------------------------------------------ */

int bench_layout_filetype(const struct bench_layout *l, MPI_Datatype *type) {
  if (l->next == 0) { /* a rank with nothing to move: any type will do */
    *type = MPI_BYTE;
    return 0;
  }
  int *lens = malloc(l->next * 2 * sizeof *lens);
  MPI_Aint *disps = malloc(l->next * 2 * sizeof *disps);
  if (!lens || !disps) MPI_Abort(MPI_COMM_WORLD, 2);
  int n = 0;
  int64_t end = -1;
  for (size_t i = 0; i < l->next; i++) {
    int64_t off = l->ext[i].off, len = l->ext[i].len;
    if (off < end) { /* a view must not go backwards */
      free(lens);
      free(disps);
      return -1;
    }
    while (len > 0) {
      int64_t piece = len > BENCH_GIB ? BENCH_GIB : len;
      if (off == end && (int64_t)lens[n - 1] + piece <= BENCH_GIB) {
        lens[n - 1] += (int)piece;
      } else {
        disps[n] = (MPI_Aint)off;
        lens[n++] = (int)piece;
      }
      off += piece;
      len -= piece;
      end = off;
    }
  }
  int rc = MPI_Type_create_hindexed(n, lens, disps, MPI_BYTE, type);
  free(lens);
  free(disps);
  return rc == MPI_SUCCESS ? MPI_Type_commit(type) : -1;
}

/* ---- the registry ----------------------------------------------------------- */

static const struct bench_pattern patterns[] = {
    {.name = "segmented",
     .doc = "IOR's layout: per segment, each rank's -b block; -t transfers",
     .defaults = segmented_defaults,
     .layout = segmented_layout},
    {.name = "strided",
     .doc = "IO-500 ior-hard: -t 47008 records round-robin over ranks",
     .defaults = strided_defaults,
     .layout = strided_layout},
    {.name = "checkpoint",
     .doc = "segmented with -t = -b (default 16m): one block per rank per iteration",
     .defaults = checkpoint_defaults,
     .layout = segmented_layout},
    {.name = "hacc-aos",
     .doc = "HACC-IO, array of 38-byte particle records",
     .defaults = hacc_defaults,
     .layout = hacc_aos_layout},
    {.name = "hacc-soa",
     .doc = "HACC-IO, each of the 9 variables for all ranks in turn",
     .defaults = hacc_defaults,
     .layout = hacc_soa_layout},
    {.name = "random",
     .doc = "random 0..-b bytes per rank (seeded), packed in rank order",
     .defaults = random_defaults,
     .layout = random_layout},
    {.name = "subarray",
     .doc = "3-D block decomposition through a subarray file view",
     .defaults = subarray_defaults,
     .layout = subarray_layout,
     .filetype = subarray_filetype},
};

const struct bench_pattern *bench_pattern_find(const char *name) {
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
    if (!strcmp(patterns[i].name, name)) return &patterns[i];
  if (!strcmp(name, "ior") || !strcmp(name, "ior-easy")) return &patterns[0];
  if (!strcmp(name, "ior-hard")) return &patterns[1];
  return NULL;
}

void bench_pattern_list(FILE *out) {
  for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++)
    fprintf(out, "    %-10s %s\n", patterns[i].name, patterns[i].doc);
}
