/*
 * test_file_names.c - file names with ROMIO's file-system prefixes
 * ("ufs:/path", "nfs:", "lustre:"; src/plan/file_name.h), as programs
 * written for MPICH and PnetCDF on MPICH pass them: open, write and
 * delete reach the file at the path after the prefix, hints patterns
 * (AGGIO_HINTS) match that path, and a name with another word before a
 * colon is an ordinary file name.
 *
 * aggio-test-ranks: 1 2
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <aggio.h>

#include "harness.h"

enum { LEN = 8192 };

static int rank, nprocs;

/* Writes LEN bytes per rank collectively through `name` and closes. */
static void write_through(const char *name, MPI_Info info) {
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open %s: %s", name, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  char buf[LEN];
  memset(buf, 'a' + rank, sizeof buf);
  rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * LEN, buf, LEN, MPI_BYTE,
                               MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_SUCCESS, "write through %s: %s", name, aggio_error_message());
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close %s: %s", name, aggio_error_message());
}

/* The file at path holds every rank's bytes. */
static void check_bytes(const char *path) {
  FILE *f = fopen(path, "rb");
  CHECK(f != NULL, "rank %d: %s was not created", rank, path);
  if (!f)
    return;
  int bad = 0;
  for (int r = 0; r < nprocs; r++) {
    char got[LEN];
    bad |= fread(got, 1, LEN, f) != LEN;
    for (int i = 0; i < LEN; i++)
      bad |= got[i] != 'a' + r;
  }
  fclose(f);
  CHECK(!bad, "rank %d: %s does not hold what was written", rank, path);
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512], name[600];
  snprintf(path, sizeof path, "%s/file_names.%d.dat", test_dir(), nprocs);
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);

  /* a known prefix: the file is the path after it; delete takes one too */
  static const char *prefixes[] = {"ufs:", "nfs:", "lustre:"};
  for (int k = 0; k < 3; k++) {
    snprintf(name, sizeof name, "%s%s", prefixes[k], path);
    write_through(name, MPI_INFO_NULL);
    MPI_Barrier(MPI_COMM_WORLD);
    check_bytes(path);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
      CHECK(aggio_file_delete(name, MPI_INFO_NULL) == AGGIO_SUCCESS, "delete %s: %s", name,
            aggio_error_message());
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(path), "rank %d: %s is still there after deleting %s", rank, path, name);
  }

  /* a hints pattern names the path; the prefixed name gets the hint */
  snprintf(name, sizeof name, "ufs:%s", path);
  char hints[700];
  snprintf(hints, sizeof hints, "%s:aggio_strategy=two_phase", path);
  setenv("AGGIO_HINTS", hints, 1);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, name, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL,
                           &fh);
  CHECK(rc == AGGIO_SUCCESS, "open %s: %s", name, aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    MPI_Info used;
    char v[64] = "";
    int flag = 0;
    if (aggio_file_get_info(fh, &used) == AGGIO_SUCCESS) {
      MPI_Info_get(used, "aggio_strategy", sizeof v - 1, v, &flag);
      MPI_Info_free(&used);
    }
    CHECK(flag && strcmp(v, "two_phase") == 0, "AGGIO_HINTS for %s: aggio_strategy=%s", path,
          flag ? v : "(unset)");
    aggio_file_close(&fh);
  }
  unsetenv("AGGIO_HINTS");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);

  /* another word before a colon is part of the name */
  snprintf(name, sizeof name, "%s/run:7.%d.dat", test_dir(), nprocs);
  write_through(name, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
  check_bytes(name);
  return test_finish_mpi(name);
}
