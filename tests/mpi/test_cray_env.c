/*
 * test_cray_env.c - the environment Cray and ROMIO users already have,
 * end to end through aggio_file_open:
 *   - precedence: ROMIO_HINTS < AGGIO_HINTS_FILE < MPI_Info <
 *     MPICH_MPIIO_HINTS < AGGIO_HINTS, each hint's source reported by
 *     get_info (aggio_hints_from_<source>) and by MPICH_MPIIO_HINTS_DISPLAY;
 *     the lock modes reported in aggio_hints_ignored ("needs Lustre") off
 *     Lustre, their keys holding the mode in effect (0);
 *   - MPICH_MPIIO_STATS and MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY as
 *     aliases: the Cray lines of the blocks checked by content after a
 *     two-phase write whose bytes are compared through the MPI library's
 *     own MPI-IO: with one emulated node no byte crosses nodes, with one
 *     emulated node per rank some do, and crossing + within-node bytes are
 *     every byte written; "aggregators active", the per-aggregator rows and
 *     the AGG/Rank/nid table agree with the placement;
 *   - cray_cb_nodes_multiplier doubling the aggregators.
 * Rank 0's stdout is captured (dup2) and parsed.
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

static const char *const cray_vars[] = {
    "ROMIO_HINTS", "AGGIO_HINTS_FILE", "MPICH_MPIIO_HINTS", "AGGIO_HINTS",
    "MPICH_MPIIO_HINTS_DISPLAY", "AGGIO_HINTS_DISPLAY", "MPICH_MPIIO_STATS", "AGGIO_STATS",
    "MPICH_MPIIO_TIMERS", "AGGIO_TIMERS", "MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY",
    "AGGIO_AGGREGATOR_PLACEMENT_DISPLAY", "AGGIO_EMULATE_NODES", "AGGIO_TRACE"};

static void clear_env(void) {
  for (size_t i = 0; i < sizeof cray_vars / sizeof *cray_vars; i++)
    unsetenv(cray_vars[i]);
}

/* ---- capturing rank 0's stdout ----------------------------------------------- */

static void capture_begin(struct capture *c, const char *tag) {
  char path[512];
  snprintf(path, sizeof path, "%s/cray_out_%s_np%d.txt", test_dir(), tag, nprocs);
  capture_to(c, rank, path);
}

/* The line of text holding `key` (copied into out), or NULL. */
static const char *line_with(const char *text, const char *key, char *out, size_t cap) {
  const char *p = text ? strstr(text, key) : NULL;
  if (!p)
    return NULL;
  while (p > text && p[-1] != '\n')
    p--;
  size_t n = strcspn(p, "\n");
  if (n >= cap)
    n = cap - 1;
  memcpy(out, p, n);
  out[n] = 0;
  return out;
}

static long long after(const char *text, const char *key) {
  const char *p = text ? strstr(text, key) : NULL;
  CHECK(p != NULL, "no \"%s\" in the output", key);
  return p ? atoll(p + strlen(key)) : -1;
}

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  CHECK(f != NULL, "cannot write %s", path);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* ---- precedence and sources --------------------------------------------------- */

static void info_value(MPI_Info info, const char *key, char *out, size_t cap) {
  int flag = 0;
  out[0] = 0;
  MPI_Info_get(info, key, (int)cap - 1, out, &flag);
  if (!flag)
    snprintf(out, cap, "(unset)");
}

/* 1 when comma-separated `list` holds `key`. */
static int lists(const char *list, const char *key) {
  size_t n = strlen(key);
  for (const char *p = list; (p = strstr(p, key)) != NULL; p += n)
    if ((p == list || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
      return 1;
  return 0;
}

static void test_precedence(void) {
  char romio[512], own[512], path[512];
  snprintf(romio, sizeof romio, "%s/cray_romio_hints_np%d", test_dir(), nprocs);
  snprintf(own, sizeof own, "%s/cray_aggio_hints_np%d", test_dir(), nprocs);
  snprintf(path, sizeof path, "%s/cray_prec_np%d.dat", test_dir(), nprocs);
  if (rank == 0) {
    write_file(romio, "# ROMIO's format\nstriping_unit 65536\ncb_buffer_size 1m\n"
                      "romio_ds_read disable\n");
    write_file(own, "cb_buffer_size 2m\n");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("ROMIO_HINTS", romio, 1);
  setenv("AGGIO_HINTS_FILE", own, 1);
  /* The first entry matches; the second would too but Cray applies only
   * the first.  cb_config_list unquoted, as Cray sites write it. */
  setenv("MPICH_MPIIO_HINTS",
         "*.dat:romio_ds_write=disable:cb_config_list=*:2:cray_cb_write_lock_mode=1:"
         "cray_nocb_write_lock_mode=2,*:romio_cb_read=enable", 1);
  setenv("AGGIO_HINTS", "*:cb_config_list=#*:1#", 1);
  setenv("MPICH_MPIIO_HINTS_DISPLAY", "1", 1);
  /* The switches: aggio's own win over Cray's aliases. */
  setenv("MPICH_MPIIO_STATS", "1", 1);
  setenv("AGGIO_STATS", "0", 1);
  setenv("MPICH_MPIIO_TIMERS", "3", 1);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "romio_ds_write", "enable");
  MPI_Info_set(info, "aggio_pipeline", "disable");
  MPI_Info_set(info, "romio_ds_read", "enable");
  struct capture cap;
  capture_begin(&cap, "display");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  char *out = capture_end(&cap);
  MPI_Info_free(&info);
  clear_env();
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0) {
    free(out);
    return;
  }
  int lustre = strcmp(fh->fstype, "lustre") == 0;
  MPI_Info used;
  aggio_file_get_info(fh, &used);
  char v[MPI_MAX_INFO_VAL + 1];
  info_value(used, "striping_unit", v, sizeof v);
  CHECK(strcmp(v, "65536") == 0, "ROMIO_HINTS alone sets striping_unit: %s", v);
  info_value(used, "cb_buffer_size", v, sizeof v);
  CHECK(strcmp(v, "2097152") == 0, "AGGIO_HINTS_FILE over ROMIO_HINTS: %s", v);
  info_value(used, "romio_ds_read", v, sizeof v);
  CHECK(strcmp(v, "enable") == 0, "MPI_Info over the files: %s", v);
  info_value(used, "romio_ds_write", v, sizeof v);
  CHECK(strcmp(v, "disable") == 0, "MPICH_MPIIO_HINTS over MPI_Info: %s", v);
  info_value(used, "romio_cb_read", v, sizeof v);
  CHECK(strcmp(v, "automatic") == 0, "only the first matching Cray entry: %s", v);
  info_value(used, "cb_config_list", v, sizeof v);
  CHECK(strcmp(v, "*:1") == 0, "AGGIO_HINTS over MPICH_MPIIO_HINTS: %s", v);
  /* a lock mode not applied reads as the mode in effect (0, normal
   * locking); what was asked and why not is under aggio_hints_ignored */
  info_value(used, "cray_cb_write_lock_mode", v, sizeof v);
  if (!lustre)
    CHECK(strcmp(v, "0") == 0, "lock mode off Lustre is the mode in effect: %s", v);
  info_value(used, "cray_nocb_write_lock_mode", v, sizeof v);
  CHECK(strcmp(v, "0") == 0, "lock ahead is not in effect: %s", v);
  info_value(used, "aggio_hints_ignored", v, sizeof v);
  if (!lustre)
    CHECK(strstr(v, "cray_cb_write_lock_mode=1: needs Lustre"),
          "lock mode off Lustre: %s", v);
  CHECK(strstr(v, "cray_nocb_write_lock_mode=2: ") != NULL,
        "lock ahead reported ignored: %s", v);

  info_value(used, "aggio_stats", v, sizeof v);
  CHECK(strcmp(v, "false") == 0, "AGGIO_STATS=0 over MPICH_MPIIO_STATS=1: %s", v);
  info_value(used, "aggio_timers", v, sizeof v);
  CHECK(strcmp(v, "true") == 0, "MPICH_MPIIO_TIMERS=3 (a Cray level) is on: %s", v);

  info_value(used, "aggio_hints_from_ROMIO_HINTS", v, sizeof v);
  CHECK(lists(v, "striping_unit") && lists(v, "romio_ds_read") == 0 &&
            !lists(v, "cb_buffer_size"),
        "from ROMIO_HINTS: %s", v);
  info_value(used, "aggio_hints_from_AGGIO_HINTS_FILE", v, sizeof v);
  CHECK(strcmp(v, "cb_buffer_size") == 0, "from AGGIO_HINTS_FILE: %s", v);
  info_value(used, "aggio_hints_from_MPI_Info", v, sizeof v);
  CHECK(lists(v, "aggio_pipeline") && lists(v, "romio_ds_read") && !lists(v, "romio_ds_write"),
        "from MPI_Info: %s", v);
  info_value(used, "aggio_hints_from_MPICH_MPIIO_HINTS", v, sizeof v);
  CHECK(lists(v, "romio_ds_write") && lists(v, "cray_cb_write_lock_mode") &&
            lists(v, "aggio_timers") && !lists(v, "cb_config_list") &&
            !lists(v, "romio_cb_read") && !lists(v, "aggio_stats"),
        "from MPICH_MPIIO_HINTS: %s", v);
  info_value(used, "aggio_hints_from_AGGIO_HINTS", v, sizeof v);
  CHECK(lists(v, "cb_config_list") && lists(v, "aggio_stats"), "from AGGIO_HINTS: %s", v);
  MPI_Info_free(&used);

  if (rank == 0) {
    char line[512];
    CHECK(out && strstr(out, "aggio hints for file"), "MPICH_MPIIO_HINTS_DISPLAY shows hints");
    CHECK(line_with(out, "romio_ds_write ", line, sizeof line) &&
              strstr(line, "[MPICH_MPIIO_HINTS]"),
          "display names the source: %s", line);
    CHECK(line_with(out, "striping_unit ", line, sizeof line) && strstr(line, "[ROMIO_HINTS]"),
          "display: %s", line);
    if (!lustre)
      CHECK(line_with(out, "cray_cb_write_lock_mode", line, sizeof line) &&
                strstr(line, "ignored") && strstr(line, "needs Lustre"),
            "display says needs Lustre: %s", line);
  }
  free(out);
  capture_begin(&cap, "close");
  aggio_file_close(&fh);
  out = capture_end(&cap);
  if (rank == 0)
    CHECK(out && strstr(out, "aggio timers for file") && !strstr(out, "aggio stats for file"),
          "at close: the timers block (MPICH_MPIIO_TIMERS), no stats block (AGGIO_STATS=0)");
  free(out);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(romio);
    unlink(own);
    unlink(path);
  }
}

/* ---- statistics and placement --------------------------------------------------- */

enum { SEG = 65536, NSEG = 4 };

static char byte_at(int64_t off) { return (char)('a' + (off * 13 + off / 509) % 26); }

/* Which of call j's nprocs segments rank r writes: shifted by j + 1, so
 * that with one aggregator per rank (each owning one segment's domain) a
 * rank's data goes to another rank except when j + 1 is a multiple of
 * nprocs. */
static int slot_of(int r, int j) { return (r + j + 1) % nprocs; }

/* NSEG collective calls; call j covers [j, j + 1) * nprocs * SEG. */
static int write_interleaved(aggio_file fh) {
  char *buf = malloc(SEG);
  int rc = 0;
  for (int j = 0; j < NSEG; j++) {
    int64_t off = ((int64_t)j * nprocs + slot_of(rank, j)) * SEG;
    for (int i = 0; i < SEG; i++)
      buf[i] = byte_at(off + i);
    rc |= aggio_file_write_at_all(fh, off, buf, SEG, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  free(buf);
  return rc;
}

/* The bytes through the MPI library's own MPI-IO, rank 0. */
static void check_bytes(const char *path) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0)
    return;
  MPI_File f;
  int64_t total = (int64_t)NSEG * nprocs * SEG;
  char *got = malloc((size_t)total);
  int rc = MPI_File_open(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open");
  if (rc == MPI_SUCCESS) {
    MPI_File_read_at(f, 0, got, (int)total, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_File_close(&f);
    int64_t bad = -1;
    for (int64_t i = 0; i < total && bad < 0; i++)
      if (got[i] != byte_at(i))
        bad = i;
    CHECK(bad < 0, "byte %lld differs", (long long)bad);
  }
  free(got);
}

/* Rows of the AGG/Rank/nid table in the placement block: fills ranks and
 * nids (n at most cap) and returns the count. */
static int placement_rows(const char *blk, int *ranks, char (*nids)[64], int cap) {
  const char *p = blk ? strstr(blk, "   AGG    Rank  nid\n") : NULL;
  if (!p)
    return -1;
  p = strchr(p, '\n') + 1;
  p = strchr(p, '\n') + 1; /* the dashes */
  int n = 0, agg, r;
  char nid[64];
  while (n < cap && sscanf(p, " %d %d %63s", &agg, &r, nid) == 3 && agg == n) {
    ranks[n] = r;
    snprintf(nids[n], sizeof nids[n], "%s", nid);
    n++;
    p = strchr(p, '\n') + 1;
  }
  return n;
}

/* Sums the per-aggregator rows of the stats block; returns the row count. */
static int aggregator_rows(const char *blk, long long *bytes, long long *writes) {
  const char *p = blk ? strstr(blk, "bytes written  system writes\n") : NULL;
  *bytes = *writes = 0;
  if (!p)
    return -1;
  p = strchr(p, '\n') + 1;
  int n = 0, r;
  char agg[16], nid[64];
  long long b, w;
  while (sscanf(p, " %15s %d %63s %lld %lld", agg, &r, nid, &b, &w) == 5) {
    *bytes += b;
    *writes += w;
    n++;
    p = strchr(p, '\n') + 1;
  }
  return n;
}

static char *stats_run(int emulate, int multiplier, const char *tag, int *naggr) {
  char path[512], num[16];
  snprintf(path, sizeof path, "%s/cray_stats_%s_np%d.dat", test_dir(), tag, nprocs);
  setenv("MPICH_MPIIO_STATS", "2", 1); /* Cray's level 2: on */
  setenv("MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY", "1", 1);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "cb_config_list", "*:1");
  snprintf(num, sizeof num, "%d", emulate);
  MPI_Info_set(info, "aggio_emulate_nodes", num);
  snprintf(num, sizeof num, "%d", multiplier);
  MPI_Info_set(info, "cray_cb_nodes_multiplier", num);
  struct capture cap;
  capture_begin(&cap, tag);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  *naggr = -1;
  if (rc == 0) {
    *naggr = fh->topo.naggr;
    CHECK(write_interleaved(fh) == 0, "write: %s", aggio_error_message());
    aggio_file_close(&fh);
  }
  char *out = capture_end(&cap);
  clear_env();
  check_bytes(path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
  return out;
}

/* The Cray lines after one run; `nodes` emulated nodes, one aggregator each
 * (times the multiplier). */
static void check_stats(const char *out, int nodes, int naggr, int multiplier) {
  char want[128], line[512];
  long long total = (long long)NSEG * nprocs * SEG;
  const char *st = out ? strstr(out, "aggio stats for file") : NULL;
  CHECK(st != NULL, "MPICH_MPIIO_STATS prints the stats block");
  int expect_aggr = nodes * multiplier < nprocs ? nodes * multiplier : nprocs;
  CHECK(naggr == expect_aggr, "%d aggregators, want %d", naggr, expect_aggr);
  /* Every call spans whole domains: all aggregators active, NSEG calls. */
  snprintf(want, sizeof want, "aggregators active = 0,0,0,%d (1, <= 4, > 4, %d)", NSEG, naggr);
  if (naggr == 1)
    snprintf(want, sizeof want, "aggregators active = 0,0,0,%d (1, <= 4, > 4, 1)", NSEG);
  CHECK(st && strstr(st, want), "want \"%s\": %s", want,
        line_with(st, "aggregators active", line, sizeof line) ? line : "(none)");
  long long cross = after(st, "bytes crossing nodes: ");
  long long local = after(st, "bytes copied within nodes: ");
  CHECK(cross + local == total, "crossing %lld + within %lld = %lld written", cross, local, total);
  if (nodes == 1)
    CHECK(cross == 0, "one emulated node: %lld bytes crossed nodes", cross);
  else
    CHECK(cross > 0, "%d emulated nodes: no byte crossed nodes", nodes);
  if (nodes == nprocs && multiplier == 1) { /* each rank its own node and aggregator */
    long long want_cross = 0;
    for (int r = 0; r < nprocs; r++)
      for (int j = 0; j < NSEG; j++)
        want_cross += slot_of(r, j) != r ? SEG : 0;
    CHECK(cross == want_cross, "%lld bytes crossed nodes, want %lld", cross, want_cross);
  }
  long long bytes, writes;
  int rows = aggregator_rows(st, &bytes, &writes);
  CHECK(rows == naggr, "%d per-aggregator rows, want %d", rows, naggr);
  CHECK(bytes == total && bytes == after(st, "aggregator system write bytes: "),
        "aggregators wrote %lld bytes of %lld", bytes, total);
  CHECK(writes == after(st, "aggregator system writes: ") && writes >= naggr,
        "per-aggregator writes %lld", writes);

  const char *pl = out ? strstr(out, "(at open)") : NULL;
  int ranks[64];
  char nids[64][64];
  int n = placement_rows(pl, ranks, nids, 64);
  CHECK(n == naggr, "placement table has %d rows, want %d", n, naggr);
  for (int i = 0; i < n; i++) {
    /* One aggregator per emulated node: its first rank. */
    CHECK(i == 0 || ranks[i] > ranks[i - 1], "rows sorted by rank");
    if (nodes > 1)
      CHECK(strchr(nids[i], '#') != NULL, "emulated nid %s", nids[i]);
  }
  if (nodes == nprocs && multiplier == 1)
    for (int i = 0; i < n; i++)
      CHECK(ranks[i] == i, "row %d is rank %d", i, ranks[i]);
  CHECK(pl && strstr(out, "(at close)"), "placement shown again at close");
}

static void test_stats(void) {
  int naggr;
  char *out = stats_run(1, 1, "one", &naggr);
  if (rank == 0)
    check_stats(out, 1, naggr, 1);
  free(out);
  if (nprocs > 1) {
    out = stats_run(nprocs, 1, "many", &naggr);
    if (rank == 0)
      check_stats(out, nprocs, naggr, 1);
    free(out);
    out = stats_run(1, 2, "mult", &naggr);
    if (rank == 0)
      check_stats(out, 1, naggr, 2);
    free(out);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  clear_env();
  test_precedence();
  test_stats();
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
