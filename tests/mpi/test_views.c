/*
 * test_views.c - file views at the edges of what MPI-IO allows:
 *   - a filetype of size 0 on some ranks (a rank with nothing to access, as
 *     in MPICH's test setview_zero): set_view and collective calls work, and
 *     the other ranks' data is right;
 *   - etypes and filetypes with overlapping blocks, and etypes with
 *     decreasing displacements: an error for a file opened for writing (MPI
 *     3.1, 13.3: "If the file is opened for writing, neither the etype nor
 *     the filetype is permitted to contain overlapping regions"), accepted
 *     for a read-only file.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <aggio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum { NINT = 16 }; /* ints each data rank writes */

static int rank, nprocs;

/* Ranks with nothing to access: the odd ones, and rank 0 when alone. */
static int is_empty_rank(int r) { return nprocs == 1 ? 1 : r % 2 == 1; }

static int value_at(int writer, int i) { return 1000 * (writer + 1) + i; }

static MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

/* Defect 2: a filetype of size 0 on some ranks. */
static void test_empty_filetype(const char *path) {
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  MPI_Datatype empty, mine;
  MPI_Type_contiguous(0, MPI_INT, &empty);
  empty = committed(empty);
  MPI_Type_contiguous(NINT, MPI_INT, &mine);
  mine = committed(mine);
  int data_rank = !is_empty_rank(rank);
  MPI_Offset disp = (MPI_Offset)(rank / 2) * NINT * (MPI_Offset)sizeof(int);
  rc = aggio_file_set_view(fh, data_rank ? disp : 0, MPI_INT, data_rank ? mine : empty,
                           "native", MPI_INFO_NULL);
  CHECK(rc == AGGIO_SUCCESS, "set_view with %s filetype: %s",
        data_rank ? "a 64-byte" : "an empty", aggio_error_message());
  int buf[NINT], back[NINT];
  for (int i = 0; i < NINT; i++)
    buf[i] = value_at(rank, i);
  int count = data_rank ? NINT : 0;
  static const char *strategies[] = {"independent", "two_phase"};
  for (int s = 0; s < 2 && rc == AGGIO_SUCCESS; s++) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "aggio_strategy", strategies[s]);
    CHECK(aggio_file_set_info(fh, info) == AGGIO_SUCCESS, "set_info: %s",
          aggio_error_message());
    MPI_Info_free(&info);
    rc = aggio_file_write_at_all(fh, 0, buf, count, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS, "%s write_at_all: %s", strategies[s], aggio_error_message());
    memset(back, 0, sizeof back);
    MPI_Status st;
    rc = aggio_file_read_at_all(fh, 0, back, count, MPI_INT, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(rc == AGGIO_SUCCESS && got == count && memcmp(back, buf, sizeof(int) * count) == 0,
          "%s read_at_all: rc %d, %d ints, %s", strategies[s], rc, got,
          aggio_error_message());
  }
  MPI_Offset size = -1;
  aggio_file_get_size(fh, &size);
  int writers = 0;
  for (int r = 0; r < nprocs; r++)
    writers += !is_empty_rank(r);
  CHECK(size == (MPI_Offset)writers * NINT * (MPI_Offset)sizeof(int),
        "file size %lld for %d writing ranks", (long long)size, writers);
  aggio_file_close(&fh);
  MPI_Type_free(&empty);
  MPI_Type_free(&mine);
}

/* Types for the overlap rules: 8-byte blocks 4 bytes apart (they overlap),
 * and two 4-byte blocks in decreasing order (disjoint, but going back). */
static MPI_Datatype overlapping_blocks(void) {
  int bl[2] = {8, 8};
  MPI_Aint at[2] = {0, 4};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, bl, at, MPI_BYTE, &t);
  return committed(t);
}

static MPI_Datatype decreasing_blocks(void) {
  int bl[2] = {4, 4};
  MPI_Aint at[2] = {4, 0};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, bl, at, MPI_BYTE, &t);
  return committed(t);
}

/* Tiles that overlap: 8 bytes of data every 4 bytes. */
static MPI_Datatype overlapping_tiles(void) {
  MPI_Datatype c, t;
  MPI_Type_contiguous(8, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 4, &t);
  MPI_Type_free(&c);
  return committed(t);
}

static void expect_view(aggio_file fh, MPI_Datatype etype, MPI_Datatype filetype, int want,
                        const char *what) {
  int rc = aggio_file_set_view(fh, 0, etype, filetype, "native", MPI_INFO_NULL);
  CHECK(rc == want, "%s: set_view returned %d (%s), expected %d; %s", what, rc,
        aggio_strerror(rc), want, rc ? aggio_error_message() : "");
}

/* Defect 3: overlapping or decreasing etypes, overlapping filetypes. */
static void test_overlap_rules(const char *path) {
  MPI_Datatype ov = overlapping_blocks(), dec = decreasing_blocks(),
               tiles = overlapping_tiles(), bytes8, bytes16;
  MPI_Type_contiguous(8, MPI_BYTE, &bytes8);
  bytes8 = committed(bytes8);
  MPI_Type_contiguous(16, MPI_BYTE, &bytes16);
  bytes16 = committed(bytes16);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    expect_view(fh, ov, bytes16, AGGIO_ERR_TYPE, "writable file, etype with overlapping blocks");
    expect_view(fh, dec, bytes8, AGGIO_ERR_TYPE, "writable file, etype going backwards");
    expect_view(fh, MPI_BYTE, ov, AGGIO_ERR_TYPE, "writable file, overlapping filetype");
    expect_view(fh, MPI_BYTE, tiles, AGGIO_ERR_TYPE, "writable file, overlapping tiles");
    expect_view(fh, MPI_BYTE, bytes8, AGGIO_SUCCESS, "writable file, plain filetype");
    /* fill the file for the read-only part */
    char text[64];
    for (int i = 0; i < 64; i++)
      text[i] = (char)('A' + i % 26);
    if (rank == 0)
      aggio_file_write_at(fh, 0, text, 64, MPI_BYTE, MPI_STATUS_IGNORE);
    aggio_file_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open read-only: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    expect_view(fh, ov, bytes16, AGGIO_SUCCESS, "read-only file, etype with overlapping blocks");
    expect_view(fh, dec, bytes8, AGGIO_SUCCESS, "read-only file, etype going backwards");
    expect_view(fh, MPI_BYTE, tiles, AGGIO_SUCCESS, "read-only file, overlapping tiles");
    /* every 4 bytes, 8 bytes: ABCDEFGH EFGHIJKL */
    char got[16] = {0};
    rc = aggio_file_read_at(fh, 0, got, 16, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS && memcmp(got, "ABCDEFGHEFGHIJKL", 16) == 0,
          "read through overlapping tiles: rc %d \"%.16s\"", rc, got);
    expect_view(fh, MPI_BYTE, dec, AGGIO_ERR_TYPE,
                "read-only file, filetype going backwards (never allowed)");
    aggio_file_close(&fh);
  }
  MPI_Type_free(&ov);
  MPI_Type_free(&dec);
  MPI_Type_free(&tiles);
  MPI_Type_free(&bytes8);
  MPI_Type_free(&bytes16);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512];
  snprintf(path, sizeof path, "%s/test_views_np%d.dat", test_dir(), nprocs);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  test_empty_filetype(path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  test_overlap_rules(path);
  return test_finish_mpi(path);
}
