/*
 * gen_exec.c - runs one rank's actions of a generated program through
 * gen_io.h and checks each outcome in place: the return code, the count
 * in the status, every byte read against the bytes the program expects
 * (gen_model.h: data is a function of seed, op, rank and file byte), the
 * buffer bytes outside the memory type left alone, a write's buffer left
 * unchanged, get_size against its bound.  Each action leaves one line in
 * the outcome log, written as it completes, so that the runner can
 * compare runs and tell where a hung run stopped.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_exec.h"
#include "gen_io.h"

#define CANARY 0xA5
#define MAX_WAIT 8 /* requests per completion call; gen_build makes at most 3 */

/* An access of this rank from its start to its completion. */
struct slot {
  const struct gen_act *act;
  int start_idx;
  gio_request req;
  char *buf;
  int64_t bufsize;
  MPI_Datatype mem;
};

struct exec {
  const struct gen_exec_env *env;
  const struct gen_program *p;
  int me;
  gio_file fh[GEN_MAX_FILES];
  struct slot *slots;               /* [nops] */
  struct slot split[GEN_MAX_FILES]; /* the active split collective */
  int failures;
};

const char *gen_io_api(void) { return GIO_API; }

void gen_file_path(const char *dir, int f, char *out, size_t cap) {
  snprintf(out, cap, "%s/gen_f%d.dat", dir, f);
}

/* ---- outcomes ----------------------------------------------------------------- */

static void log_line(struct exec *x, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void log_line(struct exec *x, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(x->env->log, fmt, ap);
  va_end(ap);
  fputc('\n', x->env->log);
  fflush(x->env->log); /* a hung run's log ends where it hung */
}

/* A wrong outcome: counted, and said on stderr with the rank. */
static void wrong(struct exec *x, int idx, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void wrong(struct exec *x, int idx, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "gen: rank %d action %d: %s\n", x->me, idx, msg);
  x->failures++;
}

/* "ok" or "fail:..." for rc, counting a failure (a legal program's calls
 * all succeed). */
static const char *outcome(struct exec *x, int idx, const char *call, int rc, char *buf,
                           size_t cap) {
  if (gio_ok(rc))
    return "ok";
  char msg[MPI_MAX_ERROR_STRING + 64];
  gio_describe(rc, buf, cap);
  gio_message(rc, msg, sizeof msg);
  wrong(x, idx, "%s returned %s (%s)", call, buf, msg);
  return buf;
}

/* ---- datatypes ------------------------------------------------------------------ */

static MPI_Datatype etype_of(int esize) { return esize == 4 ? MPI_INT : MPI_BYTE; }

static void free_type(MPI_Datatype *t) {
  if (*t != MPI_BYTE && *t != MPI_INT && *t != MPI_DATATYPE_NULL)
    MPI_Type_free(t);
  *t = MPI_DATATYPE_NULL;
}

/* A committed type of `inner` resized to [0, extent). */
static MPI_Datatype resized(MPI_Datatype inner, MPI_Aint extent) {
  MPI_Datatype t;
  MPI_Type_create_resized(inner, 0, extent, &t);
  MPI_Type_commit(&t);
  MPI_Type_free(&inner);
  return t;
}

/* The filetype gen_view v describes (gen_layout.c has its layout). */
static MPI_Datatype make_filetype(const struct gen_view *v) {
  MPI_Datatype e = etype_of(v->esize), t;
  switch (v->ftype) {
  case GEN_FT_VECTOR:
    MPI_Type_vector(v->nrec, v->rec / v->esize, v->stride / v->esize, e, &t);
    return resized(t, (MPI_Aint)v->nrec * v->stride);
  case GEN_FT_INDEXED:
    MPI_Type_indexed(v->nidx, v->idx_blen, v->idx_displ, e, &t);
    return resized(t, (MPI_Aint)v->tile * v->esize);
  case GEN_FT_SUBARRAY: {
    int sizes[2] = {v->rows, v->cols}, sub[2] = {v->rows, v->ncols},
        starts[2] = {0, v->col0};
    MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, e, &t);
    MPI_Type_commit(&t);
    return t;
  }
  default: return e;
  }
}

static MPI_Datatype make_memtype(const struct gen_memtype *m, int esize) {
  MPI_Datatype t;
  if (!m->vector)
    return etype_of(esize);
  MPI_Type_vector(m->vnb, m->vblen, m->vstride, etype_of(esize), &t);
  MPI_Type_commit(&t);
  return t;
}

/* ---- accesses --------------------------------------------------------------------- */

static const struct gen_view *view_of(const struct exec *x, const struct gen_act *a) {
  return &x->p->views[a->file][x->me][a->acc.view];
}

/* The buffer of access a: its data at the places of the memory type
 * (writes), the canary everywhere (reads, and the gaps of both). */
static int prepare(struct exec *x, const struct gen_act *a, struct slot *s, int idx) {
  const struct gen_view *v = view_of(x, a);
  int64_t *fpos, *mpos, n = gen_access_bytes(&a->acc, v->esize);
  memset(s, 0, sizeof *s);
  s->act = a, s->start_idx = idx;
  s->bufsize = gen_access_buffer(&a->acc, v->esize);
  s->buf = malloc((size_t)s->bufsize + 1);
  if (!s->buf || gen_access_map(v, &a->acc, &fpos, &mpos)) {
    wrong(x, idx, "out of memory");
    return -1;
  }
  memset(s->buf, CANARY, (size_t)s->bufsize);
  for (int64_t i = 0; a->acc.write && i < n; i++)
    s->buf[mpos[i]] = (char)gen_byte(x->p->opt.seed, a->op, x->me, fpos[i]);
  free(fpos);
  free(mpos);
  s->mem = make_memtype(&a->acc.mem, v->esize);
  return 0;
}

/* FNV-1a over the data bytes in stream order. */
static uint64_t fnv(uint64_t h, uint8_t byte) { return (h ^ byte) * 0x100000001b3ull; }

/* Compares the buffer with what it must hold now: the bytes read (reads),
 * the bytes written (writes: the library must not change them), the
 * canary in the gaps.  Returns "ok" or what differs, into out; *sum gets
 * the checksum of the data bytes. */
static const char *check_buffer(struct exec *x, const struct slot *s, uint64_t *sum,
                                char *out, size_t cap) {
  const struct gen_act *a = s->act;
  const struct gen_view *v = view_of(x, a);
  int64_t *fpos, *mpos, n = gen_access_bytes(&a->acc, v->esize);
  char *want = malloc((size_t)s->bufsize + 1);
  *sum = 0xcbf29ce484222325ull;
  if (!want || gen_access_map(v, &a->acc, &fpos, &mpos)) {
    free(want);
    return "out-of-memory";
  }
  memset(want, CANARY, (size_t)s->bufsize);
  for (int64_t i = 0; i < n; i++) {
    uint8_t b =
        a->acc.write ? gen_byte(x->p->opt.seed, a->op, x->me, fpos[i]) : a->expect[i];
    want[mpos[i]] = (char)b;
    *sum = fnv(*sum, (uint8_t)s->buf[mpos[i]]);
  }
  snprintf(out, cap, "ok");
  for (int64_t k = 0; k < s->bufsize; k++) {
    if (s->buf[k] == want[k])
      continue;
    int64_t i = 0; /* the data byte at buffer position k, if any */
    while (i < n && mpos[i] != k)
      i++;
    if (i < n)
      snprintf(out, cap, "BAD:file-byte-%" PRId64 "-got-%u-want-%u", fpos[i],
               (uint8_t)s->buf[k], (uint8_t)want[k]);
    else
      snprintf(out, cap, "BAD:buffer-gap-%" PRId64 "-overwritten", k);
    break;
  }
  free(want);
  free(fpos);
  free(mpos);
  return out;
}

/* The end of an access: return code, count, bytes; one log line. */
static void finish(struct exec *x, struct slot *s, int rc, MPI_Status *st, int idx,
                   const char *call) {
  const struct gen_act *a = s->act;
  char rcbuf[96], data[160];
  int count = -1;
  uint64_t sum = 0;
  const char *rcs = outcome(x, idx, call, rc, rcbuf, sizeof rcbuf);
  const char *ds = "-";
  if (gio_ok(rc)) {
    MPI_Get_count(st, s->mem, &count);
    if (count != a->acc.count)
      wrong(x, idx, "%s op %d: count %d, expected %d", call, a->op, count, a->acc.count);
    ds = check_buffer(x, s, &sum, data, sizeof data);
    if (strcmp(ds, "ok"))
      wrong(x, idx, "%s op %d (started at %d): %s", call, a->op, s->start_idx, ds);
  }
  log_line(x, "%d %s f%d op%d rc=%s count=%d sum=%016" PRIx64 " data=%s", idx, call,
           a->file, a->op, rcs, count, sum, ds);
  free(s->buf);
  free_type(&s->mem);
  s->buf = NULL;
  s->act = NULL;
}

/* MPI_File_get_size of file f: exactly `exact` (>= 0), else at least lo. */
static void check_size(struct exec *x, int f, int64_t exact, int64_t lo, int idx) {
  MPI_Offset size = -1;
  char rcbuf[96];
  int rc = GIO(get_size)(x->fh[f], &size);
  const char *rcs = outcome(x, idx, "MPI_File_get_size", rc, rcbuf, sizeof rcbuf);
  int good = exact >= 0 ? size == exact : size >= lo;
  if (gio_ok(rc) && !good)
    wrong(x, idx, "get_size of file %d: %lld, expected %s%" PRId64, f, (long long)size,
          exact >= 0 ? "" : "at least ", exact >= 0 ? exact : lo);
  /* the size itself only where the program knows it: elsewhere it may
     differ between correct runs */
  if (exact >= 0)
    log_line(x, "%d MPI_File_get_size f%d rc=%s size=%lld %s", idx, f, rcs,
             (long long)size, good ? "ok" : "BAD");
  else
    log_line(x, "%d MPI_File_get_size f%d rc=%s size>=%" PRId64 " %s", idx, f, rcs, lo,
             good ? "ok" : "BAD");
}

/* For an access through the individual pointer: MPI_File_seek when the
 * program says so, then the pointer must be where the program expects
 * it (MPI_File_get_position).  A wrong place is logged and counted. */
static void position_pointer(struct exec *x, const struct gen_act *a, int idx) {
  char rcbuf[96];
  MPI_Offset pos = -1;
  if (a->acc.at)
    return;
  int rc = a->acc.seek ? GIO(seek)(x->fh[a->file], a->acc.offset, MPI_SEEK_SET) : 0;
  if (gio_ok(rc))
    rc = GIO(get_position)(x->fh[a->file], &pos);
  const char *rcs =
      outcome(x, idx, a->acc.seek ? "MPI_File_seek" : "MPI_File_get_position", rc, rcbuf,
              sizeof rcbuf);
  if (gio_ok(rc) && pos != a->acc.offset)
    wrong(x, idx,
          "op %d: the individual pointer of file %d is at %lld, expected %" PRId64, a->op,
          a->file, (long long)pos, a->acc.offset);
  log_line(x, "%d MPI_File_get_position f%d op%d rc=%s pos=%lld %s", idx, a->file, a->op,
           rcs, (long long)pos, pos == a->acc.offset ? "ok" : "BAD");
}

static int call_blocking(struct exec *x, const struct gen_act *a, struct slot *s,
                         MPI_Status *st) {
  gio_file fh = x->fh[a->file];
  MPI_Offset off = a->acc.offset;
  int n = a->acc.count, coll = a->kind == GK_COLL;
  if (a->acc.write && a->acc.at)
    return coll ? GIO(write_at_all)(fh, off, s->buf, n, s->mem, st)
                : GIO(write_at)(fh, off, s->buf, n, s->mem, st);
  if (a->acc.write)
    return coll ? GIO(write_all)(fh, s->buf, n, s->mem, st)
                : GIO(write)(fh, s->buf, n, s->mem, st);
  if (a->acc.at)
    return coll ? GIO(read_at_all)(fh, off, s->buf, n, s->mem, st)
                : GIO(read_at)(fh, off, s->buf, n, s->mem, st);
  return coll ? GIO(read_all)(fh, s->buf, n, s->mem, st)
              : GIO(read)(fh, s->buf, n, s->mem, st);
}

static int call_start(struct exec *x, const struct gen_act *a, struct slot *s) {
  gio_file fh = x->fh[a->file];
  MPI_Offset off = a->acc.offset;
  int n = a->acc.count, coll = a->kind == GK_ICOLL;
  gio_request *rq = &s->req;
  if (a->acc.write && a->acc.at)
    return coll ? GIO(iwrite_at_all)(fh, off, s->buf, n, s->mem, rq)
                : GIO(iwrite_at)(fh, off, s->buf, n, s->mem, rq);
  if (a->acc.write)
    return coll ? GIO(iwrite_all)(fh, s->buf, n, s->mem, rq)
                : GIO(iwrite)(fh, s->buf, n, s->mem, rq);
  if (a->acc.at)
    return coll ? GIO(iread_at_all)(fh, off, s->buf, n, s->mem, rq)
                : GIO(iread_at)(fh, off, s->buf, n, s->mem, rq);
  return coll ? GIO(iread_all)(fh, s->buf, n, s->mem, rq)
              : GIO(iread)(fh, s->buf, n, s->mem, rq);
}

static int call_begin(struct exec *x, const struct gen_act *a, struct slot *s) {
  gio_file fh = x->fh[a->file];
  MPI_Offset off = a->acc.offset;
  int n = a->acc.count;
  if (a->acc.write)
    return a->acc.at ? GIO(write_at_all_begin)(fh, off, s->buf, n, s->mem)
                     : GIO(write_all_begin)(fh, s->buf, n, s->mem);
  return a->acc.at ? GIO(read_at_all_begin)(fh, off, s->buf, n, s->mem)
                   : GIO(read_all_begin)(fh, s->buf, n, s->mem);
}

static int call_end(struct exec *x, const struct gen_act *a, struct slot *s,
                    MPI_Status *st) {
  gio_file fh = x->fh[a->file];
  if (a->acc.write)
    return a->acc.at ? GIO(write_at_all_end)(fh, s->buf, st)
                     : GIO(write_all_end)(fh, s->buf, st);
  return a->acc.at ? GIO(read_at_all_end)(fh, s->buf, st)
                   : GIO(read_all_end)(fh, s->buf, st);
}

/* Blocking accesses, starts, split collectives. */
static void run_access(struct exec *x, const struct gen_act *a, int idx) {
  char rcbuf[96];
  const char *call = gen_call_name(a);
  struct slot local, *s = a->kind == GK_ICOLL || a->kind == GK_IINDEP ? &x->slots[a->op]
                          : a->kind == GK_BEGIN || a->kind == GK_END  ? &x->split[a->file]
                                                                      : &local;
  MPI_Status st;
  int rc;
  if (a->kind == GK_END) {
    s->act = a; /* the same access as _begin's, with the bytes expected */
    rc = call_end(x, a, s, &st);
    finish(x, s, rc, &st, idx, call);
    return;
  }
  if (prepare(x, a, s, idx))
    return;
  position_pointer(x, a, idx);
  if (a->kind == GK_COLL || a->kind == GK_INDEP) {
    rc = call_blocking(x, a, s, &st);
    finish(x, s, rc, &st, idx, call);
    if (a->check_size) /* a rank sees its own write at once */
      check_size(x, a->file, -1, a->size_lo, idx);
    return;
  }
  rc = a->kind == GK_BEGIN ? call_begin(x, a, s) : call_start(x, a, s);
  log_line(x, "%d %s f%d op%d rc=%s", idx, call, a->file, a->op,
           outcome(x, idx, call, rc, rcbuf, sizeof rcbuf));
}

/* ---- completions ------------------------------------------------------------------- */

/* Completes every request of a, the way a says; outcomes[i], st[i]. */
static void complete_requests(const struct gen_act *a, gio_request *rq, int *outcomes,
                              MPI_Status *st) {
  int n = a->nreq, rc, flag = 0, index;
  switch (a->how) {
  case GW_WAIT:
    for (int i = 0; i < n; i++)
      outcomes[i] = gio_wait(&rq[i], &st[i]);
    return;
  case GW_WAITALL:
    rc = gio_waitall(n, rq, st);
    for (int i = 0; i < n; i++)
      outcomes[i] = gio_outcome(rc, &st[i]);
    return;
  case GW_TEST: /* polling, as an application computing between tests */
    do {
      rc = n == 1 ? gio_test(&rq[0], &flag, &st[0]) : gio_testall(n, rq, &flag, st);
      if (!flag && gio_ok(rc))
        usleep(20);
    } while (!flag && gio_ok(rc));
    for (int i = 0; i < n; i++)
      outcomes[i] = n == 1 ? rc : gio_outcome(rc, &st[i]);
    return;
  case GW_WAITANY:
    for (int k = 0; k < n; k++) {
      MPI_Status one;
      rc = gio_waitany(n, rq, &index, &one);
      if (index == MPI_UNDEFINED || index < 0 || index >= n)
        break;
      outcomes[index] = rc, st[index] = one;
    }
    return;
  }
}

static void run_wait(struct exec *x, const struct gen_act *a, int idx) {
  gio_request rq[MAX_WAIT];
  int outcomes[MAX_WAIT];
  MPI_Status st[MAX_WAIT];
  if (a->nreq > MAX_WAIT) {
    wrong(x, idx, "%d requests in one wait, at most %d", a->nreq, MAX_WAIT);
    return;
  }
  for (int i = 0; i < a->nreq; i++) {
    rq[i] = x->slots[a->reqs[i]].req;
    outcomes[i] = -1;
    memset(&st[i], 0, sizeof st[i]);
  }
  complete_requests(a, rq, outcomes, st);
  for (int i = 0; i < a->nreq; i++)
    finish(x, &x->slots[a->reqs[i]], outcomes[i], &st[i], idx, gen_call_name(a));
}

/* ---- the other calls --------------------------------------------------------------- */

static int run_file_call(struct exec *x, const struct gen_act *a) {
  gio_file *fh = &x->fh[a->file];
  char path[4096];
  switch (a->kind) {
  case GK_OPEN:
    gen_file_path(x->env->dir, a->file, path, sizeof path);
    return GIO(open)(x->env->comm[a->comm], path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                     MPI_INFO_NULL, fh);
  case GK_CLOSE: return GIO(close)(fh);
  case GK_SYNC: return GIO(sync)(*fh);
  case GK_SET_SIZE: return GIO(set_size)(*fh, a->size);
  case GK_SET_VIEW: {
    const struct gen_view *v = &x->p->views[a->file][x->me][a->acc.view];
    MPI_Datatype ft = make_filetype(v);
    int rc = GIO(set_view)(*fh, v->disp, etype_of(v->esize), ft, "native", MPI_INFO_NULL);
    free_type(&ft);
    return rc;
  }
  default: return 0;
  }
}

static void run_action(struct exec *x, const struct gen_act *a, int idx) {
  char rcbuf[96];
  const char *call = gen_call_name(a);
  switch (a->kind) {
  case GK_SLEEP:
    usleep((useconds_t)a->usec);
    log_line(x, "%d usleep", idx);
    return;
  case GK_BARRIER:
    log_line(x, "%d MPI_Barrier sp%d rc=%s", idx, a->sp,
             outcome(x, idx, call, MPI_Barrier(MPI_COMM_WORLD), rcbuf, sizeof rcbuf));
    return;
  case GK_GET_SIZE: check_size(x, a->file, a->size, a->size_lo, idx); return;
  case GK_WAIT: run_wait(x, a, idx); return;
  case GK_COLL:
  case GK_ICOLL:
  case GK_BEGIN:
  case GK_END:
  case GK_INDEP:
  case GK_IINDEP: run_access(x, a, idx); return;
  default:
    log_line(x, "%d %s f%d sp%d rc=%s", idx, call, a->file, a->sp,
             outcome(x, idx, call, run_file_call(x, a), rcbuf, sizeof rcbuf));
    return;
  }
}

int gen_execute(const struct gen_exec_env *env) {
  struct exec x = {.env = env, .p = env->p, .me = env->me};
  x.slots = calloc((size_t)env->p->nops + 1, sizeof *x.slots);
  if (!x.slots) {
    fprintf(stderr, "gen: rank %d: out of memory\n", env->me);
    return 1;
  }
  const struct gen_rank_prog *l = &env->p->ranks[env->me];
  for (int i = 0; i < l->n; i++)
    run_action(&x, &l->acts[i], i);
  for (int op = 0; op < env->p->nops; op++) /* left by a failed start */
    free(x.slots[op].buf);
  free(x.slots);
  return x.failures;
}
