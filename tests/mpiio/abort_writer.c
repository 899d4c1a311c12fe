/*
 * abort_writer.c - what reaches the file when a program aborts (run by
 * abort.sh).  "write PATH": every rank writes small collective records
 * (which write-behind holds on the node when the hints ask for it), the
 * ranks meet in a barrier, and rank 0 calls MPI_Abort while the others
 * wait in another: every write had returned success, so its bytes must be
 * in the file although nobody closed it.  "check PATH NPROCS", after the
 * job: reads the file without MPI and compares; the exit status says.
 */
#include <fcntl.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { REC = 3000, NREC = 20 }; /* small records */

static unsigned char datum(int r, int64_t i) {
  return (unsigned char)(r * 37 + i * 11 + 1);
}

static int write_and_abort(const char *path, int *argc, char ***argv) {
  int rank, nprocs;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  MPI_File fh;
  if (MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                    MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
    fprintf(stderr, "FAIL: rank %d: open %s\n", rank, path);
    return 1;
  }
  unsigned char buf[REC];
  for (int k = 0; k < NREC; k++) {
    int64_t at = ((int64_t)k * nprocs + rank) * REC;
    for (int i = 0; i < REC; i++)
      buf[i] = datum(rank, at + i);
    if (MPI_File_write_at_all(fh, at, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE) !=
        MPI_SUCCESS) {
      fprintf(stderr, "FAIL: rank %d: write_at_all %d\n", rank, k);
      return 1;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD); /* every write has returned on every rank */
  if (rank == 0)
    MPI_Abort(MPI_COMM_WORLD, 3);
  MPI_Barrier(MPI_COMM_WORLD); /* the abort ends it */
  fprintf(stderr, "FAIL: rank %d: MPI_Abort returned\n", rank);
  return 1;
}

static int check(const char *path, int nprocs) {
  int64_t total = (int64_t)REC * NREC * nprocs;
  unsigned char *got = malloc((size_t)total + 1);
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 && got ? pread(fd, got, (size_t)total + 1, 0) : -1;
  if (fd >= 0)
    close(fd);
  if (n != total) {
    printf("FAIL: %s holds %zd bytes after MPI_Abort, expected %lld\n", path, n,
           (long long)total);
    free(got);
    return 1;
  }
  for (int64_t i = 0; i < total; i++)
    if (got[i] != datum((int)(i / REC % nprocs), i)) {
      printf("FAIL: %s: byte %lld wrong after MPI_Abort\n", path, (long long)i);
      free(got);
      return 1;
    }
  printf("%s: all %lld bytes written before MPI_Abort are there\n", path,
         (long long)total);
  free(got);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "write") == 0)
    return write_and_abort(argv[2], &argc, &argv);
  if (argc == 4 && strcmp(argv[1], "check") == 0)
    return check(argv[2], atoi(argv[3]));
  fprintf(stderr, "usage: %s write PATH | check PATH NPROCS\n", argv[0]);
  return 2;
}
