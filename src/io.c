/*
 * io.c - the data-access entry points (read/write, at/individual pointer,
 * independent/collective).  Each reduces its arguments to a struct
 * aggio__access (the file ranges from the view, and a contiguous data
 * stream: the user's buffer when its datatype is contiguous, else a packed
 * copy), makes an operation of it and runs it through the engine
 * (engine.h): a blocking call is "start, then wait".
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "call.h"
#include "flatten.h"
#include "open_files.h"
#include "request.h"
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
  if (!c->collective && !fh->opened)
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

static void count_call(const struct call *c, int64_t done) {
  struct aggio__stats *s = c->fh->stats;
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
  if (code == 0 && !c->is_write && c->packed)
    aggio__flat_unpack(c->mem, c->count, acc->stream, done, c->buf);
  if (c->status && c->status != MPI_STATUS_IGNORE)
    MPI_Status_set_elements_x(c->status, MPI_BYTE, (MPI_Count)done);
  if (code == 0 && c->use_fp && !c->fp_at_start)
    fh->fp_ind = c->offset + done / fh->view.etype_size;
  if (fh->stats && code == 0)
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
}

void aggio__call_begin(struct call *c, struct aggio__op *op, int blocking) {
  aggio_file fh = c->fh;
  memset(op, 0, sizeof *op);
  c->t0 = (fh->trace || fh->stats) ? aggio__now() : 0.0;
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
  if (fh->stats) /* from t0 on, the calls' time is tiled by the phases */
    aggio__phase_add(fh->stats, c->packed ? AGGIO_P_PACK : AGGIO_P_PLAN, op->t_mark - c->t0);
}

void aggio__call_end(struct call *c, struct aggio__op *op) {
  finish_call(c, op);
  aggio__op_account(op, AGGIO_P_PACK);
  aggio__op_free(op);
}

static int run_call(struct call *c) {
  aggio_file fh = c->fh;
  if (!fh) {
    struct aggio__err e = {0};
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  /* A collective call completes the file's operations started earlier
   * first, so that its collectives follow theirs in the order every rank
   * started them.  An independent call needs no such order (MPI lets
   * non-blocking operations complete after later calls), and must not
   * wait for a collective operation that a peer, now in MPI_Barrier, may
   * not advance (docs/engine.md, "Liveness"). */
  if (c->collective)
    aggio__requests_settle(fh);
  struct aggio__op op;
  aggio__call_begin(c, &op, 1);
  aggio__op_wait(&op);
  aggio__call_end(c, &op);
  double t1 = fh->stats ? op.t_mark : fh->trace ? aggio__now() : 0.0;
  if (fh->trace)
    aggio__trace_record_locked(fh, aggio__call_trace_op(c, 0), c->offset, c->count,
                               c->type_size, c->t0, t1, c->collective ? 2 : 0);
  if (fh->stats)
    fh->stats->api_time += t1 - c->t0;
  return aggio__finish(&op.err);
}

static int call(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                MPI_Datatype type, MPI_Status *status, int is_write,
                int collective, int use_fp) {
  struct call c = {.fh = fh, .offset = offset, .buf = (void *)buf, .count = count,
                   .type = type, .status = status, .is_write = is_write,
                   .collective = collective, .use_fp = use_fp};
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

/* ---- shared file pointer ---------------------------------------------------- */

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

/* One exclusive prefix sum gives each rank its place and tells the last
 * rank the total and whether any rank's arguments were wrong; the last
 * rank moves the pointer once (not at all after an argument error) and
 * broadcasts where it was: two collectives, whatever the number of ranks.
 * A rank with wrong arguments finds them again when its operation is
 * prepared, and the operation's first reduction agrees that error before
 * any data moves, so only a failure to move the pointer needs c->pre. */
void aggio__call_claim_ordered(struct call *c) {
  aggio_file fh = c->fh;
  int64_t mine[2] = {0, 0}, before[2] = {0, 0}, base[2] = {0, 0};
  struct aggio__err own = {0};
  int last = fh->nprocs - 1;
  if (aggio__call_etypes(c, &mine[0], &own) != 0)
    mine[0] = 0, mine[1] = 1;
  /* the call's entry: posted, while this process's operations progress */
  MPI_Request r;
  if (MPI_Iexscan(mine, before, 2, MPI_INT64_T, MPI_SUM, fh->comm, &r) == MPI_SUCCESS)
    aggio__wait_progress(&r);
  if (fh->rank == 0) /* MPI_Exscan leaves rank 0's result undefined */
    before[0] = before[1] = 0;
  if (fh->rank == last && before[1] + mine[1] == 0 &&
      aggio__sfp_fetch_add(fh, before[0] + mine[0], &base[0], &own) != 0)
    base[1] = own.code;
  MPI_Bcast(base, 2, MPI_INT64_T, last, fh->comm);
  c->offset = base[0] + before[0];
  if (base[1] != 0 && fh->rank == last)
    c->pre = own;
  else if (base[1] != 0)
    aggio__fail(&c->pre, (int)base[1], "rank %d: rank %d could not move the shared file "
                "pointer (%s)", fh->rank, last, aggio_strerror((int)base[1]));
}

static int shared_call(aggio_file fh, const void *buf, int count, MPI_Datatype type,
                       MPI_Status *status, int is_write) {
  struct call c = {.fh = fh, .buf = (void *)buf, .count = count, .type = type,
                   .status = status, .is_write = is_write, .kind = AGGIO_CALL_SHARED};
  if (fh)
    aggio__call_claim_shared(&c);
  return run_call(&c);
}

static int ordered_call(aggio_file fh, const void *buf, int count, MPI_Datatype type,
                        MPI_Status *status, int is_write) {
  struct call c = {.fh = fh, .buf = (void *)buf, .count = count, .type = type,
                   .status = status, .is_write = is_write, .collective = 1,
                   .kind = AGGIO_CALL_ORDERED};
  if (fh) {
    aggio__requests_settle(fh); /* blocking collectives below */
    aggio__call_claim_ordered(&c);
  }
  return run_call(&c);
}

int aggio_file_write_shared(aggio_file fh, const void *buf, int count,
                            MPI_Datatype datatype, MPI_Status *status) {
  return shared_call(fh, buf, count, datatype, status, 1);
}

int aggio_file_read_shared(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                           MPI_Status *status) {
  return shared_call(fh, buf, count, datatype, status, 0);
}

int aggio_file_write_ordered(aggio_file fh, const void *buf, int count,
                             MPI_Datatype datatype, MPI_Status *status) {
  return ordered_call(fh, buf, count, datatype, status, 1);
}

int aggio_file_read_ordered(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                            MPI_Status *status) {
  return ordered_call(fh, buf, count, datatype, status, 0);
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

static int refuse_sequential(aggio_file fh, const char *what, struct aggio__err *e) {
  if (!(fh->amode & MPI_MODE_SEQUENTIAL))
    return 0;
  return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: %s on a file opened "
                     "MPI_MODE_SEQUENTIAL (MPI forbids it)", fh->rank, what);
}

int aggio_file_seek(aggio_file fh, MPI_Offset offset, int whence) {
  struct aggio__err e = {0};
  MPI_Offset base = 0, size = 0;
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  if (refuse_sequential(fh, "seek", &e) != 0)
    return aggio__finish(&e);
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
  else if (refuse_sequential(fh, "get_position", &e) == 0)
    *offset = fh->fp_ind;
  return aggio__finish(&e);
}

/* seek_shared's arguments, and each rank's end of file for MPI_SEEK_END
 * (what a rank's node still holds counts), in one reduction: MIN of each
 * value and of its negation tells whether all ranks agree, and MIN of the
 * error code tells whether any failed. */
enum { SK_OFF, SK_NOFF, SK_WHENCE, SK_NWHENCE, SK_NSIZE, SK_ERR, SK_N };

static void seek_shared_root(aggio_file fh, MPI_Offset offset, int whence,
                             const int64_t *all, int64_t *pos, struct aggio__err *e) {
  int64_t base = 0;
  if (whence == MPI_SEEK_CUR && aggio__sfp_get(fh, &base, e) != 0)
    return;
  if (whence == MPI_SEEK_END)
    base = view_offset_at(fh, -all[SK_NSIZE]);
  if (offset > 0 && base > INT64_MAX - offset)
    aggio__fail(e, AGGIO_ERR_OVERFLOW, "rank 0: seek_shared overflows");
  else if (base + offset < 0)
    aggio__fail(e, AGGIO_ERR_OFFSET, "rank 0: seek_shared to a negative offset");
  else if (aggio__sfp_set(fh, base + offset, e) == 0)
    *pos = base + offset;
}

int aggio_file_seek_shared(aggio_file fh, MPI_Offset offset, int whence) {
  struct aggio__err e = {0};
  MPI_Offset size = 0;
  int64_t pos = -1;
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  double t0 = fh->trace ? aggio__now() : 0.0;
  aggio__requests_settle(fh);
  if (refuse_sequential(fh, "seek_shared", &e) == 0 && whence != MPI_SEEK_SET &&
      whence != MPI_SEEK_CUR && whence != MPI_SEEK_END)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: bad whence %d", fh->rank, whence);
  if (e.code == 0 && whence == MPI_SEEK_END)
    aggio__file_size(fh, &size, &e);
  int64_t mine[SK_N] = {offset, -offset, whence, -whence, -size, e.code}, all[SK_N];
  /* every rank's previous shared accesses are done once this returns; the
   * call's entry: posted, while this process's operations progress */
  if (aggio__allreduce_progress(mine, all, SK_N, MPI_INT64_T, MPI_MIN, fh->comm) != MPI_SUCCESS)
    aggio__fail(&e, AGGIO_ERR_MPI, "rank %d: MPI_Allreduce failed in seek_shared", fh->rank);
  if (e.code == 0 && all[SK_ERR] == 0 &&
      (all[SK_OFF] != -all[SK_NOFF] || all[SK_WHENCE] != -all[SK_NWHENCE]))
    aggio__fail(&e, AGGIO_ERR_NOT_SAME, "rank %d: seek_shared's offset or whence differs "
                "between ranks", fh->rank);
  if (e.code == 0 && all[SK_ERR] == 0 && fh->rank == 0)
    seek_shared_root(fh, offset, whence, all, &pos, &e);
  aggio__agree(fh->comm, &e); /* and no rank moves on before rank 0 has set it */
  if (fh->trace)
    aggio__trace_record_locked(fh, AGGIO_OP_SEEK_SHARED, pos, 0, 0, t0, aggio__now(),
                               AGGIO_TRACE_FLAG_COLLECTIVE);
  return aggio__finish(&e);
}

int aggio_file_get_position_shared(aggio_file fh, MPI_Offset *offset) {
  struct aggio__err e = {0};
  int64_t v = 0;
  if (!fh || !offset)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else if (aggio__sfp_get(fh, &v, &e) == 0)
    *offset = v;
  return aggio__finish(&e);
}

int aggio_file_get_byte_offset(aggio_file fh, MPI_Offset offset, MPI_Offset *disp) {
  struct aggio__err e = {0};
  if (!fh || !disp)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else if (refuse_sequential(fh, "get_byte_offset", &e) == 0)
    aggio__view_byte_offset(fh, offset, disp, &e);
  return aggio__finish(&e);
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
