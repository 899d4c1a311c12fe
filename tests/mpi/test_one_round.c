/*
 * test_one_round.c - collective calls whose I/O runs before their summary
 * (src/core/one_round.c), judged by the engine's counts and by the bytes,
 * read back through the MPI library's own MPI-IO:
 *   repeat   every rank writes, then reads, 1 MiB records call after call
 *            (segmented: each rank its own I/O): every call after the
 *            first of each direction runs in one agreement on every rank;
 *            the last reads are shifted half a record, so the last rank's
 *            runs past the end of the file, and every rank's count says
 *            what the file held;
 *   partial  rank 0 changes its record's size every call, so it never
 *            guesses while the others do: the others' I/O ran first, the
 *            calls still agree twice (rank 0's I/O runs after the summary),
 *            and nothing is written twice;
 *   redo     after calls that ran independently, rank 0 splits its record
 *            into 4 KiB pieces: auto chooses two-phase, and the other
 *            ranks' I/O, which ran first, runs again within it; guesses
 *            then pause;
 *   fault    rank 1's fourth write fails (AGGIO_FAULTS, EIO) in a call
 *            whose I/O ran first: every rank returns the failure, with
 *            rank 1's message, and the next call succeeds;
 *   off      aggio_one_round=disable: no I/O runs first.
 *
 * aggio-test-ranks: 2 4
 * aggio-test-parts: repeat partial redo fault off
 */
#include <aggio.h>

#include "engine.h"
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { REC = 1 << 20, CALLS = 10 };

static int rank, nprocs;
static char path[512];

static unsigned char datum(int64_t off) { return (unsigned char)(off * 7 / 3 + off / 4099 + 1); }

static int64_t ctr(aggio_file fh, int c) { return fh->obs.stats ? fh->obs.stats->c[c] : -1; }

/* Record k of rank r: bytes [(k * nprocs + r) * REC, + REC). */
static MPI_Offset at(int k, int r) { return ((MPI_Offset)k * nprocs + r) * REC; }

static void fill(unsigned char *b, int64_t off, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    b[i] = datum(off + i);
}

static aggio_file open_file(const char *hints) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stats", "true");
  if (hints)
    MPI_Info_set(info, "aggio_one_round", hints);
  aggio_file fh = NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  return rc == 0 ? fh : NULL;
}

/* Every byte of [0, end) is datum(offset), read through the MPI
 * library's own MPI-IO. */
static void check_file(int64_t end, const char *what) {
  MPI_File f;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f);
  CHECK(rc == MPI_SUCCESS, "%s: MPI_File_open of the result failed", what);
  if (rc != MPI_SUCCESS)
    return;
  MPI_Offset size = 0;
  MPI_File_get_size(f, &size);
  CHECK(size == end, "%s: the file has %lld bytes, expected %lld", what, (long long)size,
        (long long)end);
  unsigned char *b = malloc(REC);
  int64_t bad = 0;
  for (int64_t off = (int64_t)rank * REC; b && off < end; off += (int64_t)nprocs * REC) {
    int n = (int)(end - off < REC ? end - off : REC);
    MPI_File_read_at(f, off, b, n, MPI_BYTE, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++)
      bad += b[i] != datum(off + i);
  }
  CHECK(bad == 0, "%s: rank %d found %lld wrong bytes in the file", what, rank, (long long)bad);
  free(b);
  MPI_File_close(&f);
}

/* Rank r's record k, its first `bytes` bytes. */
static int write_rec(aggio_file fh, int k, int64_t bytes, unsigned char *b) {
  fill(b, at(k, rank), bytes);
  return aggio_file_write_at_all(fh, at(k, rank), b, (int)bytes, MPI_BYTE, MPI_STATUS_IGNORE);
}

static void part_repeat(aggio_file fh) {
  unsigned char *b = malloc(REC);
  for (int k = 0; k < CALLS; k++)
    CHECK(write_rec(fh, k, REC, b) == 0, "write %d: %s", k, aggio_error_message());
  int64_t w_first = ctr(fh, AGGIO_C_IO_FIRST), w_once = ctr(fh, AGGIO_C_ONE_ROUND);
  CHECK(w_first == CALLS - 1 && w_once == CALLS - 1 && test_same_everywhere(w_once),
        "writes: %lld ran their I/O first, %lld agreed once; expected %d each", (long long)w_first,
        (long long)w_once, CALLS - 1);
  int64_t wrong = 0;
  for (int k = 0; k < CALLS; k++) {
    memset(b, 0, REC);
    MPI_Status st;
    /* the last call: half a record further, past the end for the last rank */
    MPI_Offset off = at(k, rank) + (k == CALLS - 1 ? REC / 2 : 0);
    int rc = aggio_file_read_at_all(fh, off, b, REC, MPI_BYTE, &st);
    CHECK(rc == 0, "read %d: %s", k, aggio_error_message());
    int got = -1;
    MPI_Get_count(&st, MPI_BYTE, &got);
    int64_t end = at(CALLS, 0), want = off + REC <= end ? REC : end - off;
    CHECK(got == want, "read %d: rank %d got %d bytes, expected %lld", k, rank, got,
          (long long)want);
    for (int i = 0; i < got; i++)
      wrong += b[i] != datum(off + i);
  }
  CHECK(wrong == 0, "rank %d read %lld wrong bytes", rank, (long long)wrong);
  int64_t r_once = ctr(fh, AGGIO_C_ONE_ROUND) - w_once;
  CHECK(r_once == CALLS - 1 && ctr(fh, AGGIO_C_ONE_ROUND_REDONE) == 0,
        "reads: %lld agreed once (expected %d), %lld run again", (long long)r_once, CALLS - 1,
        (long long)ctr(fh, AGGIO_C_ONE_ROUND_REDONE));
  free(b);
}

static void part_partial(aggio_file fh) {
  unsigned char *b = malloc(REC);
  for (int k = 0; k < CALLS; k++) {
    int64_t bytes = rank == 0 && k % 2 ? REC / 2 : REC;
    CHECK(write_rec(fh, k, bytes, b) == 0, "write %d: %s", k, aggio_error_message());
  }
  int64_t first = ctr(fh, AGGIO_C_IO_FIRST), once = ctr(fh, AGGIO_C_ONE_ROUND);
  int64_t expect = rank == 0 ? 0 : CALLS - 1;
  CHECK(first == expect && once == 0 && ctr(fh, AGGIO_C_ONE_ROUND_REDONE) == 0,
        "rank %d: %lld calls ran their I/O first (expected %lld), %lld agreed once (0), %lld ran "
        "it again (0)", rank, (long long)first, (long long)expect, (long long)once,
        (long long)ctr(fh, AGGIO_C_ONE_ROUND_REDONE));
  /* rank 0's odd records are half written: write their second halves */
  for (int k = 1; k < CALLS; k += 2) {
    int64_t off = at(k, 0) + REC / 2, n = rank == 0 ? REC / 2 : 0;
    fill(b, off, n);
    CHECK(aggio_file_write_at(fh, off, b, (int)n, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "second half %d: %s", k, aggio_error_message());
  }
  free(b);
}

/* Call SPLIT: rank 0 writes every other 4 KiB piece of its record through
 * a vector view (then the others independently); the other ranks write
 * their records as before.  set_view is collective: every rank sets one. */
enum { SPLIT = 5, PIECE = 4096 };

static void write_split(aggio_file fh, unsigned char *b) {
  MPI_Datatype vec;
  MPI_Type_vector(REC / (2 * PIECE), PIECE, 2 * PIECE, MPI_BYTE, &vec);
  MPI_Type_commit(&vec);
  aggio_file_set_view(fh, rank == 0 ? at(SPLIT, 0) : 0, MPI_BYTE, rank == 0 ? vec : MPI_BYTE,
                      "native", MPI_INFO_NULL);
  int rc;
  if (rank == 0) {
    for (int i = 0; i < REC / (2 * PIECE); i++)
      fill(b + (int64_t)i * PIECE, at(SPLIT, 0) + (int64_t)i * 2 * PIECE, PIECE);
    rc = aggio_file_write_at_all(fh, 0, b, REC / 2, MPI_BYTE, MPI_STATUS_IGNORE);
  } else {
    rc = write_rec(fh, SPLIT, REC, b);
  }
  CHECK(rc == 0, "write %d (pieces): %s", SPLIT, aggio_error_message());
  aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_Type_free(&vec);
  for (int64_t off = at(SPLIT, 0) + PIECE; rank == 0 && off < at(SPLIT, 0) + REC; off += 2 * PIECE) {
    fill(b, off, PIECE);
    CHECK(aggio_file_write_at(fh, off, b, PIECE, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "the holes of write %d: %s", SPLIT, aggio_error_message());
  }
}

static void part_redo(aggio_file fh) {
  unsigned char *b = malloc(REC);
  for (int k = 0; k < CALLS; k++) {
    if (k == SPLIT)
      write_split(fh, b);
    else
      CHECK(write_rec(fh, k, REC, b) == 0, "write %d: %s", k, aggio_error_message());
  }
  free(b);
  /* the other ranks guessed at calls 1..SPLIT, wrongly at SPLIT, and not
   * after it (AGGIO_ONE_ROUND_PAUSE); rank 0 never guessed wrongly */
  int64_t redone = ctr(fh, AGGIO_C_ONE_ROUND_REDONE), first = ctr(fh, AGGIO_C_IO_FIRST);
  CHECK(redone == (rank == 0 ? 0 : 1), "rank %d: the I/O ran again %lld times, expected %d",
        rank, (long long)redone, rank == 0 ? 0 : 1);
  CHECK(rank == 0 || first == SPLIT, "rank %d: %lld calls ran their I/O first, expected %d",
        rank, (long long)first, SPLIT);
}

static void part_fault(aggio_file fh) {
  unsigned char *b = malloc(REC);
  int failed_at = -1;
  for (int k = 0; k < CALLS; k++) {
    int rc = write_rec(fh, k, REC, b);
    if (rc != 0 && failed_at < 0) {
      failed_at = k;
      CHECK(strstr(aggio_error_message(), "rank 1") != NULL,
            "write %d failed on rank %d without rank 1's message: %s", k, rank,
            aggio_error_message());
    } else {
      CHECK(rc == 0, "write %d failed again on rank %d: %s", k, rank, aggio_error_message());
    }
  }
  CHECK(failed_at == 3 && test_same_everywhere(failed_at), "rank %d: the failure came at write %d, expected 3",
        rank, failed_at);
  /* the failed record, written again */
  CHECK(write_rec(fh, 3, REC, b) == 0, "write 3 again: %s", aggio_error_message());
  CHECK(ctr(fh, AGGIO_C_IO_FIRST) >= 2, "rank %d: only %lld calls ran their I/O first", rank,
        (long long)ctr(fh, AGGIO_C_IO_FIRST));
  free(b);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "repeat";
  if (strcmp(part, "fault") == 0)
    setenv("AGGIO_FAULTS", "pwrite@1#4=EIO", 1);
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/one_round.%s.%d", test_dir(), part, id);
  aggio_file fh = open_file(strcmp(part, "off") == 0 ? "disable" : NULL);
  if (!fh)
    return test_finish_mpi(path);
  if (strcmp(part, "repeat") == 0)
    part_repeat(fh);
  else if (strcmp(part, "partial") == 0)
    part_partial(fh);
  else if (strcmp(part, "redo") == 0)
    part_redo(fh);
  else if (strcmp(part, "fault") == 0)
    part_fault(fh);
  else {
    unsigned char *b = malloc(REC);
    for (int k = 0; k < CALLS; k++)
      CHECK(write_rec(fh, k, REC, b) == 0, "write %d: %s", k, aggio_error_message());
    CHECK(ctr(fh, AGGIO_C_IO_FIRST) == 0, "aggio_one_round=disable: %lld calls ran their I/O "
          "first", (long long)ctr(fh, AGGIO_C_IO_FIRST));
    free(b);
  }
  aggio_file_close(&fh);
  check_file(at(CALLS, 0), part);
  return test_finish_mpi(path);
}
