/*
 * strategy_two_phase.c - two-phase collective buffering (Thakur, Gropp and
 * Lusk, "Data sieving and collective I/O in ROMIO", 1999).
 *
 * Phase 0: every rank learns every rank's accessed range (one allgather),
 *          the range is split into one file domain per aggregator (plan.c),
 *          and each rank tells each aggregator which byte ranges of its
 *          domain it accesses (one alltoall + alltoallv of offset lists).
 * Then, round by round, every aggregator takes one cb_buffer_size window of
 * its domain: for writes the ranks send their bytes for that window (MPI
 * derived types on both sides, so nothing is packed twice) and the
 * aggregator writes the covered runs in large contiguous calls, or reads,
 * overlays and rewrites the window when the holes are small
 * (read-modify-write keeps the bytes in holes); reads are the mirror image.
 * The aggregator's buffer is laid out so that aligned file offsets fall on
 * aligned memory, letting the POSIX layer use O_DIRECT for the middle.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plan.h"

#define TP_TAG 0x2a61

/* A rank's own range with its position in the data stream. */
struct piece {
  int64_t off, len, spos;
};

struct piece_list {
  struct piece *v;
  size_t n, cap, cursor;
};

struct tp {
  aggio_file fh;
  struct aggio__access *acc;
  struct aggio__err *e;
  int naggr, me;           /* me: my aggregator index, or -1 */
  int64_t *fd_lo, *fd_hi;  /* file domains */
  int64_t cb, nrounds, shift_align;
  struct piece_list *mine; /* [naggr]: my ranges in each domain */
  struct aggio__extents *theirs;  /* [nprocs]: ranges of my domain per rank */
  size_t *their_cursor;           /* [nprocs] */
  struct aggio__extents *window;  /* [nprocs]: theirs clipped to this round */
  struct aggio__extents runs;     /* coverage of this round's window */
  char *buf;                      /* aggregator buffer, cb + alignment */
  MPI_Request *req;
  MPI_Status *stat;
  MPI_Datatype *types;
  int nreq, ntypes;
  int *blens;                     /* scratch for derived types */
  MPI_Aint *disps;
  size_t scratch_cap;
};

static int piece_push(struct piece_list *l, int64_t off, int64_t len, int64_t spos) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    struct piece *v = realloc(l->v, cap * sizeof *v);
    if (!v)
      return AGGIO_ERR_NOMEM;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = (struct piece){off, len, spos};
  return 0;
}

/* ---- phase 0 -------------------------------------------------------------- */

int aggio__gather_summary(aggio_file fh, const struct aggio__access *acc,
                          struct aggio__summary *all, struct aggio__err *e) {
  struct aggio__summary mine = {0, 0, acc->nbytes, (int64_t)acc->file.n};
  if (acc->file.n > 0) {
    mine.lo = acc->file.v[0].off;
    const struct aggio__extent *last = &acc->file.v[acc->file.n - 1];
    mine.hi = last->off + last->len;
  }
  if (MPI_Allgather(&mine, 4, MPI_INT64_T, all, 4, MPI_INT64_T, fh->comm) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allgather failed", fh->rank);
  return 0;
}

/* Splits my ranges at the domain boundaries. */
static int split_mine(struct tp *t) {
  const struct aggio__extents *f = &t->acc->file;
  int64_t spos = 0;
  int d = 0;
  for (size_t i = 0; i < f->n; i++) {
    int64_t off = f->v[i].off, len = f->v[i].len;
    while (len > 0) {
      while (d < t->naggr - 1 && (t->fd_hi[d] <= off || t->fd_lo[d] == t->fd_hi[d]))
        d++;
      int64_t take = t->fd_hi[d] - off;
      if (take > len || d == t->naggr - 1)
        take = len;
      if (piece_push(&t->mine[d], off, take, spos) != 0)
        return AGGIO_ERR_NOMEM;
      off += take;
      spos += take;
      len -= take;
    }
  }
  return 0;
}

/* Tells every aggregator which ranges of its domain this rank accesses. */
static int exchange_offsets(struct tp *t, int failed) {
  aggio_file fh = t->fh;
  int P = fh->nprocs, rc = 0;
  int *scount = calloc((size_t)P, sizeof *scount), *rcount = calloc((size_t)P, sizeof *rcount);
  int *sdisp = calloc((size_t)P, sizeof *sdisp), *rdisp = calloc((size_t)P, sizeof *rdisp);
  int64_t *sbuf = NULL, *rbuf = NULL;
  int64_t stotal = 0, rtotal = 0;
  if (!scount || !rcount || !sdisp || !rdisp)
    rc = AGGIO_ERR_NOMEM;
  for (int i = 0; rc == 0 && !failed && i < t->naggr; i++)
    scount[fh->aggr[i]] = (int)(2 * t->mine[i].n);
  if (rc == 0)
    MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, fh->comm);
  for (int r = 0; rc == 0 && r < P; r++) {
    sdisp[r] = (int)stotal;
    rdisp[r] = (int)rtotal;
    stotal += scount[r];
    rtotal += rcount[r];
  }
  if (rc == 0) {
    sbuf = malloc((size_t)(stotal ? stotal : 1) * sizeof *sbuf);
    rbuf = malloc((size_t)(rtotal ? rtotal : 1) * sizeof *rbuf);
    if (!sbuf || !rbuf)
      rc = AGGIO_ERR_NOMEM;
  }
  for (int i = 0; rc == 0 && !failed && i < t->naggr; i++) {
    int64_t *p = sbuf + sdisp[fh->aggr[i]];
    for (size_t j = 0; j < t->mine[i].n; j++) {
      *p++ = t->mine[i].v[j].off;
      *p++ = t->mine[i].v[j].len;
    }
  }
  /* A rank that failed above still takes part, sending nothing, so that
   * nobody waits for it; the caller agrees on the failure. */
  if (rc != 0) {
    if (scount)
      memset(scount, 0, (size_t)P * sizeof *scount);
    free(sbuf);
    free(rbuf);
    sbuf = rbuf = NULL;
    static int64_t dummy[2];
    if (scount && rcount && sdisp && rdisp)
      MPI_Alltoallv(dummy, scount, sdisp, MPI_INT64_T, dummy, rcount, rdisp,
                    MPI_INT64_T, fh->comm);
  } else {
    MPI_Alltoallv(sbuf, scount, sdisp, MPI_INT64_T, rbuf, rcount, rdisp,
                  MPI_INT64_T, fh->comm);
    if (!t->theirs)
      rc = AGGIO_ERR_NOMEM;
    for (int r = 0; r < P && rc == 0; r++)
      for (int j = 0; j < rcount[r] && rc == 0; j += 2)
        rc = aggio__extents_push(&t->theirs[r], rbuf[rdisp[r] + j], rbuf[rdisp[r] + j + 1]);
  }
  free(scount);
  free(rcount);
  free(sdisp);
  free(rdisp);
  free(sbuf);
  free(rbuf);
  return rc;
}

/* ---- one round ------------------------------------------------------------ */

static int ensure_scratch(struct tp *t, size_t n) {
  if (n <= t->scratch_cap)
    return 0;
  int *b = realloc(t->blens, n * sizeof *b);
  if (!b)
    return AGGIO_ERR_NOMEM;
  t->blens = b;
  MPI_Aint *d = realloc(t->disps, n * sizeof *d);
  if (!d)
    return AGGIO_ERR_NOMEM;
  t->disps = d;
  t->scratch_cap = n;
  return 0;
}

/* Posts one message of n blocks (blens/disps relative to base). */
static int post(struct tp *t, char *base, int n, int peer, int is_send) {
  MPI_Request *r = &t->req[t->nreq++];
  if (n == 1) {
    char *p = base + t->disps[0];
    return is_send ? MPI_Isend(p, t->blens[0], MPI_BYTE, peer, TP_TAG, t->fh->comm, r)
                   : MPI_Irecv(p, t->blens[0], MPI_BYTE, peer, TP_TAG, t->fh->comm, r);
  }
  MPI_Datatype *ty = &t->types[t->ntypes++];
  MPI_Type_create_hindexed(n, t->blens, t->disps, MPI_BYTE, ty);
  MPI_Type_commit(ty);
  return is_send ? MPI_Isend(base, 1, *ty, peer, TP_TAG, t->fh->comm, r)
                 : MPI_Irecv(base, 1, *ty, peer, TP_TAG, t->fh->comm, r);
}

/* This rank's side of round k: for each aggregator, the stream bytes of my
 * pieces inside that aggregator's window. */
static int post_mine(struct tp *t, int64_t k, int is_write) {
  for (int i = 0; i < t->naggr; i++) {
    int64_t lo, hi;
    struct piece_list *l = &t->mine[i];
    aggio__round_window(t->fd_lo[i], t->fd_hi[i], t->cb, k, &lo, &hi);
    int n = 0;
    while (l->cursor < l->n && l->v[l->cursor].off + l->v[l->cursor].len <= lo)
      l->cursor++;
    for (size_t j = l->cursor; j < l->n && l->v[j].off < hi; j++) {
      int64_t a = l->v[j].off > lo ? l->v[j].off : lo;
      int64_t b = l->v[j].off + l->v[j].len < hi ? l->v[j].off + l->v[j].len : hi;
      if (ensure_scratch(t, (size_t)n + 1) != 0)
        return AGGIO_ERR_NOMEM;
      t->disps[n] = (MPI_Aint)(l->v[j].spos + (a - l->v[j].off));
      t->blens[n] = (int)(b - a);
      n++;
    }
    if (n > 0 && post(t, t->acc->stream, n, t->fh->aggr[i], is_write) != MPI_SUCCESS)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

/* Where file offset `off` of window [lo, hi) lives in the aggregator buffer:
 * shifted so that aligned offsets land on aligned memory (O_DIRECT). */
static char *buf_at(const struct tp *t, int64_t lo, int64_t off) {
  return t->buf + (lo % t->shift_align) + (off - lo);
}

/* The aggregator's side of round k: clip every rank's ranges to the window
 * and compute the covered runs. */
static int clip_window(struct tp *t, int64_t lo, int64_t hi) {
  for (int r = 0; r < t->fh->nprocs; r++) {
    aggio__extents_clear(&t->window[r]);
    if (aggio__clip(&t->theirs[r], &t->their_cursor[r], lo, hi, &t->window[r]) != 0)
      return AGGIO_ERR_NOMEM;
  }
  return aggio__coverage(t->window, t->fh->nprocs, &t->runs);
}

static int post_theirs(struct tp *t, int64_t lo, int is_send) {
  char *base = buf_at(t, lo, lo);
  for (int r = 0; r < t->fh->nprocs; r++) {
    struct aggio__extents *w = &t->window[r];
    if (w->n == 0)
      continue;
    if (ensure_scratch(t, w->n) != 0)
      return AGGIO_ERR_NOMEM;
    for (size_t j = 0; j < w->n; j++) {
      t->disps[j] = (MPI_Aint)(w->v[j].off - lo);
      t->blens[j] = (int)w->v[j].len;
    }
    if (post(t, base, (int)w->n, r, is_send) != MPI_SUCCESS)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

static void count_gaps(struct tp *t) {
  struct aggio__stats *s = t->fh->stats;
  if (!s || t->runs.n < 2)
    return;
  const struct aggio__extent *v = t->runs.v;
  s->c[AGGIO_C_WRITE_GAPS] += (int64_t)t->runs.n - 1;
  for (size_t i = 1; i < t->runs.n; i++)
    s->c[AGGIO_C_WRITE_GAP_BYTES] += v[i].off - (v[i - 1].off + v[i - 1].len);
}

/* Reads [a, b) into the buffer, zeros past end of file. */
static int read_span(struct tp *t, int64_t lo, int64_t a, int64_t b) {
  int64_t got = 0;
  char *p = buf_at(t, lo, a);
  int rc = aggio__pread(t->fh, p, b - a, a, &got, AGGIO_IO_AGGREGATOR, t->e);
  if (rc == 0 && got < b - a)
    memset(p + got, 0, (size_t)(b - a - got));
  return rc;
}

static int64_t span_lo(const struct tp *t) { return t->runs.v[0].off; }
static int64_t span_hi(const struct tp *t) {
  return t->runs.v[t->runs.n - 1].off + t->runs.v[t->runs.n - 1].len;
}

/* Before receiving: with read-modify-write, the old bytes of the span. */
static int prepare_write_window(struct tp *t, int64_t lo, int *rmw) {
  *rmw = aggio__rmw_decide(&t->runs, lo, lo, (int)t->fh->hints.ds_write.num);
  count_gaps(t);
  if (!*rmw || t->e->code != 0)
    return 0;
  if (t->fh->stats) {
    t->fh->stats->c[AGGIO_C_RMW_COUNT]++;
    t->fh->stats->c[AGGIO_C_RMW_BYTES] += span_hi(t) - span_lo(t);
  }
  return read_span(t, lo, span_lo(t), span_hi(t));
}

static int write_window(struct tp *t, int64_t lo, int rmw) {
  if (t->e->code != 0 || t->runs.n == 0)
    return 0; /* after a failure, keep exchanging but write nothing */
  if (rmw)
    return aggio__pwrite(t->fh, buf_at(t, lo, span_lo(t)), span_hi(t) - span_lo(t),
                         span_lo(t), AGGIO_IO_AGGREGATOR, t->e);
  for (size_t i = 0; i < t->runs.n; i++) {
    const struct aggio__extent *x = &t->runs.v[i];
    int rc = aggio__pwrite(t->fh, buf_at(t, lo, x->off), x->len, x->off,
                           AGGIO_IO_AGGREGATOR, t->e);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int read_window(struct tp *t, int64_t lo) {
  if (t->e->code != 0 || t->runs.n == 0)
    return 0;
  if (aggio__rmw_decide(&t->runs, lo, lo, (int)t->fh->hints.ds_read.num))
    return read_span(t, lo, span_lo(t), span_hi(t));
  for (size_t i = 0; i < t->runs.n; i++) {
    int rc = read_span(t, lo, t->runs.v[i].off, t->runs.v[i].off + t->runs.v[i].len);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int wait_all(struct tp *t) {
  double t0 = t->fh->stats ? aggio__now() : 0.0;
  int rc = MPI_Waitall(t->nreq, t->req, t->stat);
  for (int i = 0; i < t->ntypes; i++)
    MPI_Type_free(&t->types[i]);
  t->nreq = t->ntypes = 0;
  if (t->fh->stats)
    aggio__phase_add(t->fh->stats, AGGIO_P_EXCHANGE, aggio__now() - t0);
  return rc == MPI_SUCCESS ? 0 : AGGIO_ERR_MPI;
}

/* Local failures are recorded in t->e; the round still runs to the end so
 * that every message a peer posted is matched. */
static void note(struct tp *t, int rc, const char *what) {
  if (rc != 0)
    aggio__fail(t->e, rc, "rank %d: two-phase %s failed: %s", t->fh->rank, what,
                aggio_strerror(rc));
}

static void round_write(struct tp *t, int64_t k) {
  int64_t lo = 0, hi = 0;
  int rmw = 0;
  if (t->me >= 0) {
    aggio__round_window(t->fd_lo[t->me], t->fd_hi[t->me], t->cb, k, &lo, &hi);
    note(t, clip_window(t, lo, hi), "planning");
    note(t, prepare_write_window(t, lo, &rmw), "read-modify-write read");
    note(t, post_theirs(t, lo, 0), "receive");
  }
  note(t, post_mine(t, k, 1), "send");
  note(t, wait_all(t), "exchange");
  if (t->me >= 0)
    write_window(t, lo, rmw);
}

static void round_read(struct tp *t, int64_t k) {
  int64_t lo = 0, hi = 0;
  note(t, post_mine(t, k, 0), "receive");
  if (t->me >= 0) {
    aggio__round_window(t->fd_lo[t->me], t->fd_hi[t->me], t->cb, k, &lo, &hi);
    note(t, clip_window(t, lo, hi), "planning");
    read_window(t, lo);
    note(t, post_theirs(t, lo, 1), "send");
  }
  note(t, wait_all(t), "exchange");
}

/* ---- set-up and tear-down ------------------------------------------------- */

static int setup(struct tp *t, const struct aggio__summary *all) {
  aggio_file fh = t->fh;
  int64_t gmin = INT64_MAX, gmax = 0;
  for (int r = 0; r < fh->nprocs; r++)
    if (all[r].nbytes > 0) {
      gmin = all[r].lo < gmin ? all[r].lo : gmin;
      gmax = all[r].hi > gmax ? all[r].hi : gmax;
    }
  t->naggr = fh->naggr;
  t->me = fh->my_aggr_index;
  t->cb = fh->hints.cb_buffer_size.num;
  t->shift_align = fh->dio_align > 0 ? fh->dio_align : 4096;
  int64_t align = fh->hints.striping_unit.num > 0 ? fh->hints.striping_unit.num : fh->block;
  t->fd_lo = malloc((size_t)t->naggr * sizeof *t->fd_lo);
  t->fd_hi = malloc((size_t)t->naggr * sizeof *t->fd_hi);
  t->mine = calloc((size_t)t->naggr, sizeof *t->mine);
  t->theirs = calloc((size_t)fh->nprocs, sizeof *t->theirs);
  t->their_cursor = calloc((size_t)fh->nprocs, sizeof *t->their_cursor);
  t->window = calloc((size_t)fh->nprocs, sizeof *t->window);
  t->req = malloc((size_t)(t->naggr + fh->nprocs) * sizeof *t->req);
  t->types = malloc((size_t)(t->naggr + fh->nprocs) * sizeof *t->types);
  t->stat = malloc((size_t)(t->naggr + fh->nprocs) * sizeof *t->stat);
  if (!t->fd_lo || !t->fd_hi || !t->mine || !t->theirs || !t->their_cursor ||
      !t->window || !t->req || !t->types || !t->stat)
    return AGGIO_ERR_NOMEM;
  aggio__file_domains(gmin, gmax, t->naggr, align, t->fd_lo, t->fd_hi);
  t->nrounds = aggio__round_count(t->naggr, t->fd_lo, t->fd_hi, t->cb);
  if (t->me >= 0 && t->fd_hi[t->me] > t->fd_lo[t->me]) {
    t->buf = aggio__alloc_aligned(t->cb + t->shift_align, t->shift_align);
    if (!t->buf)
      return AGGIO_ERR_NOMEM;
  }
  return split_mine(t);
}

static void teardown(struct tp *t) {
  for (int i = 0; t->mine && i < t->naggr; i++)
    free(t->mine[i].v);
  for (int r = 0; t->theirs && r < t->fh->nprocs; r++) {
    aggio__extents_free(&t->theirs[r]);
    aggio__extents_free(&t->window[r]);
  }
  aggio__extents_free(&t->runs);
  free(t->fd_lo);
  free(t->fd_hi);
  free(t->mine);
  free(t->theirs);
  free(t->their_cursor);
  free(t->window);
  free(t->req);
  free(t->types);
  free(t->stat);
  free(t->buf);
  free(t->blens);
  free(t->disps);
}

/* After the offsets are exchanged every buffer a round needs exists (the
 * scratch arrays are sized for the largest message), so from here a local
 * failure (a refused write, a full disk) no longer stops the exchanges. */
static int reserve_rounds(struct tp *t) {
  size_t most = 0;
  for (int i = 0; i < t->naggr; i++)
    most = t->mine[i].n > most ? t->mine[i].n : most;
  size_t total = 0;
  for (int r = 0; r < t->fh->nprocs; r++) {
    most = t->theirs[r].n > most ? t->theirs[r].n : most;
    total += t->theirs[r].n;
    if (aggio__extents_reserve(&t->window[r], t->theirs[r].n) != 0)
      return AGGIO_ERR_NOMEM;
  }
  if (aggio__extents_reserve(&t->runs, total) != 0)
    return AGGIO_ERR_NOMEM;
  return ensure_scratch(t, most + 1);
}

int aggio__two_phase_run(aggio_file fh, struct aggio__access *acc,
                         const struct aggio__summary *all, struct aggio__err *e) {
  int any = 0;
  for (int r = 0; r < fh->nprocs; r++)
    any |= all[r].nbytes > 0;
  if (!any)
    return 0;
  double t0 = fh->stats ? aggio__now() : 0.0;
  struct tp t = {.fh = fh, .acc = acc, .e = e};
  int rc = setup(&t, all);
  /* exchange_offsets runs even after a local failure (sending nothing), so
   * that the collective completes; then all ranks agree before any round. */
  int rc2 = exchange_offsets(&t, rc != 0);
  if (rc == 0)
    rc = rc2;
  if (rc == 0)
    rc = reserve_rounds(&t);
  note(&t, rc, "set-up");
  if (aggio__agree(fh->comm, e) != 0) {
    teardown(&t);
    return e->code;
  }
  if (fh->stats) {
    aggio__phase_add(fh->stats, AGGIO_P_PLAN, aggio__now() - t0);
    if (t.me >= 0 && t.buf) {
      fh->stats->c[AGGIO_C_AGGR_ACTIVE]++;
      fh->stats->c[AGGIO_C_COLL_ROUNDS] += t.nrounds;
    }
  }
  for (int64_t k = 0; k < t.nrounds; k++) {
    if (acc->is_write)
      round_write(&t, k);
    else
      round_read(&t, k);
  }
  teardown(&t);
  return e->code;
}

static int two_phase_all(aggio_file fh, struct aggio__access *acc,
                         struct aggio__err *e) {
  if (aggio__gather_summary(fh, acc, fh->summary, e) != 0)
    return e->code;
  return aggio__two_phase_run(fh, acc, fh->summary, e);
}

const struct aggio__strategy_ops aggio__strategy_two_phase = {
    .name = "two_phase",
    .write_all = two_phase_all,
    .read_all = two_phase_all,
};
