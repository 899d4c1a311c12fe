/*
 * test_info.c - hints through their three sources and their precedence,
 * a ROMIO_HINTS file read as ROMIO reads it (MPICH's syshints test),
 * hints changed after open (set_info, set_view), hints the file system
 * cannot honour (numbers in effect, reasons under aggio_hints_ignored),
 * cb_nodes as the aggregators in use, a collective whose ranks pass
 * different infos, a hints file that cannot be read or holds a NUL byte,
 * and warnings kept once.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <aggio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

static void info_value(aggio_file fh, const char *key, char *v, size_t len) {
  MPI_Info used;
  int flag = 0;
  v[0] = '\0';
  if (aggio_file_get_info(fh, &used) != AGGIO_SUCCESS)
    return;
  MPI_Info_get(used, key, (int)len - 1, v, &flag);
  if (!flag)
    strcpy(v, "(unset)");
  MPI_Info_free(&used);
}

static MPI_Info info1(const char *k, const char *v) {
  MPI_Info i;
  MPI_Info_create(&i);
  MPI_Info_set(i, k, v);
  return i;
}

/* Rank 0 writes a hints file; every rank returns once it is there. */
static void write_hints_file(const char *hints_file, int rank, const char *text) {
  if (rank == 0) {
    FILE *f = fopen(hints_file, "w");
    CHECK(f != NULL, "cannot write %s", hints_file);
    if (f) {
      fputs(text, f);
      fclose(f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* defaults < AGGIO_HINTS_FILE < MPI_Info < AGGIO_HINTS */
static void test_precedence(const char *path, int rank) {
  char hints_file[600], v[MPI_MAX_INFO_VAL + 1];
  snprintf(hints_file, sizeof hints_file, "%s.hints", path);
  write_hints_file(hints_file, rank,
                   "# test hints\ncb_buffer_size 65536\nromio_ds_write disable\ncb_nodes 1\n");
  setenv("AGGIO_HINTS_FILE", hints_file, 1);
  setenv("AGGIO_HINTS", "*.nomatch:cb_nodes=7,*info*:romio_ds_write=enable", 1);
  MPI_Info info = info1("cb_buffer_size", "128k");
  MPI_Info_set(info, "romio_ds_write", "automatic");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    info_value(fh, "cb_buffer_size", v, sizeof v);
    CHECK(strcmp(v, "131072") == 0, "MPI_Info beats the hints file: cb_buffer_size %s", v);
    info_value(fh, "romio_ds_write", v, sizeof v);
    CHECK(strcmp(v, "enable") == 0, "AGGIO_HINTS beats MPI_Info: romio_ds_write %s", v);
    info_value(fh, "cb_nodes", v, sizeof v);
    CHECK(strcmp(v, "1") == 0, "hints file applies; a non-matching pattern does not: cb_nodes %s", v);
    aggio_file_close(&fh);
  }
  unsetenv("AGGIO_HINTS_FILE");
  unsetenv("AGGIO_HINTS");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(hints_file);
}

/* Collective write then read of a known pattern (4096 bytes a rank);
 * returns the number of bytes read back wrong on this rank. */
static int write_read_back(aggio_file fh, int rank) {
  enum { N = 4096 };
  char out[N], in[N];
  for (int i = 0; i < N; i++)
    out[i] = (char)('A' + (rank * 7 + i) % 26);
  MPI_Offset off = (MPI_Offset)rank * N;
  int rc = aggio_file_write_at_all(fh, off, out, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS, "write_at_all: %s", aggio_error_message());
  memset(in, 0, N);
  rc = aggio_file_read_at_all(fh, off, in, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS, "read_at_all: %s", aggio_error_message());
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += in[i] != out[i];
  return bad;
}

/* MPICH's syshints test through aggio: a ROMIO_HINTS file as its
 * test_hintfile (a key given twice: ROMIO keeps the first line), under the
 * program's MPI_Info, which wins for every key it sets, as in ROMIO;
 * romio_no_indep_rw=true from the file turns the program's
 * romio_cb_read=disable into enable (ROMIO's rule); ind_rd_buffer_size and
 * ind_wr_buffer_size reported. */
static void test_romio_hints_file(const char *path, int rank) {
  char hints_file[600], v[MPI_MAX_INFO_VAL + 1];
  snprintf(hints_file, sizeof hints_file, "%s.romio-hints", path);
  write_hints_file(hints_file, rank,
                   "romio_cb_read enable\n# a key twice: the first line counts\n"
                   "ind_rd_buffer_size 49\nind_rd_buffer_size 60\nromio_no_indep_rw true\n"
                   "cb_buffer_size 65536\n");
  setenv("ROMIO_HINTS", hints_file, 1);
  MPI_Info info = info1("romio_cb_read", "disable");
  MPI_Info_set(info, "cb_buffer_size", "128k");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  unsetenv("ROMIO_HINTS");
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    static const char *const want[][2] = {
        {"romio_cb_read", "enable"},         {"romio_no_indep_rw", "true"},
        {"ind_rd_buffer_size", "49"},        {"ind_wr_buffer_size", "524288"},
        {"cb_buffer_size", "131072"}};
    for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
      info_value(fh, want[i][0], v, sizeof v);
      CHECK(strcmp(v, want[i][1]) == 0, "%s: %s, want %s", want[i][0], v, want[i][1]);
    }
    info_value(fh, "aggio_hints_ignored", v, sizeof v);
    CHECK(strstr(v, "romio_cb_read=enable: asked disable") != NULL, "why enable: %s", v);
    info_value(fh, "aggio_hints_from_ROMIO_HINTS", v, sizeof v);
    CHECK(strstr(v, "ind_rd_buffer_size") && strstr(v, "romio_no_indep_rw") &&
              !strstr(v, "cb_buffer_size") && !strstr(v, "romio_cb_read"),
          "keys from ROMIO_HINTS: %s", v);
    CHECK(write_read_back(fh, rank) == 0, "bytes read back differ");
    aggio_file_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(hints_file);
}

/* set_info and set_view change hints collectively; differing infos fail on
 * every rank instead of hanging. */
static void test_after_open(const char *path, int rank, int nprocs) {
  char v[MPI_MAX_INFO_VAL + 1];
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  MPI_Info info = info1("cb_buffer_size", "1m");
  rc = aggio_file_set_info(fh, info);
  CHECK(rc == AGGIO_SUCCESS, "set_info: %s", aggio_error_message());
  info_value(fh, "cb_buffer_size", v, sizeof v);
  CHECK(strcmp(v, "1048576") == 0, "set_info took effect: %s", v);
  rc = aggio_file_set_info(fh, MPI_INFO_NULL);
  CHECK(rc == AGGIO_SUCCESS, "set_info(MPI_INFO_NULL): %s", aggio_error_message());
  info_value(fh, "cb_buffer_size", v, sizeof v);
  CHECK(strcmp(v, "1048576") == 0, "MPI_INFO_NULL keeps hints: %s", v);
  if (nprocs > 1) {
    /* rank 0 alone asks for another buffer size */
    MPI_Info other = info1("cb_buffer_size", "2m");
    rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
                             rank == 0 ? other : MPI_INFO_NULL);
    MPI_Info_free(&other);
    /* every rank sees the mismatch itself (the hints are compared on all
     * ranks), so every rank returns the mismatch code, not another error */
    CHECK(rc == AGGIO_ERR_HINT_MISMATCH, "differing infos: rank %d got %d (%s)", rank, rc,
          aggio_strerror(rc));
    MPI_Info_free(&info);
    info = info1("cb_buffer_size", rank == 0 ? "2m" : "4m");
    rc = aggio_file_set_info(fh, info);
    CHECK(rc == AGGIO_ERR_HINT_MISMATCH, "differing set_info: rank %d got %d (%s)", rank,
          rc, aggio_strerror(rc));
    /* every rank, rank 0 included, is told which hint differs */
    CHECK(strstr(aggio_error_message(), "cb_buffer_size") != NULL,
          "rank %d: the mismatch message does not name the hint: %s", rank,
          aggio_error_message());
    info_value(fh, "cb_buffer_size", v, sizeof v);
    CHECK(strcmp(v, "1048576") == 0, "a failed set_info keeps the hints: %s", v);
  }
  MPI_Info_free(&info);
  /* the file still works */
  char buf[64], back[64];
  memset(buf, 'a' + rank % 26, sizeof buf);
  rc = aggio_file_write_at_all(fh, rank * 64, buf, 64, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS, "write after: %s", aggio_error_message());
  rc = aggio_file_read_at_all(fh, rank * 64, back, 64, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS && memcmp(buf, back, 64) == 0, "read back after hint changes");
  /* which strategy the last call used is reported: 64-byte requests go
   * through the node cache */
  info_value(fh, "aggio_strategy_selected", v, sizeof v);
  CHECK(strcmp(v, "write_behind") == 0, "aggio_strategy_selected: %s", v);
  aggio_file_close(&fh);
}

/* Occurrences of needle in s. */
static int count_of(const char *s, const char *needle) {
  int n = 0;
  for (const char *p = s; (p = strstr(p, needle)) != NULL; p += strlen(needle))
    n++;
  return n;
}

/* A hints file that cannot be read (a directory) is a warning; a NUL byte
 * in one is a warning too, and the lines after it still apply. */
static void test_hints_file_problems(const char *path, int rank) {
  char hints_file[600], v[MPI_MAX_INFO_VAL + 1];
  aggio_file fh;
  setenv("AGGIO_HINTS_FILE", test_dir(), 1); /* a directory */
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open with a directory as hints file: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    info_value(fh, "aggio_hint_warnings", v, sizeof v);
    CHECK(strstr(v, "cannot read AGGIO_HINTS_FILE") && strstr(v, test_dir()),
          "a directory as hints file is reported: %s", v);
    aggio_file_close(&fh);
  }
  snprintf(hints_file, sizeof hints_file, "%s.nul-hints", path);
  if (rank == 0) {
    static const char text[] = "cb_nodes 1\nromio_ds_write\0 disable\ncb_buffer_size 65536\n";
    FILE *f = fopen(hints_file, "w");
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  setenv("AGGIO_HINTS_FILE", hints_file, 1);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                       &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    info_value(fh, "cb_buffer_size", v, sizeof v);
    CHECK(strcmp(v, "65536") == 0, "the line after a NUL byte applies: cb_buffer_size %s", v);
    info_value(fh, "aggio_hint_warnings", v, sizeof v);
    CHECK(strstr(v, "line 2") && strstr(v, "NUL"), "the NUL byte is reported: %s", v);
    aggio_file_close(&fh);
  }
  unsetenv("AGGIO_HINTS_FILE");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(hints_file);
}

/* set_info and set_view apply AGGIO_HINTS again: its malformed value is
 * still warned about, once. */
static void test_warning_once(const char *path) {
  char v[MPI_MAX_INFO_VAL + 1];
  aggio_file fh;
  setenv("AGGIO_HINTS", "*:cb_nodes=-1", 1);
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    MPI_Info info = info1("cb_buffer_size", "1m");
    rc = aggio_file_set_info(fh, info);
    CHECK(rc == AGGIO_SUCCESS, "set_info: %s", aggio_error_message());
    rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info);
    CHECK(rc == AGGIO_SUCCESS, "set_view: %s", aggio_error_message());
    MPI_Info_free(&info);
    info_value(fh, "aggio_hint_warnings", v, sizeof v);
    CHECK(count_of(v, "hint cb_nodes") == 1, "the warning is kept once: %s", v);
    aggio_file_close(&fh);
  }
  unsetenv("AGGIO_HINTS");
}

/* 1 when v is a whole decimal integer (what atoi/strtol callers such as
 * HDF5 and PnetCDF need), with its value in *n. */
static int parse_int(const char *v, long *n) {
  char *end = NULL;
  *n = strtol(v, &end, 10);
  return v[0] != '\0' && end && *end == '\0';
}

/* A hint the file system cannot honour: its key holds the number in effect
 * (no stripe count was set: 0), and the value asked with the reason is
 * under aggio_hints_ignored. */
static void test_ignored(const char *path) {
  char v[MPI_MAX_INFO_VAL + 1];
  MPI_Info info = info1("striping_factor", "8");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  long n = -1;
  info_value(fh, "striping_factor", v, sizeof v);
  CHECK(parse_int(v, &n) && n == 0, "striping_factor is the number in effect (0): \"%s\"",
        v);
  info_value(fh, "striping_unit", v, sizeof v);
  CHECK(parse_int(v, &n) && n == 0, "striping_unit is a number: \"%s\"", v);
  info_value(fh, "aggio_hints_ignored", v, sizeof v);
  CHECK(strstr(v, "striping_factor=8: ") &&
            (strstr(v, "does not stripe") || strstr(v, "no Lustre layout")),
        "the reason is under aggio_hints_ignored: \"%s\"", v);
  aggio_file_close(&fh);
}

/* The emulated node (block distribution, as aggio_emulate_nodes splits a
 * real node's ranks) and this rank's place in it. */
static int place_in_emulated_node(int hrank, int hsize, int k) {
  if (k > hsize)
    k = hsize;
  int base = hsize / k, extra = hsize % k, cut = extra * (base + 1);
  if (hrank < cut)
    return hrank % (base + 1);
  return (hrank - cut) % base;
}

/* cb_nodes reads back as the aggregators the file uses: cb_config_list=*:2
 * on two emulated nodes per host gives two per node (fewer on a node with
 * one rank), whatever the hint's default 0 says; an explicit cb_nodes caps
 * them. */
static void test_cb_nodes(const char *path, int rank, int nprocs) {
  MPI_Comm host;
  int hrank, hsize, expect = 0;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
  MPI_Comm_rank(host, &hrank);
  MPI_Comm_size(host, &hsize);
  MPI_Comm_free(&host);
  int mine = place_in_emulated_node(hrank, hsize, 2) < 2;
  MPI_Allreduce(&mine, &expect, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  for (int cap = 0; cap <= 1; cap++) {
    MPI_Info info = info1("cb_config_list", "*:2");
    MPI_Info_set(info, "aggio_emulate_nodes", "2");
    if (cap)
      MPI_Info_set(info, "cb_nodes", "1");
    aggio_file fh;
    int rc =
        aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    MPI_Info_free(&info);
    CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
    if (rc != AGGIO_SUCCESS)
      return;
    char v[MPI_MAX_INFO_VAL + 1];
    long n = -1;
    info_value(fh, "cb_nodes", v, sizeof v);
    int want = cap ? 1 : expect;
    CHECK(parse_int(v, &n) && n == want,
          "cb_nodes is the number of aggregators (%d of %d ranks): \"%s\"", want, nprocs,
          v);
    aggio_file_close(&fh);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512];
  snprintf(path, sizeof path, "%s/test_info_np%d.dat", test_dir(), nprocs);
  test_precedence(path, rank);
  test_romio_hints_file(path, rank);
  test_after_open(path, rank, nprocs);
  test_ignored(path);
  test_cb_nodes(path, rank, nprocs);
  test_hints_file_problems(path, rank);
  test_warning_once(path);
  return test_finish_mpi(path);
}
