/*
 * backend_aggio.c - libaggio, through its MPI-IO-shaped API; the strategy
 * (auto, independent, two_phase) and everything else come from the hints
 * (MPI_Info from -U/--hint, or AGGIO_HINTS in the environment).
 */
#include <stdlib.h>

#include "aggio.h"
#include "bench.h"

struct aggio_bench_file {
  aggio_file fh;
  int collective;
  aggio_request *req; /* started by ab_istart, completed by ab_complete */
  int nreq, req_cap;
};

static int ab_open(const struct bench_open_args *a, void **state) {
  struct aggio_bench_file *f = calloc(1, sizeof *f);
  if (!f) return AGGIO_ERR_NOMEM;
  int amode = a->dir == BENCH_WRITE ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  int rc = aggio_file_open(a->comm, a->path, amode, a->info, &f->fh);
  if (rc) {
    free(f);
    return rc;
  }
  f->collective = a->collective;
  *state = f;
  return 0;
}

static int ab_set_view(void *state, MPI_Datatype filetype) {
  struct aggio_bench_file *f = state;
  return aggio_file_set_view(f->fh, 0, MPI_BYTE, filetype, "native", MPI_INFO_NULL);
}

/* One call; the status says how many bytes it moved. */
static int ab_xfer(void *state, enum bench_dir dir, int64_t off, void *buf, int n,
                   int64_t *moved) {
  struct aggio_bench_file *f = state;
  MPI_Status st;
  int rc, got = 0;
  if (dir == BENCH_WRITE)
    rc = f->collective ? aggio_file_write_at_all(f->fh, off, buf, n, MPI_BYTE, &st)
                       : aggio_file_write_at(f->fh, off, buf, n, MPI_BYTE, &st);
  else
    rc = f->collective ? aggio_file_read_at_all(f->fh, off, buf, n, MPI_BYTE, &st)
                       : aggio_file_read_at(f->fh, off, buf, n, MPI_BYTE, &st);
  if (rc) return rc;
  MPI_Get_count(&st, MPI_BYTE, &got);
  *moved = got;
  return 0;
}

static int ab_sync(void *state) {
  return aggio_file_sync(((struct aggio_bench_file *)state)->fh);
}

/* aggio_file_iwrite_at_all / iread_at_all; the request joins the file's. */
static int ab_istart(void *state, enum bench_dir dir, int64_t off, void *buf, int n) {
  struct aggio_bench_file *f = state;
  if (f->nreq == f->req_cap) {
    int cap = f->req_cap ? 2 * f->req_cap : 16;
    aggio_request *r = realloc(f->req, (size_t)cap * sizeof *r);
    if (!r) return AGGIO_ERR_NOMEM;
    f->req = r;
    f->req_cap = cap;
  }
  aggio_request *r = &f->req[f->nreq++];
  return dir == BENCH_WRITE ? aggio_file_iwrite_at_all(f->fh, off, buf, n, MPI_BYTE, r)
                            : aggio_file_iread_at_all(f->fh, off, buf, n, MPI_BYTE, r);
}

/* One aggio_waitall over the started requests. */
static int ab_complete(void *state, int64_t *moved) {
  struct aggio_bench_file *f = state;
  MPI_Status *st = f->nreq ? malloc((size_t)f->nreq * sizeof *st) : NULL;
  if (f->nreq && !st) return AGGIO_ERR_NOMEM;
  int rc = aggio_waitall(f->nreq, f->req, st);
  *moved = 0;
  for (int i = 0; !rc && i < f->nreq; i++) {
    int got = 0;
    MPI_Get_count(&st[i], MPI_BYTE, &got);
    *moved += got;
  }
  f->nreq = 0;
  free(st);
  return rc;
}

static int ab_close(void *state) {
  struct aggio_bench_file *f = state;
  int rc = aggio_file_close(&f->fh);
  free(f->req);
  free(f);
  return rc;
}

static int ab_remove(const char *path) {
  int rc = aggio_file_delete(path, MPI_INFO_NULL);
  return rc == AGGIO_ERR_NO_SUCH_FILE ? 0 : rc;
}

static int ab_info(void *state, MPI_Info *info) {
  return aggio_file_get_info(((struct aggio_bench_file *)state)->fh, info);
}

static const char *ab_error(int code) {
  const char *m = aggio_error_message();
  return m && *m ? m : aggio_strerror(code);
}

const struct bench_backend bench_backend_aggio = {
    .name = "AGGIO",
    .open = ab_open,
    .set_view = ab_set_view,
    .xfer = ab_xfer,
    .sync = ab_sync,
    .close = ab_close,
    .remove = ab_remove,
    .info = ab_info,
    .error = ab_error,
    .istart = ab_istart,
    .complete = ab_complete,
};
