/*
 * test_mpiio_coexist.c - aggio's files and files sent to the MPI library's
 * own MPI-IO (the hint aggio_passthrough, by AGGIO_HINTS path pattern and
 * by MPI_Info) used side by side in one program, and atomic mode
 * (MPI_File_set_atomicity): concurrent writes of one range leave one
 * rank's whole record.  Bytes checked through PMPI.
 * aggio-test-ranks: 1 2 4
 */
#include "mpiio_common.h"

#define N 4096

static int rank, nranks, aggio;

/* 1 when the file reports aggio's hints (served by aggio). */
static int served_by_aggio(MPI_File fh) {
  MPI_Info info;
  char v[64];
  int flag = 0;
  if (MPI_File_get_info(fh, &info) != MPI_SUCCESS)
    return -1;
  MPI_Info_get(info, "aggio_strategy", sizeof v - 1, v, &flag);
  MPI_Info_free(&info);
  return flag;
}

static void coexist(void) {
  char pa[512], pb[512], pc[512];
  mpiio_path(pa, sizeof pa, "coexist_aggio");
  mpiio_path(pb, sizeof pb, "coexist_passthru"); /* AGGIO_HINTS pattern */
  mpiio_path(pc, sizeof pc, "coexist_info");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_passthrough", "true");
  MPI_File a, b, c;
  int amode = MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE;
  int rc = MPI_File_open(MPI_COMM_WORLD, pa, amode, MPI_INFO_NULL, &a);
  rc |= MPI_File_open(MPI_COMM_WORLD, pb, amode, MPI_INFO_NULL, &b);
  rc |= MPI_File_open(MPI_COMM_WORLD, pc, amode, info, &c);
  CHECK(rc == MPI_SUCCESS, "opens %d", rc);
  MPI_Info_free(&info);
  CHECK(served_by_aggio(a) == aggio, "first file served by %s", aggio ? "aggio" : "MPI");
  CHECK(served_by_aggio(b) == 0, "pattern-passthrough file served by the MPI library");
  CHECK(served_by_aggio(c) == 0, "info-passthrough file served by the MPI library");
  if (aggio)
    CHECK(MPI_File_c2f(a) != MPI_File_c2f(b) && MPI_File_f2c(MPI_File_c2f(b)) == b &&
              MPI_File_f2c(MPI_File_c2f(a)) == a,
          "Fortran handles of both kinds");
  char *buf = malloc(N);
  MPI_File files[3] = {a, b, c};
  for (int k = 0; k < 3; k++) {
    memset(buf, 'a' + 8 * k + rank, N);
    MPI_Offset off = (MPI_Offset)rank * N;
    /* interleaved: each file's halves written between the others' */
    MPI_File_write_at_all(files[k], off, buf, N / 2, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  /* sync-barrier-sync between the collective and the independent halves:
   * Open MPI 4.1.4's ompio (which serves the passthrough files, and every
   * file in the plain run) fills the holes of a collective write by
   * read-modify-write on its aggregators, and the other ranks return before
   * that write is done; without this, a rank's independent half could be
   * overwritten by the old hole bytes (seen in CI at 4 ranks: one half of
   * one rank wrong, in the plain run and under aggio alike). */
  for (int k = 0; k < 3; k++)
    MPI_File_sync(files[k]);
  MPI_Barrier(MPI_COMM_WORLD);
  for (int k = 0; k < 3; k++)
    MPI_File_sync(files[k]);
  for (int k = 2; k >= 0; k--) {
    memset(buf, 'a' + 8 * k + rank, N);
    MPI_File_write_at(files[k], (MPI_Offset)rank * N + N / 2, buf + N / 2, N / 2,
                      MPI_BYTE, MPI_STATUS_IGNORE);
  }
  for (int k = 0; k < 3; k++)
    MPI_File_sync(files[k]);
  MPI_Barrier(MPI_COMM_WORLD);
  mpiio_check_blocks(pa, 'a', N, nranks);
  mpiio_check_blocks(pb, 'a' + 8, N, nranks);
  mpiio_check_blocks(pc, 'a' + 16, N, nranks);
  rc = MPI_File_close(&a) | MPI_File_close(&b) | MPI_File_close(&c);
  CHECK(rc == MPI_SUCCESS && a == MPI_FILE_NULL && b == MPI_FILE_NULL, "closes %d", rc);
  free(buf);
}

static void atomic_mode(void) {
  char path[512];
  mpiio_path(path, sizeof path, "atomic");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path,
                MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                &fh);
  int flag = -1;
  MPI_File_get_atomicity(fh, &flag);
  CHECK(flag == 0, "atomicity starts off (%d)", flag);
  int rc = MPI_File_set_atomicity(fh, 1);
  MPI_File_get_atomicity(fh, &flag);
  CHECK(rc == MPI_SUCCESS && flag == 1, "atomicity on rc %d flag %d", rc, flag);
  /* every rank writes the same range at once; in atomic mode the result is
   * one rank's record entirely, and each rank reads back a whole record */
  int *rec = malloc(sizeof(int) * N), *back = malloc(sizeof(int) * N);
  for (int round = 0; round < 4; round++) {
    for (int i = 0; i < N; i++)
      rec[i] = rank * 1000 + round;
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_write_at(fh, 0, rec, N, MPI_INT, MPI_STATUS_IGNORE);
    MPI_File_read_at(fh, 0, back, N, MPI_INT, MPI_STATUS_IGNORE);
    int mixed = 0;
    for (int i = 1; i < N; i++)
      mixed += back[i] != back[0];
#ifdef OPEN_MPI
    /* seen with Open MPI 4.1.4: ompio's atomic mode sometimes lets a read
     * see two ranks' writes mixed */
    if (!aggio && mixed) {
      test_skip(
          "atomic mode: Open MPI's ompio returned a mixed record (%d ints); checked "
          "under aggio only",
          mixed);
      mixed = 0;
      back[0] = round;
    }
#endif
    CHECK(mixed == 0 && back[0] % 1000 == round,
          "round %d: a mixed record (%d ints differ)", round, mixed);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_File_set_atomicity(fh, 0);
  MPI_File_get_atomicity(fh, &flag);
  CHECK(flag == 0, "atomicity off again (%d)", flag);
  MPI_File_close(&fh);
  free(rec);
  free(back);
}

int main(int argc, char **argv) {
  /* the pattern route, as a user sets it (read at each open) */
  setenv("AGGIO_HINTS", "*coexist_passthru*:aggio_passthrough=true", 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  aggio = mpiio_check_mode();
  coexist();
  atomic_mode();
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
