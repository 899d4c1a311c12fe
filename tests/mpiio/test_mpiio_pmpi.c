/*
 * test_mpiio_pmpi.c - the profiling interface: aggio serves a file whose
 * calls arrive under the PMPI_ names (as from Open MPI's Fortran bindings,
 * MPICH's mpi_f08 and profiling tools), and a tool linked into the
 * program, wrapping MPI_File_write_at_all and forwarding to the PMPI_
 * name as profilers do, sees every call while aggio serves it.  Bytes
 * checked through the MPI library's own MPI-IO (MPI_OWN).
 * aggio-test-ranks: 1 2 4
 */
#include "mpiio_common.h"

#define N 4096

static int rank, nranks, aggio, tool_calls;

/* The "tool": defined in the program, so the program's calls bind to it. */
int MPI_File_write_at_all(MPI_File fh, MPI_Offset offset, const void *buf, int count,
                          MPI_Datatype datatype, MPI_Status *status) {
  tool_calls++;
  return PMPI_File_write_at_all(fh, offset, buf, count, datatype, status);
}

/* aggio's Fortran handles start at 2^30 (src/mpiio/mpiio.h). */
static int handle_is_aggio(MPI_File fh) { return PMPI_File_c2f(fh) >= 0x40000000; }

/* Every call by its PMPI_ name: open, a view, collective, non-blocking
 * (completed by PMPI_Wait) and independent access, size, close. */
static void pmpi_calls(void) {
  char path[512];
  mpiio_fresh_path(path, sizeof path, "pmpi");
  MPI_File fh;
  int rc = PMPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                          MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "PMPI_File_open %d", rc);
  CHECK(handle_is_aggio(fh) == aggio, "PMPI_File_open's handle is %s's",
        aggio ? "aggio" : "MPI");
  CHECK(PMPI_File_f2c(PMPI_File_c2f(fh)) == fh, "PMPI_File_f2c(c2f) round trip");
  char *buf = malloc(N), *back = malloc(N);
  memset(buf, 'a' + rank, N);
  rc = PMPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  rc |= PMPI_File_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE, MPI_STATUS_IGNORE);
  memset(buf, 'a' + nranks + rank, N);
  MPI_Request req;
  rc |= PMPI_File_iwrite_at(fh, (MPI_Offset)(nranks + rank) * N, buf, N, MPI_BYTE, &req);
  MPI_Status st;
  rc |= PMPI_Wait(&req, &st);
  int got = -1;
  MPI_Get_count(&st, MPI_BYTE, &got);
  CHECK(rc == MPI_SUCCESS && got == N, "PMPI writes %d, count %d", rc, got);
  rc = PMPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  rc |= PMPI_File_sync(fh);
  rc |= PMPI_File_read_at(fh, (MPI_Offset)rank * N, back, N, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_Offset size = -1;
  rc |= PMPI_File_get_size(fh, &size);
  CHECK(rc == MPI_SUCCESS && size == (MPI_Offset)2 * N * nranks, "PMPI size %lld",
        (long long)size);
  CHECK(back[0] == 'a' + rank && back[N - 1] == 'a' + rank, "PMPI read back");
  CHECK(PMPI_File_close(&fh) == MPI_SUCCESS && fh == MPI_FILE_NULL, "PMPI_File_close");
  mpiio_check_blocks(path, 'a', N, 2 * nranks);
  free(buf);
  free(back);
}

/* The program's MPI_File_write_at_all is the tool's, which forwards to
 * PMPI_File_write_at_all: aggio must serve it, and the tool count it. */
static void tool_above(void) {
  char path[512];
  mpiio_fresh_path(path, sizeof path, "pmpi_tool");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS && handle_is_aggio(fh) == aggio, "open %d", rc);
  char *buf = malloc(N);
  memset(buf, 'a' + rank, N);
  tool_calls = 0;
  rc = MPI_File_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS && tool_calls == 1, "the tool saw %d calls (rc %d)", tool_calls,
        rc);
  MPI_File_close(&fh);
  mpiio_check_blocks(path, 'a', N, nranks);
  free(buf);
}

int main(int argc, char **argv) {
  PMPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  aggio = mpiio_check_mode();
  pmpi_calls();
  tool_above();
  int status = test_summary_mpi(MPI_COMM_WORLD);
  PMPI_Finalize();
  return status;
}
