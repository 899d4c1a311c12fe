/*
 * hdf5_bench.c - IOR's HDF5 patterns and a BTIO-like 3-D pattern through
 * parallel HDF5, for comparing the MPI library's own MPI-IO with aggio
 * under an unmodified HDF5 (bench/clients/compare runs it both ways).
 *
 *   hdf5_bench -p ior-hard|segmented|btio -o FILE [options]
 *
 *   ior-hard   IOR -a HDF5 -c -t 47008 -b 47008 -s S, exactly as IOR's HDF5
 *              back end does it: each segment is a new 1-D dataset of
 *              ranks x b bytes of 64-bit integers ("Dataset-0000.<segment>"),
 *              and each rank writes its 47008-byte record at rank x b with
 *              one collective H5Dwrite (IO-500's ior-hard shape)
 *   segmented  the same code with -t T -b B (default 1 MiB in 4 MiB blocks):
 *              B/T transfers per rank and segment
 *   btio       a grid NX x NY x NZ of 5 doubles in 3-D blocks over the
 *              ranks (MPI_Dims_create), one dataset [steps][z][y][x][5],
 *              one collective H5Dwrite of the rank's block per step
 *
 * options: -s segments (ior-hard 64, segmented 4), -t transfer, -b block,
 *          -g NX,NY,NZ (btio, default 64,64,64), -n steps (btio, 4),
 *          -i repetitions (1), -I (independent transfers), -W (write only),
 *          -e (flush to storage before closing, timed: IOR's -e),
 *          -F (ior-hard, segmented: file per process, as IOR -F: each rank
 *          writes FILE.<rank, 8 digits> through HDF5 on MPI_COMM_SELF, the
 *          same datasets holding one rank's share; HPE's baseline),
 *          --warm (read what the page cache holds; default: the page cache,
 *          or the file's pages, is dropped before the read phase, untimed)
 *
 * Each repetition writes the file (timed from H5Fcreate to H5Fclose, the
 * slowest rank, as IOR times), then reads it back (H5Fopen to H5Fclose) and
 * checks every value.  One line per phase:
 *   RESULT api=HDF5 pattern=P ranks=N access=write rep=R bytes=B seconds=S MiBps=X errors=E
 *          cache=C   (reads: dropped, fadvise or warm; writes: -)
 */
#define _DEFAULT_SOURCE /* sync, fdatasync, posix_fadvise (bench_opts.h) */
#include <hdf5.h>
#include "bench_opts.h"
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
  struct opts o;
  MPI_Comm comm;     /* every rank: timing and the RESULT line */
  int rank, nranks;
  MPI_Comm fcomm;    /* the file's: comm, or MPI_COMM_SELF with -F */
  int frank, franks; /* this rank and the ranks in the file's layout */
  char fpath[4096];  /* with -F, this rank's file */
  hid_t dxpl;
};

/* The value at global 8-byte word `w` (ior) or element index (btio). */
static int64_t word(long long w) { return (int64_t)(w * 2654435761LL + 12345); }

/* ---- IOR's HDF5 back end: ior-hard and segmented ------------------------- */

/* One segment: a new dataset, the rank's B/T transfers into it. */
static int ior_segment(struct ctx *c, hid_t file, long long s, int writing, int64_t *buf,
                       long long *errors) {
  long long words_t = c->o.transfer / 8, words_seg = (long long)c->franks * c->o.block / 8;
  char name[64];
  snprintf(name, sizeof name, "Dataset-0000.%04lld", s);
  hsize_t dims[1] = {(hsize_t)words_seg}, mdims[1] = {(hsize_t)words_t};
  hid_t space = H5Screate_simple(1, dims, NULL), mspace = H5Screate_simple(1, mdims, NULL);
  hid_t ds = writing ? H5Dcreate2(file, name, H5T_NATIVE_LLONG, space, H5P_DEFAULT, H5P_DEFAULT,
                                  H5P_DEFAULT)
                     : H5Dopen2(file, name, H5P_DEFAULT);
  int rc = ds < 0 ? -1 : 0;
  for (long long k = 0; rc == 0 && k < c->o.block / c->o.transfer; k++) {
    long long first = ((long long)c->frank * c->o.block + k * c->o.transfer) / 8;
    hsize_t start[1] = {(hsize_t)first}, count[1] = {1}, blk[1] = {(hsize_t)words_t};
    if (H5Sselect_hyperslab(space, H5S_SELECT_SET, start, blk, count, blk) < 0) {
      rc = -1;
      break;
    }
    long long base = s * words_seg + first;
    if (writing) {
      for (long long i = 0; i < words_t; i++)
        buf[i] = word(base + i);
      rc = H5Dwrite(ds, H5T_NATIVE_LLONG, mspace, space, c->dxpl, buf) < 0 ? -1 : 0;
    } else {
      rc = H5Dread(ds, H5T_NATIVE_LLONG, mspace, space, c->dxpl, buf) < 0 ? -1 : 0;
      for (long long i = 0; rc == 0 && i < words_t; i++)
        *errors += buf[i] != word(base + i);
    }
  }
  if (ds >= 0)
    H5Dclose(ds);
  H5Sclose(mspace);
  H5Sclose(space);
  return rc;
}

static int ior_phase(struct ctx *c, hid_t file, int writing, long long *bytes, long long *errors) {
  int64_t *buf = malloc((size_t)c->o.transfer);
  int rc = buf ? 0 : -1;
  for (long long s = 0; rc == 0 && s < c->o.segments; s++)
    rc = ior_segment(c, file, s, writing, buf, errors);
  free(buf);
  *bytes = c->o.segments * c->o.block;
  return rc;
}

/* ---- BTIO-like 3-D blocks --------------------------------------------------- */

static void btio_block(const struct ctx *c, hsize_t start[3], hsize_t count[3]) {
  int dims[3] = {0, 0, 0};
  MPI_Dims_create(c->nranks, 3, dims);
  int coord[3] = {c->rank / (dims[1] * dims[2]), c->rank / dims[2] % dims[1], c->rank % dims[2]};
  long long extent[3] = {c->o.grid[2], c->o.grid[1], c->o.grid[0]}; /* z, y, x */
  for (int d = 0; d < 3; d++) {
    long long base = extent[d] / dims[d], extra = extent[d] % dims[d];
    start[d] = (hsize_t)(coord[d] * base + (coord[d] < extra ? coord[d] : extra));
    count[d] = (hsize_t)(base + (coord[d] < extra ? 1 : 0));
  }
}

static int btio_phase(struct ctx *c, hid_t file, int writing, long long *bytes, long long *errors) {
  hsize_t bs[3], bc[3];
  btio_block(c, bs, bc);
  hsize_t n = bc[0] * bc[1] * bc[2] * 5;
  hsize_t dims[5] = {(hsize_t)c->o.steps, (hsize_t)c->o.grid[2], (hsize_t)c->o.grid[1],
                     (hsize_t)c->o.grid[0], 5};
  hsize_t mdims[1] = {n ? n : 1};
  double *buf = malloc((n ? n : 1) * sizeof *buf);
  hid_t space = H5Screate_simple(5, dims, NULL), mspace = H5Screate_simple(1, mdims, NULL);
  hid_t ds = writing ? H5Dcreate2(file, "u", H5T_NATIVE_DOUBLE, space, H5P_DEFAULT, H5P_DEFAULT,
                                  H5P_DEFAULT)
                     : H5Dopen2(file, "u", H5P_DEFAULT);
  int rc = (ds < 0 || !buf) ? -1 : 0;
  for (int t = 0; rc == 0 && t < c->o.steps; t++) {
    hsize_t start[5] = {(hsize_t)t, bs[0], bs[1], bs[2], 0}, count[5] = {1, bc[0], bc[1], bc[2], 5};
    /* a rank with an empty block (grid smaller than the rank grid) still
     * takes part in the collective with an empty selection */
    if (n ? H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL) < 0
          : (H5Sselect_none(space) < 0 || H5Sselect_none(mspace) < 0)) {
      rc = -1;
      break;
    }
    size_t k = 0;
    if (!writing)
      rc = H5Dread(ds, H5T_NATIVE_DOUBLE, mspace, space, c->dxpl, buf) < 0 ? -1 : 0;
    for (hsize_t z = 0; rc == 0 && z < bc[0]; z++)
      for (hsize_t y = 0; y < bc[1]; y++)
        for (hsize_t x = 0; x < bc[2]; x++)
          for (int v = 0; v < 5; v++, k++) {
            long long e = ((((long long)t * dims[1] + bs[0] + z) * dims[2] + bs[1] + y) * dims[3] +
                           bs[2] + x) * 5 + v;
            if (writing)
              buf[k] = (double)word(e);
            else
              *errors += buf[k] != (double)word(e);
          }
    if (writing && rc == 0)
      rc = H5Dwrite(ds, H5T_NATIVE_DOUBLE, mspace, space, c->dxpl, buf) < 0 ? -1 : 0;
  }
  if (ds >= 0)
    H5Dclose(ds);
  H5Sclose(mspace);
  H5Sclose(space);
  free(buf);
  *bytes = (long long)(n * 8) * c->o.steps;
  return rc;
}

/* ---- driver -------------------------------------------------------------- */

static int phase(struct ctx *c, int writing, int rep) {
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  H5Pset_fapl_mpio(fapl, c->fcomm, MPI_INFO_NULL);
  long long bytes = 0, errors = 0;
  MPI_Barrier(c->comm);
  double t0 = MPI_Wtime();
  /* with -F, o.path is this rank's file (main) */
  hid_t file = writing ? H5Fcreate(c->o.path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl)
                       : H5Fopen(c->o.path, H5F_ACC_RDONLY, fapl);
  int rc = file < 0 ? -1 : 0;
  if (rc == 0) {
    rc = strcmp(c->o.pattern, "btio") ? ior_phase(c, file, writing, &bytes, &errors)
                                      : btio_phase(c, file, writing, &bytes, &errors);
    /* -e: H5Fflush with the MPI-IO driver ends in MPI_File_sync, so the
     * write is timed to durable storage, as IOR -e times it */
    if (writing && c->o.fsync && H5Fflush(file, H5F_SCOPE_GLOBAL) < 0)
      rc = -1;
    if (H5Fclose(file) < 0)
      rc = -1;
  }
  double mine = MPI_Wtime() - t0;
  H5Pclose(fapl);
  return bench_report(c->comm, "HDF5", &c->o, writing, rep, bytes, errors, rc, mine);
}

static int parse(int argc, char **argv, struct opts *o) {
  if (bench_parse_args(argc, argv, o))
    return -1;
  if (bench_ior_pattern(o)) /* IOR's HDF5 back end moves 64-bit integers */
    return (o->transfer % 8 || o->block % o->transfer || o->segments < 1) ? -1 : 0;
  if (!strcmp(o->pattern, "btio") && !o->fpp)
    return bench_btio_ok(o) ? 0 : -1;
  return -1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct ctx c = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.nranks);
  if (parse(argc, argv, &c.o)) {
    if (c.rank == 0)
      fprintf(stderr, "usage: hdf5_bench -p ior-hard|segmented|btio -o FILE [-s S] [-t T] [-b B] "
                      "[-g NX,NY,NZ] [-n steps] [-i reps] [-I] [-W] [-e] [-F] [--warm]\n");
    MPI_Finalize();
    return 2;
  }
  c.fcomm = c.comm;
  c.frank = c.rank;
  c.franks = c.nranks;
  if (c.o.fpp) { /* IOR's -F names: FILE.00000000, FILE.00000001, ... */
    snprintf(c.fpath, sizeof c.fpath, "%s.%08d", c.o.path, c.rank);
    c.o.path = c.fpath;
    c.fcomm = MPI_COMM_SELF;
    c.frank = 0;
    c.franks = 1;
  }
  c.dxpl = H5Pcreate(H5P_DATASET_XFER);
  H5Pset_dxpl_mpio(c.dxpl, c.o.independent ? H5FD_MPIO_INDEPENDENT : H5FD_MPIO_COLLECTIVE);
  int status = 0;
  for (int r = 0; r < c.o.reps && !status; r++) {
    status = phase(&c, 1, r);
    if (!status && !c.o.write_only) {
      bench_cold(c.comm, &c.o);
      status = phase(&c, 0, r);
    }
  }
  H5Pclose(c.dxpl);
  MPI_Finalize();
  return status;
}
