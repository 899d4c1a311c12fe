/*
 * pnetcdf_client.c - an ordinary PnetCDF program in the manner of NAS BTIO
 * (the ORNL seed's runs), used to check that aggio can stand in for the MPI
 * library's MPI-IO under an unmodified application (clientrun.py runs it
 * with and without aggio and compares the files byte for byte: the classic
 * netCDF formats hold no timestamps).
 *
 *   pnetcdf_client FILE [--read-only]
 *
 * The grid is NX x NY x NZ points of 5 doubles (BTIO's solution vector),
 * split in 3-D blocks over the ranks (MPI_Dims_create), for STEPS time
 * steps along the unlimited dimension:
 *
 *   u_blocking     [time][z][y][x][5], each step one ncmpi_put_vara_all of
 *                  the rank's block
 *   u_nonblocking  the same shape, one ncmpi_iput_vara per z-plane of the
 *                  block and step (many requests per rank, as BTIO's cells),
 *                  completed together by one ncmpi_wait_all
 *   owner          int [z][y][x], fixed size (before the record variables),
 *                  put_vara_all
 *
 * The two record variables interleave in the file, so every collective
 * write is a non-contiguous view.  Then the file is reopened read-only and
 * read back with the blocks assigned to other ranks (rank r reads the
 * block of rank n-1-r), u_blocking with get_vara_all and u_nonblocking with
 * iget_vara + wait_all, and every value is checked.
 */
#include <mpi.h>
#include <pnetcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NX 13
#define NY 10
#define NZ 9
#define NC 5 /* solution components per point */
#define STEPS 2

struct block {
  MPI_Offset start[3], count[3]; /* z, y, x */
};

struct run {
  MPI_Comm comm;
  int rank, nranks;
  int dims[3];
  long long bytes_written, bytes_read;
  int bad;
};

static double value(int var, MPI_Offset t, MPI_Offset z, MPI_Offset y, MPI_Offset x, int c) {
  return var * 1e6 + (double)t * 1e5 + (double)z * 1e4 + (double)y * 100 + (double)x + c * 0.125;
}

/* The block of rank r: its cell of the dims[0] x dims[1] x dims[2]
 * process grid, the remainder spread over the first cells. */
static struct block block_of(const struct run *rn, int r) {
  static const int extent[3] = {NZ, NY, NX};
  struct block b;
  int coord[3] = {r / (rn->dims[1] * rn->dims[2]), r / rn->dims[2] % rn->dims[1], r % rn->dims[2]};
  for (int d = 0; d < 3; d++) {
    int base = extent[d] / rn->dims[d], extra = extent[d] % rn->dims[d];
    b.start[d] = (MPI_Offset)coord[d] * base + (coord[d] < extra ? coord[d] : extra);
    b.count[d] = base + (coord[d] < extra ? 1 : 0);
  }
  return b;
}

static MPI_Offset block_points(const struct block *b) {
  return b->count[0] * b->count[1] * b->count[2];
}

static void fill(double *buf, const struct block *b, int var, MPI_Offset t) {
  size_t k = 0;
  for (MPI_Offset z = 0; z < b->count[0]; z++)
    for (MPI_Offset y = 0; y < b->count[1]; y++)
      for (MPI_Offset x = 0; x < b->count[2]; x++)
        for (int c = 0; c < NC; c++)
          buf[k++] = value(var, t, b->start[0] + z, b->start[1] + y, b->start[2] + x, c);
}

static void check(struct run *rn, const double *buf, const struct block *b, int var, MPI_Offset t) {
  size_t k = 0;
  for (MPI_Offset z = 0; z < b->count[0]; z++)
    for (MPI_Offset y = 0; y < b->count[1]; y++)
      for (MPI_Offset x = 0; x < b->count[2]; x++)
        for (int c = 0; c < NC; c++, k++) {
          double want = value(var, t, b->start[0] + z, b->start[1] + y, b->start[2] + x, c);
          if (buf[k] != want && rn->bad++ < 5)
            fprintf(stderr, "pnetcdf_client: rank %d: var %d [%lld][%lld][%lld][%lld][%d] = %g, want %g\n",
                    rn->rank, var, (long long)t, (long long)(b->start[0] + z),
                    (long long)(b->start[1] + y), (long long)(b->start[2] + x), c, buf[k], want);
        }
}

static int fail(const struct run *rn, const char *what, int err) {
  fprintf(stderr, "pnetcdf_client: rank %d: %s: %s\n", rn->rank, what, ncmpi_strerror(err));
  return -1;
}

/* ---- writing ------------------------------------------------------------- */

static int define(struct run *rn, int nc, int var[3]) {
  int dim[5], err;
  if ((err = ncmpi_def_dim(nc, "time", NC_UNLIMITED, &dim[0])) ||
      (err = ncmpi_def_dim(nc, "z", NZ, &dim[1])) || (err = ncmpi_def_dim(nc, "y", NY, &dim[2])) ||
      (err = ncmpi_def_dim(nc, "x", NX, &dim[3])) ||
      (err = ncmpi_def_dim(nc, "component", NC, &dim[4])) ||
      (err = ncmpi_def_var(nc, "owner", NC_INT, 3, dim + 1, &var[0])) ||
      (err = ncmpi_def_var(nc, "u_blocking", NC_DOUBLE, 5, dim, &var[1])) ||
      (err = ncmpi_def_var(nc, "u_nonblocking", NC_DOUBLE, 5, dim, &var[2])) ||
      (err = ncmpi_put_att_text(nc, NC_GLOBAL, "title", 17, "aggio client test")) ||
      (err = ncmpi_put_att_int(nc, NC_GLOBAL, "ranks", NC_INT, 1, &rn->nranks)) ||
      (err = ncmpi_enddef(nc)))
    return fail(rn, "define", err);
  return 0;
}

/* `buf` is the doubles buffer (room for more ints than needed). */
static int write_owner(struct run *rn, int nc, int var, const struct block *b, int *buf) {
  MPI_Offset n = block_points(b);
  for (MPI_Offset i = 0; i < n; i++)
    buf[i] = rn->rank;
  int err = ncmpi_put_vara_int_all(nc, var, b->start, b->count, buf);
  rn->bytes_written += (long long)(n * (MPI_Offset)sizeof(int));
  return err ? fail(rn, "put_vara_int_all owner", err) : 0;
}

static int write_blocking(struct run *rn, int nc, int var, const struct block *b, double *buf) {
  int rc = 0;
  for (MPI_Offset t = 0; t < STEPS; t++) { /* every step, also after an error: collective */
    MPI_Offset start[5] = {t, b->start[0], b->start[1], b->start[2], 0};
    MPI_Offset count[5] = {1, b->count[0], b->count[1], b->count[2], NC};
    fill(buf, b, 1, t);
    int err = ncmpi_put_vara_all(nc, var, start, count, buf, block_points(b) * NC, MPI_DOUBLE);
    if (err)
      rc = fail(rn, "put_vara_all u_blocking", err);
    rn->bytes_written += (long long)(block_points(b) * NC * 8);
  }
  return rc;
}

/* One iput per z-plane and step, all waited for at once. */
static int write_nonblocking(struct run *rn, int nc, int var, const struct block *b, double *buf) {
  MPI_Offset plane = b->count[1] * b->count[2] * NC, n = STEPS * b->count[0];
  int *req = malloc((size_t)(n ? n : 1) * sizeof *req), *st = malloc((size_t)(n ? n : 1) * sizeof *st);
  int nreq = 0, err = 0;
  if (!req || !st) {
    free(req);
    free(st);
    return -1;
  }
  for (MPI_Offset t = 0; t < STEPS && !err; t++) {
    double *step = buf + t * block_points(b) * NC;
    fill(step, b, 2, t);
    for (MPI_Offset z = 0; z < b->count[0] && !err; z++) {
      MPI_Offset start[5] = {t, b->start[0] + z, b->start[1], b->start[2], 0};
      MPI_Offset count[5] = {1, 1, b->count[1], b->count[2], NC};
      err = ncmpi_iput_vara(nc, var, start, count, step + z * plane, plane, MPI_DOUBLE, &req[nreq]);
      if (!err)
        nreq++;
    }
  }
  /* wait_all is collective: every rank calls it, also after a failed iput */
  int werr = ncmpi_wait_all(nc, nreq, req, st);
  for (int i = 0; i < nreq && !werr; i++)
    werr = st[i];
  free(req);
  free(st);
  rn->bytes_written += (long long)(STEPS * block_points(b) * NC * 8);
  if (err)
    return fail(rn, "iput_vara u_nonblocking", err);
  return werr ? fail(rn, "wait_all u_nonblocking", werr) : 0;
}

static int write_file(struct run *rn, const char *path) {
  int nc, var[3], err = ncmpi_create(rn->comm, path, NC_CLOBBER | NC_64BIT_OFFSET, MPI_INFO_NULL, &nc);
  if (err)
    return fail(rn, "create", err);
  struct block b = block_of(rn, rn->rank);
  double *buf = malloc((size_t)(STEPS * block_points(&b) * NC + 1) * sizeof *buf);
  int ok = buf != NULL, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, rn->comm);
  /* PnetCDF's collective calls take part in the collective also where
   * they fail on this rank, so every phase runs on every rank and the
   * outcome is agreed at the end (main). */
  int rc = all_ok ? define(rn, nc, var) : -1, all_rc;
  MPI_Allreduce(&rc, &all_rc, 1, MPI_INT, MPI_MIN, rn->comm);
  if (all_rc == 0)
    rc = write_owner(rn, nc, var[0], &b, (int *)buf) | write_blocking(rn, nc, var[1], &b, buf) |
         write_nonblocking(rn, nc, var[2], &b, buf);
  free(buf);
  err = ncmpi_close(nc);
  if (err && rc == 0)
    rc = fail(rn, "close", err);
  return rc;
}

/* ---- reading back -------------------------------------------------------- */

static int read_owner(struct run *rn, int nc, int var, const struct block *b, int owner, int *buf) {
  MPI_Offset n = block_points(b);
  int err = ncmpi_get_vara_int_all(nc, var, b->start, b->count, buf);
  for (MPI_Offset i = 0; i < n && !err; i++)
    if (buf[i] != owner && rn->bad++ < 5)
      fprintf(stderr, "pnetcdf_client: rank %d: owner[%lld] = %d, want %d\n", rn->rank,
              (long long)i, buf[i], owner);
  rn->bytes_read += (long long)(n * (MPI_Offset)sizeof(int));
  return err ? fail(rn, "get_vara_int_all owner", err) : 0;
}

static int read_blocking(struct run *rn, int nc, int var, const struct block *b, double *buf) {
  int rc = 0;
  for (MPI_Offset t = 0; t < STEPS; t++) { /* every step, also after an error: collective */
    MPI_Offset start[5] = {t, b->start[0], b->start[1], b->start[2], 0};
    MPI_Offset count[5] = {1, b->count[0], b->count[1], b->count[2], NC};
    int err = ncmpi_get_vara_all(nc, var, start, count, buf, block_points(b) * NC, MPI_DOUBLE);
    if (err)
      rc = fail(rn, "get_vara_all u_blocking", err);
    else
      check(rn, buf, b, 1, t);
    rn->bytes_read += (long long)(block_points(b) * NC * 8);
  }
  return rc;
}

static int read_nonblocking(struct run *rn, int nc, int var, const struct block *b, double *buf) {
  MPI_Offset plane = b->count[1] * b->count[2] * NC, n = STEPS * b->count[0];
  int *req = malloc((size_t)(n ? n : 1) * sizeof *req), *st = malloc((size_t)(n ? n : 1) * sizeof *st);
  int nreq = 0, err = 0;
  if (!req || !st) {
    free(req);
    free(st);
    return -1;
  }
  for (MPI_Offset t = 0; t < STEPS && !err; t++)
    for (MPI_Offset z = 0; z < b->count[0] && !err; z++) {
      MPI_Offset start[5] = {t, b->start[0] + z, b->start[1], b->start[2], 0};
      MPI_Offset count[5] = {1, 1, b->count[1], b->count[2], NC};
      double *dst = buf + t * block_points(b) * NC + z * plane;
      err = ncmpi_iget_vara(nc, var, start, count, dst, plane, MPI_DOUBLE, &req[nreq]);
      if (!err)
        nreq++;
    }
  int werr = ncmpi_wait_all(nc, nreq, req, st);
  for (int i = 0; i < nreq && !werr; i++)
    werr = st[i];
  free(req);
  free(st);
  if (err)
    return fail(rn, "iget_vara u_nonblocking", err);
  if (werr)
    return fail(rn, "wait_all u_nonblocking (read)", werr);
  for (MPI_Offset t = 0; t < STEPS; t++)
    check(rn, buf + t * block_points(b) * NC, b, 2, t);
  rn->bytes_read += (long long)(STEPS * block_points(b) * NC * 8);
  return 0;
}

static int read_file(struct run *rn, const char *path) {
  int nc, var[3], ranks = -1;
  int err = ncmpi_open(rn->comm, path, NC_NOWRITE, MPI_INFO_NULL, &nc);
  if (err)
    return fail(rn, "open", err);
  int other = rn->nranks - 1 - rn->rank;
  struct block b = block_of(rn, other);
  double *buf = malloc((size_t)(STEPS * block_points(&b) * NC + 1) * sizeof *buf);
  /* The blocks depend on the rank count that wrote the file: check it
   * before any collective read, and agree. */
  int ok = buf && !ncmpi_get_att_int(nc, NC_GLOBAL, "ranks", &ranks) && ranks == rn->nranks &&
           !ncmpi_inq_varid(nc, "owner", &var[0]) && !ncmpi_inq_varid(nc, "u_blocking", &var[1]) &&
           !ncmpi_inq_varid(nc, "u_nonblocking", &var[2]);
  int all_ok, rc = -1;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, rn->comm);
  if (!all_ok && rn->rank == 0)
    fprintf(stderr, "pnetcdf_client: %s was not written by this program at %d ranks (ranks=%d)\n",
            path, rn->nranks, ranks);
  if (all_ok)
    rc = read_owner(rn, nc, var[0], &b, other, (int *)buf) | read_blocking(rn, nc, var[1], &b, buf) |
         read_nonblocking(rn, nc, var[2], &b, buf);
  free(buf);
  err = ncmpi_close(nc);
  if (err && rc == 0)
    rc = fail(rn, "close", err);
  return rc;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct run rn = {.comm = MPI_COMM_WORLD};
  MPI_Comm_rank(rn.comm, &rn.rank);
  MPI_Comm_size(rn.comm, &rn.nranks);
  MPI_Dims_create(rn.nranks, 3, rn.dims);
  const char *path = NULL;
  int read_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--read-only"))
      read_only = 1;
    else if (argv[i][0] != '-' && !path)
      path = argv[i];
    else
      path = NULL, i = argc;
  }
  if (!path) {
    if (rn.rank == 0)
      fprintf(stderr, "usage: pnetcdf_client FILE [--read-only]\n");
    MPI_Finalize();
    return 2;
  }
  int rc = read_only ? 0 : write_file(&rn, path), failed;
  MPI_Allreduce(&rc, &failed, 1, MPI_INT, MPI_MIN, rn.comm);
  if (failed == 0)
    rc = read_file(&rn, path);
  long long mine[4] = {rc ? 1 : 0, rn.bad, rn.bytes_written, rn.bytes_read}, all[4];
  MPI_Allreduce(mine, all, 4, MPI_LONG_LONG, MPI_SUM, rn.comm);
  int status = (failed || all[0] || all[1]) ? 1 : 0;
  if (rn.rank == 0)
    printf("pnetcdf_client: %s, %d ranks (%dx%dx%d blocks), data bytes written %lld, data bytes read %lld%s\n",
           status ? "FAILED" : "ok", rn.nranks, rn.dims[0], rn.dims[1], rn.dims[2], all[2], all[3],
           failed ? " (write phase failed)" : all[1] ? " (wrong data read back)" : "");
  MPI_Finalize();
  return status;
}
