/*
 * pnetcdf_bench.c - IOR's PnetCDF (NCMPI) patterns and NAS BTIO's pattern
 * through PnetCDF, for comparing the MPI library's own MPI-IO with aggio
 * under an unmodified PnetCDF (bench/clients/compare runs it both ways).
 *
 *   pnetcdf_bench -p ior-hard|segmented|btio|btio-nb -o FILE [options]
 *
 *   ior-hard   IOR -a NCMPI -c -t 47008 -b 47008 -s S, as IOR's NCMPI back
 *              end does it: one byte variable [S x ranks][B/T][T] and one
 *              ncmpi_put_vara_all of T bytes per transfer at
 *              {segment x ranks + rank, transfer, 0} (IO-500's ior-hard shape)
 *   segmented  the same code with -t T -b B (default 1 MiB in 4 MiB blocks)
 *   btio       a grid NX x NY x NZ of 5 doubles in 3-D blocks over the ranks
 *              (MPI_Dims_create), variable [time][z][y][x][5] along the
 *              unlimited dimension, one put_vara_all of the block per step
 *   btio-nb    the same with one ncmpi_iput_vara per z-plane of the block and
 *              step and one ncmpi_wait_all for all steps (the way PnetCDF's
 *              BTIO benchmark posts its cells)
 *
 * options: -s segments (ior-hard 64, segmented 4), -t transfer, -b block,
 *          -g NX,NY,NZ (btio, default 64,64,64), -n steps (btio, 4),
 *          -i repetitions (1), -I (independent data mode), -W (write only),
 *          -e (flush to storage before closing, timed: IOR's -e),
 *          --warm (read what the page cache holds; default: the page cache,
 *          or the file's pages, is dropped before the read phase, untimed)
 *
 * The file is CDF-2 (NC_64BIT_OFFSET), as IOR creates it.
 * Each repetition writes the file (ncmpi_create to ncmpi_close, the slowest
 * rank) and reads it back (ncmpi_open to ncmpi_close) checking every value.
 *   RESULT api=NCMPI pattern=P ranks=N access=write rep=R bytes=B seconds=S MiBps=X errors=E
 *          cache=C   (reads: dropped, fadvise or warm; writes: -)
 */
#define _DEFAULT_SOURCE /* sync, fdatasync, posix_fadvise (bench_opts.h) */
#include "bench_opts.h"
#include <mpi.h>
#include <pnetcdf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct ctx {
  struct opts o;
  MPI_Comm comm;
  int rank, nranks;
};

static unsigned char byte_at(long long off) { return (unsigned char)((off * 131 + (off >> 12)) & 0xff); }
static double value_at(long long e) { return (double)(e * 2654435761LL % 1000003) + 0.5; }

/* ---- IOR's NCMPI back end ------------------------------------------------- */

static int ior_phase(struct ctx *c, int nc, int writing, long long *bytes, long long *errors) {
  long long per_block = c->o.block / c->o.transfer;
  int var, err = 0;
  if (writing) {
    int dim[3];
    err = ncmpi_def_dim(nc, "segments_times_np", NC_UNLIMITED, &dim[0]);
    if (!err) err = ncmpi_def_dim(nc, "number_of_transfers", per_block, &dim[1]);
    if (!err) err = ncmpi_def_dim(nc, "transfer_size", c->o.transfer, &dim[2]);
    if (!err) err = ncmpi_def_var(nc, "data_var", NC_BYTE, 3, dim, &var);
    if (!err) err = ncmpi_enddef(nc);
  } else {
    err = ncmpi_inq_varid(nc, "data_var", &var);
  }
  if (!err && c->o.independent)
    err = ncmpi_begin_indep_data(nc);
  /* NC_BYTE is signed char in memory (PnetCDF refuses MPI_BYTE, which IOR
   * passes: the bytes are the same) */
  unsigned char *buf = malloc((size_t)c->o.transfer);
  if (!buf)
    return -1;
  for (long long s = 0; !err && s < c->o.segments; s++)
    for (long long k = 0; !err && k < per_block; k++) {
      MPI_Offset start[3] = {s * c->nranks + c->rank, k, 0}, count[3] = {1, 1, c->o.transfer};
      long long off = (s * c->nranks + c->rank) * c->o.block + k * c->o.transfer;
      if (writing) {
        for (long long i = 0; i < c->o.transfer; i++)
          buf[i] = byte_at(off + i);
        err = c->o.independent ? ncmpi_put_vara(nc, var, start, count, buf, c->o.transfer, MPI_SIGNED_CHAR)
                               : ncmpi_put_vara_all(nc, var, start, count, buf, c->o.transfer, MPI_SIGNED_CHAR);
      } else {
        err = c->o.independent ? ncmpi_get_vara(nc, var, start, count, buf, c->o.transfer, MPI_SIGNED_CHAR)
                               : ncmpi_get_vara_all(nc, var, start, count, buf, c->o.transfer, MPI_SIGNED_CHAR);
        for (long long i = 0; !err && i < c->o.transfer; i++)
          *errors += buf[i] != byte_at(off + i);
      }
    }
  if (!err && c->o.independent)
    err = ncmpi_end_indep_data(nc);
  free(buf);
  *bytes = c->o.segments * c->o.block;
  if (err && c->rank == 0)
    fprintf(stderr, "pnetcdf_bench: %s\n", ncmpi_strerror(err));
  return err ? -1 : 0;
}

/* ---- BTIO ----------------------------------------------------------------- */

static void btio_block(const struct ctx *c, MPI_Offset start[3], MPI_Offset count[3]) {
  int dims[3] = {0, 0, 0};
  MPI_Dims_create(c->nranks, 3, dims);
  int coord[3] = {c->rank / (dims[1] * dims[2]), c->rank / dims[2] % dims[1], c->rank % dims[2]};
  long long extent[3] = {c->o.grid[2], c->o.grid[1], c->o.grid[0]}; /* z, y, x */
  for (int d = 0; d < 3; d++) {
    long long base = extent[d] / dims[d], extra = extent[d] % dims[d];
    start[d] = coord[d] * base + (coord[d] < extra ? coord[d] : extra);
    count[d] = base + (coord[d] < extra ? 1 : 0);
  }
}

/* Fills (writing) or checks (reading) step t of the block in buf. */
static void btio_values(const struct ctx *c, const MPI_Offset bs[3], const MPI_Offset bc[3], int t,
                        double *buf, int writing, long long *errors) {
  size_t k = 0;
  for (MPI_Offset z = 0; z < bc[0]; z++)
    for (MPI_Offset y = 0; y < bc[1]; y++)
      for (MPI_Offset x = 0; x < bc[2]; x++)
        for (int v = 0; v < 5; v++, k++) {
          long long e = ((((long long)t * c->o.grid[2] + bs[0] + z) * c->o.grid[1] + bs[1] + y) *
                             c->o.grid[0] + bs[2] + x) * 5 + v;
          if (writing)
            buf[k] = value_at(e);
          else
            *errors += buf[k] != value_at(e);
        }
}

static int btio_phase(struct ctx *c, int nc, int writing, long long *bytes, long long *errors) {
  MPI_Offset bs[3], bc[3];
  btio_block(c, bs, bc);
  MPI_Offset n = bc[0] * bc[1] * bc[2] * 5, plane = bc[1] * bc[2] * 5;
  int nb = !strcmp(c->o.pattern, "btio-nb"), var, err = 0;
  if (writing) {
    int dim[5];
    err = ncmpi_def_dim(nc, "time", NC_UNLIMITED, &dim[0]);
    if (!err) err = ncmpi_def_dim(nc, "z", c->o.grid[2], &dim[1]);
    if (!err) err = ncmpi_def_dim(nc, "y", c->o.grid[1], &dim[2]);
    if (!err) err = ncmpi_def_dim(nc, "x", c->o.grid[0], &dim[3]);
    if (!err) err = ncmpi_def_dim(nc, "five", 5, &dim[4]);
    if (!err) err = ncmpi_def_var(nc, "u", NC_DOUBLE, 5, dim, &var);
    if (!err) err = ncmpi_enddef(nc);
  } else {
    err = ncmpi_inq_varid(nc, "u", &var);
  }
  if (!err && c->o.independent)
    err = ncmpi_begin_indep_data(nc);
  /* non-blocking: every step's buffer stays until wait_all */
  size_t steps_held = nb ? (size_t)c->o.steps : 1;
  double *buf = malloc(((size_t)n * steps_held + 1) * sizeof *buf);
  int *req = malloc(((size_t)c->o.steps * (size_t)bc[0] + 1) * sizeof *req);
  int *st = malloc(((size_t)c->o.steps * (size_t)bc[0] + 1) * sizeof *st), nreq = 0;
  if (!buf || !req || !st)
    err = NC_ENOMEM;
  for (int t = 0; !err && t < c->o.steps; t++) {
    double *b = buf + (nb ? (size_t)t * (size_t)n : 0);
    if (writing)
      btio_values(c, bs, bc, t, b, 1, errors);
    MPI_Offset start[5] = {t, bs[0], bs[1], bs[2], 0}, count[5] = {1, bc[0], bc[1], bc[2], 5};
    if (!nb) {
      if (writing)
        err = c->o.independent ? ncmpi_put_vara(nc, var, start, count, b, n, MPI_DOUBLE)
                               : ncmpi_put_vara_all(nc, var, start, count, b, n, MPI_DOUBLE);
      else
        err = c->o.independent ? ncmpi_get_vara(nc, var, start, count, b, n, MPI_DOUBLE)
                               : ncmpi_get_vara_all(nc, var, start, count, b, n, MPI_DOUBLE);
      if (!err && !writing)
        btio_values(c, bs, bc, t, b, 0, errors);
      continue;
    }
    for (MPI_Offset z = 0; !err && z < bc[0]; z++) {
      start[1] = bs[0] + z;
      count[1] = 1;
      err = writing ? ncmpi_iput_vara(nc, var, start, count, b + z * plane, plane, MPI_DOUBLE, &req[nreq])
                    : ncmpi_iget_vara(nc, var, start, count, b + z * plane, plane, MPI_DOUBLE, &req[nreq]);
      nreq += !err;
    }
  }
  if (nb && buf && req && st) {
    int werr = c->o.independent ? ncmpi_wait(nc, nreq, req, st) : ncmpi_wait_all(nc, nreq, req, st);
    for (int i = 0; !werr && i < nreq; i++)
      werr = st[i];
    if (!err)
      err = werr;
    for (int t = 0; !err && !writing && t < c->o.steps; t++)
      btio_values(c, bs, bc, t, buf + (size_t)t * (size_t)n, 0, errors);
  }
  if (!err && c->o.independent)
    err = ncmpi_end_indep_data(nc);
  free(st);
  free(req);
  free(buf);
  *bytes = n * 8 * c->o.steps;
  if (err && c->rank == 0)
    fprintf(stderr, "pnetcdf_bench: %s\n", ncmpi_strerror(err));
  return err ? -1 : 0;
}

/* ---- driver --------------------------------------------------------------- */

static int phase(struct ctx *c, int writing, int rep) {
  long long bytes = 0, errors = 0;
  int nc, err;
  MPI_Barrier(c->comm);
  double t0 = MPI_Wtime();
  err = writing ? ncmpi_create(c->comm, c->o.path, NC_CLOBBER | NC_64BIT_OFFSET, MPI_INFO_NULL, &nc)
                : ncmpi_open(c->comm, c->o.path, NC_NOWRITE, MPI_INFO_NULL, &nc);
  int rc = err ? -1 : 0;
  if (rc == 0) {
    rc = strncmp(c->o.pattern, "btio", 4) ? ior_phase(c, nc, writing, &bytes, &errors)
                                          : btio_phase(c, nc, writing, &bytes, &errors);
    /* -e: ncmpi_sync ends in MPI_File_sync (durable, as IOR -e times it) */
    if (writing && c->o.fsync && ncmpi_sync(nc))
      rc = -1;
    if (ncmpi_close(nc))
      rc = -1;
  }
  double mine = MPI_Wtime() - t0;
  return bench_report(c->comm, "NCMPI", &c->o, writing, rep, bytes, errors, rc, mine);
}

static int parse(int argc, char **argv, struct opts *o) {
  if (bench_parse_args(argc, argv, o) || o->fpp) /* -F: hdf5_bench only */
    return -1;
  if (bench_ior_pattern(o))
    return (o->transfer < 1 || o->block % o->transfer || o->segments < 1) ? -1 : 0;
  if (!strcmp(o->pattern, "btio") || !strcmp(o->pattern, "btio-nb"))
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
      fprintf(stderr, "usage: pnetcdf_bench -p ior-hard|segmented|btio|btio-nb -o FILE [-s S] "
                      "[-t T] [-b B] [-g NX,NY,NZ] [-n steps] [-i reps] [-I] [-W] [-e] [--warm]\n");
    MPI_Finalize();
    return 2;
  }
  int status = 0;
  for (int r = 0; r < c.o.reps && !status; r++) {
    status = phase(&c, 1, r);
    if (!status && !c.o.write_only) {
      bench_cold(c.comm, &c.o);
      status = phase(&c, 0, r);
    }
  }
  MPI_Finalize();
  return status;
}
