/*
 * backend_mpiio.c - the MPI library's own MPI-IO (ROMIO in MPICH; OMPIO or
 * ROMIO in Open MPI, chosen with --mca io / --mca fcoll): the peer that
 * aggio is measured against.  Explicit-offset calls, *_all with -c.
 */
#include <stdlib.h>

#include "bench.h"

struct mpiio_file {
  MPI_File fh;
  int collective;
  MPI_Request *req; /* started by mpiio_istart, completed by mpiio_complete */
  int nreq, req_cap;
};

static int mpiio_open(const struct bench_open_args *a, void **state) {
  struct mpiio_file *f = calloc(1, sizeof *f);
  if (!f) return MPI_ERR_NO_MEM;
  int amode = a->dir == BENCH_WRITE ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  int rc = MPI_File_open(a->comm, a->path, amode, a->info, &f->fh);
  if (rc != MPI_SUCCESS) {
    free(f);
    return rc;
  }
  f->collective = a->collective;
  *state = f;
  return 0;
}

static int mpiio_set_view(void *state, MPI_Datatype filetype) {
  struct mpiio_file *f = state;
  return MPI_File_set_view(f->fh, 0, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
}

/* One call; the status says how many bytes it moved. */
static int mpiio_xfer(void *state, enum bench_dir dir, int64_t off, void *buf, int n,
                      int64_t *moved) {
  struct mpiio_file *f = state;
  MPI_Status st;
  int rc, got = 0;
  if (dir == BENCH_WRITE)
    rc = f->collective ? MPI_File_write_at_all(f->fh, off, buf, n, MPI_BYTE, &st)
                       : MPI_File_write_at(f->fh, off, buf, n, MPI_BYTE, &st);
  else
    rc = f->collective ? MPI_File_read_at_all(f->fh, off, buf, n, MPI_BYTE, &st)
                       : MPI_File_read_at(f->fh, off, buf, n, MPI_BYTE, &st);
  if (rc != MPI_SUCCESS) return rc;
  MPI_Get_count(&st, MPI_BYTE, &got);
  *moved = got;
  return 0;
}

static int mpiio_sync(void *state) {
  return MPI_File_sync(((struct mpiio_file *)state)->fh);
}

/* MPI_File_iwrite_at_all / MPI_File_iread_at_all (MPI 3.1). */
static int mpiio_istart(void *state, enum bench_dir dir, int64_t off, void *buf, int n) {
  struct mpiio_file *f = state;
  if (f->nreq == f->req_cap) {
    int cap = f->req_cap ? 2 * f->req_cap : 16;
    MPI_Request *r = realloc(f->req, (size_t)cap * sizeof *r);
    if (!r) return MPI_ERR_NO_MEM;
    f->req = r;
    f->req_cap = cap;
  }
  MPI_Request *r = &f->req[f->nreq++];
  return dir == BENCH_WRITE ? MPI_File_iwrite_at_all(f->fh, off, buf, n, MPI_BYTE, r)
                            : MPI_File_iread_at_all(f->fh, off, buf, n, MPI_BYTE, r);
}

/* One MPI_Waitall over the started requests. */
static int mpiio_complete(void *state, int64_t *moved) {
  struct mpiio_file *f = state;
  MPI_Status *st = f->nreq ? malloc((size_t)f->nreq * sizeof *st) : NULL;
  if (f->nreq && !st) return MPI_ERR_NO_MEM;
  int rc = MPI_Waitall(f->nreq, f->req, st);
  *moved = 0;
  for (int i = 0; rc == MPI_SUCCESS && i < f->nreq; i++) {
    int got = 0;
    MPI_Get_count(&st[i], MPI_BYTE, &got);
    *moved += got;
  }
  f->nreq = 0;
  free(st);
  return rc == MPI_SUCCESS ? 0 : rc;
}

static int mpiio_close(void *state) {
  struct mpiio_file *f = state;
  int rc = MPI_File_close(&f->fh);
  free(f->req);
  free(f);
  return rc;
}

static int mpiio_remove(const char *path) {
  MPI_File_delete((char *)path, MPI_INFO_NULL); /* absent is fine */
  return 0;
}

static int mpiio_info(void *state, MPI_Info *info) {
  return MPI_File_get_info(((struct mpiio_file *)state)->fh, info);
}

static const char *mpiio_error(int code) {
  static char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  return text;
}

const struct bench_backend bench_backend_mpiio = {
    .name = "MPIIO",
    .open = mpiio_open,
    .set_view = mpiio_set_view,
    .xfer = mpiio_xfer,
    .sync = mpiio_sync,
    .close = mpiio_close,
    .remove = mpiio_remove,
    .info = mpiio_info,
    .error = mpiio_error,
    .istart = mpiio_istart,
    .complete = mpiio_complete,
};
