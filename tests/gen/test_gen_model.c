/*
 * test_gen_model.c - the program generator of tests/gen, without MPI:
 * every program built for many seeds and rank counts passes the
 * independent legality check (gen_check.c); the programs contain what
 * they are meant to (cross-file start orders that differ between ranks,
 * waits crossing blocking calls, split collectives, every view shape);
 * the same options build the same program; and programs broken on
 * purpose, one rule at a time, fail the check (a check that cannot fail
 * proves nothing).
 */
#include <stdio.h>
#include <string.h>

#include "gen_model.h"
#include "harness.h"

#define SEEDS 300

static struct gen_program *build_quirks(uint64_t seed, int np, int steps,
                                        unsigned quirks) {
  struct gen_options o = {.seed = seed,
                          .nprocs = np,
                          .steps = steps,
                          .max_files = 3,
                          .me = 0,
                          .quirks = quirks};
  return gen_build(&o);
}

static struct gen_program *build(uint64_t seed, int np, int steps) {
  return build_quirks(seed, np, steps, 0);
}

/* Ranks r and q start non-blocking collectives of two files in different
 * orders within one interval. */
static int orders_differ(const struct gen_program *p, int r, int q) {
  const struct gen_rank_prog *a = &p->ranks[r], *b = &p->ranks[q];
  for (int i = 0; i < a->n; i++)
    for (int j = i + 1; j < a->n && a->acts[j].sp < 0; j++) {
      if (a->acts[i].kind != GK_ICOLL || a->acts[j].kind != GK_ICOLL ||
          a->acts[i].file == a->acts[j].file)
        continue;
      int bi = -1, bj = -1; /* the same two starts on q */
      for (int k = 0; k < b->n; k++) {
        if (b->acts[k].kind == GK_ICOLL && b->acts[k].op == a->acts[i].op)
          bi = k;
        if (b->acts[k].kind == GK_ICOLL && b->acts[k].op == a->acts[j].op)
          bj = k;
      }
      if (bi >= 0 && bj >= 0 && bj < bi)
        return 1;
    }
  return 0;
}

struct coverage {
  int kinds[GK_NKINDS], ftypes[4], vector_mem, cross_orders, waits_after_sp,
      comms[GEN_NCOMMS];
  int how[4];
};

static void count(struct coverage *cv, const struct gen_program *p) {
  for (int r = 0; r < p->opt.nprocs; r++) {
    const struct gen_rank_prog *l = &p->ranks[r];
    for (int i = 0; i < l->n; i++) {
      const struct gen_act *a = &l->acts[i];
      cv->kinds[a->kind]++;
      if (a->kind == GK_OPEN)
        cv->comms[a->comm]++;
      if (a->kind == GK_SET_VIEW)
        cv->ftypes[p->views[a->file][r][a->acc.view].ftype]++;
      if (a->kind == GK_WAIT)
        cv->how[a->how]++;
      cv->vector_mem += a->acc.mem.vector;
    }
    for (int q = r + 1; q < p->opt.nprocs; q++)
      cv->cross_orders += orders_differ(p, r, q);
  }
}

static void test_many_seeds(void) {
  static const int nps[] = {1, 2, 3, 4, 8};
  struct coverage cv;
  memset(&cv, 0, sizeof cv);
  char err[512];
  for (int s = 0; s < SEEDS; s++) {
    int np = nps[s % 5];
    struct gen_program *p = build((uint64_t)s, np, 40);
    CHECK(p != NULL, "seed %d np %d: no program", s, np);
    if (!p)
      continue;
    int rc = gen_check(p, err, sizeof err);
    CHECK(rc == 0, "seed %d np %d: %s", s, np, err);
    count(&cv, p);
    gen_free(p);
  }
  static const enum gen_kind must[] = {GK_SET_VIEW, GK_SYNC,  GK_SET_SIZE, GK_BARRIER,
                                       GK_GET_SIZE, GK_SLEEP, GK_COLL,     GK_ICOLL,
                                       GK_BEGIN,    GK_END,   GK_INDEP,    GK_IINDEP};
  for (size_t k = 0; k < sizeof must / sizeof must[0]; k++)
    CHECK(cv.kinds[must[k]] > 0, "no %s in %d programs", gen_kind_name(must[k]), SEEDS);
  for (int t = 0; t < 4; t++) {
    CHECK(cv.ftypes[t] > 0, "no view of shape %d", t);
    CHECK(cv.how[t] > 0, "no completion of kind %d", t);
  }
  for (int c = 0; c < GEN_NCOMMS; c++)
    CHECK(cv.comms[c] > 0, "no file on communicator %d", c);
  CHECK(cv.vector_mem > 0, "no non-contiguous memory type");
  CHECK(cv.cross_orders > 0,
        "no two ranks started two files' collectives in different orders");
  printf("%d programs: %d cross-file start orders differing between ranks\n", SEEDS,
         cv.cross_orders);
}

/* The same options, the same program, rank by rank. */
static void test_deterministic(void) {
  struct gen_program *a = build(7, 4, 40), *b = build(7, 4, 40);
  CHECK(a && b, "no program");
  if (!a || !b)
    return;
  for (int r = 0; r < 4; r++) {
    CHECK(a->ranks[r].n == b->ranks[r].n, "rank %d: %d vs %d actions", r, a->ranks[r].n,
          b->ranks[r].n);
    for (int i = 0; i < a->ranks[r].n && i < b->ranks[r].n; i++) {
      char da[256], db[256];
      gen_describe(a, r, &a->ranks[r].acts[i], da, sizeof da);
      gen_describe(b, r, &b->ranks[r].acts[i], db, sizeof db);
      if (strcmp(da, db)) {
        CHECK(0, "rank %d action %d: %s vs %s", r, i, da, db);
        break;
      }
    }
  }
  gen_free(a);
  gen_free(b);
}

/* ---- quirks: the restrictions hold, and the programs stay legal --------------- */

/* The index of the wait that completes op after index i of l (l->n: none). */
static int completion(const struct gen_rank_prog *l, int i, int op) {
  for (int k = i + 1; k < l->n; k++)
    for (int q = 0; l->acts[k].kind == GK_WAIT && q < l->acts[k].nreq; q++)
      if (l->acts[k].reqs[q] == op)
        return k;
  return l->n;
}

static int next_sync_point(const struct gen_rank_prog *l, int i) {
  while (++i < l->n && l->acts[i].sp < 0)
    ;
  return i;
}

/* ompio-sync: nothing outstanding, no split collective, at any sync. */
static int sync_quiet(const struct gen_rank_prog *l, int i) {
  int open_split = 0;
  for (int k = 0; k < i; k++) {
    const struct gen_act *a = &l->acts[k];
    open_split += a->kind == GK_BEGIN ? 1 : a->kind == GK_END ? -1 : 0;
    if ((a->kind == GK_ICOLL || a->kind == GK_IINDEP) && completion(l, k, a->op) > i)
      return 0;
  }
  return open_split == 0;
}

static void test_quirks(void) {
  unsigned all = GEN_QUIRK_OMPIO_SYNC | GEN_QUIRK_ROMIO_PROGRESS |
                 GEN_QUIRK_ROMIO_POINTER | GEN_QUIRK_ROMIO_ONE_NBC |
                 GEN_QUIRK_MPICH_TESTALL | GEN_QUIRK_OMPIO_COLL_WRITE;
  unsigned parsed = 0;
  char err[512];
  CHECK(gen_quirks_parse("ompio-sync,ompio-coll-write,romio-progress,romio-pointer,"
                         "romio-one-nbc,mpich-testall",
                         &parsed) == 0 &&
            parsed == all,
        "parsed %u", parsed);
  CHECK(gen_quirks_parse("none", &parsed) == 0 && parsed == 0, "none: %u", parsed);
  CHECK(gen_quirks_parse("romio-progres", &parsed) != 0, "a misspelt quirk accepted");
  for (int s = 0; s < 60; s++) {
    struct gen_program *p = build_quirks((uint64_t)s, 2 + s % 3, 40, all);
    CHECK(p && gen_check(p, err, sizeof err) == 0, "seed %d: %s", s,
          p ? err : "no program");
    for (int r = 0; p && r < p->opt.nprocs; r++) {
      const struct gen_rank_prog *l = &p->ranks[r];
      for (int i = 0; i < l->n; i++) {
        const struct gen_act *a = &l->acts[i];
        if (a->kind == GK_ICOLL && completion(l, i, a->op) > next_sync_point(l, i))
          CHECK(0, "seed %d rank %d: op %d crosses a sync point (romio-progress)", s, r,
                a->op);
        if (a->kind == GK_SYNC && !sync_quiet(l, i))
          CHECK(0, "seed %d rank %d: sync at %d with work outstanding (ompio-sync)", s, r,
                i);
        if (a->kind == GK_WAIT && a->how == GW_TEST && a->nreq > 1)
          CHECK(0, "seed %d rank %d: MPI_Testall at %d (mpich-testall)", s, r, i);
        for (int k = i + 1; a->kind == GK_ICOLL && k < completion(l, i, a->op); k++)
          if (l->acts[k].kind == GK_ICOLL && l->acts[k].file == a->file)
            CHECK(
                0,
                "seed %d rank %d: two collectives outstanding on file %d (romio-one-nbc)",
                s, r, a->file);
      }
    }
    gen_free(p);
  }
}

/* ---- programs broken on purpose ---------------------------------------------- */

/* The index of rank r's first action matching pred after index from, -1. */
static int find(const struct gen_program *p, int r, int from,
                int (*pred)(const struct gen_program *, int, int)) {
  for (int i = from; i < p->ranks[r].n; i++)
    if (pred(p, r, i))
      return i;
  return -1;
}

static void swap_acts(struct gen_program *p, int r, int i, int j) {
  struct gen_act t = p->ranks[r].acts[i];
  p->ranks[r].acts[i] = p->ranks[r].acts[j];
  p->ranks[r].acts[j] = t;
}

static int is_icoll(const struct gen_program *p, int r, int i) {
  return p->ranks[r].acts[i].kind == GK_ICOLL;
}

/* Two starts on one file in one interval: swapped on one rank (R1). */
static int break_same_file_order(struct gen_program *p) {
  for (int i = find(p, 0, 0, is_icoll); i >= 0; i = find(p, 0, i + 1, is_icoll))
    for (int j = i + 1; j < p->ranks[0].n && p->ranks[0].acts[j].sp < 0; j++)
      if (is_icoll(p, 0, j) && p->ranks[0].acts[j].file == p->ranks[0].acts[i].file) {
        swap_acts(p, 0, i, j);
        return 1;
      }
  return 0;
}

/* 1 if rank r starts op as a non-blocking collective. */
static int starts(const struct gen_program *p, int r, int op) {
  for (int k = 0; k < p->ranks[r].n; k++)
    if (p->ranks[r].acts[k].kind == GK_ICOLL && p->ranks[r].acts[k].op == op)
      return 1;
  return 0;
}

/* A wait of a collective that rank 1 shares moved past the next barrier
 * on rank 0 only (R3). */
static int break_barrier_rule(struct gen_program *p) {
  struct gen_rank_prog *l = &p->ranks[0];
  for (int i = 0; i < l->n; i++) {
    if (l->acts[i].kind != GK_WAIT)
      continue;
    int collective = 0;
    for (int q = 0; q < l->acts[i].nreq; q++)
      collective |= starts(p, 0, l->acts[i].reqs[q]) && starts(p, 1, l->acts[i].reqs[q]);
    int b = i + 1;
    while (b < l->n && l->acts[b].sp < 0)
      b++;
    if (!collective || b >= l->n || l->acts[b].kind != GK_BARRIER)
      continue;
    for (int k = i; k < b; k++) /* bubble the wait just past the barrier */
      swap_acts(p, 0, k, k + 1);
    return 1;
  }
  return 0;
}

/* Rank 1 writes where rank 0 writes, in the same collective (R5). */
static int break_overlap(struct gen_program *p) {
  for (int i = 0; i < p->ranks[0].n; i++) {
    struct gen_act *a = &p->ranks[0].acts[i];
    if (a->kind != GK_COLL || !a->acc.write || !a->acc.count || a->acc.view != 0)
      continue;
    for (int j = 0; j < p->ranks[1].n; j++) {
      struct gen_act *b = &p->ranks[1].acts[j];
      if (b->kind == GK_COLL && b->op == a->op && b->acc.view == 0 && b->acc.at &&
          a->acc.at) {
        b->acc = a->acc;
        return 1;
      }
    }
  }
  return 0;
}

/* A plain barrier taken for a sync-barrier-sync, without syncs. */
static int break_consistency(struct gen_program *p) {
  for (int i = 1; i < p->ranks[0].n; i++) {
    struct gen_act *a = &p->ranks[0].acts[i];
    if (a->kind == GK_BARRIER && !a->consistency &&
        p->ranks[0].acts[i - 1].kind != GK_SYNC) {
      for (int r = 0; r < p->opt.nprocs; r++)
        for (int k = 0; k < p->ranks[r].n; k++)
          if (p->ranks[r].acts[k].sp == a->sp)
            p->ranks[r].acts[k].consistency = 1;
      return 1;
    }
  }
  return 0;
}

/* Every sync-barrier-sync taken for a plain barrier: a read of another
 * rank's write, or a write over it, is left unordered (R6). */
static int break_consistency_order(struct gen_program *p) {
  int n = 0;
  for (int r = 0; r < p->opt.nprocs; r++)
    for (int k = 0; k < p->ranks[r].n; k++)
      if (p->ranks[r].acts[k].consistency)
        p->ranks[r].acts[k].consistency = 0, n++;
  return n > 0;
}

/* A blocking independent read moved to where nothing was written, the
 * file's last bytes (R7). */
static int break_read_hole(struct gen_program *p) {
  for (int i = 0; i < p->ranks[0].n; i++) {
    struct gen_act *a = &p->ranks[0].acts[i];
    const struct gen_view *v = a->file >= 0 ? &p->views[a->file][0][a->acc.view] : NULL;
    if (a->kind == GK_INDEP && !a->acc.write && a->acc.at && a->acc.count &&
        v->ftype == GEN_FT_ETYPE && v->disp == 0 &&
        p->files[a->file].size < GEN_FILE_CAP - 8192) {
      a->acc.offset = (GEN_FILE_CAP - 8192) / v->esize;
      return 1;
    }
  }
  return 0;
}

/* The index of rank r's action `kind` of op (-1 if none); a wait counts
 * only when op is its one request. */
static int index_of(const struct gen_program *p, int r, enum gen_kind kind, int op) {
  for (int i = 0; i < p->ranks[r].n; i++) {
    const struct gen_act *a = &p->ranks[r].acts[i];
    if (a->kind == kind &&
        (kind == GK_WAIT ? a->nreq == 1 && a->reqs[0] == op : a->op == op))
      return i;
  }
  return -1;
}

/* Moves rank r's action from index `from` to index `to` (from > to). */
static void move_back(struct gen_program *p, int r, int from, int to) {
  for (int k = from; k > to; k--)
    swap_acts(p, r, k, k - 1);
}

/* Ranks 0 and 1 start X and Y in different orders; each now waits for its
 * first before starting its second: a deadlock in any MPI (R3). */
static int break_wait_before_start(struct gen_program *p) {
  const struct gen_rank_prog *a = &p->ranks[0];
  for (int i = 0; i < a->n; i++)
    for (int j = i + 1; j < a->n && a->acts[j].sp < 0; j++) {
      if (a->acts[i].kind != GK_ICOLL || a->acts[j].kind != GK_ICOLL ||
          a->acts[i].file == a->acts[j].file)
        continue;
      int x = a->acts[i].op, y = a->acts[j].op;
      int x1 = index_of(p, 1, GK_ICOLL, x), y1 = index_of(p, 1, GK_ICOLL, y);
      int wx0 = index_of(p, 0, GK_WAIT, x), wy1 = index_of(p, 1, GK_WAIT, y);
      if (x1 < 0 || y1 < 0 || y1 > x1 || wx0 < 0 || wy1 < 0)
        continue;
      move_back(p, 0, wx0, i + 1);  /* rank 0: start X, wait X, start Y */
      move_back(p, 1, wy1, y1 + 1); /* rank 1: start Y, wait Y, start X */
      return 1;
    }
  return 0;
}

/* A request never completed (R4 at close). */
static int break_missing_wait(struct gen_program *p) {
  struct gen_rank_prog *l = &p->ranks[0];
  for (int i = 0; i < l->n; i++)
    if (l->acts[i].kind == GK_WAIT) {
      l->acts[i].nreq--;
      return 1;
    }
  return 0;
}

static void test_broken(void) {
  static const struct {
    const char *name;
    int (*brk)(struct gen_program *);
  } cases[] = {{"same-file start order", break_same_file_order},
               {"wait across a barrier", break_barrier_rule},
               {"overlapping collective writes", break_overlap},
               {"consistency point without sync", break_consistency},
               {"consistency points as plain barriers", break_consistency_order},
               {"read of bytes never written", break_read_hole},
               {"waits before starts, crosswise", break_wait_before_start},
               {"request never completed", break_missing_wait}};
  char err[512];
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int tried = 0;
    for (int s = 0; s < 200 && !tried; s++) {
      struct gen_program *p = build((uint64_t)s, 2, 40);
      if (p && cases[k].brk(p)) {
        tried = 1;
        CHECK(gen_check(p, err, sizeof err) != 0, "%s (seed %d): the check passed",
              cases[k].name, s);
        printf("%s: %s\n", cases[k].name, err);
      }
      gen_free(p);
    }
    CHECK(tried, "%s: no program to break in 200 seeds", cases[k].name);
  }
}

int main(void) {
  test_many_seeds();
  test_deterministic();
  test_quirks();
  test_broken();
  return test_summary();
}
