/*
 * test_stats.c - the statistics, timers and placement blocks, checked by
 * content: known patterns through two_phase must produce exact system-write
 * counts and sizes, zero read-modify-writes without holes, and one write gap
 * per hole; the timers block must hold every phase with min <= avg <= max.
 * Rank 0's stdout is captured around open and close (dup2) and parsed.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "capture.h"
#include "internal.h"

static int rank, nprocs;

/* ---- capturing rank 0's stdout ------------------------------------------- */

static void capture_begin(struct capture *c, const char *tag) {
  char path[512];
  snprintf(path, sizeof path, "%s/stats_out_%s_np%d.txt", test_dir(), tag, nprocs);
  capture_to(c, rank, path);
}

/* ---- parsing the blocks ------------------------------------------------------ */

/* The block that starts with `head` and ends with `end`, copied; NULL if
 * absent. */
static char *block(const char *text, const char *head, const char *end) {
  const char *b = text ? strstr(text, head) : NULL;
  const char *e = b ? strstr(b, end) : NULL;
  if (!b || !e)
    return NULL;
  return strndup(b, (size_t)(e - b) + strlen(end));
}

/* The value of "  key: value" in a block, as text (static buffer). */
static const char *value(const char *blk, const char *key) {
  static char out[256];
  char pat[128];
  snprintf(pat, sizeof pat, "\n  %s: ", key);
  const char *p = blk ? strstr(blk, pat) : NULL;
  if (!p)
    return NULL;
  p += strlen(pat);
  size_t n = strcspn(p, "\n");
  if (n >= sizeof out)
    n = sizeof out - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return out;
}

static long long ivalue(const char *blk, const char *key) {
  const char *v = value(blk, key);
  CHECK(v != NULL, "no \"%s\" line in the block", key);
  return v ? atoll(v) : -1;
}

/* ---- the runs ------------------------------------------------------------- */

struct pattern {
  int64_t seg;    /* S: bytes per segment */
  int64_t gap;    /* hole after each segment (0: none) */
  int nseg;       /* M: segments per rank */
};

static char byte_at(int64_t off) { return (char)('A' + (off * 7 + off / 251) % 26); }

/* Writes the interleaved pattern with one write_at_all through a vector
 * view: rank r's segment j starts at (j*N + r) * (S + G). */
static int write_pattern(aggio_file fh, const struct pattern *p) {
  MPI_Datatype vec, ft;
  int64_t stride = nprocs * (p->seg + p->gap);
  MPI_Type_vector(p->nseg, (int)p->seg, (int)stride, MPI_BYTE, &vec);
  MPI_Type_create_resized(vec, 0, stride * p->nseg, &ft);
  MPI_Type_commit(&ft);
  int rc = aggio_file_set_view(fh, rank * (p->seg + p->gap), MPI_BYTE, ft, "native",
                               MPI_INFO_NULL);
  CHECK(rc == 0, "set_view: %s", aggio_error_message());
  char *buf = malloc((size_t)(p->seg * p->nseg));
  for (int j = 0; j < p->nseg; j++) {
    int64_t base = (j * (int64_t)nprocs + rank) * (p->seg + p->gap);
    for (int64_t i = 0; i < p->seg; i++)
      buf[j * p->seg + i] = byte_at(base + i);
  }
  rc = aggio_file_write_at_all(fh, 0, buf, (int)(p->seg * p->nseg), MPI_BYTE,
                               MPI_STATUS_IGNORE);
  CHECK(rc == 0, "write_at_all: %s", aggio_error_message());
  free(buf);
  MPI_Type_free(&vec);
  MPI_Type_free(&ft);
  return rc;
}

/* Rank 0 checks the file's bytes (holes must read as zero). */
static void check_bytes(const char *path, const struct pattern *p) {
  if (rank != 0)
    return;
  int64_t n = (int64_t)nprocs * p->nseg * (p->seg + p->gap) - p->gap;
  char *got = malloc((size_t)n);
  int fd = open(path, O_RDONLY);
  ssize_t r = fd >= 0 ? pread(fd, got, (size_t)n, 0) : -1;
  CHECK(r == n, "read back %zd of %lld bytes", r, (long long)n);
  int64_t bad = -1;
  for (int64_t i = 0; r == n && i < n && bad < 0; i++) {
    int64_t in = i % (p->seg + p->gap);
    char want = in < p->seg ? byte_at(i) : 0;
    if (got[i] != want)
      bad = i;
  }
  CHECK(bad < 0, "file byte %lld differs from the pattern", (long long)bad);
  if (fd >= 0)
    close(fd);
  free(got);
}

struct run {
  const char *tag;
  struct pattern p;
  const char *cb_nodes, *cb_buffer_size, *ds_write;
  const char *exchange; /* aggio_exchange, or NULL for the default */
  int timers, placement, indep;
  char *out;   /* rank 0: what open and close printed */
  int naggr;   /* aggregators the library chose */
  int *aggr;
};

/* Opens with the run's hints, writes the pattern (and, with indep, one
 * independent write on every even rank past the end), closes. */
static void do_run(struct run *rn) {
  char path[512];
  snprintf(path, sizeof path, "%s/stats_%s_np%d.dat", test_dir(), rn->tag, nprocs);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stats", "true");
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "aggio_direct_io", "disable");
  MPI_Info_set(info, "striping_unit", "4096");
  MPI_Info_set(info, "aggio_emulate_nodes", "64"); /* one node per rank */
  MPI_Info_set(info, "cb_nodes", rn->cb_nodes);
  MPI_Info_set(info, "cb_buffer_size", rn->cb_buffer_size);
  MPI_Info_set(info, "romio_ds_write", rn->ds_write);
  if (rn->exchange)
    MPI_Info_set(info, "aggio_exchange", rn->exchange);
  if (rn->timers)
    MPI_Info_set(info, "aggio_timers", "true");
  if (rn->placement)
    MPI_Info_set(info, "aggio_aggregator_placement_display", "true");
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  struct capture cap;
  capture_begin(&cap, rn->tag);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == 0, "open %s: %s", path, aggio_error_message());
  MPI_Info_free(&info);
  if (rc != 0) {
    free(capture_end(&cap));
    return;
  }
  rn->naggr = fh->topo.naggr;
  rn->aggr = malloc(sizeof(int) * (size_t)fh->topo.naggr);
  memcpy(rn->aggr, fh->topo.aggr, sizeof(int) * (size_t)fh->topo.naggr);
  write_pattern(fh, &rn->p);
  if (rn->indep && rank % 2 == 0) {
    aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    char b[100] = {0};
    int64_t end = (int64_t)nprocs * rn->p.nseg * (rn->p.seg + rn->p.gap);
    rc = aggio_file_write_at(fh, end + rank * 100, b, 100, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == 0, "write_at: %s", aggio_error_message());
  } else if (rn->indep) {
    aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  }
  rc = aggio_file_close(&fh);
  CHECK(rc == 0, "close: %s", aggio_error_message());
  rn->out = capture_end(&cap);
  if (!rn->indep)
    check_bytes(path, &rn->p);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
}

static void run_free(struct run *rn) {
  free(rn->out);
  free(rn->aggr);
}

/* Common content of every stats block. */
static char *stats_block(const struct run *rn) {
  char *b = block(rn->out, "aggio stats for file \"", "aggio stats end\n");
  CHECK(b != NULL, "%s: no stats block in:\n%s", rn->tag, rn->out ? rn->out : "");
  if (!b)
    return NULL;
  CHECK(strstr(b, rn->tag) != NULL, "%s: block names another file", rn->tag);
  CHECK(ivalue(b, "ranks") == nprocs, "ranks");
  CHECK(ivalue(b, "aggregators") == rn->naggr, "aggregators");
  CHECK(strcmp(value(b, "strategy"), "two_phase") == 0, "strategy %s", value(b, "strategy"));
  CHECK(ivalue(b, "collective writes") == 1, "collective writes");
  CHECK(ivalue(b, "alignment unit") == 4096, "alignment unit");
  return b;
}

/* N x M segments of S bytes, one aggregator, cb_buffer_size >= total:
 * exactly one system write of N*M*S bytes, no read-modify-write, no gap. */
static void test_one_write(void) {
  struct run rn = {.tag = "one", .p = {4096, 0, 4}, .cb_nodes = "1",
                   .cb_buffer_size = "16m", .ds_write = "automatic", .timers = 1};
  do_run(&rn);
  if (rank == 0) {
    long long total = (long long)nprocs * 4 * 4096;
    char *b = stats_block(&rn);
    CHECK(rn.naggr == 1, "naggr %d", rn.naggr);
    CHECK(ivalue(b, "system writes") == 1, "system writes %lld", ivalue(b, "system writes"));
    CHECK(ivalue(b, "system write bytes") == total, "system write bytes");
    CHECK(ivalue(b, "average system write size") == total, "average size");
    CHECK(ivalue(b, "system writes aligned") == 1, "aligned");
    CHECK(ivalue(b, "bytes written") == total, "bytes written");
    CHECK(ivalue(b, "read-modify-writes") == 0, "rmw");
    CHECK(ivalue(b, "read-modify-write bytes") == 0, "rmw bytes");
    CHECK(ivalue(b, "write gaps") == 0, "gaps");
    CHECK(strcmp(value(b, "average write gap size"), "n/a") == 0, "gap size");
    CHECK(ivalue(b, "independent writes") == 0, "independent writes");
    CHECK(ivalue(b, "direct writes") == 0, "direct writes");
    CHECK(ivalue(b, "aggregator-calls active") == 1, "aggregator-calls active");
    CHECK(strcmp(value(b, "aggregators active per call"), "1.00") == 0, "active per call");
    free(b);
    /* the timers block */
    char *t = block(rn.out, "aggio timers for file \"", "aggio timers end\n");
    CHECK(t != NULL, "no timers block");
    static const char *const phases[] = {
        "open", "plan", "agree", "pack", "exchange", "write", "read", "io_wait", "wait",
        "sync", "close", "total", "elapsed", "calls", "system write", "system read", "behind"};
    double wmax = 0, totmax = 0;
    for (size_t i = 0; t && i < sizeof phases / sizeof phases[0]; i++) {
      const char *v = value(t, phases[i]);
      double mn = -1, mx = -1, av = -1;
      CHECK(v && sscanf(v, "min %lf max %lf avg %lf s", &mn, &mx, &av) == 3,
            "timer line %s: %s", phases[i], v ? v : "(missing)");
      CHECK(mn >= 0 && mn <= av + 1e-9 && av <= mx + 1e-9, "%s: min %g avg %g max %g",
            phases[i], mn, av, mx);
      if (strcmp(phases[i], "system write") == 0)
        wmax = mx;
      if (strcmp(phases[i], "elapsed") == 0)
        totmax = mx;
    }
    CHECK(wmax > 0 && totmax > 0, "system write max %g elapsed max %g", wmax, totmax);
    /* the phases account for the calls' time (the rest is the engine's own
     * bookkeeping between steps) */
    double amin = -1, amax = -1, aavg = -1;
    const char *acc = t ? value(t, "accounted") : NULL;
    CHECK(acc && sscanf(acc, "min %lf%% max %lf%% avg %lf%%", &amin, &amax, &aavg) == 3,
          "accounted line: %s", acc ? acc : "(missing)");
    CHECK(amin >= 90.0 && amax <= 100.5, "phases account for %g%%..%g%% of the calls' time",
          amin, amax);
    CHECK(t && ivalue(t, "bytes written") == total, "timers bytes written");
    double raw = 0, net = 0;
    CHECK(t && sscanf(value(t, "raw write rate"), "%lf MiB/s", &raw) == 1, "raw rate");
    CHECK(t && sscanf(value(t, "net write rate"), "%lf MiB/s", &net) == 1, "net rate");
    CHECK(raw > 0 && net > 0 && net <= raw * 1.0001, "raw %g net %g", raw, net);
    CHECK(t && strcmp(value(t, "raw read rate"), "n/a") == 0, "read rate n/a");
    free(t);
  }
  run_free(&rn);
}

/* One aggregator, cb_buffer_size B not dividing the total: ceil(total/B)
 * system writes, one per round. */
static void test_ceil(void) {
  struct run rn = {.tag = "ceil", .p = {4096, 0, 4}, .cb_nodes = "1",
                   .cb_buffer_size = "12288", .ds_write = "automatic"};
  do_run(&rn);
  if (rank == 0) {
    long long total = (long long)nprocs * 4 * 4096, per = (total + 12287) / 12288;
    char *b = stats_block(&rn);
    CHECK(ivalue(b, "system writes") == per, "system writes %lld, expected %lld",
          ivalue(b, "system writes"), per);
    CHECK(ivalue(b, "system write bytes") == total, "system write bytes");
    CHECK(ivalue(b, "two-phase rounds") == per, "rounds %lld", ivalue(b, "two-phase rounds"));
    CHECK(ivalue(b, "read-modify-writes") == 0, "rmw");
    free(b);
  }
  run_free(&rn);
}

/* Same pattern, K aggregators and cb_buffer_size B dividing each domain
 * (total/K, block aligned): total/B system writes, total/(K*B) rounds;
 * the same with either two-phase exchange (the display names it). */
static void test_rounds(const char *exchange) {
  struct run rn = {.tag = "rounds", .p = {4096, 0, 4}, .cb_nodes = "2",
                   .cb_buffer_size = "8192", .ds_write = "automatic", .placement = 1,
                   .exchange = exchange};
  do_run(&rn);
  if (rank == 0) {
    long long total = (long long)nprocs * 4 * 4096;
    int k = nprocs < 2 ? nprocs : 2;
    long long per = total / k / 8192;
    char *b = stats_block(&rn);
    CHECK(rn.naggr == k, "naggr %d, expected %d", rn.naggr, k);
    CHECK(ivalue(b, "system writes") == k * per, "system writes %lld, expected %lld",
          ivalue(b, "system writes"), k * per);
    CHECK(ivalue(b, "system write bytes") == total, "system write bytes");
    CHECK(ivalue(b, "average system write size") == 8192, "average size");
    CHECK(ivalue(b, "system writes aligned") == k * per, "aligned");
    CHECK(ivalue(b, "read-modify-writes") == 0, "rmw");
    CHECK(ivalue(b, "write gaps") == 0, "gaps");
    CHECK(ivalue(b, "two-phase rounds") == per, "rounds %lld", ivalue(b, "two-phase rounds"));
    CHECK(ivalue(b, "aggregator-calls active") == k, "active");
    free(b);
    /* placement: at open (no domains yet) and at close (the call's domains) */
    char *po = block(rn.out, "aggio aggregator placement for file \"", "aggio aggregator placement end\n");
    CHECK(po && strstr(po, "(at open)"), "no placement block at open");
    CHECK(po && ivalue(po, "aggregators") == k, "placement aggregators");
    CHECK(po && ivalue(po, "nodes") == nprocs, "placement nodes");
    CHECK(po && strstr(po, "\n  placement: "), "the placement applied (docs/topology.md)");
    char *pc = po ? block(strstr(rn.out, "aggio aggregator placement end\n") + 1,
                          "aggio aggregator placement for file \"",
                          "aggio aggregator placement end\n") : NULL;
    CHECK(pc && strstr(pc, "(at close)"), "no placement block at close");
    char want[64];
    snprintf(want, sizeof want, "\n  exchange: %s\n", exchange ? exchange : "two_sided");
    CHECK(pc && strstr(pc, want), "the exchange at close (%s)", want + 3);
    CHECK(po && !strstr(po, "exchange:"), "an exchange named at open, before any call");
    int64_t next = 0;
    for (int i = 0; i < rn.naggr; i++) {
      char key[32];
      snprintf(key, sizeof key, "aggregator %d", i);
      const char *v = po ? value(po, key) : NULL;
      int r = -1;
      CHECK(v && sscanf(v, "rank %d", &r) == 1 && r == rn.aggr[i] && strstr(v, "none yet"),
            "open: %s: %s", key, v ? v : "(missing)");
      v = pc ? value(pc, key) : NULL;
      long long lo = -1, hi = -1;
      CHECK(v && sscanf(v, "rank %d node %*d host %*s domain [%lld, %lld)", &r, &lo, &hi) == 3,
            "close: %s: %s", key, v ? v : "(missing)");
      CHECK(r == rn.aggr[i] && lo == next && hi >= lo, "domain %d [%lld, %lld)", i, lo, hi);
      next = hi;
    }
    CHECK(next == total, "domains end at %lld, not %lld", (long long)next, total);
    free(po);
    free(pc);
  }
  run_free(&rn);
}

/* Segments separated by holes, one aggregator, one window, no data sieving:
 * every hole is a write gap and every segment its own system write. */
static void test_gaps(void) {
  struct run rn = {.tag = "gaps", .p = {1000, 24, 4}, .cb_nodes = "1",
                   .cb_buffer_size = "16m", .ds_write = "disable"};
  do_run(&rn);
  if (rank == 0) {
    long long segs = (long long)nprocs * 4;
    char *b = stats_block(&rn);
    CHECK(ivalue(b, "write gaps") == segs - 1, "gaps %lld, expected %lld",
          ivalue(b, "write gaps"), segs - 1);
    if (segs > 1)
      CHECK(ivalue(b, "average write gap size") == 24, "gap size");
    CHECK(ivalue(b, "system writes") == segs, "system writes %lld", ivalue(b, "system writes"));
    CHECK(ivalue(b, "system write bytes") == segs * 1000, "system write bytes");
    CHECK(ivalue(b, "read-modify-writes") == 0, "rmw");
    free(b);
  }
  run_free(&rn);
}

/* The same holes with data sieving forced: one read-modify-write of the
 * whole window, written in one system write. */
static void test_rmw(void) {
  struct run rn = {.tag = "rmw", .p = {1000, 24, 4}, .cb_nodes = "1",
                   .cb_buffer_size = "16m", .ds_write = "enable"};
  do_run(&rn);
  if (rank == 0) {
    long long segs = (long long)nprocs * 4, extent = segs * 1024 - 24;
    char *b = stats_block(&rn);
    if (segs > 1) {
      CHECK(ivalue(b, "read-modify-writes") == 1, "rmw %lld", ivalue(b, "read-modify-writes"));
      CHECK(ivalue(b, "read-modify-write bytes") == extent, "rmw bytes %lld",
            ivalue(b, "read-modify-write bytes"));
      CHECK(ivalue(b, "system writes") == 1, "system writes");
      CHECK(ivalue(b, "system write bytes") == extent, "system write bytes");
    }
    free(b);
  }
  run_free(&rn);
}

/* Independent writes: counted per call, and the writers per rank. */
static void test_independent(void) {
  struct run rn = {.tag = "indep", .p = {4096, 0, 1}, .cb_nodes = "1",
                   .cb_buffer_size = "16m", .ds_write = "automatic", .indep = 1};
  do_run(&rn);
  if (rank == 0) {
    long long writers = (nprocs + 1) / 2;
    char *b = stats_block(&rn);
    CHECK(ivalue(b, "independent writes") == writers, "independent writes");
    CHECK(ivalue(b, "independent writers") == writers, "independent writers");
    CHECK(ivalue(b, "system writes") == 1 + writers, "system writes");
    CHECK(ivalue(b, "bytes written") == nprocs * 4096LL + writers * 100, "bytes written");
    free(b);
  }
  run_free(&rn);
}

/* Opens `path` (created) with the statistics on and `key`=`value`, the
 * output captured from here on (under `tag`); *rc: the open's result. */
static aggio_file open_counted(const char *path, const char *key, const char *value,
                               struct capture *cap, const char *tag, int *rc) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stats", "true");
  MPI_Info_set(info, key, value);
  capture_begin(cap, tag);
  aggio_file fh = NULL;
  *rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(*rc == 0, "open with %s=%s: %s", key, value, aggio_error_message());
  return fh;
}

/* After open_counted's case: frees its captured output and buffers, and
 * removes the file once every rank is done with it. */
static void close_counted(const char *path, char *out, char *buf, char *back) {
  free(out);
  free(buf);
  free(back);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
}

/* Early write-back (core/writeback.c): independent writes through the page
 * cache of `size` bytes per rank, two each, under aggio_early_writeback =
 * `mode`; the stats block says how many write-backs an I/O thread started
 * (`started`: 1 some, 0 none), and the file holds every rank's bytes. */
static void early_writeback_case(const char *mode, int size, int started) {
  char path[512];
  snprintf(path, sizeof path, "%s/stats_ewb_np%d.dat", test_dir(), nprocs);
  struct capture cap;
  int rc;
  aggio_file fh = open_counted(path, "aggio_early_writeback", mode, &cap, "ewb", &rc);
  char *buf = malloc((size_t)size), *back = malloc((size_t)size);
  memset(buf, 'a' + rank % 26, (size_t)size);
  for (int k = 0; rc == 0 && k < 2; k++) /* segmented: rank r's k-th block */
    rc = aggio_file_write_at(fh, ((MPI_Offset)k * nprocs + rank) * size, buf, size, MPI_BYTE,
                             MPI_STATUS_IGNORE);
  CHECK(rc == 0, "%s: write_at: %s", mode, aggio_error_message());
  rc = aggio_file_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  rc |= aggio_file_read_at(fh, ((MPI_Offset)nprocs + (rank + 1) % nprocs) * size, back, size,
                           MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == 0 && back[0] == 'a' + (rank + 1) % nprocs % 26 &&
            back[size - 1] == back[0],
        "%s: another rank's block read back wrong", mode);
  aggio_file_close(&fh);
  char *out = capture_end(&cap);
  if (rank == 0) {
    char *b = block(out, "aggio stats for file \"", "aggio stats end\n");
    long long n = ivalue(b, "early write-backs"), bytes = ivalue(b, "early write-back bytes");
    CHECK(started ? n >= 1 && bytes >= size : n == 0 && bytes == 0,
          "aggio_early_writeback=%s, %d-byte writes: %lld write-backs of %lld bytes started",
          mode, size, n, bytes);
    free(b);
  }
  close_counted(path, out, buf, back);
}

static void test_early_writeback(void) {
  early_writeback_case("automatic", 1 << 20, 1);
  early_writeback_case("automatic", 256 << 10, 0); /* below the 1 MiB floor */
  early_writeback_case("enable", 256 << 10, 1);
  early_writeback_case("disable", 1 << 20, 0);
}

/* The threshold of direct independent writes (aggio_direct_min, plan/
 * dio_choice.h): `n` writes of `size` bytes per rank under the hint
 * `value`; the stats block's direct writes are `direct` per rank (-1: one
 * or two, the measured choice's try of direct and perhaps the next), unless
 * the file system refused O_DIRECT (then none, and the count is not
 * checked); the bytes read back are every rank's. */
static void direct_min_case(const char *value, int size, int n, int direct) {
  char path[512];
  snprintf(path, sizeof path, "%s/stats_dmin_np%d.dat", test_dir(), nprocs);
  struct capture cap;
  int rc;
  aggio_file fh = open_counted(path, "aggio_direct_min", value, &cap, "dmin", &rc);
  char *buf = aligned_alloc(4096, (size_t)size), *back = malloc((size_t)size);
  for (int k = 0; rc == 0 && k < n; k++) { /* segmented: rank r's k-th block */
    memset(buf, 'a' + (rank + k) % 26, (size_t)size);
    rc = aggio_file_write_at(fh, ((MPI_Offset)k * nprocs + rank) * size, buf, size, MPI_BYTE,
                             MPI_STATUS_IGNORE);
  }
  CHECK(rc == 0, "aggio_direct_min=%s: write_at: %s", value, aggio_error_message());
  char ignored[1024] = "";
  MPI_Info used;
  if (aggio_file_get_info(fh, &used) == 0) {
    int flag = 0;
    MPI_Info_get(used, "aggio_hints_ignored", sizeof ignored - 1, ignored, &flag);
    MPI_Info_free(&used);
  }
  rc |= aggio_file_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  int other = (rank + 1) % nprocs;
  rc |= aggio_file_read_at(fh, ((MPI_Offset)(n - 1) * nprocs + other) * size, back, size,
                           MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == 0 && back[0] == 'a' + (other + n - 1) % 26 && back[size - 1] == back[0],
        "aggio_direct_min=%s: another rank's last block read back wrong", value);
  aggio_file_close(&fh);
  char *out = capture_end(&cap);
  if (rank == 0) {
    char *b = block(out, "aggio stats for file \"", "aggio stats end\n");
    long long d = ivalue(b, "direct writes");
    if (strstr(ignored, "aggio_direct_io"))
      CHECK(d == 0, "O_DIRECT refused (%s), yet %lld direct writes", ignored, d);
    else if (direct < 0)
      CHECK(d >= nprocs && d <= 2 * nprocs, "aggio_direct_min=%s, %d x %d bytes: %lld direct "
            "writes, one or two per rank expected", value, n, size, d);
    else
      CHECK(d == (long long)direct * nprocs, "aggio_direct_min=%s, %d x %d bytes: %lld "
            "direct writes, expected %d per rank", value, n, size, d, direct);
    free(b);
  }
  close_counted(path, out, buf, back);
}

static void test_direct_min(void) {
  direct_min_case("1m", 1 << 20, 3, 3); /* fixed: every 1 MiB request direct */
  direct_min_case("4m", 1 << 20, 3, 0); /* fixed: none */
  direct_min_case("4m", 4 << 20, 2, 2);
  direct_min_case("2m", 2 << 20, 2, 2);
  /* automatic, 3 requests of 1 MiB: the first cached, the second tries
   * direct, the third goes the way that was faster (timing decides) */
  direct_min_case("0", 1 << 20, 3, -1);
  direct_min_case("0", 1 << 20, 1, 0); /* one request: cached, nothing measured yet */
  direct_min_case("0", 512 << 10, 3, 0); /* under 1 MiB: never direct */
}

/* Nothing on: nothing printed. */
static void test_quiet(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/stats_quiet_np%d.dat", test_dir(), nprocs);
  struct capture cap;
  capture_begin(&cap, "quiet");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc == 0) {
    CHECK(fh->obs.stats == NULL && fh->obs.trace == NULL,
          "observability allocated while off");
    aggio_file_close(&fh);
  }
  char *out = capture_end(&cap);
  if (rank == 0)
    CHECK(out && out[0] == 0, "printed while off: %s", out ? out : "");
  free(out);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
}

/* Every strategy's phases account for at least 90% of its calls' time,
 * on every rank, for small calls (where fixed costs dominate) and for
 * calls whose data waits for the file. */
static void test_accounting(void) {
  static const char *const strategies[] = {"independent", "two_phase", "write_behind", "auto"};
  static const int sizes[] = {4096, 47008};
  for (size_t si = 0; si < sizeof strategies / sizeof *strategies; si++)
    for (size_t zi = 0; zi < 2; zi++) {
      char path[512];
      int rec = sizes[zi], calls = 300;
      snprintf(path, sizeof path, "%s/stats_acct_np%d.dat", test_dir(), nprocs);
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "aggio_timers", "true");
      MPI_Info_set(info, "aggio_strategy", strategies[si]);
      MPI_Info_set(info, "cb_buffer_size", "1m");
      aggio_file fh;
      int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
      MPI_Info_free(&info);
      CHECK(rc == 0, "open: %s", aggio_error_message());
      if (rc != 0)
        continue;
      char *buf = malloc((size_t)rec);
      memset(buf, 'a' + rank % 26, (size_t)rec);
      for (int k = 0; k < 2 * calls; k++) { /* IO-500 ior-hard: one record per call */
        MPI_Offset off = ((MPI_Offset)(k % calls) * nprocs + rank) * rec;
        rc |= k < calls ? aggio_file_write_at_all(fh, off, buf, rec, MPI_BYTE, MPI_STATUS_IGNORE)
                        : aggio_file_read_at_all(fh, off, buf, rec, MPI_BYTE, MPI_STATUS_IGNORE);
      }
      CHECK(rc == 0, "calls: %s", aggio_error_message());
      const struct aggio__stats *st = fh->obs.stats;
      double phases = 0;
      for (int p = 0; p < AGGIO_P_COUNT; p++)
        if (p != AGGIO_P_OPEN && p != AGGIO_P_SYNC && p != AGGIO_P_CLOSE)
          phases += st->t[p];
      CHECK(st->api_time > 0 && phases >= 0.9 * st->api_time && phases <= 1.005 * st->api_time,
            "%s, %d-byte calls, rank %d: the phases add up to %.6f s of %.6f s in the calls",
            strategies[si], rec, rank, phases, st->api_time);
      free(buf);
      aggio_file_close(&fh);
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0)
        unlink(path);
    }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  /* The environment must not switch things on behind the test's back. */
  unsetenv("AGGIO_STATS");
  unsetenv("AGGIO_TIMERS");
  unsetenv("AGGIO_TRACE");
  unsetenv("AGGIO_AGGREGATOR_PLACEMENT_DISPLAY");
  unsetenv("AGGIO_HINTS");
  test_one_write();
  test_ceil();
  test_rounds(NULL);
  test_rounds("rma");
  test_gaps();
  test_rmw();
  test_independent();
  test_quiet();
  test_early_writeback();
  test_direct_min();
  test_accounting();
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
