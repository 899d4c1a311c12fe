/*
 * test_external32.c - the external32 data representation (MPI 3.1,
 * 13.5.2), set with aggio_file_set_view: what aggio writes is big-endian
 * in the file (read back with plain POSIX), the MPI library's own MPI-IO
 * reads it as written and writes what aggio reads, through contiguous and
 * non-contiguous memory types, blocking and non-blocking (the memory type
 * freed while a read goes on); get_view names it; "internal" is the
 * native representation.
 *
 * aggio-test-ranks: 1 2
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <aggio.h>

#include "harness.h"

enum { N = 1000 }; /* ints per rank */

static int rank, nprocs;

static int32_t value(int r, int i) { return (int32_t)(r * 1000003 + i * 7919 - 5000); }

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Rank r's ints are the r-th of every nprocs (the view interleaves them). */
static MPI_Datatype interleaved(void) {
  MPI_Datatype v, t;
  MPI_Type_vector(N, 1, nprocs, MPI_INT32_T, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)N * nprocs * 4, &t);
  MPI_Type_free(&v);
  MPI_Type_commit(&t);
  return t;
}

static void aggio_write(const char *path, MPI_Datatype ft) {
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  rc = aggio_file_set_view(fh, (MPI_Offset)rank * 4, MPI_INT32_T, ft, "external32",
                           MPI_INFO_NULL);
  CHECK(rc == 0, "set_view external32: %s", aggio_error_message());
  char rep[MPI_MAX_DATAREP_STRING] = "";
  MPI_Offset disp;
  MPI_Datatype et, f;
  aggio_file_get_view(fh, &disp, &et, &f, rep);
  CHECK(strcmp(rep, "external32") == 0, "get_view says \"%s\"", rep);
  MPI_Type_free(&f); /* get_view hands out a new derived type; et is named */
  /* the first half from a contiguous buffer, the second from every other
   * int of a wider one (a vector memory type), non-blocking */
  int32_t a[N / 2], b[N];
  for (int i = 0; i < N / 2; i++)
    a[i] = value(rank, i);
  for (int i = 0; i < N / 2; i++)
    b[2 * i] = value(rank, N / 2 + i), b[2 * i + 1] = -1;
  MPI_Datatype every_other;
  MPI_Type_vector(N / 2, 1, 2, MPI_INT32_T, &every_other);
  MPI_Type_commit(&every_other);
  rc = aggio_file_write_at_all(fh, 0, a, N / 2, MPI_INT32_T, MPI_STATUS_IGNORE);
  CHECK(rc == 0, "write_at_all: %s", aggio_error_message());
  aggio_request req;
  rc = aggio_file_iwrite_at_all(fh, N / 2, b, 1, every_other, &req);
  CHECK(rc == 0 && aggio_wait(&req, MPI_STATUS_IGNORE) == 0, "iwrite_at_all: %s",
        aggio_error_message());
  /* read back through aggio, both ways */
  int32_t back[N];
  memset(back, 0, sizeof back);
  rc = aggio_file_read_at_all(fh, 0, back, N, MPI_INT32_T, MPI_STATUS_IGNORE);
  int bad = rc != 0;
  for (int i = 0; i < N; i++)
    bad |= back[i] != value(rank, i);
  CHECK(!bad, "rank %d: aggio reads back other ints than it wrote", rank);
  int32_t wide[N];
  for (int i = 0; i < N; i++)
    wide[i] = -7;
  aggio_request r2;
  rc = aggio_file_iread_at(fh, N / 2, wide, 1, every_other, &r2);
  /* MPI lets the program free a datatype while a call that uses it goes
   * on: the read converts at its end all the same */
  MPI_Type_free(&every_other);
  CHECK(rc == 0 && aggio_wait(&r2, MPI_STATUS_IGNORE) == 0, "iread_at: %s",
        aggio_error_message());
  bad = 0;
  for (int i = 0; i < N / 2; i++)
    bad |= wide[2 * i] != value(rank, N / 2 + i) || wide[2 * i + 1] != -7;
  CHECK(!bad, "rank %d: a non-contiguous read of external32 data is wrong", rank);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
}

/* The file's bytes: every int big-endian where the view put it. */
static void check_raw(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "%s missing", path);
  if (!f)
    return;
  static unsigned char raw[N * 64 * 4];
  size_t n = fread(raw, 1, (size_t)N * nprocs * 4, f);
  fclose(f);
  CHECK(n == (size_t)N * nprocs * 4, "file holds %zu bytes", n);
  int bad = 0;
  for (int r = 0; r < nprocs && n == (size_t)N * nprocs * 4; r++)
    for (int i = 0; i < N; i++)
      bad |= be32(raw + 4 * ((size_t)i * nprocs + r)) != (uint32_t)value(r, i);
  CHECK(!bad, "the file is not big-endian external32");
}

/* The MPI library's own MPI-IO reads what aggio wrote; 0 when it refuses
 * external32 (reported as a skip). */
static int mpi_reads(const char *path, MPI_Datatype ft) {
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open %d", rc);
  rc = MPI_File_set_view(fh, (MPI_Offset)rank * 4, MPI_INT32_T, ft, "external32",
                         MPI_INFO_NULL);
  int ok = rc == MPI_SUCCESS, all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    MPI_File_close(&fh);
    return 0;
  }
  int32_t back[N];
  rc = MPI_File_read_at_all(fh, 0, back, N, MPI_INT32_T, MPI_STATUS_IGNORE);
  int bad = rc != MPI_SUCCESS;
  for (int i = 0; i < N; i++)
    bad |= back[i] != value(rank, i);
  CHECK(!bad, "rank %d: the MPI library reads other ints than aggio wrote", rank);
  MPI_File_close(&fh);
  return 1;
}

/* The MPI library writes doubles in external32; aggio reads them. */
static void mpi_writes(const char *path) {
  double d[N];
  for (int i = 0; i < N; i++)
    d[i] = 0.5 * value(rank, i) + 1e-3 * i;
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL);
  int rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * N, d, N, MPI_DOUBLE,
                                 MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "MPI_File_write_at_all %d", rc);
  MPI_File_close(&fh);
  aggio_file af = AGGIO_FILE_NULL;
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &af);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  rc = aggio_file_set_view(af, 0, MPI_DOUBLE, MPI_DOUBLE, "external32", MPI_INFO_NULL);
  CHECK(rc == 0, "set_view: %s", aggio_error_message());
  double back[N];
  rc = aggio_file_read_at_all(af, (MPI_Offset)rank * N, back, N, MPI_DOUBLE,
                              MPI_STATUS_IGNORE);
  int bad = rc != 0;
  for (int i = 0; i < N; i++)
    bad |= back[i] != d[i];
  CHECK(!bad, "rank %d: aggio reads other doubles than the MPI library wrote", rank);
  /* "internal" is the native representation: the same bytes read raw */
  rc = aggio_file_set_view(af, 0, MPI_BYTE, MPI_BYTE, "internal", MPI_INFO_NULL);
  CHECK(rc == 0, "set_view internal: %s", aggio_error_message());
  unsigned char raw[8];
  rc = aggio_file_read_at_all(af, (MPI_Offset)rank * N * 8, raw, 8, MPI_BYTE,
                              MPI_STATUS_IGNORE);
  double first;
  unsigned char swapped[8];
  for (int i = 0; i < 8; i++)
    swapped[i] = raw[7 - i];
  memcpy(&first, swapped, 8);
  CHECK(rc == 0 && first == d[0], "rank %d: the file's first double is not big-endian", rank);
  aggio_file_close(&af);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512];
  snprintf(path, sizeof path, "%s/external32.%d.dat", test_dir(), nprocs);
  MPI_Datatype ft = interleaved();
  aggio_write(path, ft);
  MPI_Barrier(MPI_COMM_WORLD);
  check_raw(path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (!mpi_reads(path, ft)) {
    if (rank == 0)
      test_skip("the MPI library's own MPI-IO refuses external32: no cross-check");
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    mpi_writes(path);
  }
  MPI_Type_free(&ft);
  return test_finish_mpi(path);
}
