/*
 * test_mpiio_shared.c - the shared file pointer through plain MPI_File_*:
 * write_ordered (blocking and split), write_shared, iwrite_shared,
 * read_ordered, seek_shared, get_position_shared; the file checked through
 * the MPI library's own MPI-IO (PMPI).  Positions are checked under aggio
 * only: the MPI libraries' get_position_shared reads their pointer racily
 * (ROMIO gives a rank 0 while another sees 64 after the same barrier).
 * aggio-test-ranks: 1 2 4
 */
#include "mpiio_common.h"

#define REC 16

int main(int argc, char **argv) {
  int rank, nranks;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int aggio = mpiio_check_mode();
  char path[512];
  mpiio_path(path, sizeof path, "shared");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path,
                         MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %d", rc);
  MPI_File_set_size(fh, 0);
  MPI_Status st;
  MPI_Offset pos = -1;
  char rec[REC];
  memset(rec, 'a' + rank, sizeof rec);
  rc = MPI_File_write_ordered(fh, rec, REC, MPI_BYTE, &st);
  CHECK(rc == MPI_SUCCESS, "write_ordered %d", rc);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_get_position_shared(fh, &pos);
  if (aggio)
    CHECK(pos == REC * nranks, "shared position %lld", (long long)pos);
  MPI_Barrier(MPI_COMM_WORLD);
  memset(rec, 'A' + rank, sizeof rec);
  MPI_File_write_shared(fh, rec, REC, MPI_BYTE, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(count == REC, "write_shared count %d", count);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
  char ord[REC];
  MPI_File_read_ordered(fh, ord, REC, MPI_BYTE, &st);
  CHECK(ord[0] == 'a' + rank && ord[REC - 1] == 'a' + rank, "read_ordered %c", ord[0]);
  MPI_File_seek_shared(fh, 2 * REC * nranks, MPI_SEEK_SET);
  memset(rec, 'b' + rank, sizeof rec);
  MPI_File_write_ordered_begin(fh, rec, REC, MPI_BYTE);
  MPI_File_write_ordered_end(fh, rec, &st);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_get_position_shared(fh, &pos);
  if (aggio)
    CHECK(pos == 3 * REC * nranks, "shared position after ordered %lld", (long long)pos);
  MPI_File_seek_shared(fh, 3 * REC * nranks, MPI_SEEK_SET);
  memset(rec, 'B' + rank, sizeof rec);
  MPI_Request req;
  MPI_File_iwrite_shared(fh, rec, REC, MPI_BYTE, &req);
  rc = MPI_Wait(&req, &st);
  MPI_Get_count(&st, MPI_BYTE, &count);
  CHECK(rc == MPI_SUCCESS && count == REC, "iwrite_shared rc %d count %d", rc, count);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);

  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == 4 * REC * nranks, "reference read len %lld", (long long)len);
  if (file && len == 4 * REC * nranks) {
    int seen_A = 0, seen_B = 0;
    for (int r = 0; r < nranks; r++) {
      CHECK(file[r * REC] == 'a' + r, "ordered record %d", r);
      CHECK(file[2 * REC * nranks + r * REC] == 'b' + r, "split ordered record %d", r);
      seen_A |= 1 << (file[REC * nranks + r * REC] - 'A');
      seen_B |= 1 << (file[3 * REC * nranks + r * REC] - 'B');
    }
    /* write_shared: each rank's record exactly once, in any order */
    CHECK(seen_A == (1 << nranks) - 1 && seen_B == (1 << nranks) - 1,
          "write_shared records %x %x", seen_A, seen_B);
  }
  free(file);
  MPI_File_close(&fh);
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
