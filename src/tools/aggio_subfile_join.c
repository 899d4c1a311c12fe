/*
 * aggio_subfile_join.c - aggio-subfile-join FILE OUT [--force]: the single
 * ordinary file a subfiled file stands for (docs/subfiling.md), written by
 * every rank of the job at once.  `aggio subfile join --mpi N` runs it; it
 * is a client of the public API only: FILE is opened through aggio (which
 * reads the layout and its subfiles), OUT through aggio with subfiling off
 * (whatever AGGIO_HINTS says), and the ranks copy chunks round-robin.
 *
 * Exit status 0 when OUT holds every byte of FILE and is synced; 1 with a
 * message (rank 0) otherwise, the same on every rank; 2 for bad arguments.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggio.h"

#define CHUNK (64 << 20) /* bytes a rank copies at a time */

static int rank, nprocs;

/* Every rank's outcome agreed: 0 only when all succeeded. */
static int agree(int rc) {
  int any = 0, mine = rc != 0;
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any;
}

static int fail(const char *what, const char *path) {
  fprintf(stderr, "aggio-subfile-join: %s %s: %s\n", what, path, aggio_error_message());
  return 1;
}

/* A subfiled file's layout starts with its format line; an ordinary file
 * would be copied to itself in vain. */
static int is_layout(const char *path) {
  char head[32] = "";
  FILE *f = fopen(path, "rb");
  size_t n = f ? fread(head, 1, sizeof head - 1, f) : 0;
  if (f)
    fclose(f);
  head[n] = '\0';
  return strncmp(head, "aggio subfiled file, format ", 28) == 0;
}

static int open_both(const char *in, const char *out, int force, aggio_file *src,
                     aggio_file *dst) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_subfiles", "0");
  MPI_Info_set(info, "aggio_strategy", "independent");
  if (aggio_file_open(MPI_COMM_WORLD, in, MPI_MODE_RDONLY, MPI_INFO_NULL, src) != AGGIO_SUCCESS) {
    MPI_Info_free(&info);
    return rank == 0 ? fail("cannot open", in) : 1;
  }
  int amode = MPI_MODE_CREATE | MPI_MODE_WRONLY | (force ? 0 : MPI_MODE_EXCL);
  int rc = aggio_file_open(MPI_COMM_WORLD, out, amode, info, dst);
  MPI_Info_free(&info);
  if (rc == AGGIO_SUCCESS && force)
    rc = aggio_file_set_size(*dst, 0); /* a replaced OUT keeps none of its bytes */
  if (rc != AGGIO_SUCCESS) {
    aggio_file_close(src);
    return rank == 0 ? fail("cannot create", out) : 1;
  }
  return 0;
}

/* Chunks c = rank, rank + nprocs, ...: read from src, written to dst. */
static int copy(aggio_file src, aggio_file dst, MPI_Offset size) {
  char *buf = malloc(CHUNK);
  int rc = buf ? 0 : 1;
  for (MPI_Offset off = (MPI_Offset)rank * CHUNK; rc == 0 && off < size;
       off += (MPI_Offset)nprocs * CHUNK) {
    int n = size - off < CHUNK ? (int)(size - off) : CHUNK;
    MPI_Status st;
    rc = aggio_file_read_at(src, off, buf, n, MPI_BYTE, &st) != AGGIO_SUCCESS ||
         aggio_file_write_at(dst, off, buf, n, MPI_BYTE, &st) != AGGIO_SUCCESS;
  }
  if (rc)
    fprintf(stderr, "aggio-subfile-join: rank %d: %s\n", rank,
            buf ? aggio_error_message() : "out of memory");
  free(buf);
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int force = argc == 4 && strcmp(argv[3], "--force") == 0;
  if (argc != 3 && !force) {
    if (rank == 0)
      fprintf(stderr, "usage: aggio-subfile-join FILE OUT [--force]\n");
    MPI_Finalize();
    return 2;
  }
  unsetenv("AGGIO_HINTS"); /* OUT is one ordinary file, whatever the job asked */
  int bad = rank == 0 && !is_layout(argv[1]);
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (bad) {
    if (rank == 0)
      fprintf(stderr, "aggio-subfile-join: %s is not a subfiled file (no layout)\n", argv[1]);
    MPI_Finalize();
    return 1;
  }
  aggio_file src = AGGIO_FILE_NULL, dst = AGGIO_FILE_NULL;
  MPI_Offset size = 0;
  int rc = open_both(argv[1], argv[2], force, &src, &dst);
  if (rc == 0) {
    rc = aggio_file_get_size(src, &size) != AGGIO_SUCCESS;
    rc = agree(rc) || agree(copy(src, dst, size));
    /* collective, so every rank takes part whatever the copy gave */
    int tail = aggio_file_set_size(dst, size) != AGGIO_SUCCESS ||
               aggio_file_sync(dst) != AGGIO_SUCCESS;
    tail |= aggio_file_close(&dst) != AGGIO_SUCCESS;
    tail |= aggio_file_close(&src) != AGGIO_SUCCESS;
    if (tail && rank == 0)
      fail("cannot finish", argv[2]);
    rc = rc || tail;
  }
  if (rc == 0 && rank == 0)
    printf("%s: joined into %s (%lld bytes, %d ranks)\n", argv[1], argv[2], (long long)size,
           nprocs);
  MPI_Finalize();
  return rc ? 1 : 0;
}
