/*
 * test_merge.c - small non-blocking collective operations started back to
 * back and completed together run as one (src/core/merge.c), judged by the
 * engine's own count of merged operations and by the bytes:
 *   burst   every rank starts 16 small iwrite_at_all back to back, then
 *           aggio_waitall: the operations must merge (the count of merged
 *           ones is at least 8 on every rank) and the file be right; the
 *           same with iread_at_all;
 *   uneven  rank 0 starts its 16 back to back; every other rank completes
 *           each 4 before it starts the next, so it offers fewer
 *           operations than rank 0 does: what merges is what every rank
 *           offered (the reduction's minimum), fewer than in the burst but
 *           more than none, and the bytes are right.
 * A start is left for merging when it comes within 200 us of the file's
 * previous one; a rank descheduled longer than that between two starts (a
 * busy machine: ctest -j2, oversubscribed ranks, MPICH busy-polling under
 * AddressSanitizer) splits a burst.  Both parts widen the window with
 * AGGIO_TEST_TIMING, so they check the merging, not the scheduler (the
 * uneven part once merged nothing when a grouping rank's starts came more
 * than 200 us apart; what merging gains by default is measured in
 * BENCHMARKS.md).
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: burst uneven
 */
#include <aggio.h>

#include "engine.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { NOPS = 16, REC = 512 };

static int rank, nprocs;
static char path[512];

static unsigned char datum(int k, int r, int i) { return (unsigned char)(k * 17 + r * 5 + i + 1); }

static int64_t merged(aggio_file fh) {
  return fh->obs.stats ? fh->obs.stats->c[AGGIO_C_NB_MERGED] : -1;
}

/* Operation k of rank r: record (k * nprocs + r). */
static MPI_Offset at(int k, int r) { return ((MPI_Offset)k * nprocs + r) * REC; }

/* Starts the NOPS operations; with group > 0, completes each group of
 * that many before starting the next, so that it never offers more. */
static void start_all(aggio_file fh, int is_write, unsigned char (*buf)[REC],
                      aggio_request *req, int group) {
  MPI_Status st[NOPS];
  for (int k = 0; k < NOPS; k++) {
    int rc = is_write ? aggio_file_iwrite_at_all(fh, at(k, rank), buf[k], REC, MPI_BYTE, &req[k])
                      : aggio_file_iread_at_all(fh, at(k, rank), buf[k], REC, MPI_BYTE, &req[k]);
    CHECK(rc == 0, "start %d: %s", k, aggio_error_message());
    if (group && (k + 1) % group == 0)
      CHECK(aggio_waitall(group, &req[k + 1 - group], st) == 0, "waitall (group): %s",
            aggio_error_message());
  }
}

static void run(int group, const char *what) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stats", "true");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return;
  static unsigned char buf[NOPS][REC], back[NOPS][REC];
  aggio_request req[NOPS];
  MPI_Status st[NOPS];
  for (int k = 0; k < NOPS; k++)
    for (int i = 0; i < REC; i++)
      buf[k][i] = datum(k, rank, i);
  int64_t before = merged(fh);
  start_all(fh, 1, buf, req, group);
  CHECK(aggio_waitall(NOPS, req, st) == 0, "%s: waitall (writes): %s", what,
        aggio_error_message());
  int64_t writes = merged(fh) - before;
  memset(back, 0, sizeof back);
  before = merged(fh);
  start_all(fh, 0, back, req, group);
  CHECK(aggio_waitall(NOPS, req, st) == 0, "%s: waitall (reads): %s", what,
        aggio_error_message());
  int64_t reads = merged(fh) - before;
  CHECK(memcmp(buf, back, sizeof buf) == 0, "%s: rank %d read other bytes back", what, rank);
  int64_t lo[2], hi[2], mine[2] = {writes, reads};
  MPI_Allreduce(mine, lo, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine, hi, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lo[0] == hi[0] && lo[1] == hi[1], "%s: the ranks merged differently: writes %lld..%lld, "
        "reads %lld..%lld", what, (long long)lo[0], (long long)hi[0], (long long)lo[1],
        (long long)hi[1]);
  if (!group && strcmp(what, "burst") == 0) {
    CHECK(writes >= NOPS / 2 && reads >= NOPS / 2, "%s: only %lld writes and %lld reads of %d "
          "merged", what, (long long)writes, (long long)reads, NOPS);
  } else if (strcmp(what, "uneven") == 0 && nprocs > 1) {
    /* the grouping ranks offer at most 4 at a time: each run merges at
     * most 3 followers */
    int most = (NOPS / 4) * 3;
    CHECK(writes >= 1 && writes <= most, "%s: %lld writes merged, expected 1..%d", what,
          (long long)writes, most);
  }
  aggio_file_close(&fh);
  /* the file, through a fresh handle */
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  for (int r = 0; rc == 0 && r < nprocs; r++)
    for (int k = 0; k < NOPS; k++) {
      unsigned char rec[REC];
      aggio_file_read_at(fh, at(k, r), rec, REC, MPI_BYTE, MPI_STATUS_IGNORE);
      int bad = 0;
      for (int i = 0; i < REC; i++)
        bad += rec[i] != datum(k, r, i);
      CHECK(bad == 0, "%s: record %d of rank %d has %d wrong bytes", what, k, r, bad);
    }
  if (rc == 0)
    aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "burst";
  setenv("AGGIO_TEST_TIMING", "1000", 0); /* merge grace 0.2 s, see above */
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/merge.%s.%d", test_dir(), part, id);
  if (strcmp(part, "burst") == 0)
    run(0, "burst");
  else
    run(rank == 0 ? 0 : 4, "uneven");
  return test_finish_mpi(path);
}
