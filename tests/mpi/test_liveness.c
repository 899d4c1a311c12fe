/*
 * test_liveness.c - legal MPI-IO programs that aggio once hung
 * (docs/engine.md, "Liveness"), each under every strategy, with a rank
 * arriving late so that the others have long left their starting calls:
 *   split     a split collective begun, the application's MPI_Barrier,
 *             then ended: the begin of the strategy's first operation on
 *             the file used to run its set-up (windows, communicators)
 *             blocking, inside a call the late rank had already left;
 *   files     iwrite_at_all on two files, started A then B on even ranks
 *             and B then A on odd ones, then iread_at_all the same way:
 *             MPI orders collective operations per file, not per process;
 *   crossing  a non-blocking write on one file outstanding while a
 *             blocking write on another runs: rank 0 writes blocking and
 *             then waits, the others wait and then write blocking (a rank
 *             blocked in the second file must still move the first);
 *   opening   a non-blocking write outstanding on rank 0 while it opens
 *             another file, which the other ranks open before they start
 *             their part of the write;
 *   rehint    set_info and set_view change must-match hints (the state is
 *             made again), then a split collective around MPI_Barrier.
 * Every file is then compared byte for byte through the MPI library's own
 * MPI-IO.  A hang fails by the guard's alarm, naming the case.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: single multiple
 *
 * The part is the thread level (nb_common.h): "single" has no progress
 * thread, so only the design keeps these programs alive.
 */
#include <aggio.h>

#include "harness.h"
#include "nb_common.h"

#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum { BLOCK = 6000 }; /* bytes per rank and operation: small, odd-sized */

static const char *strategies[] = {"auto", "two_phase", "write_behind", "node_local",
                                   "independent"};
enum { NSTRAT = sizeof strategies / sizeof strategies[0] };

/* Opens path with the strategy (node_local on two emulated nodes). */
static int open_strategy(struct nb *c, const char *path, const char *strategy, aggio_file *fh) {
  int nl = strcmp(strategy, "node_local") == 0 && c->np > 1;
  return nb_open_with(c, path, MPI_MODE_CREATE | MPI_MODE_RDWR, strategy,
                      nl ? "aggio_emulate_nodes" : NULL, nl ? "2" : NULL, fh);
}

/* This rank's block of operation `tag`, at offset rank * BLOCK. */
static void fill(unsigned char *b, int tag, int rank) {
  for (int64_t i = 0; i < BLOCK; i++)
    b[i] = nb_datum(tag, rank, (int64_t)rank * BLOCK + i);
}

/* The file every rank's block of `tag` makes. */
static void expect_file(struct nb *c, const char *path, int tag, const char *what) {
  int64_t total = (int64_t)c->np * BLOCK;
  unsigned char *want = malloc((size_t)total);
  for (int r = 0; r < c->np; r++)
    fill(want + (int64_t)r * BLOCK, tag, r);
  nb_compare_file(c, path, want, total, what);
  free(want);
}

/* The last rank arrives late: the others leave their starting calls (2 ms
 * of running ahead) long before. */
static void late(struct nb *c) {
  if (c->rank == c->np - 1)
    usleep(60000);
}

static void t_split(struct nb *c, const char *strategy) {
  char what[96];
  snprintf(what, sizeof what, "split/%s", strategy);
  nb_begin(c, what);
  aggio_file fh;
  if (open_strategy(c, c->path[0], strategy, &fh) != 0)
    return;
  unsigned char buf[BLOCK];
  fill(buf, 1, c->rank);
  late(c);
  nb_ok(c, "write_at_all_begin",
        aggio_file_write_at_all_begin(fh, (MPI_Offset)c->rank * BLOCK, buf, BLOCK, MPI_BYTE));
  MPI_Barrier(MPI_COMM_WORLD);
  nb_ok(c, "write_at_all_end", aggio_file_write_at_all_end(fh, buf, MPI_STATUS_IGNORE));
  nb_ok(c, "close", aggio_file_close(&fh));
  expect_file(c, c->path[0], 1, what);
}

static void t_files(struct nb *c, const char *strategy) {
  char what[96];
  snprintf(what, sizeof what, "files/%s", strategy);
  nb_begin(c, what);
  aggio_file fh[2];
  if (open_strategy(c, c->path[0], strategy, &fh[0]) != 0 ||
      open_strategy(c, c->path[1], strategy, &fh[1]) != 0)
    return;
  unsigned char buf[2][BLOCK], back[2][BLOCK];
  aggio_request req[2];
  MPI_Status st[2]; /* MPICH's headers warn on MPI_STATUSES_IGNORE */
  int first = c->rank % 2; /* odd ranks start file 1 first */
  for (int k = 0; k < 2; k++)
    fill(buf[k], 10 + k, c->rank);
  late(c);
  for (int i = 0; i < 2; i++) {
    int k = (first + i) % 2;
    nb_ok(c, "iwrite_at_all", aggio_file_iwrite_at_all(fh[k], (MPI_Offset)c->rank * BLOCK,
                                                       buf[k], BLOCK, MPI_BYTE, &req[k]));
  }
  nb_ok(c, "waitall (writes)", aggio_waitall(2, req, st));
  late(c);
  for (int i = 0; i < 2; i++) {
    int k = (first + i) % 2;
    memset(back[k], 0, BLOCK);
    nb_ok(c, "iread_at_all", aggio_file_iread_at_all(fh[k], (MPI_Offset)c->rank * BLOCK,
                                                     back[k], BLOCK, MPI_BYTE, &req[k]));
  }
  nb_ok(c, "waitall (reads)", aggio_waitall(2, req, st));
  for (int k = 0; k < 2; k++) {
    CHECK(memcmp(buf[k], back[k], BLOCK) == 0, "%s: rank %d read back other bytes from file %d",
          what, c->rank, k);
    nb_ok(c, "close", aggio_file_close(&fh[k]));
  }
  for (int k = 0; k < 2; k++)
    expect_file(c, c->path[k], 10 + k, what);
}

static void t_crossing(struct nb *c, const char *strategy) {
  char what[96];
  snprintf(what, sizeof what, "crossing/%s", strategy);
  nb_begin(c, what);
  aggio_file x, y;
  if (open_strategy(c, c->path[0], strategy, &x) != 0 ||
      open_strategy(c, c->path[1], strategy, &y) != 0)
    return;
  unsigned char bx[BLOCK], by[BLOCK];
  fill(bx, 20, c->rank);
  fill(by, 21, c->rank);
  aggio_request req;
  late(c);
  nb_ok(c, "iwrite_at_all (y)",
        aggio_file_iwrite_at_all(y, (MPI_Offset)c->rank * BLOCK, by, BLOCK, MPI_BYTE, &req));
  MPI_Offset at = (MPI_Offset)c->rank * BLOCK;
  if (c->rank == 0) {
    nb_ok(c, "write_at_all (x)", aggio_file_write_at_all(x, at, bx, BLOCK, MPI_BYTE,
                                                         MPI_STATUS_IGNORE));
    nb_ok(c, "wait (y)", aggio_wait(&req, MPI_STATUS_IGNORE));
  } else {
    nb_ok(c, "wait (y)", aggio_wait(&req, MPI_STATUS_IGNORE));
    nb_ok(c, "write_at_all (x)", aggio_file_write_at_all(x, at, bx, BLOCK, MPI_BYTE,
                                                         MPI_STATUS_IGNORE));
  }
  nb_ok(c, "close (x)", aggio_file_close(&x));
  nb_ok(c, "close (y)", aggio_file_close(&y));
  expect_file(c, c->path[0], 20, what);
  expect_file(c, c->path[1], 21, what);
}

static void t_opening(struct nb *c, const char *strategy) {
  char what[96];
  snprintf(what, sizeof what, "opening/%s", strategy);
  nb_begin(c, what);
  aggio_file y, x = AGGIO_FILE_NULL;
  if (open_strategy(c, c->path[1], strategy, &y) != 0)
    return;
  unsigned char by[BLOCK];
  fill(by, 30, c->rank);
  aggio_request req;
  MPI_Offset at = (MPI_Offset)c->rank * BLOCK;
  if (c->rank == 0) {
    nb_ok(c, "iwrite_at_all (y)", aggio_file_iwrite_at_all(y, at, by, BLOCK, MPI_BYTE, &req));
    open_strategy(c, c->path[0], strategy, &x);
  } else {
    open_strategy(c, c->path[0], strategy, &x);
    nb_ok(c, "iwrite_at_all (y)", aggio_file_iwrite_at_all(y, at, by, BLOCK, MPI_BYTE, &req));
  }
  nb_ok(c, "wait (y)", aggio_wait(&req, MPI_STATUS_IGNORE));
  if (x)
    nb_ok(c, "close (x)", aggio_file_close(&x));
  nb_ok(c, "close (y)", aggio_file_close(&y));
  expect_file(c, c->path[1], 30, what);
}

/* Must-match hints changed by set_info, then by set_view: every strategy's
 * state goes and is made again by the next operation, a split collective
 * the late rank begins after the others have entered MPI_Barrier. */
static void t_rehint(struct nb *c, const char *strategy) {
  char what[96];
  snprintf(what, sizeof what, "rehint/%s", strategy);
  nb_begin(c, what);
  aggio_file fh;
  if (open_strategy(c, c->path[0], strategy, &fh) != 0)
    return;
  unsigned char buf[BLOCK];
  MPI_Offset at = (MPI_Offset)c->rank * BLOCK;
  fill(buf, 40, c->rank);
  nb_ok(c, "write_at_all", aggio_file_write_at_all(fh, at, buf, BLOCK, MPI_BYTE,
                                                   MPI_STATUS_IGNORE));
  static const char *sizes[] = {"4096", "16384"};
  for (int k = 0; k < 2; k++) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "cb_buffer_size", sizes[k]);
    if (k == 0)
      nb_ok(c, "set_info", aggio_file_set_info(fh, info));
    else
      nb_ok(c, "set_view", aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", info));
    MPI_Info_free(&info);
    fill(buf, 41 + k, c->rank);
    late(c);
    nb_ok(c, "write_at_all_begin", aggio_file_write_at_all_begin(fh, at, buf, BLOCK, MPI_BYTE));
    MPI_Barrier(MPI_COMM_WORLD);
    nb_ok(c, "write_at_all_end", aggio_file_write_at_all_end(fh, buf, MPI_STATUS_IGNORE));
  }
  nb_ok(c, "close", aggio_file_close(&fh));
  expect_file(c, c->path[0], 42, what);
}

int main(int argc, char **argv) {
  struct nb c;
  if (nb_init(&c, &argc, &argv, "liveness") == 0) {
    for (int s = 0; s < NSTRAT; s++) {
      t_split(&c, strategies[s]);
      t_files(&c, strategies[s]);
      t_crossing(&c, strategies[s]);
      t_opening(&c, strategies[s]);
      t_rehint(&c, strategies[s]);
    }
  }
  return nb_finish(&c);
}
