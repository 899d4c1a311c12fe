/*
 * test_finalize.c - files the program leaves open at MPI_Finalize
 * (aggio_finalize, registered on MPI_COMM_SELF at the first open):
 *   clean  small collective writes held by write-behind, never closed:
 *          after MPI_Finalize the file holds every byte, and nothing was
 *          printed;
 *   lost   the same with every write behind the calls failing (ENOSPC):
 *          every call returned success, so MPI_Finalize must say on
 *          stderr which file and how many bytes could not be written
 *          (one emulated node per rank: each rank speaks for its own
 *          cache, and its count is exactly what it wrote);
 *   order  files left open on different communicators, opened in an
 *          order that differs between ranks where MPI allows it: the
 *          closes at MPI_Finalize must meet (a hang fails by the alarm).
 * Each rank catches its own stderr in a file around MPI_Finalize and
 * checks it after; the exit status is the rank's verdict.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: clean lost order
 */
#include <aggio.h>

#include "harness.h"
#include "after_finalize.h"

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { REC = 3000, NREC = 20 }; /* small records: write-behind holds them */

static int rank, nprocs;
static char path[3][512], errpath[512];

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "TIMEOUT: a close at MPI_Finalize hung\n";
  if (write(2, m, sizeof m - 1) < 0)
    _exit(4);
  _exit(4);
}

static aggio_file open_wb(MPI_Comm comm, const char *p) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "write_behind");
  char n[16];
  int size;
  MPI_Comm_size(comm, &size);
  snprintf(n, sizeof n, "%d", size); /* one emulated node per rank */
  MPI_Info_set(info, "aggio_emulate_nodes", n);
  /* the blocks stay in the cache until MPI_Finalize, however slow the
   * machine (ThreadSanitizer): a block written out earlier (after the
   * default 200 ms) would fail earlier, and a later call report it */
  MPI_Info_set(info, "aggio_write_behind_delay", "600000");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(comm, p, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "rank %d: open %s: %s", rank, p, aggio_error_message());
  return fh;
}

/* NREC records of REC bytes per rank, interleaved: every call returns once
 * its data is in the node cache. */
static void write_records(aggio_file fh, int r, int np) {
  unsigned char buf[REC];
  for (int k = 0; k < NREC; k++) {
    int64_t at = ((int64_t)k * np + r) * REC;
    for (int i = 0; i < REC; i++)
      buf[i] = finalize_datum(r, at + i);
    int rc = aggio_file_write_at_all(fh, at, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == 0, "rank %d: write_at_all %d: %s", r, k, aggio_error_message());
  }
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "clean";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  signal(SIGALRM, on_alarm);
  alarm(120);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  for (int f = 0; f < 3; f++)
    snprintf(path[f], sizeof path[f], "%s/finalize.%s.%d.%d", test_dir(), part, id, f);
  snprintf(errpath, sizeof errpath, "%s/finalize.%s.%d.err%d", test_dir(), part, id, rank);
  int lost = strcmp(part, "lost") == 0;
  if (lost)
    setenv("AGGIO_FAULTS", "pwrite@*#1+=ENOSPC", 1); /* read at open */
  int world_files = 1;
  if (strcmp(part, "order") == 0 && nprocs > 1) {
    /* Rank 0 alone opens a file first; then every rank opens two files on
     * MPI_COMM_WORLD; rank 0 closes its own file before the second: in a
     * table of slots its second world file would take the freed slot and
     * come first, on rank 0 only. */
    aggio_file mine = rank == 0 ? open_wb(MPI_COMM_SELF, path[2]) : AGGIO_FILE_NULL;
    aggio_file a = open_wb(MPI_COMM_WORLD, path[0]);
    if (mine)
      aggio_file_close(&mine);
    aggio_file b = open_wb(MPI_COMM_WORLD, path[1]);
    write_records(a, rank, nprocs);
    write_records(b, rank, nprocs);
    world_files = 2;
  } else {
    aggio_file fh = open_wb(MPI_COMM_WORLD, path[0]);
    write_records(fh, rank, nprocs);
  }
  unsetenv("AGGIO_FAULTS");
  /* the agreement of the verdict must come before MPI ends: what MPI_Finalize
   * does is checked by each rank on its own afterwards */
  int saved = finalize_stderr_catch(errpath);
  MPI_Finalize();
  char *err = finalize_stderr_caught(saved, errpath);
  if (lost) {
    char want[600];
    snprintf(want, sizeof want, "aggio: %s: %lld bytes of collective writes that had returned "
             "success could not be written", path[0], (long long)REC * NREC);
    CHECK(strstr(err, want) != NULL, "rank %d: MPI_Finalize did not say \"%s\"; stderr: \"%s\"",
          rank, want, err);
    CHECK(strstr(err, "No space left") != NULL, "rank %d: the cause is not named: \"%s\"", rank,
          err);
  } else {
    CHECK(err[0] == '\0', "rank %d: MPI_Finalize printed \"%s\"", rank, err);
    for (int f = 0; f < world_files; f++)
      finalize_check_records(path[f], rank, nprocs, REC, NREC);
  }
  finalize_tidy_up(path, 3, rank, nprocs);
  return test_summary();
}
