/*
 * test_mpiio_basic.c - the MPI-IO chapter's calls through plain MPI_File_*:
 * a strided view written with every kind of data call (explicit offsets,
 * individual pointer, split collectives), the pointers and sizes, info, group, amode, type extent,
 * then the file compared byte for byte with what the program meant,
 * read through the MPI library's own MPI-IO (PMPI); and many files open at
 * once, closed and opened again out of order (aggio's handle table grows
 * and reuses its entries: every handle must keep reaching its own file).
 * aggio-test-ranks: 1 2 4
 */
#include "mpiio_common.h"

#define BLOCK 8 /* ints per block of the strided view */
#define NBLK 4  /* blocks per rank in the explicit-offset part */

static int rank, nranks;

/* value of int i of the region written by the explicit/individual calls */
static int value_at(int i, int salt) { return i * 7 + salt; }

/* NFILES files of this rank open at once (MPI_COMM_SELF): each written
 * with its own length, every other one closed and opened again, then each
 * handle asked for its file's size, through C and Fortran handles. */
#define NFILES 80
static void many_files(const char *base) {
  static MPI_File f[NFILES];
  char path[NFILES][600];
  int bad = 0;
  for (int i = 0; i < NFILES; i++) {
    snprintf(path[i], sizeof path[i], "%s.many.%d.%d", base, rank, i);
    bad += MPI_File_open(MPI_COMM_SELF, path[i], MPI_MODE_CREATE | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &f[i]) != MPI_SUCCESS;
  }
  CHECK(bad == 0, "%d of %d opens failed", bad, NFILES);
  for (int round = 0; round < 2; round++)
    for (int i = round; i < NFILES; i += 2) {
      char b[NFILES + 1];
      memset(b, 'x', sizeof b);
      if (round == 0)
        bad += MPI_File_write_at(f[i], 0, b, i + 1, MPI_CHAR, MPI_STATUS_IGNORE) !=
               MPI_SUCCESS;
      bad += MPI_File_close(&f[i]) != MPI_SUCCESS;
      bad += MPI_File_open(MPI_COMM_SELF, path[i], MPI_MODE_RDWR, MPI_INFO_NULL, &f[i]) !=
             MPI_SUCCESS;
      if (round == 1)
        bad += MPI_File_write_at(f[i], 0, b, i + 1, MPI_CHAR, MPI_STATUS_IGNORE) !=
               MPI_SUCCESS;
    }
  CHECK(bad == 0, "%d calls failed while closing and opening again", bad);
  for (int i = 0; i < NFILES; i++) {
    MPI_Offset size = -1;
    MPI_File g = MPI_File_f2c(MPI_File_c2f(f[i]));
    CHECK(g == f[i], "file %d: the Fortran handle does not lead back", i);
    MPI_File_get_size(g, &size);
    CHECK(size == i + 1, "file %d: size %lld, not %d", i, (long long)size, i + 1);
    MPI_File_close(&f[i]);
    MPI_File_delete(path[i], MPI_INFO_NULL);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int aggio = mpiio_check_mode();
  char path[512];
  mpiio_fresh_path(path, sizeof path, "basic");

  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %d", rc);
  int amode = 0;
  MPI_File_get_amode(fh, &amode);
  CHECK(amode == (MPI_MODE_CREATE | MPI_MODE_RDWR), "amode %d", amode);
  MPI_Group g, wg;
  MPI_File_get_group(fh, &g);
  MPI_Comm_group(MPI_COMM_WORLD, &wg);
  int cmp = -1;
  MPI_Group_compare(g, wg, &cmp);
  CHECK(cmp == MPI_IDENT, "group compare %d", cmp);
  MPI_Group_free(&g);
  MPI_Group_free(&wg);
  MPI_Aint ext = 0;
  MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext);
  CHECK(ext == (MPI_Aint)sizeof(double), "type extent %ld", (long)ext);

  /* view: blocks of BLOCK ints, ranks round robin */
  MPI_Datatype vec, ft;
  MPI_Type_vector(NBLK * 2, BLOCK, BLOCK * nranks, MPI_INT, &vec);
  MPI_Type_create_resized(
      vec, 0, (MPI_Aint)BLOCK * nranks * NBLK * 2 * (MPI_Aint)sizeof(int), &ft);
  MPI_Type_commit(&ft);
  MPI_Offset disp = (MPI_Offset)rank * BLOCK * sizeof(int);
  rc = MPI_File_set_view(fh, disp, MPI_INT, ft, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "set_view %d", rc);
  MPI_Offset d2;
  MPI_Datatype et2, ft2;
  char rep[MPI_MAX_DATAREP_STRING];
  MPI_File_get_view(fh, &d2, &et2, &ft2, rep);
  CHECK(d2 == disp && strcmp(rep, "native") == 0, "get_view %lld %s", (long long)d2, rep);
  CHECK(et2 == MPI_INT, "etype back");
  int tsize = 0, want_tsize = 0;
  MPI_Type_size(ft2, &tsize);
  MPI_Type_size(ft, &want_tsize);
  CHECK(tsize == want_tsize, "filetype size %d want %d", tsize, want_tsize);
  MPI_Type_free(&ft2);

  int n = BLOCK * NBLK;
  int *buf = malloc(sizeof(int) * (size_t)n * 2),
      *back = malloc(sizeof(int) * (size_t)n * 2);
  for (int i = 0; i < n * 2; i++)
    buf[i] = value_at(i, rank * 100000);
  MPI_Status st;
  /* first half: explicit offsets, collective */
  rc = MPI_File_write_at_all(fh, 0, buf, n, MPI_INT, &st);
  int count = -1;
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(rc == MPI_SUCCESS && count == n, "write_at_all rc %d count %d", rc, count);
  /* second half: individual pointer (seek then write_all) */
  MPI_File_seek(fh, n, MPI_SEEK_SET);
  rc = MPI_File_write_all(fh, buf + n, n, MPI_INT, &st);
  CHECK(rc == MPI_SUCCESS, "write_all %d", rc);
  MPI_Offset pos = -1, byte = -1;
  MPI_File_get_position(fh, &pos);
  CHECK(pos == 2 * n, "position %lld", (long long)pos);
  MPI_File_get_byte_offset(fh, BLOCK, &byte);
  CHECK(byte == disp + (MPI_Offset)BLOCK * nranks * (MPI_Offset)sizeof(int),
        "byte offset %lld", (long long)byte);
  MPI_File_sync(fh);
  memset(back, 0, sizeof(int) * (size_t)n * 2);
  rc = MPI_File_read_at_all(fh, 0, back, 2 * n, MPI_INT, &st);
  CHECK(rc == MPI_SUCCESS && memcmp(back, buf, sizeof(int) * (size_t)n * 2) == 0,
        "read_at_all back rc %d", rc);
  MPI_File_seek(fh, 0, MPI_SEEK_SET);
  memset(back, 0, sizeof(int) * (size_t)n * 2);
  MPI_File_read(fh, back, n, MPI_INT, &st);
  MPI_File_read_all(fh, back + n, n, MPI_INT, &st);
  CHECK(memcmp(back, buf, sizeof(int) * (size_t)n * 2) == 0, "read/read_all back");

  /* independent explicit offsets and split collectives rewrite the same */
  for (int i = 0; i < n * 2; i++)
    buf[i] = value_at(i, rank * 100000 + 3);
  MPI_File_write_at(fh, 0, buf, n / 2, MPI_INT, &st);
  MPI_File_write_at_all_begin(fh, n / 2, buf + n / 2, n / 2, MPI_INT);
  MPI_File_write_at_all_end(fh, buf + n / 2, &st);
  MPI_File_seek(fh, n, MPI_SEEK_SET);
  MPI_File_write_all_begin(fh, buf + n, n, MPI_INT);
  rc = MPI_File_write_all_end(fh, buf + n, &st);
  CHECK(rc == MPI_SUCCESS, "write_all_end %d", rc);
  memset(back, 0, sizeof(int) * (size_t)n * 2);
  MPI_File_read_at_all_begin(fh, 0, back, n, MPI_INT);
  MPI_File_read_at_all_end(fh, back, &st);
  MPI_File_seek(fh, n, MPI_SEEK_SET);
  MPI_File_read_all_begin(fh, back + n, n, MPI_INT);
  MPI_File_read_all_end(fh, back + n, &st);
  MPI_Get_count(&st, MPI_INT, &count);
  CHECK(count == n && memcmp(back, buf, sizeof(int) * (size_t)n * 2) == 0,
        "split collective read back (count %d)", count);

  MPI_Offset size = -1;
  MPI_File_get_size(fh, &size);
  MPI_Offset want_size = (MPI_Offset)BLOCK * nranks * NBLK * 2 * (MPI_Offset)sizeof(int);
  /* Open MPI 4.1's ompio reports transient sizes here (2528 on one rank,
   * 512 on the other, for this very program): exact under aggio, and the
   * file's final length is checked through PMPI below either way */
  if (aggio)
    CHECK(size == want_size, "size %lld want %lld", (long long)size,
          (long long)want_size);

  /* info, preallocate, set_size */
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "cb_buffer_size", "1048576");
  rc = MPI_File_set_info(fh, info);
  CHECK(rc == MPI_SUCCESS, "set_info %d", rc);
  MPI_Info_free(&info);
  MPI_Info used;
  rc = MPI_File_get_info(fh, &used);
  int nkeys = 0;
  MPI_Info_get_nkeys(used, &nkeys);
  CHECK(rc == MPI_SUCCESS, "get_info %d", rc);
  if (aggio) {
    CHECK(nkeys > 0, "get_info keys %d", nkeys);
    char v[64] = "";
    int flag = 0;
    MPI_Info_get(used, "aggio_strategy", sizeof v - 1, v, &flag);
    CHECK(flag, "aggio's hints in get_info under aggio");
  }
  MPI_Info_free(&used);
  MPI_File_get_size(fh, &size);
  MPI_Offset full = want_size;
#ifdef OPEN_MPI
  int ompio = !aggio;
#else
  int ompio = 0;
#endif
  if (ompio) {
    /* seen with Open MPI 4.1.4: ranks leave ompio's preallocate unevenly
     * and the next collective (close) deadlocks */
    test_skip(
        "MPI_File_preallocate: Open MPI's ompio deadlocks in it here; checked under "
        "aggio only");
  } else {
    MPI_File_preallocate(fh, full + 100);
    MPI_File_get_size(fh, &size);
    CHECK(size == full + 100, "preallocate size %lld", (long long)size);
  }
  MPI_File_set_size(fh, full);
  MPI_File_get_size(fh, &size);
  CHECK(size == full, "set_size %lld", (long long)size);
  rc = MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS && fh == MPI_FILE_NULL, "close %d", rc);

  /* the bytes, through the MPI library's MPI-IO */
  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == full, "reference read len %lld", (long long)len);
  if (file && len == full) {
    int bad = 0;
    for (int r = 0; r < nranks; r++)
      for (int b = 0; b < NBLK * 2; b++)
        for (int k = 0; k < BLOCK; k++) {
          int v;
          memcpy(&v, file + (((MPI_Offset)b * nranks + r) * BLOCK + k) * sizeof(int),
                 sizeof v);
          bad += v != value_at(b * BLOCK + k, r * 100000 + 3);
        }
    CHECK(bad == 0, "%d wrong ints in the strided part", bad);
  }
  free(file);
  free(buf);
  free(back);
  MPI_Type_free(&ft);
  MPI_Type_free(&vec);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    MPI_File_delete(path, MPI_INFO_NULL);
  many_files(path);
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
