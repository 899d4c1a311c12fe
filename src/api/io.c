/*
 * io.c - the blocking data-access entry points (read/write, at/individual
 * pointer/shared/ordered, independent/collective), seeks and positions.
 * Each call is reduced to a struct aggio__access (the file ranges from the
 * view, and a contiguous data stream: the user's buffer when its datatype
 * is contiguous, else a packed copy) and made an operation (core/call.c),
 * which the engine runs (engine.h): a blocking call is "start, then wait".
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "flatten.h"
#include "open_files.h"
#include "request.h"
#include "shared_fp.h"

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
  double t1 = fh->obs.stats ? op.t_mark : fh->obs.trace ? aggio__now() : 0.0;
  if (fh->obs.trace)
    aggio__obs_record(&fh->obs, aggio__call_trace_op(c, 0), c->offset, c->count,
                               c->type_size, c->t0, t1, c->collective ? 2 : 0);
  if (fh->obs.stats)
    fh->obs.stats->api_time += t1 - c->t0;
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
  double t0 = fh->obs.trace ? aggio__now() : 0.0;
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
  if (fh->obs.trace)
    aggio__obs_record(&fh->obs, AGGIO_OP_SEEK_SHARED, pos, 0, 0, t0, aggio__now(),
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
