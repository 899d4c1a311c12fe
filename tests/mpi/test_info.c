/*
 * test_info.c - hints through their three sources and their precedence,
 * hints changed after open (set_info, set_view), hints the file system
 * cannot honour, a collective whose ranks pass different infos, a hints
 * file that cannot be read or holds a NUL byte, and warnings kept once.
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

/* defaults < AGGIO_HINTS_FILE < MPI_Info < AGGIO_HINTS */
static void test_precedence(const char *path, int rank) {
  char hints_file[600], v[MPI_MAX_INFO_VAL + 1];
  snprintf(hints_file, sizeof hints_file, "%s.hints", path);
  if (rank == 0) {
    FILE *f = fopen(hints_file, "w");
    fprintf(f, "# test hints\ncb_buffer_size 65536\nromio_ds_write disable\ncb_nodes 1\n");
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
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

/* A hint the file system cannot honour is kept and marked. */
static void test_ignored(const char *path) {
  char v[MPI_MAX_INFO_VAL + 1];
  MPI_Info info = info1("striping_factor", "8");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  info_value(fh, "striping_factor", v, sizeof v);
  CHECK(strncmp(v, "ignored:", 8) == 0 && strstr(v, "8"), "striping_factor reported: %s", v);
  aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512];
  snprintf(path, sizeof path, "%s/test_info_np%d.dat", test_dir(), nprocs);
  test_precedence(path, rank);
  test_after_open(path, rank, nprocs);
  test_ignored(path);
  test_hints_file_problems(path, rank);
  test_warning_once(path);
  return test_finish_mpi(path);
}
