/*
 * test_mpiio_syshints.c - what MPICH's own MPI-IO test "syshints" asks of a
 * ROMIO_HINTS file, through plain MPI_File_* calls: the program passes
 * romio_cb_read=disable and cb_buffer_size, the file (in ROMIO's format)
 * sets romio_cb_read, romio_no_indep_rw=true, ind_rd_buffer_size twice and
 * cb_buffer_size.  ROMIO keeps the program's value for every key it sets
 * and the file's first line for a key given twice, then
 * romio_no_indep_rw=true turns romio_cb_read into enable; get_info reports
 * ind_rd_buffer_size and ind_wr_buffer_size.  The native run proves these
 * expectations on MPICH; Open MPI's own MPI-IO (OMPIO) reads no ROMIO_HINTS
 * and is skipped.  ROMIO reads its hints file once, at a process's first
 * open, so the variable is set before MPI_Init (as syshints does) and the
 * file written before any MPI-IO call; rank 0 writes the data with stdio,
 * and what is read collectively is compared with it.
 * aggio-test-ranks: 1 2
 */
#include "mpiio_common.h"

enum { PER_RANK = 4096 };

static int rank, nranks;

static char byte_at(MPI_Offset i) { return (char)('a' + (i * 5 + i / 97) % 26); }

/* The hints file, written by rank 0 before any rank opens a file. */
static void write_hints(const char *path) {
  if (rank == 0) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
      fputs("romio_cb_read enable\n"
            "# given twice: ROMIO keeps the first line\n"
            "ind_rd_buffer_size 49\n"
            "ind_rd_buffer_size 60\n"
            "romio_no_indep_rw true\n"
            "cb_buffer_size 65536\n",
            f);
      fclose(f);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* The data file, written with stdio: an MPI-IO open here would be
 * ROMIO's first and fix its hints before the test's open. */
static void write_data(const char *path) {
  if (rank == 0) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL, "cannot write %s", path);
    for (MPI_Offset i = 0; f && i < (MPI_Offset)nranks * PER_RANK; i++)
      fputc(byte_at(i), f);
    if (f)
      fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void expect(MPI_Info used, const char *key, const char *want) {
  char v[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0;
  MPI_Info_get(used, key, MPI_MAX_INFO_VAL, v, &flag);
  CHECK(flag && strcmp(v, want) == 0, "%s: %s, want %s", key, flag ? v : "(unset)", want);
}

static void check_read(MPI_File fh) {
  char got[PER_RANK];
  MPI_Offset off = (MPI_Offset)rank * PER_RANK;
  int rc = MPI_File_read_at_all(fh, off, got, PER_RANK, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(rc == MPI_SUCCESS, "read_at_all: %d", rc);
  int bad = 0;
  for (int i = 0; i < PER_RANK; i++)
    bad += got[i] != byte_at(off + i);
  CHECK(bad == 0, "%d bytes read back wrong", bad);
}

/* Open MPI's OMPIO neither reads ROMIO_HINTS nor reports ROMIO's keys. */
static int native_has_romio(void) {
  char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(version, &len);
  return strstr(version, "MPICH") != NULL;
}

int main(int argc, char **argv) {
  char hints[512], path[512];
  mpiio_path(hints, sizeof hints, "syshints_hints");
  setenv("ROMIO_HINTS", hints, 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int aggio = mpiio_check_mode();
  if (!aggio && !native_has_romio()) {
    test_skip("this MPI library's own MPI-IO is not ROMIO: no ROMIO_HINTS to compare");
    int rc = test_summary_mpi(MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
  }
  write_hints(hints);
  mpiio_path(path, sizeof path, "syshints");
  write_data(path);
  MPI_Info mine;
  MPI_Info_create(&mine);
  MPI_Info_set(mine, "romio_cb_read", "disable");
  MPI_Info_set(mine, "cb_buffer_size", "131072");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, mine, &fh);
  MPI_Info_free(&mine);
  CHECK(rc == MPI_SUCCESS, "open: %d", rc);
  if (rc == MPI_SUCCESS) {
    MPI_Info used;
    MPI_File_get_info(fh, &used);
    expect(used, "romio_cb_read", "enable"); /* romio_no_indep_rw's doing */
    expect(used, "romio_no_indep_rw", "true");
    expect(used, "ind_rd_buffer_size", "49");
    expect(used, "ind_wr_buffer_size", "524288");
    expect(used, "cb_buffer_size", "131072"); /* the program's, over the file's */
    MPI_Info_free(&used);
    check_read(fh);
    MPI_File_close(&fh);
  }
  unsetenv("ROMIO_HINTS");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(path);
    unlink(hints);
  }
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
