/*
 * hello_aggio.c - the README's example: every rank writes its block of a
 * shared file with one collective call, then reads it back.
 *
 *   mpicc hello_aggio.c $(pkg-config --cflags --libs aggio) -o hello_aggio
 *   mpiexec -n 4 ./hello_aggio out.dat
 */
#include <aggio.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *path = argc > 1 ? argv[1] : "hello_aggio.dat";

  char block[1024], back[1024];
  memset(block, 'a' + rank % 26, sizeof block);

  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  if (rc != AGGIO_SUCCESS) {
    fprintf(stderr, "open failed: %s (%s)\n", aggio_strerror(rc), aggio_error_message());
    MPI_Finalize();
    return 1;
  }
  MPI_Offset at = (MPI_Offset)rank * sizeof block;
  rc = aggio_file_write_at_all(fh, at, block, sizeof block, MPI_BYTE, MPI_STATUS_IGNORE);
  if (rc == AGGIO_SUCCESS)
    rc = aggio_file_read_at_all(fh, at, back, sizeof back, MPI_BYTE, MPI_STATUS_IGNORE);
  if (rc != AGGIO_SUCCESS)
    fprintf(stderr, "rank %d: %s\n", rank, aggio_error_message());
  aggio_file_close(&fh);

  int ok = rc == AGGIO_SUCCESS && memcmp(block, back, sizeof block) == 0, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
  if (rank == 0)
    printf("hello_aggio: %s\n", all_ok ? "ok" : "FAILED");
  MPI_Finalize();
  return all_ok ? 0 : 1;
}
