/*
 * darshan_app.c - a plain MPI-IO program with known calls, for running
 * Darshan and aggio together (darshan_run.py).  Every rank: K collective
 * writes of S bytes, W independent writes and B non-blocking writes of
 * 4 KiB, a sync, and K collective reads of what it wrote, checked.  A
 * byte's value is a function of its offset, so the checker can verify the
 * whole file.  Rank 0 prints "ok" and the calls' parameters when every
 * rank read its data back (the checker's expectations come from them).
 * Args: path
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define K 8
#define S 47008 /* IO-500's ior-hard record */
#define W 4
#define B 2
#define SMALL 4096

static unsigned char value_at(MPI_Offset off) { return (unsigned char)((off * 31 + 7) % 251); }

static void fill(unsigned char *buf, MPI_Offset off, int len) {
  for (int i = 0; i < len; i++)
    buf[i] = value_at(off + i);
}

static int same(const unsigned char *buf, MPI_Offset off, int len) {
  for (int i = 0; i < len; i++)
    if (buf[i] != value_at(off + i))
      return 0;
  return 1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int me, np, bad = argc < 2;
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_File fh;
  bad |= bad || MPI_File_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_RDWR,
                              MPI_INFO_NULL, &fh) != MPI_SUCCESS;
  unsigned char *buf = malloc(S), *small = malloc((size_t)SMALL * B);
  MPI_Offset end = (MPI_Offset)K * np * S; /* the small writes go after */
  for (int i = 0; i < K && !bad; i++) {
    MPI_Offset off = ((MPI_Offset)i * np + me) * S;
    fill(buf, off, S);
    bad |= MPI_File_write_at_all(fh, off, buf, S, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  for (int i = 0; i < W && !bad; i++) {
    MPI_Offset off = end + ((MPI_Offset)i * np + me) * SMALL;
    fill(small, off, SMALL);
    bad |= MPI_File_write_at(fh, off, small, SMALL, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  MPI_Request req[B];
  MPI_Status st[B]; /* not MPI_STATUSES_IGNORE: GCC 12 takes MPICH's for an array */
  for (int i = 0; i < B && !bad; i++) {
    MPI_Offset off = end + ((MPI_Offset)(W + i) * np + me) * SMALL;
    fill(small + (size_t)i * SMALL, off, SMALL);
    bad |= MPI_File_iwrite_at(fh, off, small + (size_t)i * SMALL, SMALL, MPI_BYTE, &req[i]);
  }
  if (!bad)
    bad |= MPI_Waitall(B, req, st);
  bad |= MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  bad |= MPI_File_sync(fh);
  for (int i = 0; i < K && !bad; i++) {
    MPI_Offset off = ((MPI_Offset)i * np + me) * S;
    bad |= MPI_File_read_at_all(fh, off, buf, S, MPI_BYTE, MPI_STATUS_IGNORE);
    bad |= !same(buf, off, S);
  }
  bad |= MPI_File_close(&fh);
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (me == 0 && any)
    printf("FAIL: a call failed or read wrong data\n");
  else if (me == 0)
    printf("ok np=%d K=%d S=%d W=%d B=%d SMALL=%d\n", np, K, S, W, B, SMALL);
  free(buf);
  free(small);
  MPI_Finalize();
  return any;
}
