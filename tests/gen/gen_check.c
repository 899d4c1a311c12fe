/*
 * gen_check.c - checks a generated program against the legality rules
 * (R1-R7 at the top of gen_build.c), independently of how the builder
 * keeps them: it replays every rank's list of actions, tracking views,
 * individual pointers, requests and split collectives itself, and then
 * checks the orders across ranks and every pair of accesses that touch a
 * common byte.  The builder is conservative; this check is exact, so a
 * builder that got careless fails here (test_gen_model.c, and every
 * gen_program run before it touches a file).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_model.h"

/* One rank's access to one file's bytes, from its start to its
 * completion (indices in the rank's list). */
struct rec {
  int rank, file, write, start, end;
  int set_size;    /* the sync point of a set_size (every member "writes"), or -1 */
  int64_t newsize; /* set_size's size */
  int64_t lo, hi;  /* bounding bytes, to skip most pairs at once */
  int cp_after, cp_before; /* consistency points around it (sp; see order_recs) */
  struct gen_ranges r;
};

struct rank_state {            /* what the replay of one rank tracks */
  int instance[GEN_MAX_FILES]; /* sp of the file's open; -1 closed */
  int view[GEN_MAX_FILES];
  int64_t fp[GEN_MAX_FILES];
  int split_op[GEN_MAX_FILES];
  int split_ptr[GEN_MAX_FILES];
  struct gen_access split_acc[GEN_MAX_FILES];
  int last_sp;
};

struct chk {
  const struct gen_program *p;
  int np, nops, nsp;
  char *err;
  size_t cap;
  int bad;
  struct rec *recs;
  int nrecs, caprecs;
  int *sp_index; /* [r * nsp + sp]: the sync point's index in r's list, or -1 */
  int *sp_kind, *sp_file, *sp_comm, *sp_count; /* [sp] */
  int *start, *end;       /* [r * nops + op]: a request's start and completion, -1 */
  int *rec_of;            /* [r * nops + op]: its record, -1 */
  int *op_file, *op_coll; /* [op] */
  int *op_interval, *op_interval_end; /* [op]: R3, see interval_of_start */
  int *key_count, *key_inst; /* R1: [op] for accesses, [nops + sp] for others, ends */
};

static int fail(struct chk *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int fail(struct chk *c, const char *fmt, ...) {
  if (!c->bad) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
  }
  c->bad = 1;
  return -1;
}

static int is_data(enum gen_kind k) {
  return k == GK_COLL || k == GK_ICOLL || k == GK_BEGIN || k == GK_INDEP ||
         k == GK_IINDEP;
}

static int is_collective(enum gen_kind k) {
  return k != GK_BARRIER && k != GK_GET_SIZE && k != GK_SLEEP && k != GK_INDEP &&
         k != GK_IINDEP && k != GK_WAIT;
}

/* ---- access records --------------------------------------------------------- */

static int add_rec(struct chk *c, int r, int f, int write, int start, int end,
                   struct gen_ranges *fr) {
  if (c->nrecs == c->caprecs) {
    int cap = c->caprecs ? 2 * c->caprecs : 64;
    struct rec *a = realloc(c->recs, (size_t)cap * sizeof *a);
    if (!a)
      return fail(c, "out of memory");
    c->recs = a, c->caprecs = cap;
  }
  struct rec *x = &c->recs[c->nrecs++];
  *x = (struct rec){.rank = r,
                    .file = f,
                    .write = write,
                    .start = start,
                    .end = end,
                    .set_size = -1,
                    .lo = INT64_MAX,
                    .hi = 0,
                    .r = *fr};
  for (int i = 0; i < fr->n; i++) {
    x->lo = fr->off[i] < x->lo ? fr->off[i] : x->lo;
    x->hi = fr->off[i] + fr->len[i] > x->hi ? fr->off[i] + fr->len[i] : x->hi;
  }
  return 0;
}

/* The bytes of access a of rank r on f, after checking its view and, for
 * the individual pointer, that its offset is where the pointer is. */
static int access_bytes(struct chk *c, struct rank_state *st, int r,
                        const struct gen_act *a, struct gen_ranges *fr) {
  int f = a->file;
  if (a->acc.view != st->view[f])
    return fail(c, "rank %d op %d: view %d, but view %d is set", r, a->op, a->acc.view,
                st->view[f]);
  const struct gen_view *v = &c->p->views[f][r][a->acc.view];
  if (!a->acc.at) {
    if (a->acc.seek)
      st->fp[f] = a->acc.offset;
    else if (a->acc.offset != st->fp[f])
      return fail(c, "rank %d op %d: offset %" PRId64 " but the pointer is at %" PRId64,
                  r, a->op, a->acc.offset, st->fp[f]);
    st->fp[f] += gen_access_bytes(&a->acc, v->esize) / v->esize;
  }
  gen_ranges_init(fr);
  if (gen_view_ranges(v, a->acc.offset, gen_access_bytes(&a->acc, v->esize), fr))
    return fail(c, "out of memory");
  for (int i = 0; i < fr->n; i++)
    if (fr->off[i] < 0 || fr->off[i] + fr->len[i] > GEN_FILE_CAP)
      return fail(c, "rank %d op %d: bytes beyond the file cap", r, a->op);
  return 0;
}

/* ---- R1: the same collective sequence per file ------------------------------ */

static int key_of(const struct chk *c, const struct gen_act *a) {
  if (a->kind == GK_END)
    return c->nops + c->nsp + a->op;
  return is_data(a->kind) ? a->op : c->nops + a->sp;
}

/* Counts a collective call; before it is replayed (close ends the opening). */
static void count_key(struct chk *c, int r, const struct rank_state *st,
                      const struct gen_act *a) {
  int k = key_of(c, a), inst = a->kind == GK_OPEN ? a->sp : st->instance[a->file];
  if (c->key_count[k]++ == 0)
    c->key_inst[k] = inst;
  else if (c->key_inst[k] != inst)
    fail(c, "rank %d: %s of file %d in another opening of the file than other ranks", r,
         gen_call_name(a), a->file);
}

/* The next collective call on file f in l from index i that rank `other`
 * makes too (its opening of f has `other` as a member); l->n if none. */
static int next_shared(const struct chk *c, const struct gen_rank_prog *l, int i, int f,
                       int other) {
  for (; i < l->n; i++) {
    const struct gen_act *a = &l->acts[i];
    if (a->file == f && is_collective(a->kind) &&
        gen_comm_member(c->sp_comm[c->key_inst[key_of(c, a)]], other, c->np))
      return i;
  }
  return l->n;
}

/* R1 for ranks ra and rb on file f: the calls both make, in one order. */
static void same_order(struct chk *c, int f, int ra, int rb) {
  const struct gen_rank_prog *A = &c->p->ranks[ra], *B = &c->p->ranks[rb];
  int i = next_shared(c, A, 0, f, rb), j = next_shared(c, B, 0, f, ra);
  for (; i < A->n || j < B->n;
       i = next_shared(c, A, i + 1, f, rb), j = next_shared(c, B, j + 1, f, ra)) {
    if (i >= A->n || j >= B->n || key_of(c, &A->acts[i]) != key_of(c, &B->acts[j])) {
      fail(c,
           "file %d: rank %d calls %s, rank %d calls %s (collectives differ or are out "
           "of order)",
           f, ra, i < A->n ? gen_call_name(&A->acts[i]) : "nothing", rb,
           j < B->n ? gen_call_name(&B->acts[j]) : "nothing");
      return;
    }
  }
}

/* ---- replaying one rank ------------------------------------------------------- */

static int *at(int *arr, const struct chk *c, int r, int op) {
  return &arr[r * c->nops + op];
}

/* R4: no request of rank r outstanding on f, no split collective active. */
static void quiet(struct chk *c, const struct rank_state *st, int r,
                  const struct gen_act *a) {
  for (int op = 0; op < c->nops; op++)
    if (*at(c->start, c, r, op) >= 0 && *at(c->end, c, r, op) < 0 &&
        c->op_file[op] == a->file)
      fail(c, "rank %d: %s on file %d with op %d outstanding", r, gen_call_name(a),
           a->file, op);
  if (st->split_op[a->file] >= 0)
    fail(c, "rank %d: %s on file %d during a split collective", r, gen_call_name(a),
         a->file);
}

/* An access's record; non-blocking ones get their end at completion. */
static void record_access(struct chk *c, struct rank_state *st, int r,
                          const struct gen_act *a, int i, int blocking) {
  struct gen_ranges fr;
  if (st->split_ptr[a->file] && !a->acc.at)
    fail(c, "rank %d op %d: the pointer used during a split collective on it", r, a->op);
  if (access_bytes(c, st, r, a, &fr))
    return;
  if (!blocking)
    *at(c->start, c, r, a->op) = i;
  c->op_file[a->op] = a->file;
  if (!a->acc.count)
    gen_ranges_free(&fr); /* no bytes: nothing to check */
  else if (add_rec(c, r, a->file, a->acc.write, i, blocking ? i : -1, &fr) == 0 &&
           !blocking)
    *at(c->rec_of, c, r, a->op) = c->nrecs - 1; /* its end comes at completion */
}

static void complete(struct chk *c, int r, int op, int i) {
  if (op < 0 || op >= c->nops || *at(c->start, c, r, op) < 0 ||
      *at(c->end, c, r, op) >= 0) {
    fail(c, "rank %d: op %d completed without being outstanding", r, op);
    return;
  }
  *at(c->end, c, r, op) = i;
  if (*at(c->rec_of, c, r, op) >= 0)
    c->recs[*at(c->rec_of, c, r, op)].end = i;
}

static void on_sync_point(struct chk *c, struct rank_state *st, int r,
                          const struct gen_act *a, int i) {
  if (a->sp < 0 || a->sp >= c->nsp || a->sp <= st->last_sp) {
    fail(c, "rank %d: %s with sync point %d after %d (R2)", r, gen_call_name(a), a->sp,
         st->last_sp);
    return;
  }
  st->last_sp = a->sp;
  c->sp_index[r * c->nsp + a->sp] = i;
  if (c->sp_count[a->sp]++ == 0)
    c->sp_kind[a->sp] = a->kind, c->sp_file[a->sp] = a->file;
  else if (c->sp_kind[a->sp] != (int)a->kind || c->sp_file[a->sp] != a->file)
    fail(c, "rank %d: sync point %d is %s here, another call elsewhere (R2)", r, a->sp,
         gen_call_name(a));
}

/* sync-barrier-sync: every file open here synced right before and after. */
static void check_consistency(struct chk *c, const struct rank_state *st, int r, int i) {
  const struct gen_rank_prog *l = &c->p->ranks[r];
  for (int f = 0; f < c->p->nfiles; f++) {
    if (st->instance[f] < 0)
      continue;
    int before = 0, after = 0;
    for (int k = i - 1;
         k >= 0 && (l->acts[k].kind == GK_SYNC || l->acts[k].kind == GK_SLEEP); k--)
      before |= l->acts[k].kind == GK_SYNC && l->acts[k].file == f;
    for (int k = i + 1;
         k < l->n && (l->acts[k].kind == GK_SYNC || l->acts[k].kind == GK_SLEEP); k++)
      after |= l->acts[k].kind == GK_SYNC && l->acts[k].file == f;
    if (!before || !after)
      fail(c, "rank %d: sync-barrier-sync at %d without sync of file %d", r, i, f);
  }
}

/* R3: the sync points around the start on this rank; every member's
 * must leave a common interval (a rank skips the sync points of files it
 * is not a member of).  Checked in check_starts. */
static void interval_of_start(struct chk *c, const struct rank_state *st, int r, int op,
                              int i) {
  const struct gen_rank_prog *l = &c->p->ranks[r];
  int next = INT32_MAX;
  for (int k = i + 1; k < l->n && next == INT32_MAX; k++)
    if (l->acts[k].sp >= 0)
      next = l->acts[k].sp;
  if (c->op_interval[op] == -1 || st->last_sp > c->op_interval[op])
    c->op_interval[op] = st->last_sp;
  if (c->op_interval_end[op] == -1 || next < c->op_interval_end[op])
    c->op_interval_end[op] = next;
}

static void replay_access(struct chk *c, struct rank_state *st, int r,
                          const struct gen_act *a, int i) {
  int f = a->file;
  if (a->kind != GK_INDEP && a->kind != GK_IINDEP && st->split_op[f] >= 0 &&
      a->kind != GK_END)
    fail(c, "rank %d: %s on file %d during a split collective (R4)", r, gen_call_name(a),
         f);
  switch (a->kind) {
  case GK_COLL:
  case GK_INDEP: record_access(c, st, r, a, i, 1); break;
  case GK_ICOLL:
    interval_of_start(c, st, r, a->op, i);
    c->op_coll[a->op] = 1;
    record_access(c, st, r, a, i, 0);
    break;
  case GK_IINDEP: record_access(c, st, r, a, i, 0); break;
  case GK_BEGIN:
    for (int op = 0; op < c->nops; op++)
      if (c->op_coll[op] && c->op_file[op] == f && *at(c->start, c, r, op) >= 0 &&
          *at(c->end, c, r, op) < 0)
        fail(c, "rank %d: split collective on file %d with op %d outstanding (R4)", r, f,
             op);
    record_access(c, st, r, a, i, 0);
    st->split_op[f] = a->op, st->split_ptr[f] = !a->acc.at, st->split_acc[f] = a->acc;
    break;
  case GK_END:
    if (st->split_op[f] != a->op || st->split_acc[f].offset != a->acc.offset ||
        st->split_acc[f].count != a->acc.count)
      fail(c, "rank %d: _end of op %d does not match its _begin", r, a->op);
    complete(c, r, a->op, i);
    st->split_op[f] = -1, st->split_ptr[f] = 0;
    break;
  default: break;
  }
}

static void replay_file_call(struct chk *c, struct rank_state *st, int r,
                             const struct gen_act *a, int i) {
  int f = a->file;
  switch (a->kind) {
  case GK_OPEN:
    if (st->instance[f] >= 0 || !gen_comm_member(a->comm, r, c->np))
      fail(c, "rank %d: opens file %d while open, or not a member", r, f);
    st->instance[f] = a->sp, st->view[f] = 0, st->fp[f] = 0;
    c->sp_comm[a->sp] = a->comm;
    break;
  case GK_SET_VIEW:
    quiet(c, st, r, a);
    st->view[f] = a->acc.view, st->fp[f] = 0;
    if (a->acc.view < 0 || a->acc.view >= c->p->nviews[f][r])
      fail(c, "rank %d: no view %d of file %d", r, a->acc.view, f);
    break;
  case GK_SET_SIZE: {
    quiet(c, st, r, a);
    struct gen_ranges fr;
    gen_ranges_init(&fr);
    if (gen_ranges_add(&fr, a->size_lo, GEN_FILE_CAP - a->size_lo) ||
        add_rec(c, r, f, 1, i, i, &fr)) {
      fail(c, "out of memory");
    } else {
      c->recs[c->nrecs - 1].set_size = a->sp;
      c->recs[c->nrecs - 1].newsize = a->size;
    }
    break;
  }
  case GK_SYNC: quiet(c, st, r, a); break;
  case GK_CLOSE:
    quiet(c, st, r, a);
    st->instance[f] = -1;
    break;
  default: replay_access(c, st, r, a, i); break;
  }
}

static void replay_rank(struct chk *c, int r) {
  const struct gen_rank_prog *l = &c->p->ranks[r];
  struct rank_state st;
  memset(&st, 0, sizeof st);
  st.last_sp = -1;
  for (int f = 0; f < GEN_MAX_FILES; f++)
    st.instance[f] = st.split_op[f] = -1;
  for (int i = 0; i < l->n && !c->bad; i++) {
    const struct gen_act *a = &l->acts[i];
    int f = a->file, blocking = is_collective(a->kind) && a->kind != GK_ICOLL;
    if (blocking || a->kind == GK_BARRIER)
      on_sync_point(c, &st, r, a, i);
    else if (a->sp >= 0)
      fail(c, "rank %d: %s is no sync point", r, gen_call_name(a));
    if (f >= 0 && (f >= c->p->nfiles || (a->kind != GK_OPEN && st.instance[f] < 0))) {
      fail(c, "rank %d: %s on file %d, which is not open", r, gen_call_name(a), f);
      break;
    }
    if (a->kind == GK_BARRIER && a->consistency)
      check_consistency(c, &st, r, i);
    if (f >= 0 && is_collective(a->kind))
      count_key(c, r, &st, a);
    if (a->kind == GK_WAIT)
      for (int k = 0; k < a->nreq; k++)
        complete(c, r, a->reqs[k], i);
    else if (f >= 0 && a->kind != GK_GET_SIZE)
      replay_file_call(c, &st, r, a, i);
  }
  for (int op = 0; op < c->nops && !c->bad; op++)
    if (*at(c->start, c, r, op) >= 0 && *at(c->end, c, r, op) < 0)
      fail(c, "rank %d: op %d never completed", r, op);
  for (int f = 0; f < c->p->nfiles && !c->bad; f++)
    if (st.instance[f] >= 0)
      fail(c, "rank %d: file %d never closed", r, f);
}

/* ---- across ranks ------------------------------------------------------------ */

/* Every collective call made by all members of its opening (R1, R2). */
static void check_counts(struct chk *c) {
  for (int sp = 0; sp < c->nsp && !c->bad; sp++)
    if (c->sp_kind[sp] == GK_BARRIER && c->sp_count[sp] != c->np)
      fail(c, "barrier %d: %d of %d ranks", sp, c->sp_count[sp], c->np);
  for (int k = 0; k < 2 * c->nops + c->nsp && !c->bad; k++) {
    if (!c->key_count[k])
      continue;
    int want = gen_comm_size((enum gen_comm)c->sp_comm[c->key_inst[k]], c->np);
    if (c->key_count[k] != want)
      fail(c, "collective call %d: made by %d ranks of %d", k, c->key_count[k], want);
  }
}

/* R3: every member starts a non-blocking collective in one interval. */
static void check_starts(struct chk *c) {
  for (int op = 0; op < c->nops && !c->bad; op++)
    if (c->op_coll[op] && c->op_interval[op] >= c->op_interval_end[op])
      fail(c, "op %d: members start it in different intervals (R3)", op);
}

/* R3: for each barrier after a non-blocking collective's start, every
 * member completes it before the barrier or none does. */
static void check_barriers(struct chk *c) {
  for (int b = 0; b < c->nsp; b++) {
    if (c->sp_kind[b] != GK_BARRIER)
      continue;
    for (int op = 0; op < c->nops && !c->bad; op++) {
      int seen = -1;
      for (int r = 0; r < c->np && c->op_coll[op]; r++) {
        int si = *at(c->start, c, r, op), bi = c->sp_index[r * c->nsp + b];
        if (si < 0 || si > bi)
          continue; /* not a member, or started after the barrier */
        int before = *at(c->end, c, r, op) < bi;
        if (seen >= 0 && before != seen)
          fail(c, "op %d: completed before barrier %d on some ranks only (R3)", op, b);
        seen = before;
      }
    }
  }
}

/* ---- R5-R7: bytes --------------------------------------------------------------- */

/* The consistency points (sync-barrier-sync) just after a record's end
 * and just before its start on its rank: INT32_MAX / -1 when none. */
static void order_recs(struct chk *c) {
  for (int k = 0; k < c->nrecs; k++) {
    struct rec *x = &c->recs[k];
    x->cp_after = INT32_MAX, x->cp_before = -1;
    for (int sp = 0; sp < c->nsp; sp++) {
      int idx = c->sp_index[x->rank * c->nsp + sp];
      if (c->sp_kind[sp] != GK_BARRIER || idx < 0 ||
          !c->p->ranks[x->rank].acts[idx].consistency)
        continue;
      if (idx > x->end && sp < x->cp_after)
        x->cp_after = sp;
      if (idx < x->start)
        x->cp_before = sp;
    }
  }
}

/* a is over before b starts: on one rank, completed before b's start; on
 * two, a sync-barrier-sync between a's completion and b's start (R6). */
static int before(const struct rec *a, const struct rec *b) {
  if (a->rank == b->rank)
    return a->end < b->start;
  return a->cp_after <= b->cp_before;
}

/* R5, R6: every two accesses to a common byte, one of them a write, are
 * ordered. */
static void check_conflicts(struct chk *c) {
  for (int i = 0; i < c->nrecs && !c->bad; i++)
    for (int j = i + 1; j < c->nrecs && !c->bad; j++) {
      const struct rec *a = &c->recs[i], *b = &c->recs[j];
      if (a->file != b->file || !(a->write || b->write) || a->hi <= b->lo ||
          b->hi <= a->lo)
        continue;
      if (a->set_size >= 0 && a->set_size == b->set_size)
        continue; /* one set_size, made by every member */
      if (gen_ranges_overlap(&a->r, &b->r) && !before(a, b) && !before(b, a))
        fail(c,
             "file %d: rank %d's %s at %d and rank %d's %s at %d touch a common byte "
             "unordered (R5/R6)",
             a->file, a->rank, a->write ? "write" : "read", a->start, b->rank,
             b->write ? "write" : "read", b->start);
    }
}

/* Where a write's bytes stop counting for a read: the smallest size a
 * set_size over after the write and before the read cut the file to. */
static int64_t truncated_at(const struct chk *c, const struct rec *w,
                            const struct rec *rd) {
  int64_t lim = INT64_MAX;
  for (int k = 0; k < c->nrecs; k++) {
    const struct rec *s = &c->recs[k];
    if (s->set_size >= 0 && s->file == w->file && s->newsize < lim && before(w, s) &&
        before(s, rd))
      lim = s->newsize;
  }
  return lim;
}

/* R7: every byte a read reads was written by an access over before it
 * (and not cut off by a set_size since): MPI leaves other bytes undefined. */
static void check_reads_written(struct chk *c) {
  for (int i = 0; i < c->nrecs && !c->bad; i++) {
    const struct rec *rd = &c->recs[i];
    if (rd->write)
      continue;
    uint8_t *cov = calloc((size_t)(rd->hi - rd->lo) + 1, 1);
    if (!cov) {
      fail(c, "out of memory");
      return;
    }
    for (int j = 0; j < c->nrecs; j++) {
      const struct rec *w = &c->recs[j];
      if (!w->write || w->set_size >= 0 || w->file != rd->file || w->hi <= rd->lo ||
          rd->hi <= w->lo || !before(w, rd))
        continue;
      int64_t lim = truncated_at(c, w, rd);
      for (int k = 0; k < w->r.n; k++)
        for (int64_t b = w->r.off[k]; b < w->r.off[k] + w->r.len[k] && b < lim; b++)
          if (b >= rd->lo && b < rd->hi)
            cov[b - rd->lo] = 1;
    }
    for (int k = 0; k < rd->r.n && !c->bad; k++)
      for (int64_t b = rd->r.off[k]; b < rd->r.off[k] + rd->r.len[k]; b++)
        if (!cov[b - rd->lo]) {
          fail(c,
               "file %d: rank %d reads byte %" PRId64 " at %d, not written before (R7)",
               rd->file, rd->rank, b, rd->start);
          break;
        }
    free(cov);
  }
}

/* An exact get_size: after a sync-barrier-sync, before the barrier that
 * lets any rank access a file again. */
static void check_exact_sizes(struct chk *c) {
  for (int r = 0; r < c->np && !c->bad; r++) {
    const struct gen_rank_prog *l = &c->p->ranks[r];
    for (int i = 0; i < l->n && !c->bad; i++) {
      if (l->acts[i].kind != GK_GET_SIZE || l->acts[i].size < 0)
        continue;
      int from = -1, to = -1;
      for (int k = i - 1; k >= 0 && from < 0; k--)
        if (l->acts[k].kind == GK_BARRIER)
          from = l->acts[k].consistency ? l->acts[k].sp : INT32_MAX;
      for (int k = i + 1; k < l->n && to < 0; k++)
        if (l->acts[k].kind == GK_BARRIER)
          to = l->acts[k].sp;
      if (from < 0 || from == INT32_MAX || to < 0) {
        fail(
            c,
            "rank %d: exact get_size at %d not between a sync-barrier-sync and a barrier",
            r, i);
        return;
      }
      for (int q = 0; q < c->np; q++) {
        const struct gen_rank_prog *m = &c->p->ranks[q];
        for (int k = c->sp_index[q * c->nsp + from]; k < c->sp_index[q * c->nsp + to];
             k++)
          if (is_data(m->acts[k].kind) || m->acts[k].kind == GK_WAIT ||
              m->acts[k].kind == GK_END)
            fail(c, "rank %d: exact get_size at %d while rank %d accesses at %d", r, i, q,
                 k);
      }
    }
  }
}

/* ---- no deadlock in any MPI library ------------------------------------------- */

/* The wait-for graph: node (r, i) is "rank r has finished its action i".
 * It needs (r, i - 1); a completion of a collective needs every member to
 * have started it (a start returns at once); a sync point needs every
 * participant to have arrived (finished the action before it).  Given MPI's
 * progress rule (R3 keeps the barrier case apart), a cycle is a deadlock
 * whatever the library does, and no cycle means none. */

/* The k-th dependency of (r, i), counting from *k; 0 when there is none. */
static int next_dep(const struct chk *c, int r, int i, int *k, int *s, int *j) {
  const struct gen_act *a = &c->p->ranks[r].acts[i];
  int nwait = a->kind == GK_WAIT ? a->nreq * c->np : 0;
  for (; *k < 1 + nwait + c->np; (*k)++) {
    int k0 = *k;
    if (k0 == 0) {
      *s = r, *j = i - 1;
    } else if (k0 <= nwait) {
      int op = a->reqs[(k0 - 1) / c->np];
      *s = (k0 - 1) % c->np;
      *j = op >= 0 && op < c->nops && c->op_coll[op] ? *at(c->start, c, *s, op) : -1;
    } else {
      *s = k0 - 1 - nwait;
      *j = a->sp >= 0 && *s != r ? c->sp_index[*s * c->nsp + a->sp] : -1;
      *j = *j >= 0 ? *j - 1 : -1; /* arrived: finished the action before */
    }
    if (*j >= 0 && !(*s == r && *j >= i)) {
      (*k)++;
      return 1;
    }
  }
  return 0;
}

static void check_deadlock(struct chk *c) {
  int total = 0, *base = malloc(((size_t)c->np + 1) * sizeof *base);
  for (int r = 0; base && r < c->np; r++)
    base[r] = total, total += c->p->ranks[r].n;
  char *color = calloc((size_t)total + 1, 1); /* 0 new, 1 on the path, 2 done */
  int *stack = malloc(((size_t)total + 1) * 3 * sizeof *stack); /* (r, i, k) */
  if (!base || !color || !stack) {
    fail(c, "out of memory");
    total = 0;
  }
  for (int r0 = 0; r0 < c->np && !c->bad; r0++)
    for (int i0 = 0; i0 < c->p->ranks[r0].n && !c->bad; i0++) {
      if (color[base[r0] + i0])
        continue;
      int top = 0;
      stack[0] = r0, stack[1] = i0, stack[2] = 0, color[base[r0] + i0] = 1;
      while (top >= 0 && !c->bad) {
        int *f = &stack[3 * top], s, j;
        if (!next_dep(c, f[0], f[1], &f[2], &s, &j)) {
          color[base[f[0]] + f[1]] = 2;
          top--;
        } else if (color[base[s] + j] == 1) {
          fail(
              c,
              "deadlock: a cycle of waits through rank %d's action %d (%s) and rank %d's "
              "action %d",
              s, j, gen_call_name(&c->p->ranks[s].acts[j]), f[0], f[1]);
        } else if (color[base[s] + j] == 0) {
          color[base[s] + j] = 1;
          top++;
          stack[3 * top] = s, stack[3 * top + 1] = j, stack[3 * top + 2] = 0;
        }
      }
    }
  free(base);
  free(color);
  free(stack);
}

/* ---- the check ------------------------------------------------------------------ */

static int alloc_tables(struct chk *c) {
  size_t ops = (size_t)c->np * (size_t)c->nops + 1, sps = (size_t)c->nsp + 1;
  size_t keys = 2 * (size_t)c->nops + sps;
  int **ones[] = {&c->sp_index,    &c->start,           &c->end,     &c->rec_of,
                  &c->sp_kind,     &c->sp_file,         &c->sp_comm, &c->op_file,
                  &c->op_interval, &c->op_interval_end, &c->key_inst};
  size_t nop = (size_t)c->nops + 1;
  size_t sizes[] = {
      (size_t)c->np * sps, ops, ops, ops, sps, sps, sps, nop, nop, nop, keys};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    if (!(*ones[k] = malloc(sizes[k] * sizeof(int))))
      return -1;
    memset(*ones[k], 0xff, sizes[k] * sizeof(int)); /* -1 */
  }
  c->sp_count = calloc(sps, sizeof(int));
  c->op_coll = calloc((size_t)c->nops + 1, sizeof(int));
  c->key_count = calloc(keys, sizeof(int));
  return c->sp_count && c->op_coll && c->key_count ? 0 : -1;
}

static void free_tables(struct chk *c) {
  int *all[] = {c->sp_index, c->start,    c->end,     c->rec_of,      c->sp_kind,
                c->sp_file,  c->sp_comm,  c->op_file, c->op_interval, c->op_interval_end,
                c->key_inst, c->sp_count, c->op_coll, c->key_count};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    free(all[k]);
  for (int k = 0; k < c->nrecs; k++)
    gen_ranges_free(&c->recs[k].r);
  free(c->recs);
}

int gen_check(const struct gen_program *p, char *err, size_t cap) {
  struct chk c = {.p = p,
                  .np = p->opt.nprocs,
                  .nops = p->nops,
                  .nsp = p->nsp,
                  .err = err,
                  .cap = cap};
  if (cap)
    err[0] = 0;
  if (alloc_tables(&c))
    fail(&c, "out of memory");
  for (int r = 0; r < c.np && !c.bad; r++)
    replay_rank(&c, r);
  if (!c.bad)
    check_counts(&c);
  for (int f = 0; f < p->nfiles && !c.bad; f++)
    for (int a = 0; a < c.np; a++)
      for (int b = a + 1; b < c.np && !c.bad; b++)
        same_order(&c, f, a, b);
  if (!c.bad)
    check_starts(&c);
  if (!c.bad)
    check_barriers(&c);
  if (!c.bad) {
    order_recs(&c);
    check_conflicts(&c);
    check_reads_written(&c);
    check_deadlock(&c);
    check_exact_sizes(&c);
  }
  free_tables(&c);
  return c.bad ? -1 : 0;
}
