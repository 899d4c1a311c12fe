/*
 * gen_layout.c - where the bytes of a generated access go: the layout of
 * each filetype and memory type the generator uses, and the map from a
 * buffer's data bytes to file offsets that MPI-IO prescribes (MPI 3.1
 * section 13.3: the filetype tiled from the displacement, data placed in
 * the order of its typemap).  Written for the few type shapes gen_model.c
 * makes, not for MPI datatypes in general.
 */
#include <stdlib.h>

#include "gen_model.h"

void gen_ranges_init(struct gen_ranges *r) {
  r->n = r->cap = 0;
  r->off = r->len = NULL;
}

void gen_ranges_free(struct gen_ranges *r) {
  free(r->off);
  free(r->len);
  gen_ranges_init(r);
}

/* Appends [off, off+len), merged with the last range when they touch. */
int gen_ranges_add(struct gen_ranges *r, int64_t off, int64_t len) {
  if (len <= 0)
    return 0;
  if (r->n && r->off[r->n - 1] + r->len[r->n - 1] == off) {
    r->len[r->n - 1] += len;
    return 0;
  }
  if (r->n == r->cap) {
    int cap = r->cap ? 2 * r->cap : 8;
    int64_t *o = realloc(r->off, (size_t)cap * sizeof *o);
    if (!o)
      return -1;
    r->off = o;
    int64_t *l = realloc(r->len, (size_t)cap * sizeof *l);
    if (!l)
      return -1;
    r->len = l;
    r->cap = cap;
  }
  r->off[r->n] = off;
  r->len[r->n] = len;
  r->n++;
  return 0;
}

int64_t gen_ranges_total(const struct gen_ranges *r) {
  int64_t t = 0;
  for (int i = 0; i < r->n; i++)
    t += r->len[i];
  return t;
}

/* 1 if the ranges are in increasing order without overlap (what every
 * access here produces: the filetypes' blocks are in increasing order). */
static int ascending(const struct gen_ranges *r) {
  for (int i = 1; i < r->n; i++)
    if (r->off[i] < r->off[i - 1] + r->len[i - 1])
      return 0;
  return 1;
}

int gen_ranges_overlap(const struct gen_ranges *a, const struct gen_ranges *b) {
  if (ascending(a) && ascending(b)) { /* one merge pass */
    for (int i = 0, j = 0; i < a->n && j < b->n;) {
      if (a->off[i] < b->off[j] + b->len[j] && b->off[j] < a->off[i] + a->len[i])
        return 1;
      if (a->off[i] + a->len[i] <= b->off[j] + b->len[j])
        i++;
      else
        j++;
    }
    return 0;
  }
  for (int i = 0; i < a->n; i++)
    for (int j = 0; j < b->n; j++)
      if (a->off[i] < b->off[j] + b->len[j] && b->off[j] < a->off[i] + a->len[i])
        return 1;
  return 0;
}

void gen_layout_free(struct gen_layout *l) { gen_ranges_free(&l->blocks); }

/* Blocks in typemap order; a filetype's blocks must not be merged across
 * the order they are declared in, but touching ones may be (same bytes). */
static int layout_finish(struct gen_layout *l, int64_t extent) {
  l->extent = extent;
  l->size = gen_ranges_total(&l->blocks);
  return 0;
}

int gen_view_layout(struct gen_view *v) {
  struct gen_layout *l = &v->lay;
  int es = v->esize, rc = 0;
  gen_ranges_init(&l->blocks);
  switch (v->ftype) {
  case GEN_FT_ETYPE:
    rc = gen_ranges_add(&l->blocks, 0, es);
    return rc ? rc : layout_finish(l, es);
  case GEN_FT_VECTOR:
    for (int k = 0; k < v->nrec && !rc; k++)
      rc = gen_ranges_add(&l->blocks, (int64_t)k * v->stride, v->rec);
    return rc ? rc : layout_finish(l, (int64_t)v->nrec * v->stride);
  case GEN_FT_INDEXED:
    for (int k = 0; k < v->nidx && !rc; k++)
      rc = gen_ranges_add(&l->blocks, (int64_t)v->idx_displ[k] * es,
                          (int64_t)v->idx_blen[k] * es);
    return rc ? rc : layout_finish(l, (int64_t)v->tile * es);
  case GEN_FT_SUBARRAY:
    for (int row = 0; row < v->rows && !rc; row++)
      rc = gen_ranges_add(&l->blocks, ((int64_t)row * v->cols + v->col0) * es,
                          (int64_t)v->ncols * es);
    return rc ? rc : layout_finish(l, (int64_t)v->rows * v->cols * es);
  }
  return -1;
}

void gen_view_free(struct gen_view *v) {
  gen_layout_free(&v->lay);
  free(v->idx_displ);
  free(v->idx_blen);
  v->idx_displ = v->idx_blen = NULL;
}

int gen_mem_layout(const struct gen_memtype *m, int esize, struct gen_layout *out) {
  int rc = 0;
  gen_ranges_init(&out->blocks);
  if (!m->vector) {
    rc = gen_ranges_add(&out->blocks, 0, esize);
    return rc ? rc : layout_finish(out, esize);
  }
  for (int k = 0; k < m->vnb && !rc; k++)
    rc = gen_ranges_add(&out->blocks, (int64_t)k * m->vstride * esize,
                        (int64_t)m->vblen * esize);
  return rc ? rc
            : layout_finish(out, ((int64_t)(m->vnb - 1) * m->vstride + m->vblen) * esize);
}

int64_t gen_access_bytes(const struct gen_access *a, int esize) {
  const struct gen_memtype *m = &a->mem;
  int64_t per = m->vector ? (int64_t)m->vnb * m->vblen * esize : esize;
  return per * a->count;
}

int64_t gen_access_buffer(const struct gen_access *a, int esize) {
  const struct gen_memtype *m = &a->mem;
  int64_t ext =
      m->vector ? ((int64_t)(m->vnb - 1) * m->vstride + m->vblen) * esize : esize;
  return ext * a->count;
}

/* Walks nbytes data bytes of `count` copies of layout l from data byte
 * `skip`, adding the byte ranges (plus base) to out. */
static int walk_layout(const struct gen_layout *l, int64_t base, int64_t skip,
                       int64_t nbytes, struct gen_ranges *out) {
  if (l->size <= 0)
    return nbytes > 0 ? -1 : 0;
  int64_t copy = skip / l->size, within = skip % l->size;
  while (nbytes > 0) {
    for (int b = 0; b < l->blocks.n && nbytes > 0; b++) {
      int64_t len = l->blocks.len[b];
      if (within >= len) {
        within -= len;
        continue;
      }
      int64_t take = len - within < nbytes ? len - within : nbytes;
      if (gen_ranges_add(out, base + copy * l->extent + l->blocks.off[b] + within, take))
        return -1;
      nbytes -= take;
      within = 0;
    }
    copy++;
  }
  return 0;
}

int gen_view_ranges(const struct gen_view *v, int64_t offset, int64_t nbytes,
                    struct gen_ranges *out) {
  return walk_layout(&v->lay, v->disp, offset * v->esize, nbytes, out);
}

/* Expands ranges into one entry per byte. */
static int64_t *expand(const struct gen_ranges *r, int64_t n) {
  int64_t *pos = malloc((size_t)(n ? n : 1) * sizeof *pos), k = 0;
  if (!pos)
    return NULL;
  for (int i = 0; i < r->n; i++)
    for (int64_t j = 0; j < r->len[i] && k < n; j++)
      pos[k++] = r->off[i] + j;
  return pos;
}

int gen_access_map(const struct gen_view *v, const struct gen_access *a, int64_t **fpos,
                   int64_t **mpos) {
  int64_t n = gen_access_bytes(a, v->esize);
  struct gen_ranges fr, mr;
  struct gen_layout ml;
  gen_ranges_init(&fr);
  gen_ranges_init(&mr);
  int rc = gen_mem_layout(&a->mem, v->esize, &ml);
  if (!rc)
    rc = gen_view_ranges(v, a->offset, n, &fr);
  if (!rc)
    rc = walk_layout(&ml, 0, 0, n, &mr);
  *fpos = *mpos = NULL;
  if (!rc) {
    *fpos = expand(&fr, n);
    *mpos = expand(&mr, n);
    if (!*fpos || !*mpos)
      rc = -1;
  }
  gen_ranges_free(&fr);
  gen_ranges_free(&mr);
  gen_layout_free(&ml);
  return rc;
}
