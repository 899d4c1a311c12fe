/*
 * test_mpiio_stage.c - an unmodified MPI-IO program checkpoints through a
 * stage directory asked by one hint in AGGIO_HINTS (under aggio-run:
 * aggio_stage_dir; natively the MPI library ignores the hint): segmented
 * blocks with explicit offsets, ior-hard records through a strided view,
 * MPI_File_sync, then a second checkpoint in the same file and close.
 * Under aggio the stage directory holds this file's manifest while the
 * checkpoint is open (with aggio_stage_drain=at_close, before the sync the
 * file itself is still empty) and nothing once it is closed; in both runs
 * the file, read by the MPI library's own MPI-IO, holds every byte.  With
 * aggio_stage_drain=detach (part detach) close hands the rest to a drainer
 * process, and the stage empties (within 30 s) after close returned.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: background atclose detach
 */
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpiio_common.h"
#include "stage_log.h"

#define BLOCK 65536
#define SEGMENTS 6
#define RECORD 47008
#define RECORDS 5

static int rank, nranks;
static char stage[700];

static char byte_at(MPI_Offset off, int round) {
  return (char)('A' + (off * 13 + off / 4099 + round * 7) % 61);
}

static MPI_Offset region2(void) { return (MPI_Offset)BLOCK * SEGMENTS * nranks; }
static MPI_Offset file_size(void) { return region2() + (MPI_Offset)RECORD * RECORDS * nranks; }

/* The program's checkpoint: round 0 everywhere, round 1 over the segments. */
static int checkpoint(MPI_File fh, int round) {
  char *buf = malloc(BLOCK > RECORD * RECORDS ? BLOCK : RECORD * RECORDS);
  int rc = MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  for (int s = 0; s < SEGMENTS; s++) {
    MPI_Offset off = ((MPI_Offset)s * nranks + rank) * BLOCK;
    for (int i = 0; i < BLOCK; i++)
      buf[i] = byte_at(off + i, round);
    rc |= MPI_File_write_at_all(fh, off, buf, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  if (round == 0) {
    MPI_Datatype rec;
    MPI_Type_vector(RECORDS, RECORD, RECORD * nranks, MPI_BYTE, &rec);
    MPI_Type_commit(&rec);
    MPI_Offset disp = region2() + (MPI_Offset)rank * RECORD;
    for (int i = 0; i < RECORD * RECORDS; i++)
      buf[i] = byte_at(disp + (MPI_Offset)(i / RECORD) * RECORD * nranks + i % RECORD, 0);
    rc |= MPI_File_set_view(fh, disp, MPI_BYTE, rec, "native", MPI_INFO_NULL);
    rc |= MPI_File_write_all(fh, buf, RECORD * RECORDS, MPI_BYTE, MPI_STATUS_IGNORE);
    MPI_Type_free(&rec);
  }
  free(buf);
  return rc;
}

/* Directories in the stage root (one per file being staged). */
static int staged_files(void) {
  DIR *d = opendir(stage);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d))) /* the detached drainer's log is no directory */
    n += e->d_name[0] != '.' && strcmp(e->d_name, "aggio-stage-drain.log") != 0;
  if (d)
    closedir(d);
  return n;
}

static MPI_Offset posix_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (MPI_Offset)sb.st_size : -1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  /* parts are single words: atclose is aggio_stage_drain=at_close */
  const char *part = argc > 1 ? argv[1] : "background";
  const char *drain = !strcmp(part, "atclose") ? "at_close" : part;
  int aggio = mpiio_check_mode();
  char path[600], hints[1000];
  mpiio_fresh_path(path, sizeof path, drain);
  snprintf(stage, sizeof stage, "%s.stage-root", path);
  snprintf(hints, sizeof hints, "*:aggio_stage_dir=%s:aggio_stage_drain=%s", stage, drain);
  setenv("AGGIO_HINTS", hints, 1);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &fh);
  unsetenv("AGGIO_HINTS");
  CHECK(rc == MPI_SUCCESS, "open for writing failed");
  if (rc == MPI_SUCCESS) {
    CHECK(checkpoint(fh, 0) == MPI_SUCCESS, "checkpoint 0 failed");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && aggio)
      CHECK(staged_files() == 1, "under aggio the stage root holds %d files' directories",
            staged_files());
    if (rank == 0 && !aggio)
      CHECK(staged_files() == 0, "natively something made a stage directory");
    if (rank == 0 && aggio && strcmp(drain, "at_close") == 0)
      CHECK(posix_size(path) == 0, "at_close: %lld bytes in the file before the sync",
            (long long)posix_size(path));
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_sync(fh) == MPI_SUCCESS, "sync failed");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
      CHECK(posix_size(path) == file_size(), "after the sync the file is %lld bytes, not "
            "%lld", (long long)posix_size(path), (long long)file_size());
    CHECK(checkpoint(fh, 1) == MPI_SUCCESS, "checkpoint 1 failed");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "close failed");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  for (int i = 0; rank == 0 && !strcmp(drain, "detach") && staged_files() && i < 300; i++)
    usleep(100000); /* the drainer outlives the close */
  if (rank == 0)
    CHECK(staged_files() == 0, "after close the stage root holds %d directories",
          staged_files());
  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == file_size(), "the file is %lld bytes, not %lld", (long long)len,
        (long long)file_size());
  MPI_Offset bad = 0;
  for (MPI_Offset i = 0; file && i < len; i++)
    bad += file[i] != byte_at(i, i < region2() ? 1 : 0);
  CHECK(bad == 0, "%lld bytes differ from the program's", (long long)bad);
  free(file);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_OWN(File_delete)(path, MPI_INFO_NULL);
    char log[800];
    snprintf(log, sizeof log, "%s/aggio-stage-drain.log", stage);
    if (aggio && !strcmp(drain, "detach"))
      CHECK(stage_log_says_drained(stage), "detach: the drainer's log %s says nothing "
            "was drained", log);
    unlink(log);
    rmdir(stage);
  }
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
