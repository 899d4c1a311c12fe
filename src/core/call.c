/*
 * call.c - one data-access call from the user's arguments to the result
 * (call.h): the checks, the view mapped into file ranges, memory packed
 * and unpacked, the operation made and, once it completed, the status,
 * file pointer and counts.  The blocking entry points (api/io.c) and the
 * non-blocking requests (request.c) share it.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "flatten.h"
#include "open_files.h"
#include "shared_fp.h"

int aggio__call_trace_op(const struct call *c, int nonblocking) {
  if (c->kind == AGGIO_CALL_ORDERED) /* the split forms too */
    return c->is_write ? AGGIO_OP_WRITE_ORDERED : AGGIO_OP_READ_ORDERED;
  if (c->kind == AGGIO_CALL_SHARED && nonblocking)
    return c->is_write ? AGGIO_OP_IWRITE_SHARED : AGGIO_OP_IREAD_SHARED;
  if (c->kind == AGGIO_CALL_SHARED)
    return c->is_write ? AGGIO_OP_WRITE_SHARED : AGGIO_OP_READ_SHARED;
  if (nonblocking && c->collective)
    return c->is_write ? AGGIO_OP_IWRITE_AT_ALL : AGGIO_OP_IREAD_AT_ALL;
  if (nonblocking)
    return c->is_write ? AGGIO_OP_IWRITE_AT : AGGIO_OP_IREAD_AT;
  if (c->collective)
    return c->is_write ? AGGIO_OP_WRITE_AT_ALL : AGGIO_OP_READ_AT_ALL;
  return c->is_write ? AGGIO_OP_WRITE_AT : AGGIO_OP_READ_AT;
}

static int check_mode(const struct call *c, struct aggio__err *e) {
  aggio_file fh = c->fh;
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
  /* MPI 3.1 section 13.2.1: a sequential file is accessed through the
   * shared pointer only */
  if (c->kind == AGGIO_CALL_PLAIN && (fh->amode & MPI_MODE_SEQUENTIAL))
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: explicit-offset and "
                       "individual-pointer calls on a file opened MPI_MODE_SEQUENTIAL "
                       "(only shared-pointer calls are allowed)", fh->rank);
  if (!c->collective && !fh->st.opened)
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: independent I/O after "
                       "romio_no_indep_rw=true", fh->rank);
  return 0;
}

/* 1 when stream bytes [pos, pos + nbytes) of the view map below INT64_MAX:
 * checked before any offset is computed, so that no arithmetic on file
 * offsets can overflow. */
static int view_fits(aggio_file fh, int64_t pos, int64_t nbytes) {
  const struct aggio__flat *ft = fh->view.ft;
  int64_t disp = fh->view.disp;
  if (pos > INT64_MAX - nbytes || pos + nbytes > INT64_MAX - disp)
    return 0;
  if (!ft || ft->size <= 0 || ft->n == 0 || nbytes <= 0)
    return 1;
  /* the last stream byte lies in tile `last`, less than `tail` past the
   * tile's start: the access ends below disp + last * extent + tail */
  int64_t tail = ft->off[ft->n - 1] + ft->len[ft->n - 1];
  int64_t last = (pos + nbytes - 1) / ft->size;
  if (tail > INT64_MAX - disp)
    return 0;
  return ft->extent <= 0 || last <= (INT64_MAX - disp - tail) / ft->extent;
}

/* A filetype whose data run past its extent is valid for accesses within
 * one instance (file.c, filetype_rules); an access that spans instances
 * must find them in order (and, for a writable file, not overlapping),
 * as MPI-IO requires of the tiled filetype. */
static int tiles_fit(aggio_file fh, int64_t pos, int64_t nbytes, struct aggio__err *e) {
  const struct aggio__flat *ft = fh->view.ft;
  if (!ft || ft->size <= 0 || nbytes <= 0 || pos / ft->size == (pos + nbytes - 1) / ft->size)
    return 0;
  int disjoint = (fh->amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR)) != 0;
  if (aggio__flat_tiles_ordered(ft, disjoint))
    return 0;
  return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: the access spans instances of a filetype "
                     "whose data reach past its extent, so that the instances %s; such a "
                     "filetype allows one instance per access", fh->rank,
                     disjoint ? "overlap or go back" : "go back");
}

/* ---- external32 (the view's data representation) ------------------------------ */

/* The memory type's elements have their native sizes in external32, so
 * that the converted stream keeps the layout the view maps (with MPICH,
 * MPI_LONG, 4 bytes in external32 and 8 here, does not). */
static int external32_fits(const struct call *c, int64_t nbytes, struct aggio__err *e) {
  MPI_Aint ext = 0;
  if (MPI_Pack_external_size("external32", c->count, c->type, &ext) != MPI_SUCCESS ||
      (int64_t)ext != nbytes)
    return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: the memory datatype's external32 "
                       "size (%lld bytes) differs from its native size (%lld): aggio's "
                       "external32 keeps the native layout", c->fh->rank, (long long)ext,
                       (long long)nbytes);
  return 0;
}

/* Converts what a write carries into external32 (big-endian, IEEE). */
static int external32_pack(struct call *c, struct aggio__access *acc, struct aggio__err *e) {
  MPI_Aint pos = 0;
  if (MPI_Pack_external("external32", c->buf, c->count, c->type, acc->stream,
                        (MPI_Aint)acc->nbytes, &pos) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Pack_external failed", c->fh->rank);
  return 0;
}

/* A read converts at its end, with a copy of the memory type that the call
 * holds (own_type): the caller's handle may be freed by then. */
static int external32_hold_type(struct call *c, struct aggio__err *e) {
  if (c->is_write)
    return 0;
  if (MPI_Type_dup(c->type, &c->own_type) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Type_dup failed", c->fh->rank);
  c->own_type_held = 1;
  return 0;
}

/* Converts what a read brought back, whole elements of the memory type
 * only: one cut by the end of file stays as it was in memory. */
static void external32_unpack(struct call *c, struct aggio__access *acc, int64_t done) {
  int64_t size = c->mem->size, whole = size > 0 ? done / size : 0;
  MPI_Aint pos = 0;
  if (whole > 0)
    MPI_Unpack_external("external32", acc->stream, (MPI_Aint)(whole * size), &pos, c->buf,
                        (int)whole, c->own_type);
}


/* Checks the arguments; builds the access.  Local: no communication. */
static int prepare(struct call *c, struct aggio__access *acc, struct aggio__err *e) {
  aggio_file fh = c->fh;
  char msg[256] = "";
  if (check_mode(c, e) != 0)
    return e->code;
  int rc = aggio__flatten(c->type, &c->mem, msg, sizeof msg);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: datatype: %s", fh->rank, msg);
  int64_t size = c->mem->size;
  if (size > 0 && c->count > INT64_MAX / size)
    return aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank %d: count %d x size %lld "
                       "overflows", fh->rank, c->count, (long long)size);
  acc->nbytes = size * c->count;
  acc->is_write = c->is_write;
  if (acc->nbytes > 0 && !c->buf)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: buffer is NULL with count %d",
                       fh->rank, c->count);
  if (acc->nbytes % fh->view.etype_size != 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: datatype size %lld is not a "
                       "multiple of the etype size %lld", fh->rank,
                       (long long)size, (long long)fh->view.etype_size);
  int64_t pos = c->offset;
  if (pos > INT64_MAX / fh->view.etype_size ||
      !view_fits(fh, pos * fh->view.etype_size, acc->nbytes))
    return aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank %d: offset %lld overflows the "
                       "file's offsets", fh->rank, (long long)c->offset);
  pos *= fh->view.etype_size;
  if (tiles_fit(fh, pos, acc->nbytes, e) != 0)
    return e->code;
  if (acc->nbytes == 0)
    return 0;
  if (fh->view.ft)
    rc = aggio__flat_map(fh->view.ft, fh->view.disp, pos, acc->nbytes, &acc->file);
  else
    rc = aggio__extents_push(&acc->file, fh->view.disp + pos, acc->nbytes);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: mapping the view: %s", fh->rank, aggio_strerror(rc));
  c->external32 = fh->view.datarep == AGGIO_DATAREP_EXTERNAL32;
  if (c->external32 && (external32_fits(c, acc->nbytes, e) != 0 ||
                        external32_hold_type(c, e) != 0))
    return e->code;
  if (!c->external32 && aggio__flat_is_contiguous(c->mem, c->count)) {
    acc->stream = (char *)c->buf + (c->mem->n ? c->mem->off[0] : 0);
    return 0;
  }
  acc->stream = malloc((size_t)acc->nbytes);
  if (!acc->stream)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory packing %lld "
                       "bytes", fh->rank, (long long)acc->nbytes);
  c->packed = 1;
  if (c->is_write && c->external32)
    return external32_pack(c, acc, e);
  if (c->is_write)
    aggio__flat_pack(c->mem, c->count, c->buf, acc->stream);
  return 0;
}

static void count_call(const struct call *c, int64_t done) {
  struct aggio__stats *s = c->fh->obs.stats;
  int ctr = c->collective ? (c->is_write ? AGGIO_C_COLL_WRITES : AGGIO_C_COLL_READS)
                          : (c->is_write ? AGGIO_C_IND_WRITES : AGGIO_C_IND_READS);
  s->c[ctr]++;
  s->c[c->is_write ? AGGIO_C_API_BYTES_WRITTEN : AGGIO_C_API_BYTES_READ] += done;
}

/* Completes the call for the user: unpacks what was read (only the bytes
 * before end of file), fills the status, moves the file pointer. */
static void finish_call(struct call *c, struct aggio__op *op) {
  aggio_file fh = c->fh;
  struct aggio__access *acc = &op->acc;
  int code = op->err.code;
  int64_t done = code != 0 ? 0 : c->is_write ? acc->nbytes : aggio__access_before_eof(acc, op->eof);
  if (code == 0 && !c->is_write && c->packed && c->external32)
    external32_unpack(c, acc, done);
  else if (code == 0 && !c->is_write && c->packed)
    aggio__flat_unpack(c->mem, c->count, acc->stream, done, c->buf);
  if (c->status && c->status != MPI_STATUS_IGNORE)
    MPI_Status_set_elements_x(c->status, MPI_BYTE, (MPI_Count)done);
  if (code == 0 && c->use_fp && !c->fp_at_start)
    fh->fp_ind = c->offset + done / fh->view.etype_size;
  if (fh->obs.stats && code == 0)
    count_call(c, done);
  /* an independent write has reached the file (a non-blocking one only
   * now): the next collective call forgets loaded copies (engine.c) */
  if (!c->collective && c->is_write)
    __atomic_store_n(&fh->wrote_alone, 1, __ATOMIC_RELAXED);
  /* the end every rank of a collective write held behind the call agreed
   * on (a merged carrier's covers its followers): get_size shows at least
   * it until a collective flush has put it in the file (file.c) */
  if (code == 0 && c->collective && c->is_write && op->strategy && op->strategy->flush &&
      op->sum.hi > __atomic_load_n(&fh->coll_end, __ATOMIC_RELAXED))
    __atomic_store_n(&fh->coll_end, op->sum.hi, __ATOMIC_RELAXED); /* get_size reads it */
  if (c->packed)
    free(acc->stream);
  aggio__extents_free(&acc->file);
  if (c->mem)
    aggio__flat_release(c->mem);
  c->mem = NULL;
  if (c->own_type_held)
    MPI_Type_free(&c->own_type);
  c->own_type_held = 0;
}

void aggio__call_begin(struct call *c, struct aggio__op *op, int blocking) {
  aggio_file fh = c->fh;
  memset(op, 0, sizeof *op);
  c->t0 = (fh->obs.trace || fh->obs.stats) ? aggio__now() : 0.0;
  if (c->use_fp)
    c->offset = fh->fp_ind;
  prepare(c, &op->acc, &op->err);
  if (c->pre.code != 0 && op->err.code == 0)
    op->err = c->pre;
  c->type_size = c->mem ? c->mem->size : 0;
  if (op->err.code == 0) /* other handles of the file show what they hold */
    aggio__files_settle_twins(fh, &op->acc);
  /* MPI: a non-blocking call moves the pointer past the whole request at
   * once, so that the next call may start before this one completes. */
  if (c->use_fp && c->fp_at_start && op->err.code == 0)
    fh->fp_ind = c->offset + op->acc.nbytes / fh->view.etype_size;
  aggio__op_init(op, fh, c->collective, blocking);
  if (c->collective) /* the age of what it stages (staging.c): in call order on every rank */
    __atomic_fetch_add(&fh->st.coll_calls, 1, __ATOMIC_RELAXED);
  if (!c->collective)
    aggio__then(op, aggio__step_independent, AGGIO_P_WRITE);
  else if (aggio__one_round_guess(op)) /* its I/O, then the summary */
    aggio__then(op, aggio__step_io_first, c->is_write ? AGGIO_P_WRITE : AGGIO_P_READ);
  if (fh->obs.stats) /* from t0 on, the calls' time is tiled by the phases */
    aggio__phase_add(fh->obs.stats, c->packed ? AGGIO_P_PACK : AGGIO_P_PLAN,
                     op->t_mark - c->t0);
}

void aggio__call_end(struct call *c, struct aggio__op *op) {
  finish_call(c, op);
  aggio__op_account(op, AGGIO_P_PACK);
  aggio__op_free(op);
}

int aggio__call_etypes(const struct call *c, int64_t *n, struct aggio__err *e) {
  aggio_file fh = c->fh;
  MPI_Count size = 0;
  if (check_mode(c, e) != 0)
    return e->code;
  if (c->type == MPI_DATATYPE_NULL || MPI_Type_size_x(c->type, &size) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: invalid datatype", fh->rank);
  if (size > 0 && c->count > INT64_MAX / size)
    return aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank %d: count %d x size %lld overflows",
                       fh->rank, c->count, (long long)size);
  int64_t bytes = (int64_t)size * c->count;
  if (bytes % fh->view.etype_size != 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: datatype size %lld is not a multiple "
                       "of the etype size %lld", fh->rank, (long long)size,
                       (long long)fh->view.etype_size);
  *n = bytes / fh->view.etype_size;
  return 0;
}

void aggio__call_claim_shared(struct call *c) {
  int64_t n = 0, pos = 0;
  if (aggio__call_etypes(c, &n, &c->pre) == 0 && aggio__sfp_fetch_add(c->fh, n, &pos, &c->pre) == 0)
    c->offset = pos;
}

int aggio__view_byte_offset(aggio_file fh, MPI_Offset offset, MPI_Offset *disp,
                            struct aggio__err *e0) {
  struct aggio__err e = {0};
  struct aggio__extents x = {0};
  if (offset < 0)
    aggio__fail(&e, AGGIO_ERR_OFFSET, "rank %d: negative offset", fh->rank);
  else if (offset > INT64_MAX / fh->view.etype_size ||
           !view_fits(fh, offset * fh->view.etype_size, 1))
    aggio__fail(&e, AGGIO_ERR_OVERFLOW, "rank %d: offset %lld overflows the file's offsets",
                fh->rank, (long long)offset);
  else if (!fh->view.ft)
    *disp = fh->view.disp + offset * fh->view.etype_size;
  else {
    int rc = aggio__flat_map(fh->view.ft, fh->view.disp, offset * fh->view.etype_size, 1, &x);
    if (rc != 0)
      aggio__fail(&e, rc, "rank %d: mapping the view: %s", fh->rank, aggio_strerror(rc));
    else
      *disp = x.v[0].off;
  }
  aggio__extents_free(&x);
  if (e.code != 0 && e0->code == 0)
    *e0 = e;
  return e.code;
}
