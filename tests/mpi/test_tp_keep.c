/*
 * test_tp_keep.c - two-phase calls set up in the memory an earlier call
 * kept (src/plan/tp_keep.h): a call whose agreed piece counts fit what
 * every rank holds skips the set-up agreement.  Judged by the engine's
 * count (the same on every rank) and by the bytes, read back through the
 * MPI library's own MPI-IO.  Every rank writes `np` pieces of PIECE bytes,
 * interleaved with the other ranks' (a strided view, as ior-hard's), on
 * two emulated nodes, several rounds per call:
 *   repeat  six writes of 16 pieces, one of them over the previous call's
 *           range again, then six reads: every call after the first is
 *           set up without an agreement;
 *   grow    piece counts 4, 8, 4, 2, 8, 16, 16: a call with more pieces
 *           than any before agrees (and raises what is held), the others
 *           do not;
 *   uneven  rank 0 writes 64 pieces, the others one block each: the bound
 *           is the most pieces of one rank, and the calls after the first
 *           fit it;
 *   large   32,768 pieces a rank: more than a file keeps, so every call
 *           agrees (and the bytes are still right).
 *
 * aggio-test-ranks: 2 4
 * aggio-test-parts: repeat grow uneven large
 */
#include <aggio.h>

#include "engine.h"
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { PIECE = 16, MAXCALLS = 8 };

static int rank, nprocs;
static char path[512];

/* what the file holds: each call's region [base, base + span) and seed */
static struct {
  int64_t base, span;
  int np0, np, seed; /* rank 0's pieces and the others' */
} region[MAXCALLS];
static int nregions;

static unsigned char datum(int64_t off, int seed) {
  return (unsigned char)(off * 13 / 7 + off / 1021 + seed * 29 + 1);
}

static int64_t kept(aggio_file fh) {
  return fh->obs.stats ? fh->obs.stats->c[AGGIO_C_TP_KEPT] : -1;
}

static aggio_file open_file(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stats", "true");
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "cb_buffer_size", "4096"); /* several rounds per call */
  MPI_Info_set(info, "aggio_emulate_nodes", "2");
  aggio_file fh = NULL;
  int mode = MPI_MODE_CREATE | MPI_MODE_RDWR;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, mode, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  return rc == 0 ? fh : NULL;
}

/* The view of one call: np pieces of PIECE bytes a rank, rank r's piece j
 * at base + (j * nprocs + r) * PIECE; with `np0` != np, rank 0 has np0
 * pieces and the others one block of np * PIECE bytes each after them. */
static int64_t my_offset(const int *np0_np, int64_t base, int j) {
  int np0 = np0_np[0], np = np0_np[1];
  if (np0 == np)
    return base + ((int64_t)j * nprocs + rank) * PIECE;
  if (rank == 0)
    return base + (int64_t)j * 2 * PIECE;
  return base + (int64_t)np0 * 2 * PIECE + (int64_t)(rank - 1) * np * PIECE + j * PIECE;
}

static int64_t span_of(int np0, int np) {
  return np0 == np ? (int64_t)np * nprocs * PIECE
                   : (int64_t)np0 * 2 * PIECE + (int64_t)(nprocs - 1) * np * PIECE;
}

/* Rank's pieces and bytes in a call. */
static int my_pieces(int np0, int np) {
  if (rank == 0)
    return np0;
  return np0 == np ? np : 1;
}
static int my_bytes(int np0, int np) { return (rank == 0 ? np0 : np) * PIECE; }

static void set_view(aggio_file fh, int np0, int np, int64_t base) {
  int n = my_pieces(np0, np), len = my_bytes(np0, np) / n;
  int counts[2] = {np0, np};
  int64_t first = my_offset(counts, base, 0);
  int64_t stride = n > 1 ? my_offset(counts, base, 1) - first : len;
  MPI_Datatype vec;
  MPI_Type_create_hvector(n, len, (MPI_Aint)stride, MPI_BYTE, &vec);
  MPI_Type_commit(&vec);
  int rc = aggio_file_set_view(fh, first, MPI_BYTE, vec, "native", MPI_INFO_NULL);
  CHECK(rc == 0, "set_view: %s", aggio_error_message());
  MPI_Type_free(&vec);
}

/* The bytes of my pieces of a call at `base`, in stream order. */
static void fill(unsigned char *b, int np0, int np, int64_t base, int seed) {
  int n = my_pieces(np0, np), len = my_bytes(np0, np) / n, counts[2] = {np0, np};
  for (int j = 0; j < n; j++) {
    int64_t off = np0 == np || rank == 0 ? my_offset(counts, base, j)
                                         : my_offset(counts, base, 0) + (int64_t)j * len;
    for (int i = 0; i < len; i++)
      b[(int64_t)j * len + i] = datum(off + i, seed);
  }
}

/* One collective call of the pattern: a write (recorded) or a read
 * (checked). */
static void call(aggio_file fh, int is_write, int np0, int np, int64_t base, int seed) {
  int bytes = my_bytes(np0, np);
  unsigned char *b = malloc((size_t)bytes), *want = malloc((size_t)bytes);
  fill(want, np0, np, base, seed);
  set_view(fh, np0, np, base);
  int rc;
  if (is_write) {
    rc = aggio_file_write_at_all(fh, 0, want, bytes, MPI_BYTE, MPI_STATUS_IGNORE);
  } else {
    memset(b, 0, (size_t)bytes);
    rc = aggio_file_read_at_all(fh, 0, b, bytes, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc != 0 || memcmp(b, want, (size_t)bytes) == 0,
          "rank %d: a read at %lld did not give what was written", rank, (long long)base);
  }
  CHECK(rc == 0, "%s at %lld: %s", is_write ? "write" : "read", (long long)base,
        aggio_error_message());
  if (is_write && nregions < MAXCALLS) {
    int k = 0;
    while (k < nregions && region[k].base != base)
      k++;
    region[k].base = base;
    region[k].span = span_of(np0, np);
    region[k].np0 = np0;
    region[k].np = np;
    region[k].seed = seed;
    nregions += k == nregions;
  }
  free(b);
  free(want);
}

/* Every byte of every region is its last writer's, read through the MPI
 * library's own MPI-IO. */
static void check_file(void) {
  MPI_File f;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &f);
  CHECK(rc == MPI_SUCCESS, "MPI_File_open of the result failed");
  if (rc != MPI_SUCCESS)
    return;
  int64_t bad = 0;
  for (int k = 0; k < nregions; k++) {
    unsigned char *b = malloc((size_t)region[k].span);
    int64_t span = region[k].span;
    MPI_File_read_at(f, region[k].base, b, (int)span, MPI_BYTE, MPI_STATUS_IGNORE);
    int uneven = region[k].np0 != region[k].np;
    int64_t holes_end = uneven ? (int64_t)region[k].np0 * 2 * PIECE : 0;
    for (int64_t i = rank; i < region[k].span; i += nprocs) /* each rank a share */
      if (i >= holes_end || (i / PIECE) % 2 == 0) /* rank 0's pieces leave holes */
        bad += b[i] != datum(region[k].base + i, region[k].seed);
    free(b);
  }
  CHECK(bad == 0, "rank %d found %lld wrong bytes in the file", rank, (long long)bad);
  MPI_File_close(&f);
}

static int64_t sequence(aggio_file fh, const int *np0, const int *np, int n, int64_t base,
                        int seed) {
  for (int k = 0; k < n; k++) {
    call(fh, 1, np0[k], np[k], base, seed + k);
    base += span_of(np0[k], np[k]);
  }
  return base;
}

static void part_repeat(aggio_file fh) {
  enum { NP = 16 };
  int64_t span = span_of(NP, NP), at[6] = {0, 1, 2, 3, 3, 4};
  for (int k = 0; k < 6; k++)
    call(fh, 1, NP, NP, at[k] * span, k + 1);
  int64_t w = kept(fh);
  CHECK(w == 5 && test_same_everywhere(w),
        "writes: %lld of 6 set up without an agreement, expected 5", (long long)w);
  for (int k = 0; k < 6; k++) /* the regions, the rewritten one with its new bytes */
    call(fh, 0, NP, NP, at[k] * span, at[k] == 3 ? 5 : k + 1);
  int64_t r = kept(fh) - w;
  CHECK(r == 6 && test_same_everywhere(r),
        "reads: %lld of 6 set up without an agreement, expected 6", (long long)r);
}

static void part_grow(aggio_file fh) {
  static const int np[7] = {4, 8, 4, 2, 8, 16, 16};
  sequence(fh, np, np, 7, 0, 1);
  int64_t k = kept(fh);
  CHECK(k == 4 && test_same_everywhere(k),
        "%lld of 7 calls set up without an agreement, expected 4 (the 3rd, 4th, 5th, 7th)",
        (long long)k);
}

static void part_uneven(aggio_file fh) {
  static const int np0[4] = {64, 64, 64, 64}, np[4] = {8, 8, 8, 8};
  int64_t end = sequence(fh, np0, np, 4, 0, 1);
  /* fewer pieces for rank 0 still fit */
  static const int less[1] = {32};
  sequence(fh, less, np, 1, end, 9);
  int64_t k = kept(fh);
  CHECK(k == 4 && test_same_everywhere(k),
        "%lld of 5 calls set up without an agreement, expected 4", (long long)k);
}

static void part_large(aggio_file fh) {
  static const int np[2] = {32768, 32768};
  sequence(fh, np, np, 2, 0, 1);
  int64_t k = kept(fh);
  CHECK(k == 0 && test_same_everywhere(k),
        "%lld calls of 32,768 pieces a rank set up without an agreement, expected none "
        "(more than a file keeps)", (long long)k);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  const char *part = argc > 1 ? argv[1] : "repeat";
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/tp_keep.%s.%d", test_dir(), part, id);
  aggio_file fh = open_file();
  if (!fh)
    return test_finish_mpi(path);
  if (strcmp(part, "repeat") == 0)
    part_repeat(fh);
  else if (strcmp(part, "grow") == 0)
    part_grow(fh);
  else if (strcmp(part, "uneven") == 0)
    part_uneven(fh);
  else if (strcmp(part, "large") == 0)
    part_large(fh);
  else
    CHECK(0, "unknown part %s", part);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
  check_file();
  return test_finish_mpi(path);
}
