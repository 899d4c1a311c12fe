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
 *
 * Two refinements over ROMIO's scheme:
 *   - ranks on the aggregator's node copy into its buffer through shared
 *     memory (shm.c) instead of sending messages: one copy instead of two;
 *   - each aggregator has two buffers and writes one from an I/O thread
 *     while the next round fills the other (pipelining, as in Tessier et
 *     al.'s TAPIOCA), so exchange and file writes overlap.
 */
#include <pthread.h>
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

/* One of an aggregator's two buffers, and the write it may have in flight. */
struct slot {
  char *buf;                  /* shared-memory or private, cb + alignment */
  int64_t lo;                 /* window this buffer holds */
  struct aggio__extents runs; /* covered runs of the window */
  int rmw;                    /* write the span, old bytes read in first */
  pthread_t thread;
  int busy;                   /* an I/O thread is writing it */
  struct aggio__err err;      /* the I/O thread's outcome */
  struct tp *t;
};

struct tp {
  aggio_file fh;
  struct aggio__access *acc;
  struct aggio__err *e;
  int naggr, me;           /* me: my aggregator index, or -1 */
  int64_t *fd_lo, *fd_hi;  /* file domains */
  int64_t cb, nrounds, shift_align; /* cb: bytes per round */
  int shm;                 /* same-node copies through shared memory */
  int pipeline;            /* writes in an I/O thread */
  struct piece_list *mine; /* [naggr]: my ranges in each domain */
  struct aggio__extents *theirs;  /* [nprocs]: ranges of my domain per rank */
  size_t *their_cursor;           /* [nprocs] */
  struct aggio__extents *window;  /* [nprocs]: theirs clipped to this round */
  struct slot slot[2];
  char *private_buf;              /* buffers when shared memory is off */
  char *scratch;                  /* old bytes for read-modify-write */
  int fast;                       /* one node: offsets through mailboxes */
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
  struct aggio__summary mine = {0, 0, 0, 0, acc->prep_error};
  if (!acc->prep_error && acc->file.n > 0) {
    const struct aggio__extent *last = &acc->file.v[acc->file.n - 1];
    mine = (struct aggio__summary){acc->file.v[0].off, last->off + last->len,
                                   acc->nbytes, (int64_t)acc->file.n, 0};
  }
  if (MPI_Allgather(&mine, 5, MPI_INT64_T, all, 5, MPI_INT64_T, fh->comm) != MPI_SUCCESS)
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

/* cb_buffer_size, capped: message block lengths are int. */
static int64_t buffer_bytes(aggio_file fh) {
  int64_t cb = fh->hints.cb_buffer_size.num;
  return cb < (1 << 30) ? cb : (1 << 30);
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

/* Where file offset `off` of a window starting at `lo` lives in a buffer:
 * shifted so that aligned offsets land on aligned memory (O_DIRECT). */
static char *buf_at(const struct tp *t, char *buf, int64_t lo, int64_t off) {
  return buf + (lo % t->shift_align) + (off - lo);
}

/* Buffer s of aggregator i as this rank can reach it through shared memory,
 * or NULL (other node, or shared memory off). */
static char *peer_buffer(const struct tp *t, int i, int s) {
  return t->shm ? aggio__shm_buffer(t->fh, i, s) : NULL;
}

/* 1 if rank r reaches my buffers through shared memory. */
static int same_node(const struct tp *t, int r) {
  aggio_file fh = t->fh;
  return t->shm && fh->leader_of_rank[r] == fh->leader_of_rank[fh->rank];
}

/* This rank's side of round k: for each aggregator, the stream bytes of my
 * pieces inside that aggregator's window, copied through shared memory when
 * the aggregator shares the node, else sent (or received) as one message. */
static int move_mine(struct tp *t, int64_t k, int is_write) {
  char *stream = t->acc->stream;
  for (int i = 0; i < t->naggr; i++) {
    int64_t lo, hi;
    struct piece_list *l = &t->mine[i];
    aggio__round_window(t->fd_lo[i], t->fd_hi[i], t->cb, k, &lo, &hi);
    char *peer = peer_buffer(t, i, (int)(k % 2));
    int n = 0;
    while (l->cursor < l->n && l->v[l->cursor].off + l->v[l->cursor].len <= lo)
      l->cursor++;
    for (size_t j = l->cursor; j < l->n && l->v[j].off < hi; j++) {
      int64_t a = l->v[j].off > lo ? l->v[j].off : lo;
      int64_t b = l->v[j].off + l->v[j].len < hi ? l->v[j].off + l->v[j].len : hi;
      int64_t spos = l->v[j].spos + (a - l->v[j].off);
      if (peer && is_write) {
        memcpy(buf_at(t, peer, lo, a), stream + spos, (size_t)(b - a));
        continue;
      }
      if (peer) {
        memcpy(stream + spos, buf_at(t, peer, lo, a), (size_t)(b - a));
        continue;
      }
      if (ensure_scratch(t, (size_t)n + 1) != 0)
        return AGGIO_ERR_NOMEM;
      t->disps[n] = (MPI_Aint)spos;
      t->blens[n] = (int)(b - a);
      n++;
    }
    if (n > 0 && post(t, stream, n, t->fh->aggr[i], is_write) != MPI_SUCCESS)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

/* The aggregator's side of round k: clip every rank's ranges to the window
 * and compute the covered runs. */
static int clip_window(struct tp *t, struct slot *sl, int64_t lo, int64_t hi) {
  for (int r = 0; r < t->fh->nprocs; r++) {
    aggio__extents_clear(&t->window[r]);
    if (aggio__clip(&t->theirs[r], &t->their_cursor[r], lo, hi, &t->window[r]) != 0)
      return AGGIO_ERR_NOMEM;
  }
  sl->lo = lo;
  return aggio__coverage(t->window, t->fh->nprocs, &sl->runs);
}

/* Local failures are recorded in t->e; the round still runs to the end so
 * that every message a peer posted is matched. */
static void note(struct tp *t, int rc, const char *what) {
  if (rc != 0)
    aggio__fail(t->e, rc, "rank %d: two-phase %s failed: %s", t->fh->rank, what,
                aggio_strerror(rc));
}

/* This aggregator's window of round k, clipped and covered, in slot sl. */
static void plan_window(struct tp *t, struct slot *sl, int64_t k) {
  int64_t lo, hi;
  aggio__round_window(t->fd_lo[t->me], t->fd_hi[t->me], t->cb, k, &lo, &hi);
  note(t, clip_window(t, sl, lo, hi), "planning");
}

/* Messages with the ranks that cannot reach the buffer through shared memory. */
static int post_theirs(struct tp *t, struct slot *sl, int is_send) {
  for (int r = 0; r < t->fh->nprocs; r++) {
    struct aggio__extents *w = &t->window[r];
    if (w->n == 0 || same_node(t, r))
      continue;
    if (ensure_scratch(t, w->n) != 0)
      return AGGIO_ERR_NOMEM;
    for (size_t j = 0; j < w->n; j++) {
      t->disps[j] = (MPI_Aint)(w->v[j].off - sl->lo);
      t->blens[j] = (int)w->v[j].len;
    }
    if (post(t, buf_at(t, sl->buf, sl->lo, sl->lo), (int)w->n, r, is_send) != MPI_SUCCESS)
      return AGGIO_ERR_MPI;
  }
  return 0;
}

static void count_gaps(struct tp *t, const struct slot *sl) {
  struct aggio__stats *s = t->fh->stats;
  if (!s || sl->runs.n < 2)
    return;
  const struct aggio__extent *v = sl->runs.v;
  s->c[AGGIO_C_WRITE_GAPS] += (int64_t)sl->runs.n - 1;
  for (size_t i = 1; i < sl->runs.n; i++)
    s->c[AGGIO_C_WRITE_GAP_BYTES] += v[i].off - (v[i - 1].off + v[i - 1].len);
}

/* Reads [a, b) into the slot's buffer, zeros past end of file. */
static int read_span(struct tp *t, struct slot *sl, int64_t a, int64_t b,
                     struct aggio__err *e) {
  int64_t got = 0;
  char *p = buf_at(t, sl->buf, sl->lo, a);
  int rc = aggio__pread(t->fh, p, b - a, a, &got, AGGIO_IO_AGGREGATOR, e);
  if (rc == 0 && got < b - a)
    memset(p + got, 0, (size_t)(b - a - got));
  return rc;
}

static int64_t span_lo(const struct slot *sl) { return sl->runs.v[0].off; }
static int64_t span_hi(const struct slot *sl) {
  return sl->runs.v[sl->runs.n - 1].off + sl->runs.v[sl->runs.n - 1].len;
}

/* The file write of one slot; runs in the I/O thread when pipelining. */
static int write_slot(struct slot *sl) {
  struct tp *t = sl->t;
  if (sl->runs.n == 0)
    return 0;
  if (sl->rmw)
    return aggio__pwrite(t->fh, buf_at(t, sl->buf, sl->lo, span_lo(sl)),
                         span_hi(sl) - span_lo(sl), span_lo(sl),
                         AGGIO_IO_AGGREGATOR, &sl->err);
  for (size_t i = 0; i < sl->runs.n; i++) {
    const struct aggio__extent *x = &sl->runs.v[i];
    int rc = aggio__pwrite(t->fh, buf_at(t, sl->buf, sl->lo, x->off), x->len,
                           x->off, AGGIO_IO_AGGREGATOR, &sl->err);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static void *write_thread(void *arg) {
  write_slot(arg);
  return NULL;
}

/* Waits for the slot's write, if any, and takes its outcome. */
static void slot_join(struct tp *t, struct slot *sl) {
  if (!sl->busy)
    return;
  pthread_join(sl->thread, NULL);
  sl->busy = 0;
  if (sl->err.code != 0 && t->e->code == 0)
    *t->e = sl->err;
}

/* Writes the slot, in an I/O thread when pipelining: with one thread per
 * slot two writes can be in flight, which keeps the device queue busy
 * (the POSIX layer counts and traces thread-safely). */
static void slot_write(struct tp *t, struct slot *sl) {
  slot_join(t, sl);
  if (t->e->code != 0 || sl->runs.n == 0)
    return; /* after a failure, keep exchanging but write nothing */
  sl->err.code = 0;
  if (t->pipeline && pthread_create(&sl->thread, NULL, write_thread, sl) == 0) {
    sl->busy = 1;
    return;
  }
  write_slot(sl);
  if (sl->err.code != 0)
    *t->e = sl->err;
}

/* After the data arrived: with read-modify-write, the old bytes of the
 * holes between the runs, read in one call over the span into the scratch
 * buffer, so that writing the whole span keeps them. */
static int fill_holes(struct tp *t, struct slot *sl) {
  sl->rmw = sl->runs.n > 1 &&
            aggio__rmw_decide(&sl->runs, sl->lo, sl->lo, (int)t->fh->hints.ds_write.num);
  count_gaps(t, sl);
  if (!sl->rmw || t->e->code != 0)
    return 0;
  slot_join(t, &t->slot[0]); /* no read beside a write in flight */
  slot_join(t, &t->slot[1]);
  int64_t a = span_lo(sl), b = span_hi(sl), got = 0;
  if (!t->scratch)
    t->scratch = malloc((size_t)(buffer_bytes(t->fh) + t->shift_align));
  if (!t->scratch)
    return AGGIO_ERR_NOMEM;
  if (t->fh->stats) {
    t->fh->stats->c[AGGIO_C_RMW_COUNT]++;
    t->fh->stats->c[AGGIO_C_RMW_BYTES] += b - a;
  }
  int rc = aggio__pread(t->fh, t->scratch, b - a, a, &got, AGGIO_IO_AGGREGATOR, t->e);
  if (rc != 0)
    return rc;
  if (got < b - a)
    memset(t->scratch + got, 0, (size_t)(b - a - got));
  for (size_t i = 1; i < sl->runs.n; i++) {
    int64_t h = sl->runs.v[i - 1].off + sl->runs.v[i - 1].len;
    memcpy(buf_at(t, sl->buf, sl->lo, h), t->scratch + (h - a),
           (size_t)(sl->runs.v[i].off - h));
  }
  return 0;
}

static int read_slot(struct tp *t, struct slot *sl) {
  if (t->e->code != 0 || sl->runs.n == 0)
    return 0;
  if (aggio__rmw_decide(&sl->runs, sl->lo, sl->lo, (int)t->fh->hints.ds_read.num))
    return read_span(t, sl, span_lo(sl), span_hi(sl), t->e);
  for (size_t i = 0; i < sl->runs.n; i++) {
    const struct aggio__extent *x = &sl->runs.v[i];
    int rc = read_span(t, sl, x->off, x->off + x->len, t->e);
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

static void node_barrier(struct tp *t) {
  if (!t->shm)
    return;
  double t0 = t->fh->stats ? aggio__now() : 0.0;
  aggio__shm_barrier(t->fh);
  if (t->fh->stats)
    aggio__phase_add(t->fh->stats, AGGIO_P_WAIT, aggio__now() - t0);
}


/* Round k of a write.  Slot k % 2 was last written in round k - 2 (slots
 * are free when a call starts: its writes end before it returns); the first
 * node barrier says every aggregator of the node has it back, the second
 * that every rank has copied its data in. */
static void round_write(struct tp *t, int64_t k) {
  struct slot *sl = &t->slot[k % 2];
  if (t->me >= 0) {
    slot_join(t, sl);
    plan_window(t, sl, k);
  }
  if (k >= 2)
    node_barrier(t);
  if (t->me >= 0)
    note(t, post_theirs(t, sl, 0), "receive");
  note(t, move_mine(t, k, 1), "send");
  note(t, wait_all(t), "exchange");
  node_barrier(t);
  if (t->me >= 0) {
    note(t, fill_holes(t, sl), "read-modify-write read");
    slot_write(t, sl);
  }
}

/* Round k of a read: the aggregator fills slot k % 2, the node barrier says
 * every aggregator of the node has, then ranks copy out.  The slot is
 * refilled in round k + 2, after round k + 1's barrier, which every rank
 * reaches only once it has copied. */
static void round_read(struct tp *t, int64_t k) {
  struct slot *sl = &t->slot[k % 2];
  if (t->me >= 0) {
    plan_window(t, sl, k);
    read_slot(t, sl);
  }
  node_barrier(t);
  if (t->me >= 0)
    note(t, post_theirs(t, sl, 1), "send");
  note(t, move_mine(t, k, 0), "receive");
  note(t, wait_all(t), "exchange");
}

static int reserve_rounds(struct tp *t);

/* ---- one node: offsets through shared-memory mailboxes -------------------- */

/* When every rank shares one node, the offset lists go through mailboxes in
 * the aggregators' shared windows instead of MPI_Alltoall(v), and round 0's
 * node synchronisation doubles as the agreement on set-up: a small
 * collective call costs an allgather, one node-wide allreduce and the final
 * agreement.  Used when each rank has at most FAST_MAX_PIECES ranges (a
 * range can be split at two domain boundaries). */
#define FAST_MAX_PIECES (AGGIO_MAILBOX_CAP - 2)

static void post_offsets(struct tp *t) {
  for (int i = 0; i < t->naggr; i++) {
    int64_t *mb = aggio__shm_mailbox(t->fh, i, t->fh->rank);
    const struct piece_list *l = &t->mine[i];
    mb[0] = (int64_t)l->n;
    for (size_t j = 0; j < l->n; j++) {
      mb[1 + 2 * j] = l->v[j].off;
      mb[2 + 2 * j] = l->v[j].len;
    }
  }
}

static int load_offsets(struct tp *t) {
  for (int r = 0; r < t->fh->nprocs; r++) {
    const int64_t *mb = aggio__shm_mailbox(t->fh, t->me, r);
    if (aggio__extents_reserve(&t->theirs[r], (size_t)mb[0]) != 0)
      return AGGIO_ERR_NOMEM;
    for (int64_t j = 0; j < mb[0]; j++)
      aggio__extents_push(&t->theirs[r], mb[1 + 2 * j], mb[2 + 2 * j]);
  }
  return reserve_rounds(t);
}

/* A node barrier that also says whether any rank failed to set up. */
static int any_failed(struct tp *t, int failed) {
  int any = 0;
  double t0 = t->fh->stats ? aggio__now() : 0.0;
  MPI_Win_sync(t->fh->shm_win);
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, t->fh->shm_comm);
  MPI_Win_sync(t->fh->shm_win);
  if (t->fh->stats)
    aggio__phase_add(t->fh->stats, AGGIO_P_WAIT, aggio__now() - t0);
  return any;
}

/* Round k of a write on one node; returns 1 when the call must stop (a
 * rank failed to set up: every rank learns it in round 0). */
static int fast_round_write(struct tp *t, int64_t k, int failed) {
  struct slot *sl = &t->slot[k % 2];
  if (k >= 2) {
    if (t->me >= 0)
      slot_join(t, sl);
    node_barrier(t);
  }
  if (!failed) {
    if (k == 0)
      post_offsets(t);
    note(t, move_mine(t, k, 1), "copy");
  }
  if (k == 0 && any_failed(t, failed))
    return 1;
  if (k > 0)
    node_barrier(t);
  if (t->me >= 0) {
    if (k == 0)
      note(t, load_offsets(t), "offsets");
    plan_window(t, sl, k);
    note(t, fill_holes(t, sl), "read-modify-write read");
    slot_write(t, sl);
  }
  return 0;
}

/* Round k of a read on one node. */
static int fast_round_read(struct tp *t, int64_t k, int failed) {
  struct slot *sl = &t->slot[k % 2];
  if (k == 0) {
    if (!failed)
      post_offsets(t);
    if (any_failed(t, failed))
      return 1;
    if (t->me >= 0)
      note(t, load_offsets(t), "offsets");
  }
  if (t->me >= 0) {
    plan_window(t, sl, k);
    read_slot(t, sl);
  }
  node_barrier(t);
  note(t, move_mine(t, k, 0), "copy");
  return 0;
}

/* ---- set-up and tear-down ------------------------------------------------- */


/* Buffers: in the node's shared window when same-node copies are on, else
 * private.  Every rank calls this (the window is collective). */
static int setup_buffers(struct tp *t) {
  aggio_file fh = t->fh;
  /* Sized from the file's hints alone, not from this call's plan: every
   * rank must ask for the same window (even one whose set-up failed), and
   * it stays the same from call to call. */
  int64_t align = fh->dio_align > 0 ? fh->dio_align : 4096;
  int64_t slot = aggio__round_up(buffer_bytes(fh) + align, align);
  t->shm = aggio__shm_ensure(fh, slot);
  t->pipeline = fh->hints.pipeline.num != AGGIO_DISABLE;
  for (int s = 0; s < 2; s++) {
    t->slot[s].t = t;
    t->slot[s].err.code = 0;
  }
  if (t->me < 0 || !t->fd_lo || !t->fd_hi)
    return 0;
  if (t->shm) {
    t->slot[0].buf = aggio__shm_buffer(fh, t->me, 0);
    t->slot[1].buf = aggio__shm_buffer(fh, t->me, 1);
    return 0;
  }
  if (t->fd_hi[t->me] <= t->fd_lo[t->me])
    return 0;
  t->private_buf = aggio__alloc_aligned(2 * slot, t->shift_align);
  if (!t->private_buf)
    return AGGIO_ERR_NOMEM;
  t->slot[0].buf = t->private_buf;
  t->slot[1].buf = t->private_buf + slot;
  return 0;
}

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
  t->cb = buffer_bytes(fh);
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
  int64_t largest = 0;
  for (int i = 0; i < t->naggr; i++)
    largest = t->fd_hi[i] - t->fd_lo[i] > largest ? t->fd_hi[i] - t->fd_lo[i] : largest;
  t->cb = aggio__round_size(largest, t->cb, t->shift_align,
                            fh->hints.pipeline.num != AGGIO_DISABLE);
  t->nrounds = aggio__round_count(t->naggr, t->fd_lo, t->fd_hi, t->cb);
  if (fh->stats)
    aggio__stats_set_domains(fh->stats, t->naggr, t->fd_lo, t->fd_hi);
  return split_mine(t);
}

static void teardown(struct tp *t) {
  slot_join(t, &t->slot[0]);
  slot_join(t, &t->slot[1]);
  for (int i = 0; t->mine && i < t->naggr; i++)
    free(t->mine[i].v);
  for (int r = 0; t->theirs && r < t->fh->nprocs; r++)
    aggio__extents_free(&t->theirs[r]);
  for (int r = 0; t->window && r < t->fh->nprocs; r++)
    aggio__extents_free(&t->window[r]);
  aggio__extents_free(&t->slot[0].runs);
  aggio__extents_free(&t->slot[1].runs);
  free(t->fd_lo);
  free(t->fd_hi);
  free(t->mine);
  free(t->theirs);
  free(t->their_cursor);
  free(t->window);
  free(t->req);
  free(t->types);
  free(t->stat);
  free(t->private_buf);
  free(t->scratch);
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
  if (aggio__extents_reserve(&t->slot[0].runs, total) != 0 ||
      aggio__extents_reserve(&t->slot[1].runs, total) != 0)
    return AGGIO_ERR_NOMEM;
  return ensure_scratch(t, most + 1);
}

static void count_rounds(struct tp *t) {
  struct aggio__stats *s = t->fh->stats;
  if (s && t->me >= 0 && t->fd_hi[t->me] > t->fd_lo[t->me]) {
    s->c[AGGIO_C_AGGR_ACTIVE]++;
    s->c[AGGIO_C_COLL_ROUNDS] += t->nrounds;
  }
}

/* One node, offsets through mailboxes; set-up failures are agreed on in
 * round 0. */
static void run_fast(struct tp *t, int failed) {
  if (!failed)
    count_rounds(t);
  for (int64_t k = 0; k < t->nrounds; k++) {
    int stop = t->acc->is_write ? fast_round_write(t, k, failed)
                                : fast_round_read(t, k, failed);
    if (stop)
      break;
  }
}

/* Any nodes: offsets through MPI_Alltoall(v), set-up agreed on with an
 * allreduce before the first round. */
static void run_general(struct tp *t, int rc) {
  /* exchange_offsets is collective: it runs even after a local failure. */
  int rc2 = exchange_offsets(t, rc != 0);
  if (rc == 0)
    rc = rc2;
  if (rc == 0)
    rc = reserve_rounds(t);
  note(t, rc, "set-up");
  if (aggio__agree(t->fh->comm, t->e) != 0)
    return;
  count_rounds(t);
  for (int64_t k = 0; k < t->nrounds; k++) {
    if (t->acc->is_write)
      round_write(t, k);
    else
      round_read(t, k);
  }
}

int aggio__two_phase_run(aggio_file fh, struct aggio__access *acc,
                         const struct aggio__summary *all, struct aggio__err *e) {
  int any = 0, bad = 0;
  int64_t most = 0;
  for (int r = 0; r < fh->nprocs; r++) {
    any |= all[r].nbytes > 0;
    bad |= all[r].error != 0;
    most = all[r].npieces > most ? all[r].npieces : most;
  }
  if (bad || !any)
    return e->code; /* bad arguments somewhere: nobody moves data */
  double t0 = fh->stats ? aggio__now() : 0.0;
  struct tp t = {.fh = fh, .acc = acc, .e = e};
  int rc = setup(&t, all);
  int rc2 = setup_buffers(&t); /* collective: shared window */
  if (rc == 0)
    rc = rc2;
  t.fast = t.shm && fh->single_node && most <= FAST_MAX_PIECES;
  if (fh->stats)
    aggio__phase_add(fh->stats, AGGIO_P_PLAN, aggio__now() - t0);
  if (t.fast) {
    note(&t, rc, "set-up");
    run_fast(&t, rc != 0);
  } else {
    run_general(&t, rc);
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
