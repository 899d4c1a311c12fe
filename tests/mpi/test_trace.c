/*
 * test_trace.c - the per-operation trace, end to end: a known sequence of
 * calls through two_phase is traced, the trace file is read back here (and
 * left in $AGGIO_TEST_DIR for tests/trace_check.py), and every API call and
 * every POSIX write must be in it, on consistent ranks and clocks.  Then a
 * forced overflow must report the exact number of dropped records, and an
 * unwritable trace path must fail the close on every rank without hanging.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "internal.h"

static int rank, nprocs;

#define SEG 3000     /* bytes per rank per collective call */
#define NCOLL 3      /* collective writes */
#define ISEG 700     /* bytes per independent write */
#define NIND 2       /* independent writes per rank */
#define CB 4096      /* cb_buffer_size */

/* ---- reading a trace (docs/trace-format.md) -------------------------------- */

struct rec {
  double t_start, t_end;
  int64_t offset, length, type_size;
  uint16_t op, flags;
  int32_t rank;
};

struct rank_entry {
  uint64_t first, count, dropped;
  int32_t node, aggregator;
};

struct trace {
  char *raw;
  size_t size;
  uint32_t version, nranks, record_size;
  uint64_t total, dropped, meta_len, rec_off;
  double clock_base;
  struct rank_entry *ranks;
  char *meta;
  struct rec *recs;
};

static uint64_t le64(const char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = v << 8 | (unsigned char)p[i];
  return v;
}
static uint32_t le32(const char *p) { return (uint32_t)le64(p) & 0xffffffffu; }

static int trace_read(const char *path, struct trace *t) {
  memset(t, 0, sizeof *t);
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  fseek(f, 0, SEEK_END);
  t->size = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  t->raw = malloc(t->size + 8);
  size_t got = fread(t->raw, 1, t->size, f);
  fclose(f);
  if (got != t->size || t->size < 64 || memcmp(t->raw, "AGGIOTRC", 8) != 0)
    return -1;
  const char *h = t->raw;
  t->version = le32(h + 8);
  t->nranks = le32(h + 12);
  t->record_size = le32(h + 16);
  t->total = le64(h + 24);
  t->dropped = le64(h + 32);
  t->meta_len = le64(h + 40);
  t->rec_off = le64(h + 48);
  uint64_t cb = le64(h + 56);
  memcpy(&t->clock_base, &cb, sizeof cb);
  if (64 + 32 * (uint64_t)t->nranks + t->meta_len > t->size ||
      t->rec_off + t->total * 48 > t->size || t->record_size != 48)
    return -1;
  t->ranks = calloc(t->nranks, sizeof *t->ranks);
  for (uint32_t r = 0; r < t->nranks; r++) {
    const char *e = h + 64 + 32 * (size_t)r;
    t->ranks[r].first = le64(e);
    t->ranks[r].count = le64(e + 8);
    t->ranks[r].dropped = le64(e + 16);
    t->ranks[r].node = (int32_t)le32(e + 24);
    t->ranks[r].aggregator = (int32_t)le32(e + 28);
  }
  t->meta = strndup(h + 64 + 32 * (size_t)t->nranks, t->meta_len);
  t->recs = calloc(t->total ? t->total : 1, sizeof *t->recs);
  for (uint64_t i = 0; i < t->total; i++) {
    const char *p = h + t->rec_off + 48 * i;
    uint64_t a = le64(p), b = le64(p + 8);
    memcpy(&t->recs[i].t_start, &a, 8);
    memcpy(&t->recs[i].t_end, &b, 8);
    t->recs[i].offset = (int64_t)le64(p + 16);
    t->recs[i].length = (int64_t)le64(p + 24);
    t->recs[i].type_size = (int64_t)le64(p + 32);
    t->recs[i].op = (uint16_t)(le32(p + 40) & 0xffff);
    t->recs[i].flags = (uint16_t)(le32(p + 40) >> 16);
    t->recs[i].rank = (int32_t)le32(p + 44);
  }
  return 0;
}

static void trace_free(struct trace *t) {
  free(t->raw);
  free(t->ranks);
  free(t->meta);
  free(t->recs);
}

static int count_op(const struct trace *t, int r, int op) {
  int n = 0;
  for (uint64_t i = 0; i < t->total; i++)
    n += t->recs[i].op == op && (r < 0 || t->recs[i].rank == r);
  return n;
}

/* The k-th record of op on rank r, or NULL. */
static const struct rec *nth(const struct trace *t, int r, int op, int k) {
  for (uint64_t i = 0; i < t->total; i++)
    if (t->recs[i].op == op && t->recs[i].rank == r && k-- == 0)
      return &t->recs[i];
  return NULL;
}

/* ---- the traced run ----------------------------------------------------------- */

static MPI_Info hints(const char *trace, const char *memory) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_trace", trace);
  if (memory)
    MPI_Info_set(info, "aggio_trace_memory", memory);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "aggio_direct_io", "disable");
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_Info_set(info, "cb_buffer_size", "4096");
  return info;
}

#define FILE_END ((MPI_Offset)NCOLL * nprocs * SEG + (MPI_Offset)NIND * nprocs * ISEG)

/* The known sequence: NCOLL contiguous write_at_all (rank r's piece of call
 * k at (k*N + r)*SEG), NIND write_at past them, one read_at_all, one sync. */
static int workload(const char *path, MPI_Info info) {
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return rc;
  char buf[SEG];
  for (int k = 0; k < NCOLL; k++) {
    memset(buf, 'a' + k, sizeof buf);
    rc = aggio_file_write_at_all(fh, ((MPI_Offset)k * nprocs + rank) * SEG, buf, SEG,
                                 MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == 0, "write_at_all %d: %s", k, aggio_error_message());
  }
  for (int j = 0; j < NIND; j++) {
    MPI_Offset off = (MPI_Offset)NCOLL * nprocs * SEG + ((MPI_Offset)j * nprocs + rank) * ISEG;
    rc = aggio_file_write_at(fh, off, buf, ISEG, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == 0, "write_at %d: %s", j, aggio_error_message());
  }
  rc = aggio_file_read_at_all(fh, (MPI_Offset)rank * SEG, buf, SEG, MPI_BYTE,
                              MPI_STATUS_IGNORE);
  CHECK(rc == 0 && buf[0] == 'a' && buf[SEG - 1] == 'a', "read_at_all: %s",
        aggio_error_message());
  rc = aggio_file_sync(fh);
  CHECK(rc == 0, "sync: %s", aggio_error_message());
  /* the size stays; the view makes later offsets count 4-byte etypes */
  rc = aggio_file_set_size(fh, FILE_END);
  CHECK(rc == 0, "set_size: %s", aggio_error_message());
  rc = aggio_file_set_view(fh, 8, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  CHECK(rc == 0, "set_view: %s", aggio_error_message());
  return aggio_file_close(&fh);
}

/* Every API call of the workload, with its arguments. */
static void check_api(const struct trace *t) {
  for (int r = 0; r < nprocs; r++) {
    CHECK(count_op(t, r, AGGIO_OP_OPEN) == 1, "rank %d: open records", r);
    CHECK(count_op(t, r, AGGIO_OP_CLOSE) == 1, "rank %d: close records", r);
    CHECK(count_op(t, r, AGGIO_OP_WRITE_AT_ALL) == NCOLL, "rank %d: write_at_all", r);
    CHECK(count_op(t, r, AGGIO_OP_WRITE_AT) == NIND, "rank %d: write_at", r);
    CHECK(count_op(t, r, AGGIO_OP_READ_AT_ALL) == 1, "rank %d: read_at_all", r);
    CHECK(count_op(t, r, AGGIO_OP_SYNC) == 1, "rank %d: sync", r);
    /* set_size: the size; set_view: displacement, etype and filetype sizes,
     * and flag 4 for a contiguous filetype (docs/trace-format.md) */
    const struct rec *sz = nth(t, r, AGGIO_OP_SET_SIZE, 0);
    CHECK(sz && sz->offset == FILE_END && (sz->flags & 2), "rank %d: set_size record", r);
    const struct rec *v = nth(t, r, AGGIO_OP_SET_VIEW, 0);
    CHECK(v && v->offset == 8 && v->length == 4 && v->type_size == 4 && v->flags == (2 | 4),
          "rank %d: set_view record", r);
    for (int k = 0; k < NCOLL; k++) {
      const struct rec *x = nth(t, r, AGGIO_OP_WRITE_AT_ALL, k);
      CHECK(x && x->offset == ((int64_t)k * nprocs + r) * SEG && x->length == SEG &&
                x->type_size == 1 && (x->flags & 2),
            "rank %d: write_at_all %d has the wrong arguments", r, k);
    }
    for (int j = 0; j < NIND; j++) {
      const struct rec *x = nth(t, r, AGGIO_OP_WRITE_AT, j);
      int64_t off = (int64_t)NCOLL * nprocs * SEG + ((int64_t)j * nprocs + r) * ISEG;
      CHECK(x && x->offset == off && x->length == ISEG && !(x->flags & 2),
            "rank %d: write_at %d has the wrong arguments", r, j);
    }
  }
}

/* Is [t0, t1] inside one of rank r's API records? */
static const struct rec *enclosing(const struct trace *t, int r, double t0, double t1) {
  for (uint64_t i = 0; i < t->total; i++) {
    const struct rec *a = &t->recs[i];
    if (a->rank == r && a->op < 32 && a->t_start <= t0 && t1 <= a->t_end)
      return a;
  }
  return NULL;
}

/* Every byte written reached the file through exactly one traced pwrite:
 * collective bytes by the aggregator (flagged), independent ones by their
 * own rank (not flagged). */
static void check_posix(const struct trace *t) {
  int64_t coll_end = (int64_t)NCOLL * nprocs * SEG;
  int64_t end = coll_end + (int64_t)NIND * nprocs * ISEG;
  unsigned char *hit = calloc((size_t)end, 1);
  int outside = 0, misflagged = 0, overlap = 0;
  for (uint64_t i = 0; i < t->total; i++) {
    const struct rec *x = &t->recs[i];
    if (x->op != AGGIO_OP_POSIX_PWRITE)
      continue;
    const struct rec *api = enclosing(t, x->rank, x->t_start, x->t_end);
    outside += api == NULL;
    CHECK(x->offset >= 0 && x->offset + x->length <= end, "pwrite [%lld, +%lld) outside",
          (long long)x->offset, (long long)x->length);
    if (x->offset < 0 || x->offset + x->length > end)
      continue;
    int coll = x->offset < coll_end;
    int aggr = t->ranks[x->rank].aggregator;
    if (coll != ((x->flags & 1) && aggr) ||
        (api && coll != (api->op == AGGIO_OP_WRITE_AT_ALL)))
      misflagged++;
    for (int64_t b = x->offset; b < x->offset + x->length; b++)
      overlap += hit[b]++ != 0;
  }
  int64_t missing = 0;
  for (int64_t b = 0; b < end; b++)
    missing += !hit[b];
  CHECK(outside == 0, "%d pwrite records outside any API call", outside);
  CHECK(misflagged == 0, "%d pwrite records with the wrong aggregator flag/caller", misflagged);
  CHECK(missing == 0 && overlap == 0, "%lld bytes never written, %d written twice",
        (long long)missing, overlap);
  CHECK(count_op(t, -1, AGGIO_OP_POSIX_PREAD) >= 1, "no pread for read_at_all");
  CHECK(count_op(t, -1, AGGIO_OP_POSIX_FSYNC) >= 1, "no fsync for sync");
  free(hit);
}

/* Timestamps: end >= start, and every collective write overlaps in time on
 * all ranks (they are on one clock). */
static void check_clock(const struct trace *t) {
  int backwards = 0;
  for (uint64_t i = 0; i < t->total; i++)
    backwards += t->recs[i].t_end < t->recs[i].t_start;
  CHECK(backwards == 0, "%d records end before they start", backwards);
  for (int k = 0; k < NCOLL + 1; k++) {
    int op = k < NCOLL ? AGGIO_OP_WRITE_AT_ALL : AGGIO_OP_OPEN;
    int idx = k < NCOLL ? k : 0;
    double latest_start = -1e30, earliest_end = 1e30;
    for (int r = 0; r < nprocs; r++) {
      const struct rec *x = nth(t, r, op, idx);
      if (!x)
        continue;
      latest_start = x->t_start > latest_start ? x->t_start : latest_start;
      earliest_end = x->t_end < earliest_end ? x->t_end : earliest_end;
    }
    CHECK(latest_start <= earliest_end, "op %d #%d: ranks do not overlap (%g > %g)", op,
          idx, latest_start, earliest_end);
  }
}

static void check_layout(const struct trace *t, const char *data_path) {
  CHECK(t->version == 1 && t->nranks == (uint32_t)nprocs, "version %u nranks %u",
        t->version, t->nranks);
  CHECK(t->rec_off % 8 == 0 && t->rec_off >= 64 + 32ull * nprocs + t->meta_len,
        "records_offset %llu", (unsigned long long)t->rec_off);
  CHECK(t->size == t->rec_off + 48 * t->total, "file size %zu", t->size);
  uint64_t first = 0, dropped = 0;
  for (int r = 0; r < nprocs; r++) {
    const struct rank_entry *e = &t->ranks[r];
    CHECK(e->first == first, "rank %d: first %llu", r, (unsigned long long)e->first);
    for (uint64_t i = e->first; i < e->first + e->count && i < t->total; i++)
      if (t->recs[i].rank != r) {
        CHECK(0, "record %llu of rank %d says rank %d", (unsigned long long)i, r,
              t->recs[i].rank);
        break;
      }
    CHECK(e->aggregator == (r == 0), "rank %d: aggregator flag %d (cb_nodes=1)", r,
          e->aggregator);
    CHECK(e->node >= 0, "rank %d: node %d", r, e->node);
    first += e->count;
    dropped += e->dropped;
  }
  CHECK(first == t->total && dropped == t->dropped && dropped == 0,
        "totals %llu/%llu, dropped %llu", (unsigned long long)first,
        (unsigned long long)t->total, (unsigned long long)dropped);
  char want[600];
  snprintf(want, sizeof want, "\"path\": \"%s\"", data_path);
  CHECK(strstr(t->meta, want) != NULL, "metadata lacks %s: %s", want, t->meta);
  CHECK(strstr(t->meta, "\"aggregators\": [0]") != NULL, "metadata aggregators: %s", t->meta);
  CHECK(strstr(t->meta, "\"aggio_strategy\": \"two_phase\"") != NULL, "metadata hints");
  CHECK(strstr(t->meta, "\"mpi_library\": \"") != NULL, "metadata mpi_library");
  CHECK(strstr(t->meta, "\"clock_offset_max\": ") != NULL, "metadata clock_offset_max");
}

static void test_roundtrip(void) {
  char data[512], trc[512];
  snprintf(data, sizeof data, "%s/trace_np%d.dat", test_dir(), nprocs);
  snprintf(trc, sizeof trc, "%s/trace_np%d.trc", test_dir(), nprocs);
  MPI_Info info = hints(trc, NULL);
  int rc = workload(data, info);
  MPI_Info_free(&info);
  CHECK(rc == 0, "close: %s", aggio_error_message());
  if (rank == 0) {
    struct trace t;
    int ok = trace_read(trc, &t) == 0;
    CHECK(ok, "cannot read the trace %s", trc);
    if (ok) {
      check_layout(&t, data);
      check_api(&t);
      check_posix(&t);
      check_clock(&t);
    }
    trace_free(&t);
    unlink(data);
  }
  /* The trace stays for tests/trace_check.py. */
}

/* Records per rank of the workload, from a trace with room for all. */
static void counts_of(const char *trc, uint64_t *count, uint64_t *dropped) {
  struct trace t;
  int ok = trace_read(trc, &t) == 0;
  CHECK(ok, "cannot read %s", trc);
  for (int r = 0; r < nprocs; r++) {
    count[r] = ok ? t.ranks[r].count : 0;
    dropped[r] = ok ? t.ranks[r].dropped : 0;
  }
  if (ok)
    CHECK(t.size == t.rec_off + 48 * t.total, "%s: size", trc);
  trace_free(&t);
}

/* The same workload with room for `cap` records per rank: each rank keeps
 * min(n, cap) and reports exactly n - cap dropped. */
static void test_overflow(void) {
  char data[512], trc[512];
  snprintf(data, sizeof data, "%s/trace_ovf_np%d.dat", test_dir(), nprocs);
  snprintf(trc, sizeof trc, "%s/trace_ovf_np%d.trc", test_dir(), nprocs);
  uint64_t full[64] = {0}, fd_[64] = {0}, cnt[64] = {0}, drop[64] = {0};
  static const char *const memory[] = {"64m", "527", "0"}; /* 527 B: 10 records */
  static const uint64_t cap[] = {UINT64_MAX, 10, 0};
  for (int m = 0; m < 3; m++) {
    MPI_Info info = hints(trc, memory[m]);
    int rc = workload(data, info);
    MPI_Info_free(&info);
    CHECK(rc == 0, "close (memory %s): %s", memory[m], aggio_error_message());
    if (rank != 0)
      continue;
    counts_of(trc, m == 0 ? full : cnt, m == 0 ? fd_ : drop);
    for (int r = 0; m > 0 && r < nprocs; r++) {
      uint64_t keep = full[r] < cap[m] ? full[r] : cap[m];
      CHECK(fd_[r] == 0 && full[r] > 10, "rank %d: %llu records in the full trace", r,
            (unsigned long long)full[r]);
      CHECK(cnt[r] == keep && drop[r] == full[r] - keep,
            "memory %s rank %d: kept %llu dropped %llu, expected %llu and %llu", memory[m],
            r, (unsigned long long)cnt[r], (unsigned long long)drop[r],
            (unsigned long long)keep, (unsigned long long)(full[r] - keep));
    }
  }
  if (rank == 0) {
    unlink(data);
    unlink(trc);
  }
}

/* "%f" in the trace path becomes the traced file's name. */
static void test_pattern(void) {
  char data[512], pat[512], want[512];
  snprintf(data, sizeof data, "%s/trace_pat_np%d.dat", test_dir(), nprocs);
  snprintf(pat, sizeof pat, "%s/%%f.trc", test_dir());
  snprintf(want, sizeof want, "%s/trace_pat_np%d.dat.trc", test_dir(), nprocs);
  MPI_Info info = hints(pat, NULL);
  int rc = workload(data, info);
  MPI_Info_free(&info);
  CHECK(rc == 0, "close: %s", aggio_error_message());
  if (rank == 0) {
    struct stat st;
    CHECK(stat(want, &st) == 0 && st.st_size > 64, "no trace at %s", want);
    unlink(want);
    unlink(data);
  }
}

/* A trace that cannot be written fails the close on every rank, without a
 * hang, and the data file is still closed properly. */
static void test_unwritable(void) {
  char data[512];
  snprintf(data, sizeof data, "%s/trace_bad_np%d.dat", test_dir(), nprocs);
  MPI_Info info = hints("/nonexistent-aggio-dir/x.trc", NULL);
  int rc = workload(data, info);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_ERR_NO_SUCH_FILE, "close returned %d (%s)", rc, aggio_error_message());
  if (rank == 0)
    unlink(data);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  unsetenv("AGGIO_TRACE");
  unsetenv("AGGIO_HINTS");
  if (nprocs > 64) {
    if (rank == 0)
      test_skip("more than 64 ranks");
    int rc = test_summary_mpi(MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
  }
  test_roundtrip();
  test_overflow();
  test_pattern();
  test_unwritable();
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
