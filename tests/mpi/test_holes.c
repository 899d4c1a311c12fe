/*
 * test_holes.c - two-phase's read-modify-write of the holes between a
 * collective write's pieces (docs/strategies.md): it reads a hole and
 * writes it back, so a write of the program that lands in the hole
 * meanwhile would be overwritten with the stale bytes.  Found by the
 * random-program generator (seed 203 of gen.two_phase.np4): a rank's
 * blocking independent write, made while a non-blocking collective write
 * was in flight, lost.  So, with romio_ds_write automatic:
 *   - a blocking collective write, nothing else outstanding, at
 *     MPI_THREAD_SINGLE: read-modify-write (the statistics count it), and
 *     the holes keep the file's bytes;
 *   - a non-blocking one: none; its pieces are written one by one;
 *   - a non-blocking one while rank 0 writes into the holes: the
 *     independent write survives;
 *   - romio_ds_write=enable: read-modify-write even non-blocking (asked).
 *
 * aggio-test-ranks: 1 2
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>

#include "engine.h"
#include "harness.h"

/* Row k of the file: every rank's PIECE bytes, then a HOLE; NPIECES rows. */
enum { PIECE = 8, HOLE = 8, NPIECES = 8192 };

static int rank, nprocs, stride;
static char path[512];

static int64_t rmw_count(aggio_file fh) {
  return fh->obs.stats ? fh->obs.stats->c[AGGIO_C_RMW_COUNT] : -1;
}

/* Rank r's pieces: PIECE bytes at r * PIECE of every row. */
static MPI_Datatype view_type(void) {
  MPI_Datatype v, t;
  MPI_Type_vector(NPIECES, PIECE, stride, MPI_BYTE, &v);
  MPI_Type_create_resized(v, 0, (MPI_Aint)NPIECES * stride, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&v);
  return t;
}

static int64_t file_bytes(void) { return (int64_t)NPIECES * stride; }

/* A fresh file of `fill` bytes, through aggio, with the view set. */
static aggio_file open_filled(const char *ds, unsigned char fill) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "aggio_stats", "true");
  MPI_Info_set(info, "cb_buffer_size", "65536");
  MPI_Info_set(info, "romio_ds_write", ds);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return NULL;
  if (rank == 0) {
    unsigned char *all = malloc((size_t)file_bytes());
    memset(all, fill, (size_t)file_bytes());
    CHECK(aggio_file_write_at(fh, 0, all, (int)file_bytes(), MPI_BYTE, MPI_STATUS_IGNORE) ==
              0,
          "prefill: %s", aggio_error_message());
    free(all);
  }
  aggio_file_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file_sync(fh);
  MPI_Datatype t = view_type();
  aggio_file_set_view(fh, (MPI_Offset)rank * PIECE, MPI_BYTE, t, "native", MPI_INFO_NULL);
  MPI_Type_free(&t);
  return fh;
}

/* The whole file read back on rank 0: pieces hold 'A' + their rank; hole
 * bytes `hole`, or `hole2` where rank 0 wrote them (k % 7 == 0). */
static void check_file(aggio_file fh, const char *what, unsigned char hole, unsigned char hole2) {
  aggio_file_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    FILE *f = fopen(path, "rb");
    unsigned char *all = malloc((size_t)file_bytes());
    size_t got = f ? fread(all, 1, (size_t)file_bytes(), f) : 0;
    if (f)
      fclose(f);
    CHECK(got == (size_t)file_bytes(), "%s: read %zu bytes", what, got);
    int64_t bad = 0, first = -1;
    for (int64_t b = 0; b < (int64_t)got; b++) {
      int64_t in = b % stride, k = b / stride;
      int owner = in < (int64_t)PIECE * nprocs ? (int)(in / PIECE) : -1;
      unsigned char want = owner >= 0 ? (unsigned char)('A' + owner)
                           : (k % 7 == 0) ? hole2 : hole;
      if (all[b] != want && bad++ == 0)
        first = b;
    }
    CHECK(bad == 0, "%s: %lld wrong bytes, the first at %lld", what, (long long)bad,
          (long long)first);
    free(all);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Rank 0 writes hole bytes (those of stride k % 7 == 0) with 0x55. */
static void write_holes(aggio_file fh) {
  if (rank != 0)
    return;
  /* through a second handle, view-less: independent, on this rank only */
  aggio_file h;
  CHECK(aggio_file_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, MPI_INFO_NULL, &h) == 0,
        "second handle: %s", aggio_error_message());
  unsigned char b[HOLE];
  memset(b, 0x55, sizeof b);
  for (int64_t k = 0; k < NPIECES; k += 7)
    aggio_file_write_at(h, k * stride + (int64_t)PIECE * nprocs, b, HOLE, MPI_BYTE,
                        MPI_STATUS_IGNORE);
  aggio_file_close(&h);
  (void)fh;
}

static void run(const char *what, const char *ds, int nonblocking, int holes_meanwhile,
                int want_rmw) {
  aggio_file fh = open_filled(ds, 0xaa);
  if (!fh)
    return;
  unsigned char *mine = malloc((size_t)NPIECES * PIECE);
  memset(mine, 'A' + rank, (size_t)NPIECES * PIECE);
  int64_t before = rmw_count(fh);
  int rc;
  if (nonblocking) {
    aggio_request r;
    rc = aggio_file_iwrite_at_all(fh, 0, mine, NPIECES * PIECE, MPI_BYTE, &r);
    if (holes_meanwhile)
      write_holes(fh);
    rc |= aggio_wait(&r, MPI_STATUS_IGNORE);
  } else {
    rc = aggio_file_write_at_all(fh, 0, mine, NPIECES * PIECE, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  CHECK(rc == 0, "%s: %s", what, aggio_error_message());
  int64_t rmw = rmw_count(fh) - before, any = 0;
  MPI_Allreduce(&rmw, &any, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (want_rmw)
    CHECK(any > 0, "%s: no read-modify-write", what);
  else
    CHECK(any == 0, "%s: %lld read-modify-writes", what, (long long)any);
  /* a second open of the file (write_holes) forgets nothing here */
  check_file(fh, what, 0xaa, holes_meanwhile ? 0x55 : 0xaa);
  aggio_file_close(&fh);
  free(mine);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv); /* MPI_THREAD_SINGLE */
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  stride = PIECE * nprocs + HOLE;
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/holes.%d", test_dir(), id);
  run("blocking", "automatic", 0, 0, 1);
  run("non-blocking", "automatic", 1, 0, 0);
  run("non-blocking, holes written meanwhile", "automatic", 1, 1, 0);
  run("non-blocking, romio_ds_write=enable", "enable", 1, 0, 1);
  return test_finish_mpi(path);
}
