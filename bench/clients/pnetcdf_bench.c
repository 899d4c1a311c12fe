/*
 * pnetcdf_bench.c - IOR's PnetCDF (NCMPI) patterns and NAS BTIO's pattern
 * through PnetCDF, for comparing the MPI library's own MPI-IO with aggio
 * under an unmodified PnetCDF (bench/clients/compare runs it both ways).
 *
 *   pnetcdf_bench -p ior-hard|segmented|btio|btio-nb|records|records-nb -o FILE [options]
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
 *   records    RECORD_VARS double variables [time][ranks x B/8] on the
 *              unlimited dimension, as climate and ocean models write their
 *              fields: netCDF stores step t of every record variable in turn
 *              (record t = v0[t], v1[t], ...), so each variable's data
 *              interleaves with the others'; per step one put_vara_all of
 *              the rank's B bytes per variable (-b B, default 256 KiB; -n
 *              steps, default 4)
 *   records-nb the same with one ncmpi_iput_vara per variable and one
 *              ncmpi_wait_all per step (PnetCDF merges them into one
 *              MPI-IO call whose view spans the record)
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

/* The end of a phase: independent data mode left, a failure said once. */
static int phase_done(const struct ctx *c, int nc, int err) {
  if (!err && c->o.independent)
    err = ncmpi_end_indep_data(nc);
  if (err && c->rank == 0)
    fprintf(stderr, "pnetcdf_bench: %s\n", ncmpi_strerror(err));
  return err ? -1 : 0;
}

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
  free(buf);
  *bytes = c->o.segments * c->o.block;
  return phase_done(c, nc, err);
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
  free(st);
  free(req);
  free(buf);
  *bytes = n * 8 * c->o.steps;
  return phase_done(c, nc, err);
}

/* ---- record variables -------------------------------------------------------- */

#define RECORD_VARS 4

static double record_value(int v, long long t, long long i) {
  return value_at((t * RECORD_VARS + v) * 1000003LL + i);
}

static int records_define(struct ctx *c, int nc, int writing, int var[RECORD_VARS]) {
  int dim[2], err = 0;
  char name[16];
  if (writing) {
    err = ncmpi_def_dim(nc, "time", NC_UNLIMITED, &dim[0]);
    if (!err)
      err = ncmpi_def_dim(nc, "points", (MPI_Offset)c->nranks * (c->o.block / 8), &dim[1]);
  }
  for (int v = 0; !err && v < RECORD_VARS; v++) {
    snprintf(name, sizeof name, "field%d", v);
    err = writing ? ncmpi_def_var(nc, name, NC_DOUBLE, 2, dim, &var[v]) : ncmpi_inq_varid(nc, name, &var[v]);
  }
  if (!err && writing)
    err = ncmpi_enddef(nc);
  return err;
}

/* One step: every variable's slab of the rank, blocking or posted. */
static int records_step(struct ctx *c, int nc, const int var[RECORD_VARS], long long t,
                        double *buf, int writing, long long *errors) {
  MPI_Offset n = c->o.block / 8, start[2] = {t, c->rank * n}, count[2] = {1, n};
  int nb = !strcmp(c->o.pattern, "records-nb"), req[RECORD_VARS], st[RECORD_VARS], err = 0;
  for (int v = 0; v < RECORD_VARS; v++)
    for (MPI_Offset i = 0; writing && i < n; i++)
      buf[v * n + i] = record_value(v, t, c->rank * n + i);
  for (int v = 0; !err && v < RECORD_VARS; v++) {
    double *b = buf + v * n;
    if (nb)
      err = writing ? ncmpi_iput_vara(nc, var[v], start, count, b, n, MPI_DOUBLE, &req[v])
                    : ncmpi_iget_vara(nc, var[v], start, count, b, n, MPI_DOUBLE, &req[v]);
    else if (c->o.independent)
      err = writing ? ncmpi_put_vara(nc, var[v], start, count, b, n, MPI_DOUBLE)
                    : ncmpi_get_vara(nc, var[v], start, count, b, n, MPI_DOUBLE);
    else
      err = writing ? ncmpi_put_vara_all(nc, var[v], start, count, b, n, MPI_DOUBLE)
                    : ncmpi_get_vara_all(nc, var[v], start, count, b, n, MPI_DOUBLE);
  }
  if (nb && !err)
    err = c->o.independent ? ncmpi_wait(nc, RECORD_VARS, req, st) : ncmpi_wait_all(nc, RECORD_VARS, req, st);
  for (int v = 0; nb && !err && v < RECORD_VARS; v++)
    err = st[v];
  for (int v = 0; !err && !writing && v < RECORD_VARS; v++)
    for (MPI_Offset i = 0; i < n; i++)
      *errors += buf[v * n + i] != record_value(v, t, c->rank * n + i);
  return err;
}

static int records_phase(struct ctx *c, int nc, int writing, long long *bytes, long long *errors) {
  int var[RECORD_VARS], err = records_define(c, nc, writing, var);
  if (!err && c->o.independent)
    err = ncmpi_begin_indep_data(nc);
  double *buf = malloc((size_t)c->o.block * RECORD_VARS);
  if (!buf)
    err = NC_ENOMEM;
  for (long long t = 0; !err && t < c->o.steps; t++)
    err = records_step(c, nc, var, t, buf, writing, errors);
  free(buf);
  *bytes = c->o.block * RECORD_VARS * (long long)c->o.steps;
  return phase_done(c, nc, err);
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
  if (err && c->rank == 0)
    fprintf(stderr, "pnetcdf_bench: %s %s: %s\n", writing ? "ncmpi_create" : "ncmpi_open",
            c->o.path, ncmpi_strerror(err));
  if (rc == 0) {
    if (!strncmp(c->o.pattern, "btio", 4))
      rc = btio_phase(c, nc, writing, &bytes, &errors);
    else if (!strncmp(c->o.pattern, "records", 7))
      rc = records_phase(c, nc, writing, &bytes, &errors);
    else
      rc = ior_phase(c, nc, writing, &bytes, &errors);
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
  if (!strcmp(o->pattern, "records") || !strcmp(o->pattern, "records-nb")) {
    if (!o->block)
      o->block = 256 << 10;
    return (o->block % 8 || o->block < 8 || o->steps < 1) ? -1 : 0;
  }
  return -1;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct ctx c = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(c.comm, &c.rank);
  MPI_Comm_size(c.comm, &c.nranks);
  if (parse(argc, argv, &c.o)) {
    if (c.rank == 0)
      fprintf(stderr, "usage: pnetcdf_bench -p ior-hard|segmented|btio|btio-nb|records|records-nb -o FILE [-s S] "
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
