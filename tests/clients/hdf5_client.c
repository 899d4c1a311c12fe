/*
 * hdf5_client.c - an ordinary parallel HDF5 program, used to check that
 * aggio can stand in for the MPI library's MPI-IO under an unmodified
 * application (tests/clients/clientrun.py runs it with and without aggio and
 * compares the files with h5diff).
 *
 *   hdf5_client FILE [--coll-meta on|off] [--read-only]
 *
 * It writes five datasets, closes the file, reopens it read-only and reads
 * every dataset back with a decomposition different from the one that wrote
 * it, checking every element:
 *
 *   contig_coll   contiguous, collective transfer; rank r writes the columns
 *                 c with c % nranks == r (a strided hyperslab: HDF5 hands
 *                 MPI-IO a vector file type)
 *   contig_indep  contiguous, independent transfer; rank r writes a block of
 *                 rows
 *   chunk_coll    chunked (5 x 8), collective; rank r writes a block of rows
 *                 from a padded memory buffer (a non-contiguous memory type)
 *   chunk_indep   chunked, independent; strided columns as contig_coll
 *   compound_coll 1-D compound {int32, float64, char[3]} with the file type
 *                 packed and the memory type padded, collective; rank r
 *                 writes elements r, r + n, ...
 *
 * plus a group, attributes and a scalar dataset (metadata). `--coll-meta on`
 * sets H5Pset_all_coll_metadata_ops and H5Pset_coll_metadata_write, so that
 * metadata is read by one rank and broadcast and written collectively (HDF5
 * then builds struct/resized MPI file types for the metadata cache's
 * entries); `off` leaves HDF5's defaults (every rank reads metadata, rank 0
 * writes it independently).  `--read-only` skips the write phase: it checks
 * a file written by another run (a file aggio wrote, read without it, and
 * the other way round).  Object modification times are off (they are the
 * only thing that would differ between two runs).
 *
 * Rank 0 prints "hdf5_client: ok ..." with the data bytes moved; the exit
 * status is 0 only when every rank read back what was written.
 */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROWS_PER_RANK 6
#define COLS 37 /* odd, so that rows and chunks never line up */
#define CHUNK_ROWS 5
#define CHUNK_COLS 8
#define PAD 3 /* extra columns in the padded memory buffer */
#define COMPOUND_PER_RANK 11

struct record {
  int a;
  double b;
  char c[3];
};

struct run {
  MPI_Comm comm;
  int rank, nranks;
  int coll_meta;
  hsize_t rows;
  long long bytes_written, bytes_read; /* this rank's data elements' bytes */
  int bad;                             /* elements read back wrong */
};

/* The value every element of dataset `ds` holds at (i, j): a function of
 * the position, so that a misplaced byte shows. */
static int value(int ds, hsize_t i, hsize_t j) {
  return (int)(ds * 1000003 + (long long)i * 1009 + (long long)j);
}

static struct record record_value(hsize_t k) {
  struct record r;
  memset(&r, 0, sizeof r);
  r.a = (int)(k * 7 + 1);
  r.b = (double)k * 0.5 - 3.25;
  r.c[0] = (char)('a' + k % 26);
  r.c[1] = (char)('A' + k % 26);
  r.c[2] = (char)('0' + k % 10);
  return r;
}

static hid_t file_access(const struct run *rn) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0)
    return fapl;
  if (H5Pset_fapl_mpio(fapl, rn->comm, MPI_INFO_NULL) < 0 ||
      H5Pset_all_coll_metadata_ops(fapl, rn->coll_meta) < 0 ||
      H5Pset_coll_metadata_write(fapl, rn->coll_meta) < 0) {
    H5Pclose(fapl);
    return -1;
  }
  return fapl;
}

static hid_t transfer(int collective) {
  hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
  if (dxpl >= 0 &&
      H5Pset_dxpl_mpio(dxpl, collective ? H5FD_MPIO_COLLECTIVE : H5FD_MPIO_INDEPENDENT) < 0) {
    H5Pclose(dxpl);
    return -1;
  }
  return dxpl;
}

/* Columns c of [0, COLS) with c % n == r: how many. */
static hsize_t strided_cols(int r, int n) {
  return r < COLS ? (hsize_t)((COLS - r + n - 1) / n) : 0;
}

/* Selects in `space` (rows x COLS) the strided columns of rank r. */
static int select_strided_cols(hid_t space, hsize_t rows, int r, int n) {
  hsize_t count = strided_cols(r, n);
  if (count == 0)
    return H5Sselect_none(space) < 0 ? -1 : 0;
  hsize_t start[2] = {0, (hsize_t)r}, stride[2] = {1, (hsize_t)n};
  hsize_t cnt[2] = {rows, count}, block[2] = {1, 1};
  return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, cnt, block) < 0 ? -1 : 0;
}

static int select_rows(hid_t space, hsize_t first, hsize_t nrows) {
  if (nrows == 0)
    return H5Sselect_none(space) < 0 ? -1 : 0;
  hsize_t start[2] = {first, 0}, cnt[2] = {nrows, COLS};
  return H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, cnt, NULL) < 0 ? -1 : 0;
}

/* ---- writing ------------------------------------------------------------- */

static hid_t create_2d(hid_t file, const char *name, hsize_t rows, int chunked) {
  hsize_t dims[2] = {rows, COLS}, chunk[2] = {CHUNK_ROWS, CHUNK_COLS};
  hid_t space = H5Screate_simple(2, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = -1;
  if (space >= 0 && dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0 &&
      (!chunked || H5Pset_chunk(dcpl, 2, chunk) >= 0))
    ds = H5Dcreate2(file, name, H5T_STD_I32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (dcpl >= 0)
    H5Pclose(dcpl);
  if (space >= 0)
    H5Sclose(space);
  return ds;
}

/* Writes the strided columns of this rank into dataset `ds` (number `id`). */
static int write_strided(struct run *rn, hid_t ds, int id, int collective) {
  hsize_t ncols = strided_cols(rn->rank, rn->nranks), n = rn->rows * ncols;
  int *buf = malloc((n ? n : 1) * sizeof *buf);
  hid_t fspace = H5Dget_space(ds), dxpl = transfer(collective);
  hsize_t mdims[1] = {n ? n : 1};
  hid_t mspace = H5Screate_simple(1, mdims, NULL);
  int rc = -1;
  if (buf && fspace >= 0 && dxpl >= 0 && mspace >= 0 &&
      select_strided_cols(fspace, rn->rows, rn->rank, rn->nranks) == 0 &&
      (n || H5Sselect_none(mspace) >= 0)) {
    for (hsize_t i = 0; i < rn->rows; i++)
      for (hsize_t k = 0; k < ncols; k++)
        buf[i * ncols + k] = value(id, i, (hsize_t)rn->rank + k * (hsize_t)rn->nranks);
    rc = H5Dwrite(ds, H5T_NATIVE_INT, mspace, fspace, dxpl, buf) < 0 ? -1 : 0;
    rn->bytes_written += (long long)(n * sizeof(int));
  }
  if (mspace >= 0)
    H5Sclose(mspace);
  if (dxpl >= 0)
    H5Pclose(dxpl);
  if (fspace >= 0)
    H5Sclose(fspace);
  free(buf);
  return rc;
}

/* Writes this rank's block of ROWS_PER_RANK rows; `padded` takes them from
 * a buffer PAD columns wider than the data (memory hyperslab). */
static int write_rows(struct run *rn, hid_t ds, int id, int collective, int padded) {
  hsize_t first = (hsize_t)rn->rank * ROWS_PER_RANK, width = COLS + (padded ? PAD : 0);
  hsize_t mdims[2] = {ROWS_PER_RANK, width};
  int *buf = calloc(ROWS_PER_RANK * width, sizeof *buf);
  hid_t fspace = H5Dget_space(ds), dxpl = transfer(collective);
  hid_t mspace = H5Screate_simple(2, mdims, NULL);
  int rc = -1;
  if (buf && fspace >= 0 && dxpl >= 0 && mspace >= 0 &&
      select_rows(fspace, first, ROWS_PER_RANK) == 0 && select_rows(mspace, 0, ROWS_PER_RANK) == 0) {
    for (hsize_t i = 0; i < ROWS_PER_RANK; i++) {
      for (hsize_t j = 0; j < COLS; j++)
        buf[i * width + j] = value(id, first + i, j);
      for (hsize_t j = COLS; j < width; j++)
        buf[i * width + j] = -1; /* must never reach the file */
    }
    rc = H5Dwrite(ds, H5T_NATIVE_INT, mspace, fspace, dxpl, buf) < 0 ? -1 : 0;
    rn->bytes_written += (long long)(ROWS_PER_RANK * COLS * sizeof(int));
  }
  if (mspace >= 0)
    H5Sclose(mspace);
  if (dxpl >= 0)
    H5Pclose(dxpl);
  if (fspace >= 0)
    H5Sclose(fspace);
  free(buf);
  return rc;
}

static hid_t memory_record_type(void) {
  hsize_t three = 3;
  hid_t chars = H5Tarray_create2(H5T_NATIVE_CHAR, 1, &three);
  hid_t t = H5Tcreate(H5T_COMPOUND, sizeof(struct record));
  H5Tinsert(t, "a", HOFFSET(struct record, a), H5T_NATIVE_INT);
  H5Tinsert(t, "b", HOFFSET(struct record, b), H5T_NATIVE_DOUBLE);
  H5Tinsert(t, "c", HOFFSET(struct record, c), chars);
  H5Tclose(chars);
  return t;
}

/* The file's record: packed, little-endian, 15 bytes. */
static hid_t file_record_type(void) {
  hsize_t three = 3;
  hid_t chars = H5Tarray_create2(H5T_STD_I8LE, 1, &three);
  hid_t t = H5Tcreate(H5T_COMPOUND, 4 + 8 + 3);
  H5Tinsert(t, "a", 0, H5T_STD_I32LE);
  H5Tinsert(t, "b", 4, H5T_IEEE_F64LE);
  H5Tinsert(t, "c", 12, chars);
  H5Tclose(chars);
  return t;
}

static int write_compound(struct run *rn, hid_t file) {
  hsize_t total = (hsize_t)rn->nranks * COMPOUND_PER_RANK, dims[1] = {total};
  hsize_t start[1] = {(hsize_t)rn->rank}, stride[1] = {(hsize_t)rn->nranks};
  hsize_t cnt[1] = {COMPOUND_PER_RANK}, mdims[1] = {COMPOUND_PER_RANK};
  struct record buf[COMPOUND_PER_RANK];
  hid_t ftype = file_record_type(), mtype = memory_record_type();
  hid_t space = H5Screate_simple(1, dims, NULL), mspace = H5Screate_simple(1, mdims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), dxpl = transfer(1), ds = -1;
  int rc = -1;
  if (dcpl >= 0 && H5Pset_obj_track_times(dcpl, 0) >= 0)
    ds = H5Dcreate2(file, "compound_coll", ftype, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds >= 0 && dxpl >= 0 &&
      H5Sselect_hyperslab(space, H5S_SELECT_SET, start, stride, cnt, NULL) >= 0) {
    for (hsize_t k = 0; k < COMPOUND_PER_RANK; k++)
      buf[k] = record_value((hsize_t)rn->rank + k * (hsize_t)rn->nranks);
    rc = H5Dwrite(ds, mtype, mspace, space, dxpl, buf) < 0 ? -1 : 0;
    rn->bytes_written += COMPOUND_PER_RANK * 15;
  }
  if (ds >= 0)
    H5Dclose(ds);
  H5Pclose(dxpl);
  H5Pclose(dcpl);
  H5Sclose(mspace);
  H5Sclose(space);
  H5Tclose(mtype);
  H5Tclose(ftype);
  return rc;
}

/* A group with attributes and a scalar dataset: metadata only. */
static int write_metadata(struct run *rn, hid_t file) {
  hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
  hid_t grp = -1, scalar = H5Screate(H5S_SCALAR), attr = -1, ds = -1, dcpl = -1;
  int nranks = rn->nranks, rc = -1;
  double step = 0.125;
  if (gcpl >= 0 && H5Pset_obj_track_times(gcpl, 0) >= 0)
    grp = H5Gcreate2(file, "meta", H5P_DEFAULT, gcpl, H5P_DEFAULT);
  if (grp >= 0)
    attr = H5Acreate2(grp, "nranks", H5T_STD_I32LE, scalar, H5P_DEFAULT, H5P_DEFAULT);
  dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (attr >= 0 && H5Awrite(attr, H5T_NATIVE_INT, &nranks) >= 0 && dcpl >= 0 &&
      H5Pset_obj_track_times(dcpl, 0) >= 0)
    ds = H5Dcreate2(grp, "step", H5T_IEEE_F64LE, scalar, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  if (ds >= 0) {
    hid_t dxpl = transfer(1);
    /* every rank writes the same scalar: HDF5 lets rank 0 do it */
    rc = H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, dxpl, &step) < 0 ? -1 : 0;
    H5Pclose(dxpl);
    H5Dclose(ds);
  }
  if (dcpl >= 0)
    H5Pclose(dcpl);
  if (attr >= 0)
    H5Aclose(attr);
  if (grp >= 0)
    H5Gclose(grp);
  if (gcpl >= 0)
    H5Pclose(gcpl);
  H5Sclose(scalar);
  return rc;
}

static int write_file(struct run *rn, const char *path) {
  hid_t fapl = file_access(rn), fcpl = H5Pcreate(H5P_FILE_CREATE), file = -1;
  int rc = -1;
  if (fapl >= 0 && fcpl >= 0)
    file = H5Fcreate(path, H5F_ACC_TRUNC, fcpl, fapl);
  if (file >= 0) {
    hid_t cc = create_2d(file, "contig_coll", rn->rows, 0);
    hid_t ci = create_2d(file, "contig_indep", rn->rows, 0);
    hid_t kc = create_2d(file, "chunk_coll", rn->rows, 1);
    hid_t ki = create_2d(file, "chunk_indep", rn->rows, 1);
    rc = (cc < 0 || ci < 0 || kc < 0 || ki < 0) ? -1 : 0;
    if (rc == 0)
      rc = write_strided(rn, cc, 1, 1) | write_rows(rn, ci, 2, 0, 0) |
           write_rows(rn, kc, 3, 1, 1) | write_strided(rn, ki, 4, 0) |
           write_compound(rn, file) | write_metadata(rn, file);
    hid_t all[4] = {cc, ci, kc, ki};
    for (int i = 0; i < 4; i++)
      if (all[i] >= 0)
        H5Dclose(all[i]);
    if (H5Fclose(file) < 0)
      rc = -1;
  }
  if (fcpl >= 0)
    H5Pclose(fcpl);
  if (fapl >= 0)
    H5Pclose(fapl);
  return rc;
}

/* ---- reading back -------------------------------------------------------- */

/* Reads dataset `name` (number `id`) with the other decomposition than the
 * one that wrote it (`by_rows`: a block of rows, else strided columns) and
 * counts the wrong elements. */
static int read_2d(struct run *rn, hid_t file, const char *name, int id, int collective,
                   int by_rows) {
  hid_t ds = H5Dopen2(file, name, H5P_DEFAULT);
  hid_t fspace = ds >= 0 ? H5Dget_space(ds) : -1, dxpl = transfer(collective);
  hsize_t ncols = by_rows ? COLS : strided_cols(rn->rank, rn->nranks);
  hsize_t nrows = by_rows ? ROWS_PER_RANK : rn->rows;
  hsize_t first = by_rows ? (hsize_t)rn->rank * ROWS_PER_RANK : 0, n = nrows * ncols;
  hsize_t mdims[1] = {n ? n : 1};
  hid_t mspace = H5Screate_simple(1, mdims, NULL);
  int *buf = malloc((n ? n : 1) * sizeof *buf), rc = -1;
  int sel = -1;
  if (fspace >= 0)
    sel = by_rows ? select_rows(fspace, first, nrows)
                  : select_strided_cols(fspace, rn->rows, rn->rank, rn->nranks);
  if (buf && dxpl >= 0 && mspace >= 0 && sel == 0 && (n || H5Sselect_none(mspace) >= 0) &&
      H5Dread(ds, H5T_NATIVE_INT, mspace, fspace, dxpl, buf) >= 0) {
    rc = 0;
    for (hsize_t i = 0; i < nrows; i++)
      for (hsize_t k = 0; k < ncols; k++) {
        hsize_t j = by_rows ? k : (hsize_t)rn->rank + k * (hsize_t)rn->nranks;
        int want = value(id, first + i, j), got = buf[i * ncols + k];
        if (got != want && rn->bad++ < 5)
          fprintf(stderr, "hdf5_client: rank %d: %s[%llu][%llu] = %d, want %d\n", rn->rank,
                  name, (unsigned long long)(first + i), (unsigned long long)j, got, want);
      }
    rn->bytes_read += (long long)(n * sizeof(int));
  }
  free(buf);
  if (mspace >= 0)
    H5Sclose(mspace);
  if (dxpl >= 0)
    H5Pclose(dxpl);
  if (fspace >= 0)
    H5Sclose(fspace);
  if (ds >= 0)
    H5Dclose(ds);
  return rc;
}

/* Every rank reads the whole compound dataset (collectively). */
static int read_compound(struct run *rn, hid_t file) {
  hsize_t total = (hsize_t)rn->nranks * COMPOUND_PER_RANK;
  struct record *buf = calloc(total, sizeof *buf);
  hid_t ds = H5Dopen2(file, "compound_coll", H5P_DEFAULT), mtype = memory_record_type();
  hid_t dxpl = transfer(1);
  int rc = -1;
  if (buf && ds >= 0 && dxpl >= 0 && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, dxpl, buf) >= 0) {
    rc = 0;
    for (hsize_t k = 0; k < total; k++) {
      struct record want = record_value(k);
      if ((buf[k].a != want.a || buf[k].b != want.b || memcmp(buf[k].c, want.c, 3)) &&
          rn->bad++ < 5)
        fprintf(stderr, "hdf5_client: rank %d: compound_coll[%llu] differs\n", rn->rank,
                (unsigned long long)k);
    }
    rn->bytes_read += (long long)(total * 15);
  }
  H5Pclose(dxpl);
  H5Tclose(mtype);
  if (ds >= 0)
    H5Dclose(ds);
  free(buf);
  return rc;
}

static int read_metadata(struct run *rn, hid_t file) {
  int nranks = -1;
  double step = 0;
  hid_t attr = H5Aopen_by_name(file, "meta", "nranks", H5P_DEFAULT, H5P_DEFAULT);
  hid_t ds = H5Dopen2(file, "meta/step", H5P_DEFAULT);
  int rc = (attr >= 0 && ds >= 0 && H5Aread(attr, H5T_NATIVE_INT, &nranks) >= 0 &&
            H5Dread(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, &step) >= 0)
               ? 0 : -1;
  if (rc == 0 && (nranks != rn->nranks || step != 0.125)) {
    fprintf(stderr, "hdf5_client: rank %d: metadata nranks=%d step=%g\n", rn->rank, nranks, step);
    rn->bad++;
  }
  if (ds >= 0)
    H5Dclose(ds);
  if (attr >= 0)
    H5Aclose(attr);
  return rc;
}

static int read_file(struct run *rn, const char *path) {
  hid_t fapl = file_access(rn), file = -1;
  int rc = -1;
  if (fapl >= 0)
    file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
  if (file >= 0) {
    /* A file written at another rank count would make the ranks' selections
     * differ in validity, and a rank that fails a collective read alone
     * would leave the others waiting: agree on the layout first. */
    int bad_before = rn->bad, ok = read_metadata(rn, file) == 0 && rn->bad == bad_before, all_ok;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, rn->comm);
    rc = -1;
    if (all_ok)
      rc = read_2d(rn, file, "contig_coll", 1, 1, 1) | read_2d(rn, file, "contig_indep", 2, 0, 0) |
           read_2d(rn, file, "chunk_coll", 3, 1, 0) | read_2d(rn, file, "chunk_indep", 4, 0, 1) |
           read_compound(rn, file);
    if (H5Fclose(file) < 0)
      rc = -1;
  }
  if (fapl >= 0)
    H5Pclose(fapl);
  return rc;
}

static int usage(void) {
  fprintf(stderr, "usage: hdf5_client FILE [--coll-meta on|off] [--read-only]\n");
  return 2;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct run rn = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(rn.comm, &rn.rank);
  MPI_Comm_size(rn.comm, &rn.nranks);
  rn.rows = (hsize_t)rn.nranks * ROWS_PER_RANK;
  const char *path = NULL;
  int read_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--coll-meta") && i + 1 < argc)
      rn.coll_meta = !strcmp(argv[++i], "on");
    else if (!strcmp(argv[i], "--read-only"))
      read_only = 1;
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else {
      MPI_Finalize();
      return usage();
    }
  }
  if (!path) {
    MPI_Finalize();
    return usage();
  }
  int rc = read_only ? 0 : write_file(&rn, path);
  int failed = 0;
  MPI_Allreduce(&rc, &failed, 1, MPI_INT, MPI_MIN, rn.comm);
  if (failed == 0)
    rc = read_file(&rn, path);
  long long mine[4] = {rc ? 1 : 0, rn.bad, rn.bytes_written, rn.bytes_read}, all[4];
  MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_SUM, rn.comm);
  int status = (failed || all[0] || all[1]) ? 1 : 0;
  if (rn.rank == 0)
    printf("hdf5_client: %s, coll-meta %s, %d ranks, data bytes written %lld, data bytes read %lld%s\n",
           status ? "FAILED" : "ok", rn.coll_meta ? "on" : "off", rn.nranks, all[2], all[3],
           failed ? " (write phase failed)" : all[1] ? " (wrong data read back)" : "");
  MPI_Finalize();
  return status;
}
