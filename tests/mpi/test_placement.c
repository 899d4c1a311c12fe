/*
 * test_placement.c - aggregator placement with emulated nodes (one rank a
 * node) on a topology file: under each aggio_placement the aggregators are
 * the ones the cost model names (reported by get_info), and the file's
 * bytes equal those the MPI library's own MPI-IO writes, read back through
 * the placed aggregators too.  A malformed, missing or unknown topology or
 * placement does not fail the open: the placement falls back to greedy
 * and get_info says why.
 *
 * aggio-test-ranks: 1 2 4 8
 */
#include <aggio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

#define BLK 1000  /* bytes of one block; each rank writes NBLK, interleaved */
#define NBLK 8

static int rank, nprocs;
static char topo_path[600], path[400], ref_path[600];
static int one_host; /* every rank on this host: the file's nodes are the emulated ones */

/* A line of nprocs nodes, n0..n(P-1) at x = 0..P-1, and the I/O node at
 * x = P.  Latency 1 s and links of 1 B/s keep every cost an integer below
 * 2^53 (the placement's volumes are integers), so ties are exact. */
static void write_topology(const char *file, const char *extra) {
  if (rank == 0) {
    FILE *f = fopen(file, "w");
    fprintf(f, "# test_placement: a line, the I/O node at its end\n");
    fprintf(f, "shape mesh %d\nlatency 1\nbandwidth 1\nio_bandwidth 1\n", nprocs + 1);
    for (int i = 0; i < nprocs; i++)
      fprintf(f, "node n%d %d\n", i, i);
    fprintf(f, "io bridge %d\n%s", nprocs, extra);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void info_value(aggio_file fh, const char *key, char *v, int len) {
  MPI_Info used;
  int flag = 0;
  strcpy(v, "(unset)");
  if (aggio_file_get_info(fh, &used) != AGGIO_SUCCESS)
    return;
  MPI_Info_get(used, key, len - 1, v, &flag);
  if (!flag)
    strcpy(v, "(unset)");
  MPI_Info_free(&used);
}

static MPI_Datatype interleaved(void) {
  MPI_Datatype vec, t;
  MPI_Type_vector(NBLK, BLK, BLK * nprocs, MPI_BYTE, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)BLK * nprocs * NBLK, &t);
  MPI_Type_free(&vec);
  MPI_Type_commit(&t);
  return t;
}

static void fill(unsigned char *buf, int seed) {
  for (int i = 0; i < BLK * NBLK; i++)
    buf[i] = (unsigned char)(rank * 131 + i * 7 + seed * 29 + (i >> 8));
}

/* The reference: the same interleaved write through the MPI library. */
static void write_reference(int seed) {
  MPI_File mf;
  unsigned char buf[BLK * NBLK];
  fill(buf, seed);
  MPI_Datatype t = interleaved();
  if (rank == 0)
    unlink(ref_path);
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = MPI_File_open(MPI_COMM_WORLD, ref_path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &mf);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open of the reference");
  if (rc != MPI_SUCCESS)
    return;
  MPI_File_set_view(mf, (MPI_Offset)rank * BLK, MPI_BYTE, t, "native", MPI_INFO_NULL);
  MPI_File_write_at_all(mf, 0, buf, BLK * NBLK, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_File_close(&mf);
  MPI_Type_free(&t);
}

/* 1 on every rank when files a and b both hold exactly n bytes, the same
 * (rank 0 reads them). */
static int files_equal(const char *a_path, const char *b_path, size_t n) {
  int same = 1;
  if (rank == 0) {
    unsigned char *a = malloc(n + 1), *b = malloc(n + 1);
    FILE *fa = fopen(a_path, "rb"), *fb = fopen(b_path, "rb");
    size_t na = fa && a ? fread(a, 1, n + 1, fa) : 0, nb = fb && b ? fread(b, 1, n + 1, fb) : 0;
    same = na == n && nb == n && memcmp(a, b, n) == 0;
    if (fa)
      fclose(fa);
    if (fb)
      fclose(fb);
    free(a);
    free(b);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same;
}

/* The file equals the reference written through the MPI library. */
static void compare_files(const char *what) {
  CHECK(files_equal(path, ref_path, (size_t)BLK * NBLK * (size_t)nprocs),
        "%s: the file equals the MPI library's", what);
}

/* Opens with the hints, writes and reads back the interleaved blocks, and
 * returns what get_info says in sel (placement) and aggr (aggregators). */
static void run(const char *placement, const char *topo, const char *cb_nodes, char *sel,
                char *aggr, char *why) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "romio_cb_write", "enable");
  MPI_Info_set(info, "romio_cb_read", "enable");
  MPI_Info_set(info, "cb_buffer_size", "1048576");
  char emu[16];
  snprintf(emu, sizeof emu, "%d", nprocs);
  MPI_Info_set(info, "aggio_emulate_nodes", emu);
  MPI_Info_set(info, "cb_nodes", cb_nodes);
  MPI_Info_set(info, "aggio_placement", placement);
  if (topo)
    MPI_Info_set(info, "aggio_topology_file", topo);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "%s: open: %s", placement, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  info_value(fh, "aggio_placement_selected", sel, MPI_MAX_INFO_VAL);
  info_value(fh, "aggio_aggregators", aggr, MPI_MAX_INFO_VAL);
  info_value(fh, "aggio_topology_error", why, MPI_MAX_INFO_VAL);
  unsigned char buf[BLK * NBLK], back[BLK * NBLK];
  fill(buf, 1);
  MPI_Datatype t = interleaved();
  aggio_file_set_view(fh, (MPI_Offset)rank * BLK, MPI_BYTE, t, "native", MPI_INFO_NULL);
  rc = aggio_file_write_at_all(fh, 0, buf, BLK * NBLK, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS, "%s: write: %s", placement, aggio_error_message());
  memset(back, 0, sizeof back);
  rc = aggio_file_read_at_all(fh, 0, back, BLK * NBLK, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS && memcmp(buf, back, sizeof buf) == 0,
        "%s: read back through the aggregators", placement);
  aggio_file_close(&fh);
  MPI_Type_free(&t);
  compare_files(placement);
}

/* The aggregator each placement picks with one aggregator on the line
 * (write_topology): greedy and longest rank 0, shortest the last rank;
 * topology minimises max(k, P-1-k) + (P-k) hops (plus equal data terms):
 * P hops for every k >= (P-1)/2, so the lowest such k. */
static int expected(const char *placement) {
  if (strcmp(placement, "shortest") == 0)
    return nprocs - 1;
  if (strcmp(placement, "topology") == 0 || strcmp(placement, "auto") == 0)
    return nprocs / 2;
  return 0;
}

static void test_each_placement(void) {
  static const char *names[] = {"greedy", "shortest", "longest", "topology", "auto"};
  write_topology(topo_path, "");
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char sel[MPI_MAX_INFO_VAL + 1], aggr[MPI_MAX_INFO_VAL + 1], why[MPI_MAX_INFO_VAL + 1];
    run(names[i], topo_path, "1", sel, aggr, why);
    const char *want_sel = strcmp(names[i], "auto") == 0 ? "topology" : names[i];
    CHECK(strcmp(sel, want_sel) == 0, "%s: selected %s", names[i], sel);
    CHECK(strcmp(why, "(unset)") == 0, "%s: no topology error: %s", names[i], why);
    if (!one_host)
      continue;
    char want[32];
    snprintf(want, sizeof want, "%d", expected(names[i]));
    CHECK(strcmp(aggr, want) == 0, "%s: aggregator %s, want %s", names[i], aggr, want);
  }
  /* Two aggregators, partitions of P/2 ranks: shortest takes the last
   * rank of each (nearest the I/O node at the end of the line). */
  if (nprocs >= 4 && one_host) {
    char sel[MPI_MAX_INFO_VAL + 1], aggr[MPI_MAX_INFO_VAL + 1], why[MPI_MAX_INFO_VAL + 1];
    char want[32];
    run("shortest", topo_path, "2", sel, aggr, why);
    snprintf(want, sizeof want, "%d,%d", nprocs / 2 - 1, nprocs - 1);
    CHECK(strcmp(aggr, want) == 0, "shortest, 2 aggregators: %s, want %s", aggr, want);
  }
}

/* Broken inputs: the open succeeds with the greedy placement, and get_info
 * names the problem. */
static void test_fallbacks(void) {
  char bad[700], sel[MPI_MAX_INFO_VAL + 1], aggr[MPI_MAX_INFO_VAL + 1],
      why[MPI_MAX_INFO_VAL + 1];
  snprintf(bad, sizeof bad, "%s.bad", topo_path);
  write_topology(bad, "node extra 99\n"); /* beyond the line */
  run("topology", bad, "1", sel, aggr, why);
  CHECK(strcmp(sel, "greedy") == 0, "malformed topology: greedy, got %s", sel);
  CHECK(strstr(why, "aggio_topology_file") && strstr(why, "is not in 0..") &&
            strstr(why, "greedy placement"),
        "malformed topology reported with its line: %s", why);
  CHECK(strstr(why, "line ") != NULL, "the line is named: %s", why);
  CHECK(!one_host || strcmp(aggr, "0") == 0, "greedy aggregator 0: %s", aggr);

  snprintf(bad, sizeof bad, "%s.missing", topo_path);
  run("shortest", bad, "1", sel, aggr, why);
  CHECK(strcmp(sel, "greedy") == 0 && strstr(why, "cannot read"), "missing file: %s / %s", sel,
        why);

  run("topology", test_dir(), "1", sel, aggr, why); /* a directory */
  CHECK(strcmp(sel, "greedy") == 0 && strstr(why, "cannot read"), "a directory: %s / %s", sel,
        why);

  run("nearest", topo_path, "1", sel, aggr, why);
  CHECK(strcmp(sel, "greedy") == 0 && strstr(why, "\"nearest\" is not greedy"),
        "unknown placement: %s / %s", sel, why);

  /* Real nodes are found by host name: this host is not in the topology.
   * auto keeps greedy; topology, asked for, goes on with default hops. */
  setenv("AGGIO_HINTS", "*:aggio_emulate_nodes=0", 1);
  run("auto", topo_path, "1", sel, aggr, why);
  CHECK(strcmp(sel, "greedy") == 0 && strstr(why, "no node of this file is in the topology"),
        "auto, unknown hosts: %s / %s", sel, why);
  run("topology", topo_path, "1", sel, aggr, why);
  CHECK(strcmp(sel, "topology") == 0 && strstr(why, "default hop distances"),
        "topology, unknown hosts: %s / %s", sel, why);
  unsetenv("AGGIO_HINTS");

  /* auto without a topology (the system's Slurm file switched off): greedy */
  setenv("AGGIO_HINTS", "*:aggio_topology_slurm=none", 1);
  run("auto", NULL, "1", sel, aggr, why);
  unsetenv("AGGIO_HINTS");
  CHECK(strcmp(sel, "greedy") == 0 && strcmp(why, "(unset)") == 0, "auto, no topology: %s %s",
        sel, why);
}

/* ---- aggio_placement_scope=call -------------------------------------------- */

#define HEAVY 65536 /* one rank's bytes in a call; the others write LIGHT */
#define LIGHT 1024

static unsigned char pc_byte(int call, int64_t off) {
  return (unsigned char)(call * 37 + off * 11 + (off >> 9));
}

/* Call `call` of the per-call test: rank `heavy` writes HEAVY bytes, the
 * others LIGHT, packed in rank order from `base`; returns the call's size. */
static int64_t pc_write(aggio_file fh, MPI_File mf, int call, int heavy, int64_t base) {
  int64_t off = base;
  for (int r = 0; r < rank; r++)
    off += r == heavy ? HEAVY : LIGHT;
  int n = rank == heavy ? HEAVY : LIGHT;
  unsigned char *buf = malloc(HEAVY);
  for (int i = 0; i < n; i++)
    buf[i] = pc_byte(call, off + i);
  if (fh)
    CHECK(aggio_file_write_at_all(fh, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "per-call placement, call %d: %s", call, aggio_error_message());
  else
    MPI_File_write_at_all(mf, off, buf, n, MPI_BYTE, MPI_STATUS_IGNORE);
  free(buf);
  return HEAVY + (int64_t)(nprocs - 1) * LIGHT;
}

static aggio_file pc_open(const char *strategy) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", strategy);
  MPI_Info_set(info, "romio_cb_write", "enable");
  char emu[16];
  snprintf(emu, sizeof emu, "%d", nprocs);
  MPI_Info_set(info, "aggio_emulate_nodes", emu);
  MPI_Info_set(info, "cb_nodes", "1");
  MPI_Info_set(info, "aggio_placement", "topology");
  MPI_Info_set(info, "aggio_placement_scope", "call");
  MPI_Info_set(info, "aggio_topology_file", topo_path);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "per-call placement: open: %s", aggio_error_message());
  return rc == 0 ? fh : AGGIO_FILE_NULL;
}

/* On the line of write_topology, with data terms far above the hop terms,
 * the topology placement of a call puts the one aggregator on the rank
 * with the most bytes (its data then crosses no link); per file, with
 * uniform volumes, it is rank nprocs/2 (expected()).  Two calls, the heavy
 * rank first 0 then the last: the aggregator moves twice, and the file
 * equals the same calls made through the MPI library. */
static void test_per_call(void) {
  write_topology(topo_path, "");
  aggio_file fh = pc_open("two_phase");
  if (!fh)
    return;
  char aggr[MPI_MAX_INFO_VAL + 1], scope[MPI_MAX_INFO_VAL + 1], want[32];
  info_value(fh, "aggio_placement_scope", scope, MPI_MAX_INFO_VAL);
  CHECK(strcmp(scope, "call") == 0, "aggio_placement_scope honoured: %s", scope);
  info_value(fh, "aggio_aggregators", aggr, MPI_MAX_INFO_VAL);
  snprintf(want, sizeof want, "%d", expected("topology"));
  CHECK(!one_host || strcmp(aggr, want) == 0, "at open: aggregator %s, want %s", aggr, want);
  int64_t base = pc_write(fh, MPI_FILE_NULL, 1, 0, 0);
  info_value(fh, "aggio_aggregators", aggr, MPI_MAX_INFO_VAL);
  CHECK(!one_host || strcmp(aggr, "0") == 0, "call 1 (rank 0 heavy): aggregator %s, want 0",
        aggr);
  pc_write(fh, MPI_FILE_NULL, 2, nprocs - 1, base);
  info_value(fh, "aggio_aggregators", aggr, MPI_MAX_INFO_VAL);
  snprintf(want, sizeof want, "%d", nprocs - 1);
  CHECK(!one_host || strcmp(aggr, want) == 0, "call 2 (last rank heavy): aggregator %s, want %s",
        aggr, want);
  CHECK(aggio_file_close(&fh) == 0, "per-call placement: close: %s", aggio_error_message());

  MPI_File mf; /* the same two calls through the MPI library */
  if (rank == 0)
    unlink(ref_path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (MPI_File_open(MPI_COMM_WORLD, ref_path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                    &mf) == MPI_SUCCESS) {
    pc_write(AGGIO_FILE_NULL, mf, 1, 0, 0);
    pc_write(AGGIO_FILE_NULL, mf, 2, nprocs - 1, base);
    MPI_File_close(&mf);
  }
  CHECK(files_equal(path, ref_path, 2 * (size_t)base),
        "per-call placement: the file equals the MPI library's");

  /* Refused where the other strategies keep state on the aggregators */
  fh = pc_open("auto");
  if (!fh)
    return;
  info_value(fh, "aggio_hints_ignored", scope, MPI_MAX_INFO_VAL);
  CHECK(strstr(scope, "aggio_placement_scope=call: ") && strstr(scope, "two_phase"),
        "aggio_placement_scope=call with auto: %s", scope);
  aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  MPI_Comm host;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &host);
  int hs;
  MPI_Comm_size(host, &hs);
  MPI_Comm_free(&host);
  one_host = hs == nprocs;
  snprintf(path, sizeof path, "%s/test_placement.np%d.dat", test_dir(), nprocs);
  snprintf(ref_path, sizeof ref_path, "%s.ref", path);
  snprintf(topo_path, sizeof topo_path, "%s.topo", path);
  write_reference(1);
  test_each_placement();
  test_fallbacks();
  test_per_call();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char p[700];
    unlink(ref_path);
    unlink(topo_path);
    snprintf(p, sizeof p, "%s.bad", topo_path);
    unlink(p);
  }
  return test_finish_mpi(path);
}
