/*
 * gen_build.c - builds a random *legal* MPI-IO program from a seed: the
 * same program on every rank (every rank runs this with the same seed and
 * keeps its own list of actions).  Legal by construction, by the rules
 * below; gen_check.c checks the result against the same rules,
 * independently, and test_gen_model.c runs that check for many seeds.
 *
 * THE LEGALITY RULES (MPI 3.1 chapter 13, made concrete; docs/testing.md)
 *
 *  R1 Per file, the sequence of collective calls (open, set_view, the
 *     collective accesses and their starts, split _begin/_end, sync,
 *     set_size, close) is the same on every member rank.
 *  R2 Blocking collective calls (file collectives and MPI_Barrier) are
 *     "sync points" and occur in one global order, the same on every rank
 *     (a rank skips those of files it is not a member of).  Between two sync
 *     points (an "interval") each rank interleaves, in its own order, the
 *     starts of non-blocking collectives of different files, independent
 *     accesses, waits, and computation.
 *  R3 A non-blocking collective is started by every member in the same
 *     interval.  Its completion may come later, at a rank-dependent place,
 *     except across an application MPI_Barrier: for each such barrier after
 *     the start, every member completes it before the barrier or none does
 *     (below MPI_THREAD_MULTIPLE, MPI-IO implementations advance their
 *     operations only inside I/O calls; a rank blocked in MPI_Barrier cannot).
 *     Completions may cross the blocking MPI-IO calls of any file.  Within
 *     an interval a rank completes a collective started in it only after
 *     all of the interval's starts: a collective completes only once every
 *     member has started it, so a rank waiting for X before starting Y
 *     while another waits for Y before starting X is a deadlock in any MPI.
 *  R4 Before set_view, sync, set_size or close of a file a rank has
 *     completed its requests on that file; split collectives: at most one
 *     active per file; while one is active no other collective call is made
 *     on that file, and it starts only when the file's non-blocking
 *     collectives are complete on every member; while a split collective
 *     that uses the individual pointer is active, that pointer is not used.
 *  R5 No two accesses that may be in flight at once touch a common byte if
 *     either writes: a collective's ranks write disjoint bytes, and an
 *     access never overlaps an outstanding write or, if it writes, any
 *     outstanding access.
 *  R6 A byte another rank wrote is read or rewritten only after a
 *     sync-barrier-sync (every rank syncs every open file it is a member
 *     of, MPI_Barrier, syncs again: MPI's consistency rule for non-atomic
 *     mode) that follows the write's completion; a byte another rank read
 *     is rewritten only after one too.  A rank's own earlier access needs
 *     only to be complete.  set_size comes right after a sync-barrier-sync
 *     and counts as every member writing from the first byte it changes on.
 *  R7 A read reads only bytes written before it (by the reader, complete,
 *     or by anyone before a sync-barrier-sync, R6): MPI leaves the bytes
 *     of a file that were never written undefined (holes, the region
 *     set_size adds; MPICH's ROMIO fills them with whatever its buffers
 *     held), and a read past the end returns a short count.
 *  R8 Data written is a pure function of (seed, op, rank, file byte):
 *     gen_byte(); reads are checked against it in place.
 *
 * The quirks (gen_model.h, GEN_QUIRKS) restrict the programs further, to
 * keep clear of a reference library's known deviations from MPI.
 *
 * How the builder keeps them, conservatively: every access holds a
 * "claim" on its bytes from its start until the end of the interval in
 * which its rank completes it (R5), and a per-byte record of who wrote and
 * read it since the last sync-barrier-sync (R6); a candidate access that
 * breaks either is tried elsewhere, and after a few tries becomes an empty
 * access (count 0), which every rule allows.
 */
#include <stdlib.h>
#include <string.h>

#include "gen_model.h"
#include "rng.h"

/* A byte's writer since the last consistency point (fstate.ew): a rank,
 * nobody, or nobody may touch it until the next consistency point
 * (set_size changed it, or, with ompio-coll-write, a collective wrote it). */
#define EW_NONE (-1)
#define EW_LOCKED (-2)
#define TRIES 8 /* places tried for an access before it becomes an empty one */

struct claim { /* an access's bytes while it may be in flight (R5) */
  int op, rank, file, write, done;
  struct gen_ranges r;
};

struct pending { /* a started request of one rank */
  int op, rank, file, coll, pointer;
  int partial; /* a collective some member has completed already */
};

struct fstate {
  int open;
  enum gen_comm comm;
  int split_op; /* the active split collective, or -1 */
  int split_ptr;
  struct gen_act split_end[GEN_MAX_RANKS]; /* each member's _end, made at _begin */
  int64_t fp[GEN_MAX_RANKS];               /* individual pointers, in etypes */
  int view[GEN_MAX_RANKS];
  int ptr_used[GEN_MAX_RANKS];     /* this interval: at most one pointer access */
  int coll_started[GEN_MAX_RANKS]; /* this interval: a non-blocking collective */
  /* the file's bytes: last writer, and R6's record since the last
     consistency point */
  int32_t *wop;
  int8_t *wrank, *ew;
  uint16_t *er;
  int64_t size;                    /* after every write generated so far */
  int64_t committed;               /* at the last consistency point */
  int64_t recent[16], written[16]; /* offsets of recent accesses, writes */
  int nrecent, nwritten;
};

struct gen {
  struct gen_program *p;
  rng_t rng;
  int np, me;
  struct fstate f[GEN_MAX_FILES];
  struct claim *claims;
  int nclaims, capclaims;
  struct pending *pend;
  int npend, cappend;
  int failed; /* out of memory: the build returns NULL */
};

/* What the interval before a sync point must complete (R3, R4). */
struct need {
  int all;       /* every request (a consistency point, the end) */
  int file_all;  /* every request on this file, or -1 */
  int file_coll; /* every collective request on this file, or -1 */
  int barrier;   /* an MPI_Barrier: each collective all-or-none */
};

/* ---- small helpers --------------------------------------------------------- */

static int pick(struct gen *g, int lo, int hi) { return (int)rng_range(&g->rng, lo, hi); }
static int coin(struct gen *g, int percent) { return pick(g, 0, 99) < percent; }
static int quirk(struct gen *g, unsigned q) { return (g->p->opt.quirks & q) != 0; }
static int member(struct gen *g, int f, int r) {
  return g->f[f].open && gen_comm_member(g->f[f].comm, r, g->np);
}

static void *grow(struct gen *g, void *arr, int *cap, int n, size_t elem) {
  if (n < *cap)
    return arr;
  int c = *cap ? 2 * *cap : 16;
  void *a = realloc(arr, (size_t)c * elem);
  if (!a) {
    g->failed = 1;
    return NULL;
  }
  *cap = c;
  return a;
}

/* A new action at the end of l (zeroed; no file, op or sync point), or
 * NULL when out of memory. */
static struct gen_act *list_push(struct gen *g, struct gen_rank_prog *l) {
  struct gen_act *a = grow(g, l->acts, &l->cap, l->n, sizeof *a);
  if (!a)
    return NULL;
  l->acts = a;
  memset(&a[l->n], 0, sizeof *a);
  a[l->n].file = a[l->n].op = a[l->n].sp = -1;
  return &a[l->n++];
}

static struct gen_act *push(struct gen *g, int r, enum gen_kind k, int f) {
  struct gen_act *a = list_push(g, &g->p->ranks[r]);
  if (a) {
    a->kind = k;
    a->file = f;
  }
  return a;
}

/* Rank r's action of sync point sp (NULL if r is not a member). */
static struct gen_act *sp_act(struct gen *g, int r, int sp) {
  struct gen_rank_prog *l = &g->p->ranks[r];
  return l->n && l->acts[l->n - 1].sp == sp ? &l->acts[l->n - 1] : NULL;
}

/* A sleep of a random rank before a sync point: a late rank. */
static void maybe_late_rank(struct gen *g, int f) {
  if (!coin(g, 20))
    return;
  int r = pick(g, 0, g->np - 1);
  struct gen_act *a;
  if ((f < 0 || member(g, f, r)) && (a = push(g, r, GK_SLEEP, -1)))
    a->usec = pick(g, 500, 5000);
}

/* One sync point: action kind k on file f (-1: MPI_Barrier on the world)
 * for every member, in the global order (R2). */
static int sync_point(struct gen *g, enum gen_kind k, int f) {
  int sp = g->p->nsp++;
  maybe_late_rank(g, f);
  for (int r = 0; r < g->np; r++) {
    if (f >= 0 && !member(g, f, r))
      continue;
    struct gen_act *a = push(g, r, k, f);
    if (a)
      a->sp = sp;
  }
  return sp;
}

/* ---- views ----------------------------------------------------------------- */

/* Appends a view for (f, r); returns its index (-1 when out of memory). */
static int add_view(struct gen *g, int f, int r, struct gen_view *v) {
  struct gen_program *p = g->p;
  struct gen_view *a = realloc(p->views[f][r], (size_t)(p->nviews[f][r] + 1) * sizeof *a);
  if (a)
    p->views[f][r] = a;
  if (!a || gen_view_layout(v)) {
    gen_view_free(v);
    g->failed = 1;
    return -1;
  }
  a[p->nviews[f][r]] = *v;
  return p->nviews[f][r]++;
}

/* The slots of an indexed filetype's tile, dealt to the comm's ranks:
 * every rank gets one at least, some slots nobody (holes in the file). */
static void deal_slots(struct gen *g, int csize, int nslots, int *owner) {
  for (int i = 0; i < nslots; i++)
    owner[i] = i < csize ? i : coin(g, 20) ? -1 : pick(g, 0, csize - 1);
  for (int i = nslots - 1; i > 0; i--) {
    int j = pick(g, 0, i), t = owner[i];
    owner[i] = owner[j];
    owner[j] = t;
  }
}

static void indexed_view(struct gen_view *v, int crank, int nslots, const int *owner,
                         const int *len) {
  v->idx_displ = malloc((size_t)nslots * sizeof(int));
  v->idx_blen = malloc((size_t)nslots * sizeof(int));
  v->nidx = 0;
  v->tile = 0;
  for (int i = 0; i < nslots; i++) {
    if (owner[i] == crank && v->idx_displ && v->idx_blen) {
      v->idx_displ[v->nidx] = v->tile;
      v->idx_blen[v->nidx++] = len[i];
    }
    v->tile += len[i];
  }
}

/* The members' new views of f: one shape for all, each rank its share. */
static void new_views(struct gen *g, int f, int *idx) {
  int csize = gen_comm_size(g->f[f].comm, g->np);
  struct gen_view tmpl = {0};
  tmpl.ftype = (enum gen_ftype)pick(g, 0, 3);
  tmpl.esize = coin(g, 30) ? 4 : 1;
  tmpl.disp = coin(g, 50) ? 0 : (int64_t)pick(g, 1, 256) * tmpl.esize;
  static const int recs[] = {1, 3, 8, 16, 64, 256};
  int rec = recs[pick(g, 0, 5)] * tmpl.esize, nrec = pick(g, 1, 4);
  int nslots = csize + pick(g, 0, 2 * csize), owner[3 * GEN_MAX_RANKS + 1],
      len[3 * GEN_MAX_RANKS + 1], width[GEN_MAX_RANKS];
  deal_slots(g, csize, nslots, owner);
  for (int i = 0; i < nslots; i++)
    len[i] = pick(g, 1, 16);
  int rows = pick(g, 1, 8), cols = 0;
  for (int i = 0; i < csize; i++)
    cols += width[i] = pick(g, 1, 4);
  int spare = pick(g, 0, 2);
  for (int r = 0, c0 = 0; r < g->np; r++) {
    idx[r] = -1;
    if (!member(g, f, r))
      continue;
    int crank = gen_comm_rank(g->f[f].comm, r, g->np);
    struct gen_view v = tmpl;
    if (v.ftype == GEN_FT_VECTOR) {
      v.rec = rec, v.nrec = nrec, v.stride = csize * rec;
      v.disp += (int64_t)crank * rec;
    } else if (v.ftype == GEN_FT_INDEXED) {
      indexed_view(&v, crank, nslots, owner, len);
    } else if (v.ftype == GEN_FT_SUBARRAY) {
      v.rows = rows, v.cols = cols + spare, v.col0 = c0, v.ncols = width[crank];
      c0 += width[crank];
    }
    idx[r] = add_view(g, f, r, &v);
  }
}

/* ---- accesses: choosing bytes, R5-R7 --------------------------------------- */

/* A size class, then a memory type and count for about that many bytes. */
static void pick_mem(struct gen *g, int esize, struct gen_access *a) {
  int cls = pick(g, 0, 9);
  int64_t target = cls < 3   ? pick(g, 1, 64)
                   : cls < 8 ? pick(g, 64, 1024)
                             : pick(g, 1024, 4096);
  memset(&a->mem, 0, sizeof a->mem);
  if (coin(g, 20)) {
    a->mem.vector = 1;
    a->mem.vblen = pick(g, 1, 8);
    a->mem.vstride = a->mem.vblen + pick(g, 1, 4);
    a->mem.vnb = pick(g, 1, 4);
    int64_t per = (int64_t)a->mem.vnb * a->mem.vblen * esize;
    a->count = (int)(target / per > 0 ? target / per : 1);
  } else {
    a->count = (int)(target / esize > 0 ? target / esize : 1);
  }
}

static int64_t per_instance(const struct gen_view *v) { return v->lay.size / v->esize; }

/* The first etype of view v whose instance lies wholly at or after byte size. */
static int64_t offset_after(const struct gen_view *v, int64_t size) {
  if (size <= v->disp)
    return 0;
  return (size - v->disp + v->lay.extent - 1) / v->lay.extent * per_instance(v);
}

/* The largest start that keeps nbytes within GEN_FILE_CAP. */
static int64_t offset_limit(const struct gen_view *v, int64_t nbytes) {
  int64_t lim =
      (GEN_FILE_CAP - v->disp) / v->lay.extent * per_instance(v) - nbytes / v->esize;
  return lim > 0 ? lim : 0;
}

static int64_t pick64(struct gen *g, int64_t lo, int64_t hi) {
  return rng_range(&g->rng, lo, hi);
}

/* A place for an access of rank r: new ground, old ground, or anywhere for
 * writes; where data is known for reads. */
static int64_t choose_offset(struct gen *g, int f, int r, const struct gen_access *a) {
  struct fstate *fs = &g->f[f];
  const struct gen_view *v = &g->p->views[f][r][fs->view[r]];
  int64_t nbytes = gen_access_bytes(a, v->esize), lim = offset_limit(v, nbytes);
  int64_t recent = fs->nrecent ? fs->recent[pick(g, 0, fs->nrecent - 1)] : 0;
  int64_t written = fs->nwritten ? fs->written[pick(g, 0, fs->nwritten - 1)] : 0;
  int x = pick(g, 0, 99);
  if (a->write) {
    int64_t after = offset_after(v, fs->size);
    return x < 40 && after <= lim ? after : x < 70 ? recent : pick64(g, 0, lim);
  }
  int64_t known = offset_after(v, fs->committed) - nbytes / v->esize;
  return x < 55                 ? written
         : x < 75               ? recent
         : x < 85 || known <= 0 ? 0
                                : pick64(g, 0, known);
}

/* R5-R7 for rank r's access of bytes fr on file f. */
static int part_legal(struct gen *g, int f, int r, int write,
                      const struct gen_ranges *fr) {
  struct fstate *fs = &g->f[f];
  for (int i = 0; i < fr->n; i++) {
    if (fr->off[i] < 0 || fr->off[i] + fr->len[i] > GEN_FILE_CAP)
      return 0;
    for (int64_t b = fr->off[i]; b < fr->off[i] + fr->len[i]; b++) {
      int ew = fs->ew[b];
      if (write && ((ew != EW_NONE && ew != r) || (fs->er[b] & ~(1u << r))))
        return 0; /* R6 */
      if (!write &&
          (fs->wop[b] < 0 || (ew != r && (ew != EW_NONE || b >= fs->committed))))
        return 0; /* R6, R7 */
    }
  }
  for (int c = 0; c < g->nclaims; c++) {
    const struct claim *cl = &g->claims[c];
    if (cl->file == f && (write || cl->write) && gen_ranges_overlap(&cl->r, fr))
      return 0; /* R5 */
  }
  return 1;
}

/* Records the access's bytes (R6's record, the shadow file) and, for a
 * read by the rank this program is for, the bytes it must return. */
static uint8_t *part_commit(struct gen *g, int f, int r, int op, int write, int coll,
                            const struct gen_ranges *fr) {
  int lock = write && coll && quirk(g, GEN_QUIRK_OMPIO_COLL_WRITE);
  struct fstate *fs = &g->f[f];
  uint8_t *expect = NULL;
  int64_t k = 0;
  if (!write && r == g->me && !(expect = malloc((size_t)gen_ranges_total(fr) + 1)))
    g->failed = 1;
  for (int i = 0; i < fr->n; i++)
    for (int64_t b = fr->off[i]; b < fr->off[i] + fr->len[i]; b++, k++) {
      if (write) {
        fs->wop[b] = op, fs->wrank[b] = (int8_t)r,
        fs->ew[b] = lock ? EW_LOCKED : (int8_t)r;
        fs->size = b + 1 > fs->size ? b + 1 : fs->size;
      } else {
        fs->er[b] |= (uint16_t)(1u << r);
        if (expect) /* R7: wop[b] >= 0 */
          expect[k] = gen_byte(g->p->opt.seed, fs->wop[b], fs->wrank[b], b);
      }
    }
  return expect;
}

static void claim_add(struct gen *g, int op, int r, int f, int write,
                      struct gen_ranges *fr) {
  struct claim *c = grow(g, g->claims, &g->capclaims, g->nclaims, sizeof *c);
  if (!c) {
    gen_ranges_free(fr);
    return;
  }
  g->claims = c;
  c[g->nclaims++] =
      (struct claim){.op = op, .rank = r, .file = f, .write = write, .r = *fr};
}

/* Marks op's claims of rank r (every rank: r < 0) done; they go at the
 * next claims_sweep. */
static void claims_done(struct gen *g, int op, int r) {
  for (int c = 0; c < g->nclaims; c++)
    if (g->claims[c].op == op && (r < 0 || g->claims[c].rank == r))
      g->claims[c].done = 1;
}

static void claims_sweep(struct gen *g) {
  int k = 0;
  for (int c = 0; c < g->nclaims; c++) {
    if (g->claims[c].done)
      gen_ranges_free(&g->claims[c].r);
    else
      g->claims[k++] = g->claims[c];
  }
  g->nclaims = k;
}

static void remember(int64_t *list, int *n, int64_t off) {
  list[*n < 16 ? (*n)++ : (int)(off % 16)] = off;
}

/* Rank r's part of access `op` on f, a = its kind and size: tries `first`
 * (when have_first), then places choose_offset() finds, smaller sizes
 * too; an empty access when nothing legal turns up.  The part's claim is
 * live on return and its bytes recorded; returns the expected bytes of a
 * read by this program's rank (or NULL). */
static uint8_t *pick_part(struct gen *g, int f, int r, int op, int coll,
                          struct gen_access *a, int have_first, int64_t first) {
  struct fstate *fs = &g->f[f];
  a->view = fs->view[r];
  const struct gen_view *v = &g->p->views[f][r][a->view];
  for (int t = 0; t < TRIES && a->count > 0; t++) {
    if (t > 0 && t % 3 == 0)
      pick_mem(g, v->esize, a);
    a->offset = t == 0 && have_first ? first : choose_offset(g, f, r, a);
    a->seek = !a->at && a->offset != fs->fp[r];
    struct gen_ranges fr;
    gen_ranges_init(&fr);
    int64_t n = gen_access_bytes(a, v->esize);
    if (a->offset >= 0 && gen_view_ranges(v, a->offset, n, &fr) == 0 &&
        part_legal(g, f, r, a->write, &fr)) {
      uint8_t *expect = part_commit(g, f, r, op, a->write, coll, &fr);
      remember(fs->recent, &fs->nrecent, a->offset);
      if (a->write)
        remember(fs->written, &fs->nwritten, a->offset);
      if (!a->at)
        fs->fp[r] = a->offset + n / v->esize;
      claim_add(g, op, r, f, a->write, &fr);
      return expect;
    }
    gen_ranges_free(&fr);
  }
  a->count = 0;
  a->offset = a->at ? 0 : fs->fp[r];
  a->seek = 0;
  return NULL;
}

/* 1 if a non-blocking collective on f is outstanding on rank r (any
 * rank: r < 0). */
static int collective_pending(struct gen *g, int f, int r) {
  for (int k = 0; k < g->npend; k++)
    if (g->pend[k].coll && g->pend[k].file == f && (r < 0 || g->pend[k].rank == r))
      return 1;
  return 0;
}

/* romio-pointer: no use of f's pointer by r while a non-blocking
 * collective on f may be outstanding on r (in this interval: started). */
static int pointer_quirk_ok(struct gen *g, int f, int r) {
  return !quirk(g, GEN_QUIRK_ROMIO_POINTER) ||
         (!collective_pending(g, f, r) && !g->f[f].coll_started[r]);
}

/* A collective access on f uses the pointer (!at) only where every
 * member may. */
static int collective_at(struct gen *g, int f) {
  if (coin(g, 60))
    return 1;
  for (int r = 0; r < g->np; r++)
    if (member(g, f, r) && !pointer_quirk_ok(g, f, r))
      return 1;
  return 0;
}

/* The parts of a collective access on f for every member: all at one
 * offset (interleaved views), segments side by side, or each its own;
 * the same size or each its own.  parts[r], expect[r] for members. */
static void collective_parts(struct gen *g, int f, int op, int write, int at,
                             struct gen_access *parts, uint8_t **expect) {
  struct fstate *fs = &g->f[f];
  int shape = pick(g, 0, 2), same_size = coin(g, 70), first_member = -1;
  struct gen_access base = {.write = write, .at = at};
  int64_t common = 0;
  for (int r = 0; r < g->np; r++) {
    expect[r] = NULL;
    if (!member(g, f, r))
      continue;
    const struct gen_view *v = &g->p->views[f][r][fs->view[r]];
    if (first_member < 0 || !same_size)
      pick_mem(g, v->esize, &base);
    if (first_member < 0) {
      first_member = r;
      base.view = fs->view[r];
      common = choose_offset(g, f, r, &base);
    }
    parts[r] = base;
    int crank = gen_comm_rank(fs->comm, r, g->np);
    int64_t etypes = gen_access_bytes(&base, v->esize) / v->esize;
    int64_t first = shape == 0 ? common : common + crank * etypes;
    int have_first = shape < 2 && same_size;
    if (!at && coin(g, 40)) /* carry on from where the pointer is */
      first = fs->fp[r], have_first = 1;
    expect[r] = pick_part(g, f, r, op, 1, &parts[r], have_first, first);
    if (!at)
      fs->ptr_used[r] = 1;
  }
}

/* The end of rank r's access: what get_size must at least show it after
 * its own independent write.  Not after a collective write: there the
 * bytes may be written by another rank (an aggregator), and Open MPI's
 * OMPIO returns from MPI_File_write_at_all before its aggregator has
 * written, showing a smaller size even to the rank whose part it was. */
static int64_t part_end(struct gen *g, int f, int r, const struct gen_access *part) {
  const struct gen_view *v = &g->p->views[f][r][part->view];
  struct gen_ranges fr;
  int64_t end = 0;
  gen_ranges_init(&fr);
  if (gen_view_ranges(v, part->offset, gen_access_bytes(part, v->esize), &fr) == 0)
    for (int i = 0; i < fr.n; i++)
      end = fr.off[i] + fr.len[i] > end ? fr.off[i] + fr.len[i] : end;
  gen_ranges_free(&fr);
  return end;
}

/* ---- sync points ------------------------------------------------------------ */

/* A blocking collective access on f. */
static void sp_coll(struct gen *g, int f) {
  struct gen_access parts[GEN_MAX_RANKS];
  uint8_t *expect[GEN_MAX_RANKS];
  int op = g->p->nops++, write = coin(g, 50);
  collective_parts(g, f, op, write, collective_at(g, f), parts, expect);
  int sp = sync_point(g, GK_COLL, f);
  for (int r = 0; r < g->np; r++) {
    struct gen_act *last = sp_act(g, r, sp);
    if (!last) {
      free(expect[r]);
      continue;
    }
    last->op = op, last->acc = parts[r], last->expect = expect[r];
  }
  claims_done(g, op, -1);
  claims_sweep(g);
}

/* Split collective _begin on f; its _end is made now and emitted later. */
static void sp_begin(struct gen *g, int f) {
  struct fstate *fs = &g->f[f];
  struct gen_access parts[GEN_MAX_RANKS];
  uint8_t *expect[GEN_MAX_RANKS];
  int op = g->p->nops++, write = coin(g, 50), at = collective_at(g, f);
  collective_parts(g, f, op, write, at, parts, expect);
  int sp = sync_point(g, GK_BEGIN, f);
  fs->split_op = op, fs->split_ptr = !at;
  for (int r = 0; r < g->np; r++) {
    struct gen_act *last = sp_act(g, r, sp);
    if (!last) {
      free(expect[r]);
      continue;
    }
    last->op = op, last->acc = parts[r];
    fs->split_end[r] = *last;
    fs->split_end[r].kind = GK_END;
    fs->split_end[r].expect = expect[r];
  }
}

static void sp_end(struct gen *g, int f) {
  struct fstate *fs = &g->f[f];
  int op = fs->split_op;
  int sp = g->p->nsp++;
  maybe_late_rank(g, f);
  for (int r = 0; r < g->np; r++) {
    if (!member(g, f, r))
      continue;
    struct gen_act *a = push(g, r, GK_END, f);
    if (a) {
      *a = fs->split_end[r];
      a->sp = sp;
    } else {
      free(fs->split_end[r].expect);
    }
  }
  fs->split_op = -1, fs->split_ptr = 0;
  claims_done(g, op, -1);
  claims_sweep(g);
}

static void sp_set_view(struct gen *g, int f) {
  int idx[GEN_MAX_RANKS];
  new_views(g, f, idx);
  int sp = sync_point(g, GK_SET_VIEW, f);
  for (int r = 0; r < g->np; r++) {
    struct gen_act *a = sp_act(g, r, sp);
    if (idx[r] < 0 || !a)
      continue;
    a->acc.view = idx[r];
    g->f[f].view[r] = idx[r], g->f[f].fp[r] = 0;
  }
}

static enum gen_comm pick_comm(struct gen *g) {
  return (enum gen_comm)pick(g, 0, g->np > 1 ? GEN_COMM_HIGH : GEN_COMM_DUP);
}

static void sp_open(struct gen *g, int f) {
  struct fstate *fs = &g->f[f];
  fs->open = 1;
  fs->comm = g->p->files[f].comm = pick_comm(g);
  int sp = sync_point(g, GK_OPEN, f);
  for (int r = 0; r < g->np; r++) {
    struct gen_act *a = sp_act(g, r, sp);
    fs->view[r] = 0, fs->fp[r] = 0;
    if (a)
      a->comm = fs->comm;
  }
}

static void sp_close(struct gen *g, int f) {
  sync_point(g, GK_CLOSE, f);
  g->f[f].open = 0;
}

/* set_size right after a consistency point (R6): a size around the
 * current one; from the first byte it changes, every member "wrote". */
static void sp_set_size(struct gen *g, int f) {
  struct fstate *fs = &g->f[f];
  int64_t n = fs->size + pick(g, -4096, 4096);
  n = n < 0 ? 0 : n > GEN_FILE_CAP ? GEN_FILE_CAP : n;
  int64_t lo = n < fs->size ? n : fs->size;
  int sp = sync_point(g, GK_SET_SIZE, f);
  for (int r = 0; r < g->np; r++) {
    struct gen_act *a = sp_act(g, r, sp);
    if (a)
      a->size = n, a->size_lo = lo;
  }
  for (int64_t b = lo; b < GEN_FILE_CAP; b++) {
    fs->ew[b] = EW_LOCKED;
    if (b >= n)
      fs->wop[b] = -1;
  }
  fs->size = n;
}

/* sync-barrier-sync over every open file (nothing outstanding: R3, R4),
 * then perhaps set_size and exact get_size checks, closed by a barrier. */
static void sp_consistency(struct gen *g) {
  for (int f = 0; f < g->p->nfiles; f++)
    if (g->f[f].open)
      sync_point(g, GK_SYNC, f);
  int sp = sync_point(g, GK_BARRIER, -1);
  for (int r = 0; r < g->np; r++) {
    struct gen_act *a = sp_act(g, r, sp);
    if (a)
      a->consistency = 1;
  }
  for (int f = 0; f < g->p->nfiles; f++)
    if (g->f[f].open)
      sync_point(g, GK_SYNC, f);
  for (int f = 0; f < g->p->nfiles; f++) {
    struct fstate *fs = &g->f[f];
    memset(fs->ew, EW_NONE, GEN_FILE_CAP);
    memset(fs->er, 0, GEN_FILE_CAP * sizeof *fs->er);
    fs->committed = fs->size;
  }
  int extra = 0;
  for (int f = 0; f < g->p->nfiles; f++) {
    if (!g->f[f].open)
      continue;
    if (coin(g, 15))
      sp_set_size(g, f), extra = 1;
    if (coin(g, 40)) {
      for (int r = 0; r < g->np; r++) {
        struct gen_act *s = member(g, f, r) ? push(g, r, GK_GET_SIZE, f) : NULL;
        if (s)
          s->size = s->size_lo = g->f[f].size;
      }
      extra = 1;
    }
  }
  if (extra) /* nobody writes before everybody has asked */
    sync_point(g, GK_BARRIER, -1);
}

/* ---- intervals --------------------------------------------------------------- */

static void pend_add(struct gen *g, const struct gen_act *a, int r) {
  struct pending *p = grow(g, g->pend, &g->cappend, g->npend, sizeof *p);
  if (p) {
    g->pend = p;
    p[g->npend++] = (struct pending){.op = a->op,
                                     .rank = r,
                                     .file = a->file,
                                     .coll = a->kind == GK_ICOLL,
                                     .pointer = !a->acc.at};
  }
}

/* Non-blocking collective starts: per rank, in queue[r] tagged by file. */
static void start_collectives(struct gen *g, struct gen_rank_prog *q) {
  int n = pick(g, 0, 3);
  for (int i = 0; i < n; i++) {
    int f = pick(g, 0, g->p->nfiles - 1);
    if (!g->f[f].open || g->f[f].split_op >= 0)
      continue; /* R4 */
    if (quirk(g, GEN_QUIRK_ROMIO_ONE_NBC) && collective_pending(g, f, -1))
      continue;
    struct gen_access parts[GEN_MAX_RANKS];
    uint8_t *expect[GEN_MAX_RANKS];
    int op = g->p->nops++, write = coin(g, 50);
    collective_parts(g, f, op, write, collective_at(g, f), parts, expect);
    for (int r = 0; r < g->np; r++) {
      struct gen_act *a = member(g, f, r) ? list_push(g, &q[r]) : NULL;
      if (!a)
        continue;
      g->f[f].coll_started[r] = 1;
      a->kind = GK_ICOLL, a->file = f, a->op = op, a->acc = parts[r];
      a->expect = expect[r];
      pend_add(g, a, r);
    }
  }
}

/* Rank r's independent accesses, blocking or not; a blocking one's claim
 * stays until the interval ends (the rank's order is not known yet). */
static void independent_accesses(struct gen *g, int r, struct gen_rank_prog *q) {
  int n = pick(g, 0, 2);
  for (int i = 0; i < n; i++) {
    int f = pick(g, 0, g->p->nfiles - 1);
    struct fstate *fs = &g->f[f];
    if (!member(g, f, r))
      continue;
    struct gen_access a = {.write = coin(g, 50), .at = 1};
    if (!fs->ptr_used[r] && !fs->split_ptr && pointer_quirk_ok(g, f, r) && coin(g, 40))
      a.at = 0, fs->ptr_used[r] = 1; /* R4, and one pointer access per interval */
    pick_mem(g, g->p->views[f][r][fs->view[r]].esize, &a);
    int op = g->p->nops++, nb = coin(g, 50);
    uint8_t *expect = pick_part(g, f, r, op, 0, &a, !a.at, fs->fp[r]);
    struct gen_act *act = list_push(g, &q[r]);
    if (!act) {
      free(expect);
      continue;
    }
    act->kind = nb ? GK_IINDEP : GK_INDEP, act->file = f, act->op = op, act->acc = a;
    act->expect = expect;
    if (!nb && a.write && a.count && coin(g, 50))
      act->check_size = 1, act->size_lo = part_end(g, f, r, &a);
    if (nb)
      pend_add(g, act, r);
    else
      claims_done(g, op, r);
  }
  if (coin(g, 30)) {
    struct gen_act *s = list_push(g, &q[r]);
    if (s)
      s->kind = GK_SLEEP, s->usec = pick(g, 100, 3000);
  }
}

/* A random interleaving of l's actions that keeps, per file, the order of
 * the non-blocking collective starts (R1). */
static void interleave(struct gen *g, struct gen_rank_prog *l) {
  for (int i = l->n - 1; i > 0; i--) {
    int j = pick(g, 0, i);
    struct gen_act t = l->acts[i];
    l->acts[i] = l->acts[j], l->acts[j] = t;
  }
  /* the starts of each file back into op order, in the slots they got */
  for (int i = 0; i < l->n; i++)
    for (int j = i + 1; j < l->n; j++) {
      struct gen_act *a = &l->acts[i], *b = &l->acts[j];
      if (a->kind == GK_ICOLL && b->kind == GK_ICOLL && a->file == b->file &&
          a->op > b->op) {
        struct gen_act t = *a;
        *a = *b, *b = t;
      }
    }
}

static int list_insert(struct gen *g, struct gen_rank_prog *l, int pos,
                       struct gen_act *a) {
  if (!list_push(g, l))
    return -1;
  memmove(&l->acts[pos + 1], &l->acts[pos], (size_t)(l->n - 1 - pos) * sizeof *a);
  l->acts[pos] = *a;
  return 0;
}

/* Whether pending request k completes in this interval (R3, R4, and the
 * quirks). */
static int completes(struct gen *g, const struct need *nd, const struct pending *pd,
                     uint64_t salt) {
  if (nd->all || nd->file_all == pd->file || (pd->coll && nd->file_coll == pd->file))
    return 1;
  if (pd->coll && (quirk(g, GEN_QUIRK_ROMIO_PROGRESS) ||
                   (pd->pointer && quirk(g, GEN_QUIRK_ROMIO_POINTER))))
    return 1;
  if (pd->coll && nd->barrier) /* all members or none: decided per op, */
    return pd->partial || (gen_byte(salt, pd->op, 0, 0) & 1); /* or the rest */
  return coin(g, 50);
}

static int is_collective_op(const struct gen_rank_prog *l, int op) {
  for (int a = 0; a < l->n; a++)
    if (l->acts[a].op == op)
      return l->acts[a].kind == GK_ICOLL;
  return 0;
}

/* romio-progress: the collectives first, in op order, each its own
 * MPI_Wait; returns how many there are. */
static int collectives_in_order(const struct gen_rank_prog *l, int *ops, int n) {
  int ncoll = 0;
  for (int i = 0; i < n; i++)
    if (is_collective_op(l, ops[i])) {
      int t = ops[i];
      ops[i] = ops[ncoll], ops[ncoll++] = t;
    }
  for (int i = 1; i < ncoll; i++)
    for (int j = i; j > 0 && ops[j - 1] > ops[j]; j--) {
      int t = ops[j];
      ops[j] = ops[j - 1], ops[j - 1] = t;
    }
  return ncoll;
}

/* Groups of rank r's completing requests, each a wait placed after its
 * requests' starts (and after all of the interval's collective starts when
 * it completes one of them: R3), sometimes with computation before it. */
static void place_waits(struct gen *g, struct gen_rank_prog *l, int *ops, int n) {
  for (int i = n - 1; i > 0; i--) {
    int j = pick(g, 0, i), t = ops[i];
    ops[i] = ops[j], ops[j] = t;
  }
  int ordered = quirk(g, GEN_QUIRK_ROMIO_PROGRESS) ? collectives_in_order(l, ops, n) : 0;
  for (int i = 0; i < n;) {
    int k = i < ordered ? ordered : pick(g, 1, 3);
    k = k > n - i ? n - i : k;
    struct gen_act w = {.kind = GK_WAIT, .file = -1, .op = -1, .sp = -1, .nreq = k};
    w.how = k == 1 ? (coin(g, 60) ? GW_WAIT : GW_TEST) : (enum gen_wait_how)pick(g, 1, 3);
    if (w.how == GW_TEST && k > 1 && quirk(g, GEN_QUIRK_MPICH_TESTALL))
      w.how = GW_WAITALL;
    if (i < ordered)
      w.how = GW_WAIT; /* one after the other, in reqs' order */
    w.reqs = malloc((size_t)k * sizeof(int));
    if (!w.reqs) {
      g->failed = 1;
      return;
    }
    int after = 0, all_starts = 0;
    for (int a = 0; a < l->n; a++)
      if (l->acts[a].kind == GK_ICOLL)
        all_starts = a + 1;
    for (int j = 0; j < k; j++) {
      w.reqs[j] = ops[i + j];
      for (int a = 0; a < l->n; a++) {
        if (l->acts[a].op != w.reqs[j])
          continue;
        if (l->acts[a].kind == GK_IINDEP && a + 1 > after)
          after = a + 1;
        if (l->acts[a].kind == GK_ICOLL && all_starts > after)
          after = all_starts;
      }
    }
    int pos = pick(g, after, l->n);
    if (list_insert(g, l, pos, &w)) {
      free(w.reqs);
      return;
    }
    struct gen_act s = {.kind = GK_SLEEP, .file = -1, .op = -1, .sp = -1};
    s.usec = pick(g, 100, 2000);
    if (coin(g, 25))
      list_insert(g, l, pos, &s);
    i += k;
  }
}

/* Which outstanding collectives some member has completed already: the
 * others must complete them before the next barrier (R3). */
static void mark_partial(struct gen *g) {
  for (int k = 0; k < g->npend; k++) {
    int n = 0;
    for (int j = 0; j < g->npend; j++)
      n += g->pend[j].op == g->pend[k].op;
    g->pend[k].partial = n < gen_comm_size(g->f[g->pend[k].file].comm, g->np);
  }
}

static void interval(struct gen *g, const struct need *nd) {
  struct gen_rank_prog q[GEN_MAX_RANKS];
  memset(q, 0, sizeof q);
  for (int f = 0; f < g->p->nfiles; f++)
    memset(g->f[f].ptr_used, 0, sizeof g->f[f].ptr_used);
  for (int f = 0; f < g->p->nfiles; f++)
    memset(g->f[f].coll_started, 0, sizeof g->f[f].coll_started);
  start_collectives(g, q);
  for (int r = 0; r < g->np; r++) {
    independent_accesses(g, r, q);
    interleave(g, &q[r]);
  }
  uint64_t salt = rng_next(&g->rng);
  mark_partial(g);
  int *done = malloc((size_t)(g->npend + 1) * sizeof *done);
  if (!done)
    g->failed = 1;
  for (int r = 0; r < g->np && done; r++) {
    int n = 0;
    for (int k = 0; k < g->npend; k++)
      if (g->pend[k].rank == r && completes(g, nd, &g->pend[k], salt)) {
        done[n++] = g->pend[k].op;
        g->pend[k].rank = -1; /* completed: dropped below */
      }
    place_waits(g, &q[r], done, n);
    for (int i = 0; i < n; i++)
      claims_done(g, done[i], r);
  }
  for (int r = 0; r < g->np; r++) { /* the interval joins the program */
    for (int i = 0; i < q[r].n; i++) {
      struct gen_act *a = list_push(g, &g->p->ranks[r]);
      if (a)
        *a = q[r].acts[i];
    }
    free(q[r].acts);
  }
  free(done);
  int k = 0;
  for (int i = 0; i < g->npend; i++)
    if (g->pend[i].rank >= 0)
      g->pend[k++] = g->pend[i];
  g->npend = k;
  claims_sweep(g);
}

/* ---- the program ------------------------------------------------------------ */

enum step_kind {
  ST_COLL,
  ST_BARRIER,
  ST_CONSISTENCY,
  ST_SET_VIEW,
  ST_BEGIN,
  ST_END,
  ST_SYNC,
  ST_REOPEN,
  ST_NKINDS
};

/* A random open file with (split) or without (!split) an active split
 * collective; -1 if there is none. */
static int pick_file(struct gen *g, int split) {
  int cand[GEN_MAX_FILES], n = 0;
  for (int f = 0; f < g->p->nfiles; f++)
    if (g->f[f].open && (g->f[f].split_op >= 0) == split)
      cand[n++] = f;
  return n ? cand[pick(g, 0, n - 1)] : -1;
}

static enum step_kind pick_step(struct gen *g) {
  static const int weight[ST_NKINDS] = {
      [ST_COLL] = 30,  [ST_BARRIER] = 8, [ST_CONSISTENCY] = 10, [ST_SET_VIEW] = 10,
      [ST_BEGIN] = 10, [ST_END] = 20,    [ST_SYNC] = 5,         [ST_REOPEN] = 4};
  int total = 0, x;
  for (int k = 0; k < ST_NKINDS; k++)
    total += weight[k];
  x = pick(g, 0, total - 1);
  for (int k = 0; k < ST_NKINDS; k++)
    if ((x -= weight[k]) < 0)
      return (enum step_kind)k;
  return ST_BARRIER;
}

/* One interval and the sync point after it. */
static void step(struct gen *g) {
  struct need nd = {.file_all = -1, .file_coll = -1};
  enum step_kind k = pick_step(g);
  int active = pick_file(g, 1), f = pick_file(g, 0);
  int quiesce = k == ST_CONSISTENCY || (k == ST_SYNC && quirk(g, GEN_QUIRK_OMPIO_SYNC));
  if (k == ST_END || (quiesce && active >= 0)) {
    if (active < 0)
      k = ST_BARRIER; /* nothing to end */
    else
      k = ST_END, f = active; /* R4: first the _end */
  } else if (k != ST_BARRIER && k != ST_CONSISTENCY && f < 0) {
    k = ST_BARRIER; /* every open file is in a split collective */
  }
  nd.all = k == ST_CONSISTENCY;
  nd.barrier = k == ST_BARRIER;
  nd.file_all = k == ST_SET_VIEW || k == ST_SYNC || k == ST_REOPEN ? f : -1;
  nd.all |= k == ST_SYNC && quirk(g, GEN_QUIRK_OMPIO_SYNC);
  nd.file_coll = k == ST_BEGIN ? f : -1;
  interval(g, &nd);
  switch (k) {
  case ST_COLL: sp_coll(g, f); break;
  case ST_BARRIER: sync_point(g, GK_BARRIER, -1); break;
  case ST_CONSISTENCY: sp_consistency(g); break;
  case ST_SET_VIEW: sp_set_view(g, f); break;
  case ST_BEGIN: sp_begin(g, f); break;
  case ST_END: sp_end(g, f); break;
  case ST_SYNC: sync_point(g, GK_SYNC, f); break;
  case ST_REOPEN:
    sp_close(g, f);
    sp_open(g, f);
    if (coin(g, 50))
      sp_set_view(g, f);
    break;
  case ST_NKINDS: break;
  }
}

/* Everything completed and closed; the final file contents go to p. */
static void finish(struct gen *g) {
  struct need none = {.file_all = -1, .file_coll = -1}, all = none;
  int f;
  while ((f = pick_file(g, 1)) >= 0) {
    interval(g, &none);
    sp_end(g, f);
  }
  all.all = 1;
  interval(g, &all);
  for (f = 0; f < g->p->nfiles; f++)
    if (g->f[f].open)
      sp_close(g, f);
  sync_point(g, GK_BARRIER, -1);
  for (f = 0; f < g->p->nfiles; f++) {
    struct gen_file_info *fi = &g->p->files[f];
    fi->size = g->f[f].size;
    fi->wop = g->f[f].wop, fi->wrank = g->f[f].wrank;
    g->f[f].wop = NULL, g->f[f].wrank = NULL;
  }
}

static int setup(struct gen *g) {
  struct gen_program *p = g->p;
  p->nfiles = pick(g, 1, p->opt.max_files);
  for (int f = 0; f < p->nfiles; f++) {
    struct fstate *fs = &g->f[f];
    fs->split_op = -1;
    fs->wop = malloc(GEN_FILE_CAP * sizeof *fs->wop);
    fs->wrank = calloc(GEN_FILE_CAP, 1);
    fs->ew = malloc(GEN_FILE_CAP);
    fs->er = calloc(GEN_FILE_CAP, sizeof *fs->er);
    if (!fs->wop || !fs->wrank || !fs->ew || !fs->er)
      return -1;
    memset(fs->wop, 0xff, GEN_FILE_CAP * sizeof *fs->wop); /* -1: never written */
    memset(fs->ew, EW_NONE, GEN_FILE_CAP);
    for (int r = 0; r < g->np; r++) { /* view 0: bytes from 0, what open sets */
      struct gen_view v = {.esize = 1, .ftype = GEN_FT_ETYPE};
      if (add_view(g, f, r, &v) != 0)
        return -1;
    }
  }
  return 0;
}

static void teardown(struct gen *g) {
  for (int c = 0; c < g->nclaims; c++)
    gen_ranges_free(&g->claims[c].r);
  free(g->claims);
  free(g->pend);
  for (int f = 0; f < GEN_MAX_FILES; f++) {
    struct fstate *fs = &g->f[f];
    if (fs->split_op >= 0)
      for (int r = 0; r < g->np; r++)
        free(fs->split_end[r].expect);
    free(fs->wop);
    free(fs->wrank);
    free(fs->ew);
    free(fs->er);
  }
}

struct gen_program *gen_build(const struct gen_options *opt) {
  if (opt->nprocs < 1 || opt->nprocs > GEN_MAX_RANKS || opt->max_files < 1 ||
      opt->max_files > GEN_MAX_FILES || opt->steps < 0)
    return NULL;
  struct gen_program *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->opt = *opt;
  struct gen g = {
      .p = p, .rng = {opt->seed ^ 0x5eed0fa99105ull}, .np = opt->nprocs, .me = opt->me};
  if (!(p->ranks = calloc((size_t)opt->nprocs, sizeof *p->ranks)) || setup(&g)) {
    g.failed = 1;
  } else {
    for (int f = 0; f < p->nfiles; f++) {
      sp_open(&g, f);
      if (coin(&g, 50))
        sp_set_view(&g, f);
    }
    for (int s = 0; s < opt->steps && !g.failed; s++)
      step(&g);
    finish(&g);
  }
  teardown(&g);
  if (g.failed) {
    gen_free(p);
    return NULL;
  }
  return p;
}
