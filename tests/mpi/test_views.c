/*
 * test_views.c - file views at the edges of what MPI-IO allows:
 *   - a filetype of size 0 on some ranks (a rank with nothing to access, as
 *     in MPICH's test setview_zero): set_view and collective calls work, and
 *     the other ranks' data is right;
 *   - etypes and filetypes with overlapping blocks, and etypes with
 *     decreasing displacements: an error for a file opened for writing (MPI
 *     3.1, 13.3: "If the file is opened for writing, neither the etype nor
 *     the filetype is permitted to contain overlapping regions"), accepted
 *     for a read-only file; tiles of a filetype that would overlap are
 *     refused only for an access that spans them;
 *   - filetypes and memory types whose data lie outside [lb, lb + extent)
 *     (data past the extent, data below the lower bound, a vector of
 *     types resized smaller than their data), which HDF5 builds with
 *     MPI_Type_create_resized and struct types: the bytes land where MPI's
 *     typemap rules put them (displacement + typemap offset, tiles every
 *     extent; the lower bound moves nothing), checked against an image of
 *     the file built by hand, for both strategies.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <aggio.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"

enum { NINT = 16 }; /* ints each data rank writes */

static int rank, nprocs;

/* Ranks with nothing to access: the odd ones, and rank 0 when alone. */
static int is_empty_rank(int r) { return nprocs == 1 ? 1 : r % 2 == 1; }

static int value_at(int writer, int i) { return 1000 * (writer + 1) + i; }

static MPI_Datatype committed(MPI_Datatype t) {
  MPI_Type_commit(&t);
  return t;
}

/* Defect 2: a filetype of size 0 on some ranks. */
static void test_empty_filetype(const char *path) {
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  MPI_Datatype empty, mine;
  MPI_Type_contiguous(0, MPI_INT, &empty);
  empty = committed(empty);
  MPI_Type_contiguous(NINT, MPI_INT, &mine);
  mine = committed(mine);
  int data_rank = !is_empty_rank(rank);
  MPI_Offset disp = (MPI_Offset)(rank / 2) * NINT * (MPI_Offset)sizeof(int);
  rc = aggio_file_set_view(fh, data_rank ? disp : 0, MPI_INT, data_rank ? mine : empty,
                           "native", MPI_INFO_NULL);
  CHECK(rc == AGGIO_SUCCESS, "set_view with %s filetype: %s",
        data_rank ? "a 64-byte" : "an empty", aggio_error_message());
  int buf[NINT], back[NINT];
  for (int i = 0; i < NINT; i++)
    buf[i] = value_at(rank, i);
  int count = data_rank ? NINT : 0;
  static const char *strategies[] = {"independent", "two_phase"};
  for (int s = 0; s < 2 && rc == AGGIO_SUCCESS; s++) {
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "aggio_strategy", strategies[s]);
    CHECK(aggio_file_set_info(fh, info) == AGGIO_SUCCESS, "set_info: %s",
          aggio_error_message());
    MPI_Info_free(&info);
    rc = aggio_file_write_at_all(fh, 0, buf, count, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS, "%s write_at_all: %s", strategies[s], aggio_error_message());
    memset(back, 0, sizeof back);
    MPI_Status st;
    rc = aggio_file_read_at_all(fh, 0, back, count, MPI_INT, &st);
    int got = -1;
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(rc == AGGIO_SUCCESS && got == count && memcmp(back, buf, sizeof(int) * count) == 0,
          "%s read_at_all: rc %d, %d ints, %s", strategies[s], rc, got,
          aggio_error_message());
  }
  MPI_Offset size = -1;
  aggio_file_get_size(fh, &size);
  int writers = 0;
  for (int r = 0; r < nprocs; r++)
    writers += !is_empty_rank(r);
  CHECK(size == (MPI_Offset)writers * NINT * (MPI_Offset)sizeof(int),
        "file size %lld for %d writing ranks", (long long)size, writers);
  aggio_file_close(&fh);
  MPI_Type_free(&empty);
  MPI_Type_free(&mine);
}

/* Types for the overlap rules: 8-byte blocks 4 bytes apart (they overlap),
 * and two 4-byte blocks in decreasing order (disjoint, but going back). */
static MPI_Datatype overlapping_blocks(void) {
  int bl[2] = {8, 8};
  MPI_Aint at[2] = {0, 4};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, bl, at, MPI_BYTE, &t);
  return committed(t);
}

static MPI_Datatype decreasing_blocks(void) {
  int bl[2] = {4, 4};
  MPI_Aint at[2] = {4, 0};
  MPI_Datatype t;
  MPI_Type_create_hindexed(2, bl, at, MPI_BYTE, &t);
  return committed(t);
}

/* Tiles that overlap: 8 bytes of data every 4 bytes. */
static MPI_Datatype overlapping_tiles(void) {
  MPI_Datatype c, t;
  MPI_Type_contiguous(8, MPI_BYTE, &c);
  MPI_Type_create_resized(c, 0, 4, &t);
  MPI_Type_free(&c);
  return committed(t);
}

static void expect_view(aggio_file fh, MPI_Datatype etype, MPI_Datatype filetype, int want,
                        const char *what) {
  int rc = aggio_file_set_view(fh, 0, etype, filetype, "native", MPI_INFO_NULL);
  CHECK(rc == want, "%s: set_view returned %d (%s), expected %d; %s", what, rc,
        aggio_strerror(rc), want, rc ? aggio_error_message() : "");
}

/* Defect 3: overlapping or decreasing etypes, overlapping filetypes. */
static void test_overlap_rules(const char *path) {
  MPI_Datatype ov = overlapping_blocks(), dec = decreasing_blocks(),
               tiles = overlapping_tiles(), bytes8, bytes16;
  MPI_Type_contiguous(8, MPI_BYTE, &bytes8);
  bytes8 = committed(bytes8);
  MPI_Type_contiguous(16, MPI_BYTE, &bytes16);
  bytes16 = committed(bytes16);
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    expect_view(fh, ov, bytes16, AGGIO_ERR_TYPE, "writable file, etype with overlapping blocks");
    expect_view(fh, dec, bytes8, AGGIO_ERR_TYPE, "writable file, etype going backwards");
    expect_view(fh, MPI_BYTE, ov, AGGIO_ERR_TYPE, "writable file, overlapping filetype");
    char text[64];
    for (int i = 0; i < 64; i++)
      text[i] = (char)('A' + i % 26);
    /* tiles that would overlap: valid for one instance per access (HDF5's
     * resized types), an error for an access that spans instances */
    expect_view(fh, MPI_BYTE, tiles, AGGIO_SUCCESS, "writable file, tiles that overlap");
    if (rank == 0) {
      rc = aggio_file_write_at(fh, 0, text, 16, MPI_BYTE, MPI_STATUS_IGNORE);
      CHECK(rc == AGGIO_ERR_TYPE, "a write across overlapping tiles returned %d (%s)", rc,
            aggio_strerror(rc));
      rc = aggio_file_write_at(fh, 0, text, 8, MPI_BYTE, MPI_STATUS_IGNORE);
      CHECK(rc == AGGIO_SUCCESS, "a write within one instance: %s", aggio_error_message());
    }
    expect_view(fh, MPI_BYTE, bytes8, AGGIO_SUCCESS, "writable file, plain filetype");
    /* fill the file for the read-only part */
    if (rank == 0)
      aggio_file_write_at(fh, 0, text, 64, MPI_BYTE, MPI_STATUS_IGNORE);
    aggio_file_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open read-only: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    expect_view(fh, ov, bytes16, AGGIO_SUCCESS, "read-only file, etype with overlapping blocks");
    expect_view(fh, dec, bytes8, AGGIO_SUCCESS, "read-only file, etype going backwards");
    expect_view(fh, MPI_BYTE, tiles, AGGIO_SUCCESS, "read-only file, overlapping tiles");
    /* every 4 bytes, 8 bytes: ABCDEFGH EFGHIJKL */
    char got[16] = {0};
    rc = aggio_file_read_at(fh, 0, got, 16, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS && memcmp(got, "ABCDEFGHEFGHIJKL", 16) == 0,
          "read through overlapping tiles: rc %d \"%.16s\"", rc, got);
    expect_view(fh, MPI_BYTE, dec, AGGIO_ERR_TYPE,
                "read-only file, filetype going backwards (never allowed)");
    aggio_file_close(&fh);
  }
  MPI_Type_free(&ov);
  MPI_Type_free(&dec);
  MPI_Type_free(&tiles);
  MPI_Type_free(&bytes8);
  MPI_Type_free(&bytes16);
}

/* ---- data outside [lb, lb + extent) ---------------------------------------- */

enum { REGION = 512 }; /* bytes of the file each rank's view lives in */

struct odd_type {
  const char *what;
  MPI_Datatype type;
  int tiles;                 /* instances accessed (count) */
  int npieces;               /* byte pieces of one instance, in typemap order */
  MPI_Aint at[4], len[4];    /* their displacements and lengths */
  MPI_Aint extent;           /* the tiling stride */
};

/* Blocks of bytes at `at` (lengths `len`), resized to (lb, extent). */
static MPI_Datatype blocks_resized(int n, const MPI_Aint *at, const MPI_Aint *len, MPI_Aint lb,
                                   MPI_Aint extent) {
  int bl[4];
  for (int i = 0; i < n; i++)
    bl[i] = (int)len[i];
  MPI_Datatype h, t;
  MPI_Type_create_hindexed(n, bl, at, MPI_BYTE, &h);
  MPI_Type_create_resized(h, lb, extent, &t);
  MPI_Type_free(&h);
  return committed(t);
}

static int odd_types(struct odd_type *t) {
  int n = 0;
  /* A: data past the extent (one instance, as HDF5 accesses its types) */
  t[n] = (struct odd_type){"data past the extent", 0, 1, 2, {0, 40}, {16, 16}, 8};
  t[n].type = blocks_resized(2, t[n].at, t[n].len, 0, 8), n++;
  /* B: the lower bound above the first data byte */
  t[n] = (struct odd_type){"data below the lower bound", 0, 1, 2, {0, 32}, {16, 16}, 48};
  t[n].type = blocks_resized(2, t[n].at, t[n].len, 16, 48), n++;
  /* C: a negative lower bound, tiled three times (monotonic) */
  t[n] = (struct odd_type){"negative lower bound, 3 tiles", 0, 3, 1, {8}, {8}, 24};
  t[n].type = blocks_resized(1, t[n].at, t[n].len, -8, 24), n++;
  /* D: an hvector of a type resized smaller than its data: 8 bytes with
   * extent 4, 3 blocks 16 apart (HDF5's span types nest resized types) */
  MPI_Datatype c8, small, v;
  MPI_Type_contiguous(8, MPI_BYTE, &c8);
  MPI_Type_create_resized(c8, 0, 4, &small);
  MPI_Type_create_hvector(3, 1, 16, small, &v);
  MPI_Type_free(&c8);
  MPI_Type_free(&small);
  t[n] = (struct odd_type){"hvector of a type resized below its size", committed(v), 1, 3,
                           {0, 16, 32}, {8, 8, 8}, 0};
  MPI_Aint lb;
  MPI_Type_get_extent(t[n].type, &lb, &t[n].extent);
  n++;
  /* E: a struct with an explicit lower bound: 12 bytes at 20, resized to
   * (lb 24, extent 8): data starts below lb and runs past lb + extent */
  int bl1 = 12;
  MPI_Aint d1 = 20;
  MPI_Datatype ty = MPI_BYTE, st, e;
  MPI_Type_create_struct(1, &bl1, &d1, &ty, &st);
  MPI_Type_create_resized(st, 24, 8, &e);
  MPI_Type_free(&st);
  t[n] = (struct odd_type){"struct resized inside its data", committed(e), 1, 1, {20}, {12}, 8};
  n++;
  return n;
}

static unsigned char odd_byte(int r, int k, int i) { return (unsigned char)(r * 61 + k * 17 + i * 7 + 1); }

/* The file image the standard prescribes for every rank's view. */
static void odd_expected(const struct odd_type *t, int k, unsigned char *img, int64_t *size) {
  *size = 0;
  for (int r = 0; r < nprocs; r++) {
    int64_t disp = (int64_t)REGION * r + 64, pos = 0;
    for (int tile = 0; tile < t->tiles; tile++)
      for (int p = 0; p < t->npieces; p++)
        for (MPI_Aint b = 0; b < t->len[p]; b++, pos++) {
          int64_t off = disp + tile * (int64_t)t->extent + t->at[p] + b;
          img[off] = odd_byte(r, k, (int)pos);
          if (off + 1 > *size)
            *size = off + 1;
        }
  }
}

static void test_odd_filetypes(const char *path) {
  struct odd_type t[8];
  int n = odd_types(t);
  static const char *strategies[] = {"independent", "two_phase"};
  unsigned char *img = calloc((size_t)REGION * nprocs, 1), *file = calloc((size_t)REGION * nprocs, 1);
  unsigned char out[256], back[256];
  CHECK(img && file, "out of memory");
  for (int k = 0; k < n && img && file; k++)
    for (int s = 0; s < 2; s++) {
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0)
        unlink(path);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Info info;
      MPI_Info_create(&info);
      MPI_Info_set(info, "aggio_strategy", strategies[s]);
      aggio_file fh;
      int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
      MPI_Info_free(&info);
      CHECK(rc == AGGIO_SUCCESS, "%s: open: %s", t[k].what, aggio_error_message());
      if (rc != AGGIO_SUCCESS)
        continue;
      int size;
      MPI_Type_size(t[k].type, &size);
      int nbytes = size * t[k].tiles;
      for (int i = 0; i < nbytes; i++)
        out[i] = odd_byte(rank, k, i);
      rc = aggio_file_set_view(fh, (MPI_Offset)REGION * rank + 64, MPI_BYTE, t[k].type, "native",
                               MPI_INFO_NULL);
      CHECK(rc == AGGIO_SUCCESS, "%s: set_view: %s", t[k].what, aggio_error_message());
      if (rc == AGGIO_SUCCESS) {
        rc = aggio_file_write_at_all(fh, 0, out, nbytes, MPI_BYTE, MPI_STATUS_IGNORE);
        CHECK(rc == AGGIO_SUCCESS, "%s %s: write_at_all: %s", t[k].what, strategies[s],
              aggio_error_message());
        memset(back, 0, sizeof back);
        rc = aggio_file_read_at_all(fh, 0, back, nbytes, MPI_BYTE, MPI_STATUS_IGNORE);
        CHECK(rc == AGGIO_SUCCESS && memcmp(back, out, (size_t)nbytes) == 0,
              "%s %s: read_at_all gives back other bytes", t[k].what, strategies[s]);
      }
      aggio_file_close(&fh);
      MPI_Barrier(MPI_COMM_WORLD);
      if (rank == 0) {
        int64_t want = 0;
        memset(img, 0, (size_t)REGION * nprocs);
        odd_expected(&t[k], k, img, &want);
        FILE *f = fopen(path, "rb");
        size_t got = f ? fread(file, 1, (size_t)REGION * nprocs, f) : 0;
        if (f)
          fclose(f);
        CHECK((int64_t)got == want && memcmp(file, img, (size_t)want) == 0,
              "%s %s: the file (%zu bytes) is not the standard's layout (%lld bytes)", t[k].what,
              strategies[s], got, (long long)want);
      }
    }
  /* memory types too: the same types describe the user's buffer */
  for (int k = 0; k < n && img; k++) {
    int size;
    MPI_Type_size(t[k].type, &size);
    int nbytes = size * t[k].tiles;
    unsigned char mem[1024], stream[256];
    memset(mem, 0, sizeof mem);
    unsigned char *base = mem + 128; /* room for negative offsets */
    for (int i = 0; i < nbytes; i++)
      stream[i] = odd_byte(rank, k, i);
    int pos = 0;
    for (int tile = 0; tile < t[k].tiles; tile++)
      for (int p = 0; p < t[k].npieces; p++)
        for (MPI_Aint b = 0; b < t[k].len[p]; b++)
          base[tile * t[k].extent + t[k].at[p] + b] = stream[pos++];
    aggio_file fh;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
      unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                             MPI_INFO_NULL, &fh);
    CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
    if (rc != AGGIO_SUCCESS)
      continue;
    MPI_Offset at = (MPI_Offset)rank * nbytes;
    rc = aggio_file_write_at_all(fh, at, base, t[k].tiles, t[k].type, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS, "memory %s: write_at_all: %s", t[k].what, aggio_error_message());
    unsigned char got[256] = {0}, back_mem[1024];
    rc = aggio_file_read_at_all(fh, at, got, nbytes, MPI_BYTE, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS && memcmp(got, stream, (size_t)nbytes) == 0,
          "memory %s: the file holds other bytes than the type's data in typemap order", t[k].what);
    memset(back_mem, 0, sizeof back_mem);
    rc = aggio_file_read_at_all(fh, at, back_mem + 128, t[k].tiles, t[k].type, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_SUCCESS && memcmp(back_mem, mem, sizeof mem) == 0,
          "memory %s: reading into the type puts bytes elsewhere", t[k].what);
    aggio_file_close(&fh);
  }
  for (int k = 0; k < n; k++)
    MPI_Type_free(&t[k].type);
  free(img);
  free(file);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  char path[512];
  snprintf(path, sizeof path, "%s/test_views_np%d.dat", test_dir(), nprocs);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  test_empty_filetype(path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  test_overlap_rules(path);
  MPI_Barrier(MPI_COMM_WORLD);
  test_odd_filetypes(path);
  return test_finish_mpi(path);
}
