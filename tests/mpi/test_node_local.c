/*
 * test_node_local.c - the node_local strategy against the MPI library's own
 * MPI-IO: seeded random layouts (ranks' pieces interleaved at random, or
 * one block per rank; holes over a background the file already holds, and
 * past its end), random aggregators per node (aggio_node_aggregators or
 * cb_config_list *:K), random emulated nodes, buffer sizes and direct I/O.
 *   - the file written through aggio must equal, byte for byte, the same
 *     collective write done with MPI_File_write_at_all, except in holes
 *     past the old end of the file, where ROMIO and OMPIO write back their
 *     buffers' leftovers and aggio must leave zeros;
 *   - collective reads through aggio, from a view that may reach past the
 *     end of the file, must return MPI_File_read_at_all's bytes (of the
 *     same file) before the end of the file, count exactly those (OMPIO
 *     counts the whole request) and leave the rest of the buffer alone;
 *   - the statistics printed at close must show no byte crossing
 *     (emulated) nodes, and every byte written or read copied within them;
 *   - the Cray seed's hint string runs node_local under auto; asking for
 *     more aggregators than have the file open fails on every rank, and
 *     auto then takes two-phase.
 * AGGIO_TEST_SEED, AGGIO_TEST_CASES; AGGIO_TEST_STRATEGY runs the same
 * checks on another strategy (two_phase fails the cross-node check).
 *
 * aggio-test-ranks: 1 2 4 8
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <aggio.h>
#include <mpi.h>

#include "harness.h"
#include "capture.h"
#include "rng.h"

static int rank, nprocs;

/* ---- rank 0's stdout, captured around close --------------------------------- */

static void capture_begin(struct capture *c) {
  char path[512];
  snprintf(path, sizeof path, "%s/node_local_out_np%d.txt", test_dir(), nprocs);
  capture_to(c, rank, path);
}

/* The number after "  key: " in the statistics block, or -1. */
static long long stat_value(const char *text, const char *key) {
  char pat[128];
  snprintf(pat, sizeof pat, "\n  %s: ", key);
  const char *p = text ? strstr(text, pat) : NULL;
  return p ? atoll(p + strlen(pat)) : -1;
}

/* ---- a random layout ------------------------------------------------------------ */

struct layout {
  int n;          /* my pieces */
  int *len;       /* block lengths */
  MPI_Aint *disp; /* file offsets */
  int64_t bytes;  /* mine */
  int64_t end;    /* one past the last byte any rank writes */
  unsigned char *covered; /* [end]: 1 where some rank writes */
};

/* Pieces of 1 byte to 40 KiB, each owned by a random rank or nobody (a
 * hole), so that the ranks' and nodes' data interleave. */
static void make_layout(rng_t *g, struct layout *l) {
  int64_t off = rng_range(g, 0, 5000);
  int cap = 64;
  l->n = 0;
  l->bytes = 0;
  l->len = malloc(sizeof *l->len * (size_t)cap);
  l->disp = malloc(sizeof *l->disp * (size_t)cap);
  int pieces = (int)rng_range(g, 1, 40) * nprocs;
  int blocky = rng_range(g, 0, 1) != 0; /* each rank one contiguous block */
  struct piece {
    int64_t off, len;
  } *all = malloc(sizeof *all * (size_t)pieces);
  int nall = 0;
  for (int i = 0; i < pieces; i++) {
    int64_t len = rng_range(g, 1, rng_range(g, 0, 3) ? 3000 : 40000);
    int owner = blocky ? (int)((int64_t)i * nprocs / pieces) : (int)rng_range(g, -1, nprocs - 1);
    if (owner >= 0)
      all[nall++] = (struct piece){off, len};
    if (owner == rank) {
      if (l->n == cap) {
        cap *= 2;
        l->len = realloc(l->len, sizeof *l->len * (size_t)cap);
        l->disp = realloc(l->disp, sizeof *l->disp * (size_t)cap);
      }
      l->len[l->n] = (int)len;
      l->disp[l->n++] = (MPI_Aint)off;
      l->bytes += len;
    }
    off += len + (rng_range(g, 0, 3) ? 0 : rng_range(g, 1, 9000));
  }
  l->end = off;
  l->covered = calloc(1, (size_t)off + 1);
  for (int i = 0; i < nall; i++)
    memset(l->covered + all[i].off, 1, (size_t)all[i].len);
  free(all);
}

static unsigned char data_byte(int seed, int r, int64_t i) {
  return (unsigned char)(seed * 13 + r * 71 + i * 7 + i / 509 + 1);
}

/* ---- one case ---------------------------------------------------------------------- */

struct config {
  char k[16], emulate[16], cb[16], config_list[24], dio[16];
  int by_list; /* K through cb_config_list *:K instead of aggio_node_aggregators */
};

static void make_config(rng_t *g, struct config *c) {
  static const char *cbs[] = {"8192", "65536", "5000", "1048576"};
  snprintf(c->k, sizeof c->k, "%d", (int)rng_range(g, 1, 4));
  snprintf(c->emulate, sizeof c->emulate, "%d", (int)rng_range(g, 1, nprocs));
  snprintf(c->cb, sizeof c->cb, "%s", cbs[rng_range(g, 0, 3)]);
  c->by_list = rng_range(g, 0, 1) != 0;
  snprintf(c->config_list, sizeof c->config_list, "*:%s", c->k);
  snprintf(c->dio, sizeof c->dio, "%s", rng_range(g, 0, 1) ? "automatic" : "disable");
}

static MPI_Info config_info(const struct config *c) {
  MPI_Info info;
  MPI_Info_create(&info);
  const char *strategy = getenv("AGGIO_TEST_STRATEGY"); /* to compare with another */
  MPI_Info_set(info, "aggio_strategy", strategy && *strategy ? strategy : "node_local");
  MPI_Info_set(info, "aggio_emulate_nodes", c->emulate);
  MPI_Info_set(info, "cb_buffer_size", c->cb);
  MPI_Info_set(info, "aggio_direct_io", c->dio);
  MPI_Info_set(info, "aggio_stats", "true");
  if (c->by_list)
    MPI_Info_set(info, "cb_config_list", c->config_list);
  else
    MPI_Info_set(info, "aggio_node_aggregators", c->k);
  return info;
}

/* The same background in both files (holes must keep it). */
static void background(const char *path, int64_t size) {
  if (rank == 0) {
    unsigned char *b = malloc((size_t)size);
    for (int64_t i = 0; i < size; i++)
      b[i] = (unsigned char)(0xA5 ^ (i * 3));
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, (size_t)size, f) == (size_t)size, "background of %s", path);
    if (f)
      fclose(f);
    free(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char *slurp(const char *path, long *size) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)*size + 1);
  if (fread(b, 1, (size_t)*size, f) != (size_t)*size) {
    free(b);
    b = NULL;
  }
  fclose(f);
  return b;
}

/* 1 when aggio's file b equals MPI-IO's a, except in holes past the old
 * end of the file (bg), where ROMIO and OMPIO write back whatever their
 * read-modify-write buffer held and aggio must leave zeros (never-written
 * bytes, as POSIX reads them). */
static int same_bytes(const unsigned char *x, const unsigned char *y, long n,
                      const struct layout *l, int64_t bg) {
  for (long i = 0; i < n; i++) {
    int hole = i >= bg && (i >= l->end || !l->covered[i]);
    if (hole ? y[i] != 0 : x[i] != y[i])
      return 0;
  }
  return 1;
}

/* Rank 0 compares the two files; every rank learns the verdict. */
static int same_files(const char *a, const char *b, const char *what, const struct layout *l,
                      int64_t bg) {
  int same = 1;
  if (rank == 0) {
    long na = -1, nb = -2;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    same = x && y && na == nb && same_bytes(x, y, na, l, bg);
    long first = -1;
    for (long i = 0; x && y && !same && i < na && i < nb && first < 0; i++) {
      int hole = i >= bg && (i >= l->end || !l->covered[i]);
      if (hole ? y[i] != 0 : x[i] != y[i])
        first = i;
    }
    CHECK(same, "%s: the file differs from MPI-IO's (sizes %ld and %ld, first byte %ld)", what,
          na, nb, first);
    free(x);
    free(y);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same;
}

static MPI_Datatype filetype(const struct layout *l) {
  MPI_Datatype ft;
  MPI_Type_create_hindexed(l->n, l->len, l->disp, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  return ft;
}

/* Writes through MPI-IO into a and through aggio into b, then reads both
 * back collectively, from a window that ends past the end of the file. */
static void run_case(int id, rng_t *g) {
  struct layout l;
  struct config c;
  make_layout(g, &l);
  make_config(g, &c);
  int64_t end = 0;
  MPI_Allreduce(&l.end, &end, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  char a[512], b[512], what[256];
  snprintf(a, sizeof a, "%s/node_local.%d.mpiio", test_dir(), nprocs);
  snprintf(b, sizeof b, "%s/node_local.%d.aggio", test_dir(), nprocs);
  snprintf(what, sizeof what, "case %d (np %d, K %s by %s, %s emulated nodes, cb %s, dio %s, "
           "%d pieces on rank %d)", id, nprocs, c.k, c.by_list ? "cb_config_list" : "hint",
           c.emulate, c.cb, c.dio, l.n, rank);
  int64_t bg = end / 2 + 1; /* the writes reach past the background's end */
  background(a, bg);
  background(b, bg);
  unsigned char *buf = malloc((size_t)l.bytes + 1), *back = malloc((size_t)l.bytes + 1),
                *ref = malloc((size_t)l.bytes + 1);
  for (int64_t i = 0; i < l.bytes; i++)
    buf[i] = data_byte(id, rank, i);
  MPI_Datatype ft = filetype(&l);

  MPI_File mf;
  int e = MPI_File_open(MPI_COMM_WORLD, a, MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  CHECK(e == MPI_SUCCESS, "MPI_File_open %s", a);
  MPI_File_set_view(mf, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  e = MPI_File_write_at_all(mf, 0, buf, (int)l.bytes, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(e == MPI_SUCCESS, "MPI_File_write_at_all");
  MPI_File_close(&mf);

  MPI_Info info = config_info(&c);
  struct capture cap;
  capture_begin(&cap);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, b, MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "%s: open: %s", what, aggio_error_message());
  if (rc == 0) {
    aggio_file_set_view(fh, 0, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    rc = aggio_file_write_at_all(fh, 0, buf, (int)l.bytes, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == 0, "%s: write_at_all: %s", what, aggio_error_message());
    rc = aggio_file_sync(fh);
    CHECK(rc == 0, "%s: sync: %s", what, aggio_error_message());
  }
  /* read back the whole layout, then the same view shifted so that the
   * last pieces lie past the end of the file (short reads) */
  int64_t shift = rng_range(g, 0, 1) ? 0 : end / 3;
  MPI_Barrier(MPI_COMM_WORLD);
  /* MPI-IO reads aggio's file (equal to its own but in the holes past the
   * old end, where MPI-IO's own file holds its buffers' leftovers) */
  e = MPI_File_open(MPI_COMM_WORLD, b, MPI_MODE_RDONLY, MPI_INFO_NULL, &mf);
  MPI_File_set_view(mf, (MPI_Offset)shift, MPI_BYTE, ft, "native", MPI_INFO_NULL);
  MPI_Status st;
  int nref = -1, nback = -2;
  memset(ref, 0x11, (size_t)l.bytes);
  e = MPI_File_read_at_all(mf, 0, ref, (int)l.bytes, MPI_BYTE, &st);
  CHECK(e == MPI_SUCCESS, "MPI_File_read_at_all");
  MPI_Get_count(&st, MPI_BYTE, &nref);
  MPI_File_close(&mf);
  if (rc == 0) {
    aggio_file_set_view(fh, (MPI_Offset)shift, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    memset(back, 0x11, (size_t)l.bytes);
    rc = aggio_file_read_at_all(fh, 0, back, (int)l.bytes, MPI_BYTE, &st);
    CHECK(rc == 0, "%s: read_at_all: %s", what, aggio_error_message());
    MPI_Get_count(&st, MPI_BYTE, &nback);
    /* MPI counts the bytes before the end of the file, in stream order;
     * Open MPI's OMPIO counts (and fills) the whole request instead, so
     * MPI-IO's data is the reference only before the end of the file. */
    MPI_Offset size = 0;
    aggio_file_get_size(fh, &size);
    int64_t want = 0;
    for (int q = 0; q < l.n; q++) {
      int64_t off = shift + (int64_t)l.disp[q];
      if (off + l.len[q] <= size) {
        want += l.len[q];
        continue;
      }
      want += off < size ? size - off : 0;
      break;
    }
    CHECK(nback == want, "%s: read %d bytes, %lld lie before the end of the file (MPI-IO "
          "said %d; shift %lld)", what, nback, (long long)want, nref, (long long)shift);
    CHECK(memcmp(back, ref, (size_t)want) == 0, "%s: read data differs from MPI-IO's "
          "(shift %lld)", what, (long long)shift);
    int untouched = 1;
    for (int64_t i = want; i < l.bytes; i++)
      untouched &= back[i] == 0x11;
    CHECK(untouched, "%s: the buffer past the end of the file was written", what);
    rc = aggio_file_close(&fh);
    CHECK(rc == 0, "%s: close: %s", what, aggio_error_message());
  }
  char *out = capture_end(&cap);
  same_files(a, b, what, &l, bg);
  if (rank == 0) {
    int64_t total = 0;
    CHECK(stat_value(out, "bytes crossing nodes") == 0, "%s: bytes crossing nodes %lld", what,
          stat_value(out, "bytes crossing nodes"));
    total = stat_value(out, "bytes written") + stat_value(out, "bytes read");
    CHECK(stat_value(out, "bytes copied within nodes") == total,
          "%s: bytes copied within nodes %lld, written + read %lld", what,
          stat_value(out, "bytes copied within nodes"), (long long)total);
  }
  free(out);
  MPI_Type_free(&ft);
  free(buf);
  free(back);
  free(ref);
  free(l.len);
  free(l.disp);
  free(l.covered);
  if (rank == 0) {
    unlink(a);
    unlink(b);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The HPE seed's Cray string selects node-local writing under auto, and
 * with romio_no_indep_rw only aggregators (and rank 0) have the file open:
 * the others hand their data over through shared memory. */
static void test_cray_string(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/node_local_cray.%d", test_dir(), nprocs);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "disable");
  MPI_Info_set(info, "cray_nocb_write_lock_mode", "1");
  MPI_Info_set(info, "romio_cb_read", "disable");
  MPI_Info_set(info, "romio_ds_write", "disable");
  MPI_Info_set(info, "romio_no_indep_rw", "true");
  MPI_Info_set(info, "aggio_emulate_nodes", nprocs > 1 ? "2" : "1");
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open with the Cray string: %s", aggio_error_message());
  if (rc != 0)
    return;
  enum { N = 100000 };
  unsigned char *buf = malloc(N);
  for (int i = 0; i < N; i++)
    buf[i] = data_byte(99, rank, i);
  rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == 0, "write_at_all: %s", aggio_error_message());
  MPI_Info got;
  char v[64] = "";
  int flag = 0;
  aggio_file_get_info(fh, &got);
  MPI_Info_get(got, "aggio_strategy_selected", sizeof v - 1, v, &flag);
  MPI_Info_free(&got);
  CHECK(flag && strcmp(v, "node_local") == 0, "the Cray string ran %s, not node_local", v);
  aggio_file_close(&fh);
  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &mf);
  unsigned char *back = calloc(1, N);
  MPI_File_read_at_all(mf, (MPI_Offset)rank * N, back, N, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_File_close(&mf);
  CHECK(memcmp(buf, back, N) == 0, "the Cray string's write, read by MPI-IO, differs");
  free(buf);
  free(back);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
}

/* aggio_node_aggregators is reported by get_info; asking, under
 * romio_no_indep_rw, for more aggregators than cb_config_list's (the only
 * ranks with the file open) fails the call on every rank, saying why, and
 * auto then falls back to two-phase for the next call. */
static void test_k_hint(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/node_local_k.%d", test_dir(), nprocs);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_cb_write", "disable");
  MPI_Info_set(info, "romio_no_indep_rw", "true");
  MPI_Info_set(info, "aggio_node_aggregators", "2");
  MPI_Info_set(info, "aggio_emulate_nodes", "1");
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return;
  MPI_Info got;
  char v[64] = "";
  int flag = 0;
  aggio_file_get_info(fh, &got);
  MPI_Info_get(got, "aggio_node_aggregators", sizeof v - 1, v, &flag);
  MPI_Info_free(&got);
  CHECK(flag && strcmp(v, "2") == 0, "get_info aggio_node_aggregators: \"%s\"", v);
  char buf[1000];
  memset(buf, rank + 1, sizeof buf);
  rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * 1000, buf, 1000, MPI_BYTE,
                               MPI_STATUS_IGNORE);
  int lo = 0, hi = 0;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (nprocs == 1) {
    CHECK(rc == 0, "one rank: its one aggregator has the file open: %s", aggio_error_message());
  } else {
    CHECK(lo == hi && rc == AGGIO_ERR_UNSUPPORTED, "rank %d: %d (ranks %d..%d)", rank, rc, lo,
          hi);
    CHECK(strstr(aggio_error_message(), "aggio_node_aggregators") != NULL, "message: %s",
          aggio_error_message());
    rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * 1000, buf, 1000, MPI_BYTE,
                                 MPI_STATUS_IGNORE);
    CHECK(rc == 0, "the next call falls back to two-phase: %s", aggio_error_message());
  }
  aggio_file_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  uint64_t seed = 20261125;
  const char *s = getenv("AGGIO_TEST_SEED");
  if (s && *s)
    seed = strtoull(s, NULL, 0);
  int cases = 12;
  if ((s = getenv("AGGIO_TEST_CASES")) && *s)
    cases = atoi(s);
  for (int i = 0; i < cases; i++) {
    rng_t g = {seed * 1000003u + (uint64_t)nprocs * 7919u + (uint64_t)i}; /* the same on every rank */
    run_case(i, &g);
  }
  test_cray_string();
  test_k_hint();
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
