/*
 * test_mpiio_requests.c - non-blocking MPI_File_i* calls return real
 * MPI_Requests: completed by MPI_Waitall together with an MPI_Irecv, by
 * MPI_Testany and MPI_Wait; their statuses give MPI_Get_count and
 * MPI_Get_elements, short at end of file; the bytes are checked through
 * the MPI library's own MPI-IO (PMPI).
 * aggio-test-ranks: 1 2 4
 */
#include "mpiio_common.h"

#define N 256

int main(int argc, char **argv) {
  int rank, nranks;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int aggio = mpiio_check_mode();
  /* Open MPI 4.1.4's ompio gets two things here wrong (its runs skip
   * them; MPICH's ROMIO proves the test): see the two skips below */
#ifdef OPEN_MPI
  int ompio = !aggio;
#else
  int ompio = 0;
  (void)aggio;
#endif
  char path[512];
  mpiio_fresh_path(path, sizeof path, "requests");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %d", rc);
  int *buf = malloc(sizeof(int) * N), *back = malloc(sizeof(int) * N);
  for (int i = 0; i < N; i++)
    buf[i] = rank * 1000003 + i;

  /* an iwrite_at and an Irecv (from the next rank) in one MPI_Waitall */
  MPI_Request reqs[3];
  int token = -1, mine = rank + 100;
  int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
  MPI_Irecv(&token, 1, MPI_INT, prev, 7, MPI_COMM_WORLD, &reqs[0]);
  rc = MPI_File_iwrite_at(fh, (MPI_Offset)rank * N * (MPI_Offset)sizeof(int), buf, N / 2,
                          MPI_INT, &reqs[1]);
  CHECK(rc == MPI_SUCCESS && reqs[1] != MPI_REQUEST_NULL, "iwrite_at %d", rc);
  MPI_File_seek(fh,
                (MPI_Offset)rank * N * (MPI_Offset)sizeof(int) +
                    N / 2 * (MPI_Offset)sizeof(int),
                MPI_SEEK_SET);
  rc = MPI_File_iwrite(fh, buf + N / 2, N / 2, MPI_INT, &reqs[2]);
  CHECK(rc == MPI_SUCCESS, "iwrite %d", rc);
  MPI_Send(&mine, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
  MPI_Status sts[3];
  rc = MPI_Waitall(3, reqs, sts);
  CHECK(rc == MPI_SUCCESS, "waitall %d", rc);
  CHECK(token == prev + 100, "irecv got %d", token);
  int count = -1;
  MPI_Get_count(&sts[1], MPI_INT, &count);
  CHECK(count == N / 2, "iwrite_at count %d", count);
  MPI_Get_count(&sts[2], MPI_INT, &count);
  CHECK(count == N / 2, "iwrite count %d", count);
  MPI_Offset pos = -1;
  MPI_File_get_position(fh, &pos);
  CHECK(pos ==
            (MPI_Offset)rank * N * (MPI_Offset)sizeof(int) + N * (MPI_Offset)sizeof(int),
        "position after iwrite %lld", (long long)pos);
  for (int i = 0; i < 3; i++)
    CHECK(reqs[i] == MPI_REQUEST_NULL, "request %d freed", i);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);

  /* iread_at by MPI_Testany until done, then MPI_Get_elements */
  MPI_Request rr[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  memset(back, 0, sizeof(int) * N);
  MPI_File_iread_at(fh, (MPI_Offset)next * N * (MPI_Offset)sizeof(int), back, N, MPI_INT,
                    &rr[1]);
  int idx = -1, flag = 0;
  MPI_Status st;
  for (int spins = 0; !flag && spins < 1000000; spins++)
    MPI_Testany(2, rr, &idx, &flag, &st);
  CHECK(flag && idx == 1, "testany flag %d index %d", flag, idx);
  MPI_Count elems = -1;
  MPI_Get_elements_x(&st, MPI_INT, &elems);
  CHECK(elems == N, "iread_at elements %lld", (long long)elems);
  int bad = 0;
  for (int i = 0; i < N; i++)
    bad += back[i] != next * 1000003 + i;
  if (ompio && nranks > 1)
    test_skip(
        "another rank's non-blocking writes after sync-barrier-sync: Open MPI's ompio "
        "reads zeros (%d wrong); checked under aggio only",
        bad);
  else
    CHECK(bad == 0, "%d wrong ints read from rank %d's part", bad, next);

  /* short read at end of file: a status of what was there */
  MPI_Offset end = (MPI_Offset)nranks * N * (MPI_Offset)sizeof(int);
  if (ompio) {
    /* seen with Open MPI 4.1.4: MPI_Wait never returns */
    test_skip(
        "non-blocking read past the end of file: Open MPI's ompio never completes it; "
        "checked under aggio only");
  } else {
    MPI_Request r1;
    MPI_File_iread_at(fh, end - 10, back, N, MPI_INT, &r1);
    MPI_Wait(&r1, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == 10, "short read bytes %d", count);
    MPI_Get_count(&st, MPI_INT, &count);
    CHECK(count == MPI_UNDEFINED, "short read ints %d (MPI_UNDEFINED expected)", count);
    MPI_Get_elements_x(&st, MPI_INT, &elems);
    CHECK(elems == MPI_UNDEFINED, "short read elements %lld (MPI_UNDEFINED expected)",
          (long long)elems);
  }
  MPI_Status bst;
  MPI_File_read_at(fh, end - 8, back, 4, MPI_INT, &bst);
  MPI_Get_count(&bst, MPI_INT, &count);
  CHECK(count == 2, "blocking short read ints %d", count);

  /* collective non-blocking: iwrite_at_all and iread_all */
  for (int i = 0; i < N; i++)
    buf[i] = -(rank * 1000003 + i);
  MPI_Request c;
  MPI_File_iwrite_at_all(fh, (MPI_Offset)rank * N * (MPI_Offset)sizeof(int), buf, N,
                         MPI_INT, &c);
  MPI_Wait(&c, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == N, "iwrite_at_all count %d", count);
  MPI_File_seek(fh, (MPI_Offset)rank * N * (MPI_Offset)sizeof(int), MPI_SEEK_SET);
  memset(back, 0, sizeof(int) * N);
  MPI_File_iread_all(fh, back, N, MPI_INT, &c);
  flag = 0;
  while (!flag)
    MPI_Test(&c, &flag, &st);
  CHECK(memcmp(back, buf, sizeof(int) * N) == 0, "iread_all back");
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "close %d", rc);

  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == end, "reference length %lld", (long long)len);
  if (file && len == end) {
    bad = 0;
    for (int r = 0; r < nranks; r++)
      for (int i = 0; i < N; i++) {
        int v;
        memcpy(&v, file + ((MPI_Offset)r * N + i) * (MPI_Offset)sizeof(int), sizeof v);
        bad += v != -(r * 1000003 + i);
      }
    CHECK(bad == 0, "%d wrong ints in the file", bad);
  }
  free(file);
  free(buf);
  free(back);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    PMPI_File_delete(path, MPI_INFO_NULL);
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
