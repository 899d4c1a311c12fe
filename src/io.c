/*
 * io.c - the data-access entry points (read/write, at/individual pointer,
 * independent/collective).  Each reduces its arguments to a struct
 * aggio__access: the file ranges from the view, and a contiguous data
 * stream (the user's buffer when its datatype is contiguous, else a packed
 * copy), then hands it to the POSIX layer (independent calls) or the file's
 * strategy (collective calls), and agrees on the outcome.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "flatten.h"
#include "internal.h"

struct call {
  aggio_file fh;
  MPI_Offset offset;  /* in etypes; for individual-pointer calls the pointer */
  void *buf;
  int count;
  MPI_Datatype type;
  MPI_Status *status;
  int is_write;
  int collective;
  int use_fp;
  struct aggio__flat *mem; /* flattened memory type */
  int packed;              /* acc.stream is our copy */
};

static int trace_op(const struct call *c) {
  if (c->collective)
    return c->is_write ? AGGIO_OP_WRITE_AT_ALL : AGGIO_OP_READ_AT_ALL;
  return c->is_write ? AGGIO_OP_WRITE_AT : AGGIO_OP_READ_AT;
}

/* Checks the arguments; builds the access.  Local: no communication. */
static int prepare(struct call *c, struct aggio__access *acc, struct aggio__err *e) {
  aggio_file fh = c->fh;
  char msg[256] = "";
  if (c->count < 0)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: negative count %d", fh->rank, c->count);
  if (c->offset < 0)
    return aggio__fail(e, AGGIO_ERR_OFFSET, "rank %d: negative offset %lld",
                       fh->rank, (long long)c->offset);
  if (c->is_write && (fh->amode & MPI_MODE_RDONLY))
    return aggio__fail(e, AGGIO_ERR_READ_ONLY, "rank %d: write to a file opened "
                       "MPI_MODE_RDONLY", fh->rank);
  if (!c->is_write && (fh->amode & MPI_MODE_WRONLY))
    return aggio__fail(e, AGGIO_ERR_READ_ONLY, "rank %d: read from a file opened "
                       "MPI_MODE_WRONLY", fh->rank);
  if (!c->collective && fh->fd < 0)
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: independent I/O after "
                       "romio_no_indep_rw=true", fh->rank);
  int rc = aggio__flatten(c->type, &c->mem, msg, sizeof msg);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: datatype: %s", fh->rank, msg);
  int64_t size = c->mem->size;
  if (size > 0 && c->count > INT64_MAX / size)
    return aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank %d: count %d x size %lld "
                       "overflows", fh->rank, c->count, (long long)size);
  acc->nbytes = size * c->count;
  if (acc->nbytes > 0 && !c->buf)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: buffer is NULL with count %d",
                       fh->rank, c->count);
  if (acc->nbytes % fh->view.etype_size != 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: datatype size %lld is not a "
                       "multiple of the etype size %lld", fh->rank,
                       (long long)size, (long long)fh->view.etype_size);
  int64_t pos = c->offset;
  if (pos > INT64_MAX / fh->view.etype_size)
    return aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank %d: offset overflows", fh->rank);
  pos *= fh->view.etype_size;
  acc->is_write = c->is_write;
  if (acc->nbytes == 0)
    return 0;
  if (fh->view.ft)
    rc = aggio__flat_map(fh->view.ft, fh->view.disp, pos, acc->nbytes, &acc->file);
  else
    rc = aggio__extents_push(&acc->file, fh->view.disp + pos, acc->nbytes);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: out of memory mapping the view", fh->rank);
  if (aggio__flat_is_contiguous(c->mem, c->count)) {
    acc->stream = (char *)c->buf + (c->mem->n ? c->mem->off[0] : 0);
    return 0;
  }
  acc->stream = malloc((size_t)acc->nbytes);
  if (!acc->stream)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory packing %lld "
                       "bytes", fh->rank, (long long)acc->nbytes);
  c->packed = 1;
  if (c->is_write)
    aggio__flat_pack(c->mem, c->count, c->buf, acc->stream);
  return 0;
}

/* Bytes of the stream before end of file (reads): the file ranges in stream
 * order are sorted, so the count stops at the first byte past EOF. */
static int64_t bytes_before_eof(const struct aggio__access *acc, int64_t eof) {
  int64_t n = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    if (x->off + x->len <= eof) {
      n += x->len;
      continue;
    }
    if (x->off < eof)
      n += eof - x->off;
    break;
  }
  return n;
}

/* The reference path for independent calls: one system call per file range
 * (ranges are already coalesced). */
int aggio__independent_rw(aggio_file fh, struct aggio__access *acc,
                          struct aggio__err *e) {
  int64_t spos = 0;
  for (size_t i = 0; i < acc->file.n; i++) {
    const struct aggio__extent *x = &acc->file.v[i];
    int rc;
    if (acc->is_write) {
      rc = aggio__pwrite(fh, acc->stream + spos, x->len, x->off, 0, e);
    } else {
      int64_t got = 0;
      rc = aggio__pread(fh, acc->stream + spos, x->len, x->off, &got, 0, e);
      if (rc == 0 && got < x->len)
        memset(acc->stream + spos + got, 0, (size_t)(x->len - got));
    }
    if (rc != 0)
      return rc;
    spos += x->len;
  }
  return 0;
}

/* End of file as seen after a collective read: one rank asks, all agree. */
static int collective_eof(aggio_file fh, int64_t *eof, struct aggio__err *e) {
  MPI_Offset size = 0;
  int root = fh->naggr > 0 ? fh->aggr[0] : 0;
  int rc = 0;
  if (fh->rank == root)
    rc = aggio__file_size(fh, &size, e);
  int64_t msg[2] = {rc, size};
  MPI_Bcast(msg, 2, MPI_INT64_T, root, fh->comm);
  *eof = msg[1];
  return (int)msg[0];
}

static void finish_call(struct call *c, struct aggio__access *acc, int code) {
  aggio_file fh = c->fh;
  int64_t done = code == 0 ? acc->done : 0;
  if (code == 0 && !c->is_write && c->packed)
    aggio__flat_unpack(c->mem, c->count, acc->stream, done, c->buf);
  if (c->status && c->status != MPI_STATUS_IGNORE)
    MPI_Status_set_elements_x(c->status, MPI_BYTE, (MPI_Count)done);
  if (code == 0 && c->use_fp)
    fh->fp_ind = c->offset + done / fh->view.etype_size;
  if (fh->stats && code == 0) {
    int ctr = c->collective ? (c->is_write ? AGGIO_C_COLL_WRITES : AGGIO_C_COLL_READS)
                            : (c->is_write ? AGGIO_C_IND_WRITES : AGGIO_C_IND_READS);
    fh->stats->c[ctr]++;
    fh->stats->c[c->is_write ? AGGIO_C_API_BYTES_WRITTEN : AGGIO_C_API_BYTES_READ] += done;
  }
  if (c->packed)
    free(acc->stream);
  aggio__extents_free(&acc->file);
  if (c->mem)
    aggio__flat_release(c->mem);
}

static int run_call(struct call *c) {
  struct aggio__err e = {0};
  struct aggio__access acc = {0};
  aggio_file fh = c->fh;
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  double t0 = (fh->trace || fh->stats) ? aggio__now() : 0.0;
  if (c->use_fp)
    c->offset = fh->fp_ind;
  prepare(c, &acc, &e);
  if (c->collective) {
    /* The strategy's first collective carries prep_error, so that no rank
     * moves data when another rank's arguments were bad. */
    const struct aggio__strategy_ops *s = fh->strategy;
    acc.prep_error = e.code;
    fh->strategy_used = s->name; /* auto refines this to its choice */
    if (c->is_write)
      s->write_all(fh, &acc, &e);
    else
      s->read_all(fh, &acc, &e);
    aggio__agree(fh->comm, &e);
  } else if (e.code == 0) {
    aggio__independent_rw(fh, &acc, &e);
  }
  if (e.code == 0) {
    acc.done = acc.nbytes;
    MPI_Offset eof = 0;
    int64_t ceof = 0;
    if (!c->is_write && acc.nbytes > 0 && !c->collective)
      aggio__file_size(fh, &eof, &e);
    if (!c->is_write && c->collective && collective_eof(fh, &ceof, &e) == 0)
      eof = ceof;
    if (!c->is_write)
      acc.done = bytes_before_eof(&acc, eof);
  }
  if (fh->trace)
    aggio__trace_record(fh->trace, trace_op(c), c->offset, c->count,
                        c->mem ? c->mem->size : 0, t0, aggio__now(),
                        c->collective ? 2 : 0);
  if (fh->stats) /* wall time of the call: phases overlap when pipelined */
    fh->stats->api_time += aggio__now() - t0;
  finish_call(c, &acc, e.code);
  return aggio__finish(&e);
}

static int call(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                MPI_Datatype type, MPI_Status *status, int is_write,
                int collective, int use_fp) {
  struct call c = {fh, offset, (void *)buf, count, type, status,
                   is_write, collective, use_fp, NULL, 0};
  return run_call(&c);
}

int aggio_file_write_at(aggio_file fh, MPI_Offset offset, const void *buf,
                        int count, MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, offset, buf, count, datatype, status, 1, 0, 0);
}

int aggio_file_read_at(aggio_file fh, MPI_Offset offset, void *buf, int count,
                       MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, offset, buf, count, datatype, status, 0, 0, 0);
}

int aggio_file_write_at_all(aggio_file fh, MPI_Offset offset, const void *buf,
                            int count, MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, offset, buf, count, datatype, status, 1, 1, 0);
}

int aggio_file_read_at_all(aggio_file fh, MPI_Offset offset, void *buf,
                           int count, MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, offset, buf, count, datatype, status, 0, 1, 0);
}

int aggio_file_write(aggio_file fh, const void *buf, int count,
                     MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, 0, buf, count, datatype, status, 1, 0, 1);
}

int aggio_file_read(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                    MPI_Status *status) {
  return call(fh, 0, buf, count, datatype, status, 0, 0, 1);
}

int aggio_file_write_all(aggio_file fh, const void *buf, int count,
                         MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, 0, buf, count, datatype, status, 1, 1, 1);
}

int aggio_file_read_all(aggio_file fh, void *buf, int count,
                        MPI_Datatype datatype, MPI_Status *status) {
  return call(fh, 0, buf, count, datatype, status, 0, 1, 1);
}

/* ---- file pointer --------------------------------------------------------- */

/* Offset in etypes of the first view byte at or after file byte `eof`. */
static MPI_Offset view_offset_at(aggio_file fh, int64_t eof) {
  const struct aggio__flat *ft = fh->view.ft;
  int64_t rel = eof - fh->view.disp;
  if (rel <= 0)
    return 0;
  if (!ft)
    return rel / fh->view.etype_size;
  int64_t tiles = ft->extent > 0 ? rel / ft->extent : 0;
  int64_t rem = rel - tiles * ft->extent, bytes = tiles * ft->size;
  for (int64_t i = 0; i < ft->n; i++) {
    if (ft->off[i] >= rem)
      break;
    int64_t end = ft->off[i] + ft->len[i];
    bytes += (end <= rem ? end : rem) - ft->off[i];
  }
  return (bytes + fh->view.etype_size - 1) / fh->view.etype_size;
}

int aggio_file_seek(aggio_file fh, MPI_Offset offset, int whence) {
  struct aggio__err e = {0};
  MPI_Offset base = 0, size = 0;
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  if (whence == MPI_SEEK_CUR)
    base = fh->fp_ind;
  else if (whence == MPI_SEEK_END && aggio__file_size(fh, &size, &e) == 0)
    base = view_offset_at(fh, size);
  else if (whence != MPI_SEEK_SET && whence != MPI_SEEK_END)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: bad whence %d", fh->rank, whence);
  if (e.code == 0 && base + offset < 0)
    aggio__fail(&e, AGGIO_ERR_OFFSET, "rank %d: seek to a negative offset", fh->rank);
  if (e.code == 0)
    fh->fp_ind = base + offset;
  return aggio__finish(&e);
}

int aggio_file_get_position(aggio_file fh, MPI_Offset *offset) {
  struct aggio__err e = {0};
  if (!fh || !offset)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else
    *offset = fh->fp_ind;
  return aggio__finish(&e);
}

int aggio_file_get_byte_offset(aggio_file fh, MPI_Offset offset, MPI_Offset *disp) {
  struct aggio__err e = {0};
  struct aggio__extents x = {0};
  if (!fh || !disp)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else if (offset < 0)
    aggio__fail(&e, AGGIO_ERR_OFFSET, "rank %d: negative offset", fh->rank);
  else if (!fh->view.ft)
    *disp = fh->view.disp + offset * fh->view.etype_size;
  else if (aggio__flat_map(fh->view.ft, fh->view.disp, offset * fh->view.etype_size,
                           1, &x) != 0)
    aggio__fail(&e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  else
    *disp = x.v[0].off;
  aggio__extents_free(&x);
  return aggio__finish(&e);
}
