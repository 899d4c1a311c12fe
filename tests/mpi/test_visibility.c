/*
 * test_visibility.c - write-behind holds collective writes after the calls
 * return; what MPI-IO programs see must not show it (docs/strategies.md,
 * "When data is safe"):
 *   size     after each small collective write (auto picks write-behind),
 *            get_size on every rank is at least the end of that write,
 *            also for a file of a sub-communicator (ROMIO and OMPIO write
 *            through; HDF5 compares file sizes across ranks);
 *   read     right after many small collective writes, one rank's
 *            independent read of the whole file finds every rank's bytes
 *            (the others' engine steps delayed, AGGIO_TEST_PERTURB, so
 *            that their last copies are still under way);
 *   twins    PnetCDF's pattern: a collective write through a handle of
 *            MPI_COMM_WORLD, then a second handle of the same file on
 *            MPI_COMM_SELF (no sync) reads it, writes other bytes
 *            independently, and the first handle's collective read sees
 *            them, and the size;
 *   atomic   atomic mode with aggio_strategy=write_behind asked for: a rank
 *            of another (emulated) node reads what a collective write put
 *            there, right after the barrier (MPI's atomic semantics need
 *            no sync);
 *   delay    acknowledged data does not stay in memory only: a record far
 *            short of a block, held by write-behind, is in the file (read
 *            with POSIX, past aggio) once aggio_write_behind_delay (100 ms
 *            here) has passed a few times, with no aggio call meanwhile.
 * Bytes are checked against the pattern every rank wrote.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: size read twins atomic delay
 */
#include <aggio.h>

#include "harness.h"

#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum { REC = 1000 };

static int rank, nprocs;
static char path[512];

static unsigned char datum(int tag, int64_t off) {
  return (unsigned char)(tag * 29 + off * 13 + off / 251 + 1);
}

static void fill(unsigned char *b, int64_t n, int tag, int64_t off) {
  for (int64_t i = 0; i < n; i++)
    b[i] = datum(tag, off + i);
}

/* The first byte of b that is not tag's pattern from off on, or -1. */
static int64_t first_bad(const unsigned char *b, int64_t n, int tag, int64_t off) {
  for (int64_t i = 0; i < n; i++)
    if (b[i] != datum(tag, off + i))
      return off + i;
  return -1;
}

static aggio_file open_on(MPI_Comm comm, const char *strategy, const char *k, const char *v) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (strategy)
    MPI_Info_set(info, "aggio_strategy", strategy);
  if (k)
    MPI_Info_set(info, k, v);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(comm, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "rank %d: open: %s", rank, aggio_error_message());
  return fh;
}

static void fresh(void) {
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Records k of every rank of comm interleaved: rank r's at (k * n + r). */
static void t_size_on(MPI_Comm comm, const char *what) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  aggio_file fh = open_on(comm, NULL, NULL, NULL);
  unsigned char buf[REC];
  int short_seen = 0;
  for (int k = 0; k < 200 && fh; k++) {
    int64_t at = ((int64_t)k * n + me) * REC;
    fill(buf, REC, 1, at);
    CHECK(aggio_file_write_at_all(fh, at, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "%s: write %d: %s", what, k, aggio_error_message());
    MPI_Offset size = -1;
    aggio_file_get_size(fh, &size);
    int64_t end = ((int64_t)k + 1) * n * REC;
    if (size < end && !short_seen++)
      CHECK(0, "%s: rank %d: get_size %lld after collective write %d, whose end is %lld",
            what, rank, (long long)size, k, (long long)end);
  }
  if (fh)
    aggio_file_close(&fh);
}

static void t_size(void) {
  fresh();
  t_size_on(MPI_COMM_WORLD, "size (world)");
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  fresh();
  if (rank % 2 == 0)
    t_size_on(half, "size (even ranks' file)");
  MPI_Comm_free(&half);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void t_read(void) {
  enum { N = 300, R = 100 };
  /* the other ranks' steps run late (perturb.c): when rank 0 returns from
   * its last write, theirs may still be copying */
  if (rank != 0)
    setenv("AGGIO_TEST_PERTURB", "7:100:2000", 1);
  fresh();
  aggio_file fh = open_on(MPI_COMM_WORLD, NULL, NULL, NULL);
  if (!fh)
    return;
  unsigned char buf[R];
  for (int k = 0; k < N; k++) {
    int64_t at = ((int64_t)k * nprocs + rank) * R;
    fill(buf, R, 2, at);
    aggio_file_write_at_all(fh, at, buf, R, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  if (rank == 0) { /* the others may still be copying their last records */
    int64_t total = (int64_t)N * nprocs * R;
    unsigned char *all = malloc((size_t)total);
    MPI_Status st;
    int got = -1;
    int rc = aggio_file_read_at(fh, 0, all, (int)total, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(rc == 0 && got == total, "read: rc %d, %d of %lld bytes", rc, got, (long long)total);
    int64_t bad = first_bad(all, total, 2, 0);
    CHECK(bad < 0, "read: byte %lld of the whole file is wrong right after %d collective "
          "writes", (long long)bad, N);
    free(all);
  }
  aggio_file_close(&fh);
}

/* PnetCDF: ncmpi_begin_indep_data opens the file again on MPI_COMM_SELF. */
static void t_twins(void) {
  fresh();
  aggio_file coll = open_on(MPI_COMM_WORLD, NULL, NULL, NULL);
  if (!coll)
    return;
  unsigned char buf[REC], back[REC];
  int64_t mine = (int64_t)rank * REC, total = (int64_t)nprocs * REC;
  fill(buf, REC, 3, mine);
  aggio_file_write_at_all(coll, mine, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE);
  aggio_file self = open_on(MPI_COMM_SELF, NULL, NULL, NULL);
  if (self) {
    memset(back, 0, REC);
    MPI_Status st;
    int got = -1;
    aggio_file_read_at(self, mine, back, REC, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &got);
    CHECK(got == REC && first_bad(back, REC, 3, mine) < 0, "twins: rank %d's second handle "
          "reads %d bytes, byte %lld wrong, of what its first handle wrote", rank, got,
          (long long)first_bad(back, REC, 3, mine));
    MPI_Offset size = -1;
    aggio_file_get_size(self, &size);
    CHECK(size >= mine + REC, "twins: the second handle's size %lld is short of %lld",
          (long long)size, (long long)(mine + REC));
    fill(buf, REC, 4, total + mine); /* past the collective data */
    aggio_file_write_at(self, total + mine, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE);
    aggio_file_close(&self);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  memset(back, 0, REC);
  aggio_file_read_at_all(coll, total + mine, back, REC, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(first_bad(back, REC, 4, total + mine) < 0, "twins: the collective handle reads "
        "byte %lld wrong of what the second handle wrote", (long long)first_bad(back, REC, 4,
                                                                                 total + mine));
  aggio_file_close(&coll);
}

static void t_atomic(void) {
  fresh();
  char nodes[16];
  snprintf(nodes, sizeof nodes, "%d", nprocs);
  aggio_file fh = open_on(MPI_COMM_WORLD, "write_behind", "aggio_emulate_nodes", nodes);
  if (!fh)
    return;
  CHECK(aggio_file_set_atomicity(fh, 1) == 0, "set_atomicity: %s", aggio_error_message());
  unsigned char buf[REC], back[REC];
  int64_t mine = (int64_t)rank * REC;
  fill(buf, REC, 5, mine);
  aggio_file_write_at_all(fh, mine, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_Barrier(MPI_COMM_WORLD);
  int peer = (rank + 1) % nprocs; /* on another emulated node */
  int64_t theirs = (int64_t)peer * REC;
  memset(back, 0, REC);
  aggio_file_read_at(fh, theirs, back, REC, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(first_bad(back, REC, 5, theirs) < 0, "atomic: rank %d reads byte %lld of rank %d's "
        "collective write wrong after the barrier", rank, (long long)first_bad(back, REC, 5,
                                                                               theirs), peer);
  aggio_file_close(&fh);
}

static void t_delay(void) {
  fresh();
  char nodes[16];
  snprintf(nodes, sizeof nodes, "%d", nprocs);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "write_behind");
  MPI_Info_set(info, "aggio_write_behind_delay", "100");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return;
  unsigned char buf[REC], back[REC];
  int64_t mine = (int64_t)rank * REC;
  fill(buf, REC, 6, mine);
  CHECK(aggio_file_write_at_all(fh, mine, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
        "write: %s", aggio_error_message());
  usleep(600000); /* no aggio call: only the I/O threads can move the data */
  int fd = open(path, O_RDONLY);
  memset(back, 0, REC);
  ssize_t got = fd >= 0 ? pread(fd, back, REC, mine) : -1;
  if (fd >= 0)
    close(fd);
  CHECK(got == REC && first_bad(back, REC, 6, mine) < 0, "delay: rank %d's record is not in the "
        "file 600 ms after its write (pread gave %zd bytes): acknowledged data stayed in "
        "memory only", rank, got);
  aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "size";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/visibility.%s.%d", test_dir(), part, id);
  if (strcmp(part, "size") == 0)
    t_size();
  else if (strcmp(part, "read") == 0)
    t_read();
  else if (strcmp(part, "twins") == 0)
    t_twins();
  else if (strcmp(part, "atomic") == 0)
    t_atomic();
  else if (strcmp(part, "delay") == 0)
    t_delay();
  return test_finish_mpi(path);
}
