/*
 * test_consistency.c - MPI-IO's consistency rules under write-behind.
 *
 * Seeded random sequences of collective writes (which write-behind keeps
 * in node caches), independent writes and reads, collective reads, sync
 * (with and without sync-barrier-sync), set_size and get_size run twice:
 * through aggio and through the MPI library's own MPI-IO.  A model of the
 * file predicts every byte a call may rely on under MPI's rules:
 *   - a process sees its own writes (MPI 3.1 13.6.1, case 1): independent
 *     reads and writes touch only bytes the reader wrote itself or bytes
 *     made visible by a sync;
 *   - after sync-barrier-sync every process sees every write;
 *   - collective reads see every earlier write, and a later collective
 *     write wins over an earlier one, as with two-phase I/O (stronger than
 *     MPI requires; aggio keeps it).
 * Every read is compared with the model (data and count), and at the end
 * both files are compared byte for byte with the model.  Small caches and
 * emulated nodes make blocks be evicted, written behind and flushed in
 * every order.
 *
 * aggio-test-ranks: 1 2 4 8
 *
 * Options: --seed N (AGGIO_TEST_SEED), --cases N (AGGIO_TEST_CASES),
 * --case K (AGGIO_TEST_CASE), -v.
 */
#include <aggio.h>

#include "harness.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* ---- deterministic random numbers (splitmix64) --------------------------- */

typedef struct {
  uint64_t s;
} rng_t;

static uint64_t rng_next(rng_t *r) {
  uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static int64_t rng_range(rng_t *r, int64_t lo, int64_t hi) {
  return hi <= lo ? lo : lo + (int64_t)(rng_next(r) % (uint64_t)(hi - lo + 1));
}

/* A length in [0, most]: often small, sometimes the whole room, so that
 * both single bytes and whole cache blocks occur. */
static int64_t random_len(rng_t *g, int64_t most) {
  switch (rng_range(g, 0, 3)) {
  case 0: return rng_range(g, 0, most < 16 ? most : 16);
  case 1: return most;
  default: return rng_range(g, 0, most);
  }
}

/* The byte written at `off` by step `step` of case `k`. */
static unsigned char datum(int k, int step, int64_t off) {
  uint64_t x = ((uint64_t)k << 40) ^ ((uint64_t)step << 24) ^ (uint64_t)off;
  x *= 0x9E3779B97F4A7C15ull;
  return (unsigned char)(x >> 56) | 1; /* never 0: zeros are holes */
}

/* ---- the model -------------------------------------------------------------- */

#define SYNCED -1

struct model {
  int64_t cap;          /* bytes tracked */
  int64_t size;         /* the file's size */
  int64_t synced_size;  /* size every process may rely on */
  unsigned char *data;
  int *writer;          /* last writer not yet made visible by a sync, or SYNCED */
  unsigned char *hole;  /* a hole that a collective write spanned past the end
                         * of file: ROMIO and OMPIO may fill it with whatever
                         * their read-modify-write buffer held; aggio leaves 0 */
};

static void model_write(struct model *m, int rank, int k, int step, int64_t off, int64_t len) {
  for (int64_t i = off; i < off + len; i++) {
    m->data[i] = datum(k, step, i);
    m->writer[i] = rank;
    m->hole[i] = 0;
  }
  if (len > 0 && off + len > m->size) /* an empty write does not extend the file */
    m->size = off + len;
}

/* 1 when rank may rely on every byte of [off, off + len). */
static int visible(const struct model *m, int rank, int64_t off, int64_t len) {
  for (int64_t i = off; i < off + len; i++) {
    int w = m->writer[i];
    if (!(w == rank || (w == SYNCED && i < m->synced_size)))
      return 0;
  }
  return 1;
}

/* ---- the two implementations side by side ----------------------------------- */

struct ctx {
  int rank, np, verbose;
  uint64_t seed;
  int k;                 /* case */
  char apath[512], mpath[512];
  aggio_file afh;
  MPI_File mfh;
  struct model m;
  int64_t cap;
  unsigned char *buf, *got;
  char cfg[400];
  int failed;
  int strict_reference, warnings;
};

static void fail_note(struct ctx *c, int step, const char *what) {
  if (!c->failed)
    fprintf(stderr, "rank %d: case %d (seed %llu, %s) step %d: %s\n", c->rank, c->k,
            (unsigned long long)c->seed, c->cfg, step, what);
  c->failed = 1;
}

/* The MPI library's MPI-IO is judged like aggio, except in holes it may
 * fill (model.hole); a disagreement elsewhere is a failure with
 * AGGIO_TEST_STRICT_REFERENCE=1 and a counted warning otherwise, since the
 * model (MPI's rules) is the judge. */
static void mismatch(struct ctx *c, int step, int reference, const char *what) {
  if (reference && !c->strict_reference) {
    if (c->warnings++ < 3)
      fprintf(stderr, "warning: rank %d: case %d step %d: the MPI library's MPI-IO disagrees "
              "with MPI's rules: %s\n", c->rank, c->k, step, what);
    return;
  }
  CHECK(0, "%s", what);
  fail_note(c, step, what);
}

static void check_read(struct ctx *c, int step, int reference, const char *who,
                       const unsigned char *b, int64_t off, int64_t len, MPI_Count n,
                       int64_t want_n) {
  char what[200];
  snprintf(what, sizeof what, "%s read [%lld, +%lld): count %lld, expected %lld", who,
           (long long)off, (long long)len, (long long)n, (long long)want_n);
  if (n != want_n)
    mismatch(c, step, reference, what);
  for (int64_t i = 0; i < want_n && i < n; i++)
    if (b[i] != c->m.data[off + i] && !(reference && c->m.hole[off + i])) {
      snprintf(what, sizeof what, "%s read [%lld, +%lld): byte %lld is %d, expected %d", who,
               (long long)off, (long long)len, (long long)(off + i), b[i], c->m.data[off + i]);
      mismatch(c, step, reference, what);
      break;
    }
}

static void fill(struct ctx *c, int step, int64_t off, int64_t len) {
  for (int64_t i = 0; i < len; i++)
    c->buf[i] = datum(c->k, step, off + i);
}

static void expect_ok(struct ctx *c, int step, const char *what, int arc, int mrc) {
  CHECK(arc == AGGIO_SUCCESS, "%s (aggio): %s", what, aggio_error_message());
  CHECK(mrc == MPI_SUCCESS, "%s (MPI-IO) failed", what);
  if (arc != AGGIO_SUCCESS || mrc != MPI_SUCCESS)
    fail_note(c, step, what);
}

/* ---- the operations ------------------------------------------------------------ */

/* Every rank writes one random range of its own chunk (ranks' ranges are
 * disjoint within a call; across calls they overlap freely). */
static void op_coll_write(struct ctx *c, rng_t *g, int step) {
  int nchunks = 4 * c->np;
  int64_t chunk = c->cap / nchunks;
  int perm[4 * 64];
  for (int i = 0; i < nchunks; i++)
    perm[i] = i;
  for (int i = nchunks - 1; i > 0; i--) {
    int j = (int)rng_range(g, 0, i), t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
  int64_t off = 0, len = 0, old_size = c->m.size, lo = INT64_MAX, hi = 0;
  for (int r = 0; r < c->np; r++) {
    int64_t a = perm[r] * chunk + rng_range(g, 0, chunk - 1);
    int64_t l = random_len(g, chunk - (a - perm[r] * chunk));
    if (r == c->rank)
      off = a, len = l;
    if (l > 0) {
      lo = a < lo ? a : lo;
      hi = a + l > hi ? a + l : hi;
    }
    model_write(&c->m, r, c->k, step, a, l);
  }
  for (int64_t i = lo > old_size ? lo : old_size; i < hi; i++)
    c->m.hole[i] |= c->m.writer[i] == SYNCED && c->m.data[i] == 0;
  fill(c, step, off, len);
  int arc = aggio_file_write_at_all(c->afh, off, c->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
  int mrc = MPI_File_write_at_all(c->mfh, off, c->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_ok(c, step, "write_at_all", arc, mrc);
}

/* One random rank writes independently over bytes it may rely on (its own
 * or synced ones): the longest such run from a random start. */
static int64_t own_run(struct ctx *c, int w, int64_t start, int64_t most) {
  int64_t n = 0;
  while (n < most && start + n < c->cap && visible(&c->m, w, start + n, 1))
    n++;
  return n;
}

static void op_ind_write(struct ctx *c, rng_t *g, int step) {
  int w = (int)rng_range(g, 0, c->np - 1);
  int64_t off = rng_range(g, 0, c->cap - 1);
  int64_t len = own_run(c, w, off, random_len(g, c->cap / 8));
  model_write(&c->m, w, c->k, step, off, len);
  if (c->rank == w) {
    fill(c, step, off, len);
    int arc = aggio_file_write_at(c->afh, off, c->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
    int mrc = MPI_File_write_at(c->mfh, off, c->buf, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_ok(c, step, "write_at", arc, mrc);
  }
  /* the steps of the model happen one after the other */
  MPI_Barrier(MPI_COMM_WORLD);
}

static void read_own(struct ctx *c, int step, int64_t off, int64_t len);

/* One random rank reads bytes it may rely on: they must be exact. */
static void op_ind_read(struct ctx *c, rng_t *g, int step) {
  int w = (int)rng_range(g, 0, c->np - 1);
  int64_t off = rng_range(g, 0, c->cap - 1);
  int64_t len = own_run(c, w, off, random_len(g, c->cap / 8));
  if (c->rank == w)
    read_own(c, step, off, len);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void read_own(struct ctx *c, int step, int64_t off, int64_t len) {
  MPI_Status st;
  MPI_Count n = 0;
  memset(c->got, 0, (size_t)len + 1);
  int arc = aggio_file_read_at(c->afh, off, c->got, (int)len, MPI_BYTE, &st);
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  if (arc == AGGIO_SUCCESS)
    check_read(c, step, 0, "aggio read_at", c->got, off, len, n, len);
  int mrc = MPI_File_read_at(c->mfh, off, c->got, (int)len, MPI_BYTE, &st);
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  if (mrc == MPI_SUCCESS)
    check_read(c, step, 1, "MPI-IO read_at", c->got, off, len, n, len);
  expect_ok(c, step, "read_at", arc, mrc);
}

/* Every rank reads a random range inside the file; collective reads see
 * every earlier write.  (Reads across the end of the file are
 * test_errors.c's: ROMIO and OMPIO count bytes past it in collective reads,
 * which MPI-IO does not.) */
static void op_coll_read(struct ctx *c, rng_t *g, int step) {
  int64_t off = 0, len = 0;
  for (int r = 0; r < c->np; r++) {
    int64_t a = rng_range(g, 0, c->m.size > 0 ? c->m.size - 1 : 0);
    int64_t l = random_len(g, c->m.size - a > 0 ? c->m.size - a : 0);
    if (r == c->rank)
      off = a, len = l;
  }
  int64_t want = len;
  MPI_Status st;
  MPI_Count n = 0;
  int arc = aggio_file_read_at_all(c->afh, off, c->got, (int)len, MPI_BYTE, &st);
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  if (arc == AGGIO_SUCCESS)
    check_read(c, step, 0, "aggio read_at_all", c->got, off, len, n, want);
  int mrc = MPI_File_read_at_all(c->mfh, off, c->got, (int)len, MPI_BYTE, &st);
  MPI_Get_elements_x(&st, MPI_BYTE, &n);
  if (mrc == MPI_SUCCESS)
    check_read(c, step, 1, "MPI-IO read_at_all", c->got, off, len, n, want);
  expect_ok(c, step, "read_at_all", arc, mrc);
}

/* sync, or sync-barrier-sync as MPI prescribes: then every write is
 * visible to every process. */
static void op_sync(struct ctx *c, rng_t *g, int step) {
  int twice = (int)rng_range(g, 0, 1);
  int arc = aggio_file_sync(c->afh), mrc = MPI_File_sync(c->mfh);
  expect_ok(c, step, "sync", arc, mrc);
  if (twice) {
    MPI_Barrier(MPI_COMM_WORLD);
    arc = aggio_file_sync(c->afh);
    mrc = MPI_File_sync(c->mfh);
    expect_ok(c, step, "sync after barrier", arc, mrc);
  }
  for (int64_t i = 0; i < c->cap; i++)
    c->m.writer[i] = SYNCED;
  c->m.synced_size = c->m.size;
}

static void op_set_size(struct ctx *c, rng_t *g, int step) {
  int64_t s = rng_range(g, 0, c->cap);
  int arc = aggio_file_set_size(c->afh, s), mrc = MPI_File_set_size(c->mfh, s);
  expect_ok(c, step, "set_size", arc, mrc);
  for (int64_t i = s; i < c->cap; i++) {
    c->m.data[i] = 0;
    c->m.writer[i] = SYNCED;
    c->m.hole[i] = 0;
  }
  c->m.size = s;
  c->m.synced_size = s;
}

static void size_own(struct ctx *c, int step, int w);

/* get_size: at least what this rank may rely on, at most the file. */
static void op_get_size(struct ctx *c, rng_t *g, int step) {
  int w = (int)rng_range(g, 0, c->np - 1);
  if (c->rank == w)
    size_own(c, step, w);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void size_own(struct ctx *c, int step, int w) {
  int64_t low = c->m.synced_size;
  for (int64_t i = 0; i < c->cap; i++)
    if (c->m.writer[i] == w && i + 1 > low)
      low = i + 1;
  MPI_Offset a = -1, m = -1;
  int arc = aggio_file_get_size(c->afh, &a), mrc = MPI_File_get_size(c->mfh, &m);
  expect_ok(c, step, "get_size", arc, mrc);
  char what[160];
  snprintf(what, sizeof what, "get_size: aggio %lld, MPI-IO %lld, expected [%lld, %lld]",
           (long long)a, (long long)m, (long long)low, (long long)c->m.size);
  CHECK(a >= low && a <= c->m.size, "%s", what);
  if (!(a >= low && a <= c->m.size))
    fail_note(c, step, what);
}

/* ---- a case --------------------------------------------------------------------- */

static MPI_Info aggio_hints(struct ctx *c, rng_t *g) {
  MPI_Info info;
  MPI_Info_create(&info);
  static const char *strategy[] = {"write_behind", "write_behind", "auto"};
  static const char *cb[] = {"8192", "16384", "65536", "1048576"};
  static const char *tri[] = {"enable", "disable", "automatic"};
  char emu[16];
  const char *s = strategy[rng_range(g, 0, 2)], *b = cb[rng_range(g, 0, 3)];
  const char *shm = tri[rng_range(g, 0, 2)], *dio = tri[rng_range(g, 0, 2)];
  snprintf(emu, sizeof emu, "%d", (int)rng_range(g, 0, c->np));
  MPI_Info_set(info, "aggio_strategy", s);
  MPI_Info_set(info, "cb_buffer_size", b);
  MPI_Info_set(info, "aggio_node_shm", shm);
  MPI_Info_set(info, "aggio_emulate_nodes", emu);
  MPI_Info_set(info, "aggio_direct_io", dio);
  snprintf(c->cfg, sizeof c->cfg, "aggio_strategy=%s cb_buffer_size=%s aggio_node_shm=%s "
           "aggio_emulate_nodes=%s aggio_direct_io=%s", s, b, shm, emu, dio);
  return info;
}

static int open_both(struct ctx *c, rng_t *g) {
  MPI_Info info = aggio_hints(c, g);
  int amode = MPI_MODE_CREATE | MPI_MODE_RDWR;
  if (c->rank == 0) {
    unlink(c->apath);
    unlink(c->mpath);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  int arc = aggio_file_open(MPI_COMM_WORLD, c->apath, amode, info, &c->afh);
  int mrc = MPI_File_open(MPI_COMM_WORLD, c->mpath, amode, MPI_INFO_NULL, &c->mfh);
  MPI_Info_free(&info);
  CHECK(arc == AGGIO_SUCCESS, "aggio open: %s", aggio_error_message());
  CHECK(mrc == MPI_SUCCESS, "MPI-IO open failed");
  return arc == AGGIO_SUCCESS && mrc == MPI_SUCCESS ? 0 : -1;
}

/* After close, both files hold exactly the model's bytes. */
static void compare_files(struct ctx *c) {
  if (c->rank != 0)
    return;
  const char *paths[2] = {c->apath, c->mpath}, *names[2] = {"aggio", "MPI-IO"};
  for (int f = 0; f < 2; f++) {
    FILE *fp = fopen(paths[f], "rb");
    int64_t n = fp ? (int64_t)fread(c->got, 1, (size_t)c->cap + 1, fp) : -1;
    if (fp)
      fclose(fp);
    char what[200];
    snprintf(what, sizeof what, "%s file: %lld bytes, expected %lld", names[f], (long long)n,
             (long long)c->m.size);
    if (n != c->m.size) {
      mismatch(c, -1, f == 1, what);
      continue;
    }
    for (int64_t i = 0; i < n; i++)
      if (c->got[i] != c->m.data[i] && !(f == 1 && c->m.hole[i])) {
        snprintf(what, sizeof what, "%s file: byte %lld is %d, expected %d", names[f],
                 (long long)i, c->got[i], c->m.data[i]);
        mismatch(c, -1, f == 1, what);
        break;
      }
  }
}

static void run_case(struct ctx *c) {
  rng_t g = {c->seed ^ ((uint64_t)c->k * 0xD1B54A32D192ED03ull)};
  rng_next(&g);
  c->cap = rng_range(&g, 16 << 10, 512 << 10);
  c->failed = 0;
  memset(&c->m, 0, sizeof c->m);
  c->m.cap = c->cap;
  c->m.data = calloc((size_t)c->cap + 1, 1);
  c->m.writer = malloc(((size_t)c->cap + 1) * sizeof *c->m.writer);
  c->m.hole = calloc((size_t)c->cap + 1, 1);
  for (int64_t i = 0; i <= c->cap; i++)
    c->m.writer[i] = SYNCED;
  c->buf = malloc((size_t)c->cap + 1);
  c->got = malloc((size_t)c->cap + 2);
  if (open_both(c, &g) == 0) {
    if (c->verbose && c->rank == 0)
      printf("case %d: %lld bytes, %s\n", c->k, (long long)c->cap, c->cfg);
    int nops = (int)rng_range(&g, 10, 60);
    for (int step = 0; step < nops; step++) {
      int kind = (int)rng_range(&g, 0, 99);
      MPI_Offset as = -1, ms = -1;
      if (c->verbose) {
        aggio_file_get_size(c->afh, &as);
        MPI_File_get_size(c->mfh, &ms);
      }
      if (c->verbose && c->rank == 0)
        printf("  step %d: %s (model size %lld, aggio %lld, MPI-IO %lld)\n", step,
               kind < 40 ? "write_at_all" : kind < 55 ? "write_at" : kind < 70 ? "read_at"
               : kind < 82 ? "read_at_all" : kind < 90 ? "sync" : kind < 95 ? "set_size"
                                                        : "get_size", (long long)c->m.size,
               (long long)as, (long long)ms);
      if (kind < 40)
        op_coll_write(c, &g, step);
      else if (kind < 55)
        op_ind_write(c, &g, step);
      else if (kind < 70)
        op_ind_read(c, &g, step);
      else if (kind < 82)
        op_coll_read(c, &g, step);
      else if (kind < 90)
        op_sync(c, &g, step);
      else if (kind < 95)
        op_set_size(c, &g, step);
      else
        op_get_size(c, &g, step);
    }
    int arc = aggio_file_close(&c->afh), mrc = MPI_File_close(&c->mfh);
    expect_ok(c, -1, "close", arc, mrc);
    MPI_Barrier(MPI_COMM_WORLD);
    compare_files(c);
  }
  free(c->m.data);
  free(c->m.writer);
  free(c->m.hole);
  free(c->buf);
  free(c->got);
}

int main(int argc, char **argv) {
  struct ctx c;
  memset(&c, 0, sizeof c);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.np);
  const char *e = getenv("AGGIO_TEST_SEED");
  c.seed = e && *e ? strtoull(e, NULL, 10) : 20261123ull;
  e = getenv("AGGIO_TEST_CASES");
  int cases = e && *e ? atoi(e) : 24, only = -1;
  e = getenv("AGGIO_TEST_STRICT_REFERENCE");
  c.strict_reference = e && atoi(e) != 0;
  e = getenv("AGGIO_TEST_CASE");
  if (e && *e)
    only = atoi(e);
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seed") && i + 1 < argc)
      c.seed = strtoull(argv[++i], NULL, 10);
    else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
      cases = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      only = atoi(argv[++i]);
    else if (!strcmp(argv[i], "-v"))
      c.verbose = 1;
  }
  if (c.np > 64) {
    if (c.rank == 0)
      printf("test_consistency runs at up to 64 ranks\n");
    MPI_Finalize();
    return 0;
  }
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(c.apath, sizeof c.apath, "%s/consistency.%d.aggio", test_dir(), id);
  snprintf(c.mpath, sizeof c.mpath, "%s/consistency.%d.mpiio", test_dir(), id);
  if (c.rank == 0)
    printf("test_consistency: %d ranks, seed %llu, %d cases (reproduce: AGGIO_TEST_SEED=%llu "
           "AGGIO_TEST_CASE=<case>)\n", c.np, (unsigned long long)c.seed, cases,
           (unsigned long long)c.seed);
  for (c.k = 0; c.k < cases; c.k++)
    if (only < 0 || only == c.k)
      run_case(&c);
  if (c.rank == 0) {
    unlink(c.apath);
    unlink(c.mpath);
  }
  int warnings = 0;
  MPI_Reduce(&c.warnings, &warnings, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (c.rank == 0 && warnings)
    printf("the MPI library's MPI-IO disagreed with MPI's rules %d times (warnings above; "
           "AGGIO_TEST_STRICT_REFERENCE=1 makes them failures)\n", warnings);
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
