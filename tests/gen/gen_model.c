/*
 * gen_model.c - the program container of tests/gen: communicator
 * membership, the data function, names and one-line descriptions of
 * actions (for logs and --dump), and freeing.  The builder is gen_build.c.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen_model.h"

/* The two halves of MPI_COMM_WORLD (MPI_Comm_split by rank < nprocs/2);
 * with one rank, the low half is the whole world. */
static int low_size(int nprocs) { return nprocs > 1 ? nprocs / 2 : 1; }

int gen_comm_member(enum gen_comm c, int r, int nprocs) {
  switch (c) {
  case GEN_COMM_LOW: return r < low_size(nprocs);
  case GEN_COMM_HIGH: return r >= low_size(nprocs);
  default: return 1;
  }
}

int gen_comm_rank(enum gen_comm c, int r, int nprocs) {
  return c == GEN_COMM_HIGH ? r - low_size(nprocs) : r;
}

int gen_comm_size(enum gen_comm c, int nprocs) {
  switch (c) {
  case GEN_COMM_LOW: return low_size(nprocs);
  case GEN_COMM_HIGH: return nprocs - low_size(nprocs);
  default: return nprocs;
  }
}

/* splitmix64's finaliser over (seed, op, rank, offset). */
uint8_t gen_byte(uint64_t seed, int op, int rank, int64_t off) {
  uint64_t z = seed ^ ((uint64_t)(uint32_t)op << 40) ^ ((uint64_t)(uint32_t)rank << 32) ^
               (uint64_t)off;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return (uint8_t)(z ^ (z >> 31));
}

int gen_quirks_parse(const char *list, unsigned *out) {
  static const struct {
    const char *name;
    unsigned bit;
  } names[] = {
#define GEN__QUIRK_NAME(name, bit, text) {text, bit},
      GEN_QUIRKS(GEN__QUIRK_NAME)
#undef GEN__QUIRK_NAME
  };
  *out = 0;
  for (const char *p = list; *p;) {
    size_t len = strcspn(p, ",");
    int found = len == 4 && !strncmp(p, "none", 4);
    for (size_t k = 0; k < sizeof names / sizeof names[0] && !found; k++)
      if (strlen(names[k].name) == len && !strncmp(p, names[k].name, len))
        *out |= names[k].bit, found = 1;
    if (!found)
      return -1;
    p += len + (p[len] == ',');
  }
  return 0;
}

const char *gen_kind_name(enum gen_kind k) {
  static const char *names[GK_NKINDS] = {
      [GK_OPEN] = "open",         [GK_CLOSE] = "close",       [GK_SET_VIEW] = "set_view",
      [GK_SYNC] = "sync",         [GK_SET_SIZE] = "set_size", [GK_BARRIER] = "barrier",
      [GK_GET_SIZE] = "get_size", [GK_SLEEP] = "sleep",       [GK_COLL] = "coll",
      [GK_ICOLL] = "icoll",       [GK_BEGIN] = "begin",       [GK_END] = "end",
      [GK_INDEP] = "indep",       [GK_IINDEP] = "iindep",     [GK_WAIT] = "wait"};
  return k < GK_NKINDS && names[k] ? names[k] : "?";
}

/* "MPI_File_" + [i] + write|read + [_at] + [_all] + [_begin|_end]. */
const char *gen_call_name(const struct gen_act *a) {
  static const char *wait_names[] = {"MPI_Wait", "MPI_Waitall", "MPI_Test(all) loop",
                                     "MPI_Waitany loop"};
  static char buf[4][48];
  static int turn;
  switch (a->kind) {
  case GK_COLL:
  case GK_ICOLL:
  case GK_BEGIN:
  case GK_END:
  case GK_INDEP:
  case GK_IINDEP: break;
  case GK_WAIT: return wait_names[a->how];
  case GK_BARRIER: return "MPI_Barrier";
  case GK_SLEEP: return "usleep";
  default: {
    char *b = buf[turn++ & 3];
    snprintf(b, sizeof buf[0], "MPI_File_%s", gen_kind_name(a->kind));
    return b;
  }
  }
  int nb = a->kind == GK_ICOLL || a->kind == GK_IINDEP;
  int all = a->kind == GK_COLL || a->kind == GK_ICOLL || a->kind == GK_BEGIN ||
            a->kind == GK_END;
  char *b = buf[turn++ & 3];
  snprintf(b, sizeof buf[0], "MPI_File_%s%s%s%s%s", nb ? "i" : "",
           a->acc.write ? "write" : "read", a->acc.at ? "_at" : "", all ? "_all" : "",
           a->kind == GK_BEGIN ? "_begin"
           : a->kind == GK_END ? "_end"
                               : "");
  return b;
}

static int is_access(enum gen_kind k) {
  return k == GK_COLL || k == GK_ICOLL || k == GK_BEGIN || k == GK_END || k == GK_INDEP ||
         k == GK_IINDEP;
}

void gen_describe(const struct gen_program *p, int rank, const struct gen_act *a,
                  char *out, size_t cap) {
  int n = snprintf(out, cap, "%s", gen_call_name(a));
  if (a->file >= 0 && n < (int)cap)
    n += snprintf(out + n, cap - n, " f%d", a->file);
  if (a->sp >= 0 && n < (int)cap)
    n += snprintf(out + n, cap - n, " sp%d", a->sp);
  if (is_access(a->kind) && n < (int)cap) {
    const struct gen_access *c = &a->acc;
    const struct gen_view *v = &p->views[a->file][rank][c->view];
    n += snprintf(out + n, cap - n, " op%d off=%" PRId64 "%s count=%d mem=%s", a->op,
                  c->offset,
                  c->at     ? ""
                  : c->seek ? " (seek)"
                            : " (pointer)",
                  c->count, c->mem.vector ? "vector" : "contig");
    if (n < (int)cap)
      n += snprintf(out + n, cap - n, " view=%d(disp=%" PRId64 " esize=%d ftype=%d)",
                    c->view, v->disp, v->esize, (int)v->ftype);
  }
  if (a->kind == GK_SET_VIEW && n < (int)cap)
    n += snprintf(out + n, cap - n, " view=%d", a->acc.view);
  if ((a->kind == GK_SET_SIZE || a->kind == GK_GET_SIZE) && n < (int)cap)
    n += snprintf(out + n, cap - n, " size=%" PRId64 " lo=%" PRId64, a->size, a->size_lo);
  if (a->kind == GK_SLEEP && n < (int)cap)
    n += snprintf(out + n, cap - n, " %d us", a->usec);
  if (a->kind == GK_BARRIER && a->consistency && n < (int)cap)
    n += snprintf(out + n, cap - n, " (sync-barrier-sync)");
  for (int i = 0; a->kind == GK_WAIT && i < a->nreq && n < (int)cap; i++)
    n += snprintf(out + n, cap - n, " op%d", a->reqs[i]);
}

void gen_free(struct gen_program *p) {
  if (!p)
    return;
  for (int r = 0; p->ranks && r < p->opt.nprocs; r++) {
    for (int i = 0; i < p->ranks[r].n; i++) {
      free(p->ranks[r].acts[i].reqs);
      free(p->ranks[r].acts[i].expect);
    }
    free(p->ranks[r].acts);
  }
  free(p->ranks);
  for (int f = 0; f < GEN_MAX_FILES; f++) {
    for (int r = 0; r < GEN_MAX_RANKS; r++) {
      for (int v = 0; v < p->nviews[f][r]; v++)
        gen_view_free(&p->views[f][r][v]);
      free(p->views[f][r]);
    }
    free(p->files[f].wop);
    free(p->files[f].wrank);
  }
  free(p);
}
