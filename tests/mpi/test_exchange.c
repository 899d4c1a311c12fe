/*
 * test_exchange.c - the two-phase strategy's exchange methods
 * (aggio_exchange, docs/strategies.md).
 *
 *   patterns  seeded random interleaved blocks with holes, over a
 *             background longer or shorter than the data, written with
 *             aggio_exchange=rma and small cb_buffer_size (many rounds, so
 *             both buffers of every aggregator are reused): the file equals
 *             the one the MPI library's own MPI_File_write_at_all writes,
 *             and the one aggio_exchange=two_sided writes; read back through
 *             rma (blocking and non-blocking) it gives the data again; reads
 *             that cross the end of file return what the file holds and
 *             leave the rest of the buffer untouched;
 *   info      aggio_file_get_info reports aggio_exchange_selected (and why
 *             an unknown value fell back) once the two-phase strategy ran;
 *             aggio_file_set_info switches an open file's exchange;
 *   fallback  an RMA window refused on one rank (AGGIO_FAULTS=rma_window@R)
 *             makes every rank use two_sided, reported with the rank, and
 *             the file is still right;
 *   threads   patterns under MPI_THREAD_MULTIPLE, every write and read
 *             non-blocking: aggio's progress thread runs the puts, gets,
 *             flushes and notices (skipped where MPI gives a lower level).
 *
 * aggio-test-ranks: 1 2 4 8
 * aggio-test-parts: patterns info fallback threads
 */
#include <aggio.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "rng.h"

static int rank, nprocs;
static char path_ref[512], path_rma[512], path_two[512];

/* ---- one case: blocks of the file dealt to ranks, some left as holes ------------------ */

struct layout {
  int n;                /* this rank's blocks */
  int *len;
  MPI_Aint *off;        /* relative to base */
  int64_t bytes;        /* this rank's total */
  int64_t end;          /* end of the written data (from base) */
  int64_t base, bg;     /* first byte of the view; background bytes before writing */
  unsigned char *data;  /* this rank's bytes, in file order */
  int nblocks;          /* every rank's blocks: */
  int *owner;           /* rank, or -1 for a hole */
  int64_t *bstart;      /* from base */
};

static unsigned char bg_byte(int64_t i) { return (unsigned char)(i * 7 + 3); }
static unsigned char data_byte(int64_t i, int r) { return (unsigned char)(i * 13 + 101 * r + 1); }

static void make_layout(rng_t *g, struct layout *L) {
  int nblocks = (int)rng_range(g, nprocs, 24 * nprocs);
  memset(L, 0, sizeof *L);
  L->len = malloc((size_t)nblocks * sizeof *L->len);
  L->nblocks = nblocks;
  L->owner = malloc((size_t)nblocks * sizeof *L->owner);
  L->bstart = malloc(((size_t)nblocks + 1) * sizeof *L->bstart);
  L->off = malloc((size_t)nblocks * sizeof *L->off);
  L->base = rng_range(g, 0, 3) * 1000;
  int64_t pos = 0;
  for (int b = 0; b < nblocks; b++) {
    int len = (int)rng_range(g, 1, rng_range(g, 0, 3) == 0 ? 9000 : 700);
    int owner = (int)rng_range(g, -1, nprocs - 1); /* -1: a hole */
    if (b < nprocs)
      owner = b; /* every rank has data */
    L->owner[b] = owner;
    L->bstart[b] = pos;
    if (owner == rank) {
      L->off[L->n] = pos;
      L->len[L->n++] = len;
      L->bytes += len;
    }
    pos += len;
  }
  L->end = pos;
  L->bstart[nblocks] = pos;
  switch (rng_range(g, 0, 3)) { /* background: none, shorter, as long, longer */
  case 0: L->bg = 0; break;
  case 1: L->bg = L->base + pos / 2; break;
  case 2: L->bg = L->base + pos; break;
  default: L->bg = L->base + pos + rng_range(g, 1, 20000); break;
  }
  L->data = malloc((size_t)L->bytes + 1);
  for (int64_t i = 0, j = 0; j < L->n; j++)
    for (int k = 0; k < L->len[j]; k++, i++)
      L->data[i] = data_byte(L->off[j] + k, rank);
}

/* The file every correct write leaves: the background, every rank's blocks
 * over it, zeros in holes past the background's end. */
static unsigned char *expected_image(const struct layout *L, int64_t *size) {
  int64_t end = L->bg;
  for (int b = 0; b < L->nblocks; b++)
    if (L->owner[b] >= 0 && L->base + L->bstart[b + 1] > end)
      end = L->base + L->bstart[b + 1];
  unsigned char *img = calloc((size_t)end + 1, 1);
  for (int64_t i = 0; i < L->bg; i++)
    img[i] = bg_byte(i);
  for (int b = 0; b < L->nblocks; b++)
    for (int64_t i = L->bstart[b]; L->owner[b] >= 0 && i < L->bstart[b + 1]; i++)
      img[L->base + i] = data_byte(i, L->owner[b]);
  *size = end;
  return img;
}

static void free_layout(struct layout *L) {
  free(L->owner);
  free(L->bstart);
  free(L->len);
  free(L->off);
  free(L->data);
}

static MPI_Datatype view_type(const struct layout *L) {
  MPI_Datatype t;
  MPI_Type_create_hindexed(L->n, L->len, L->off, MPI_BYTE, &t);
  MPI_Type_commit(&t);
  return t;
}

/* Rank 0 writes the background the holes must keep. */
static void put_background(const char *p, int64_t bg) {
  if (rank == 0) {
    int fd = open(p, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    unsigned char *b = malloc((size_t)bg + 1);
    for (int64_t i = 0; i < bg; i++)
      b[i] = bg_byte(i);
    CHECK(fd >= 0 && write(fd, b, (size_t)bg) == (ssize_t)bg, "background of %s", p);
    free(b);
    if (fd >= 0)
      close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static unsigned char *slurp(const char *p, int64_t *size) {
  struct stat st;
  int fd = open(p, O_RDONLY);
  if (fd < 0 || fstat(fd, &st) != 0) {
    if (fd >= 0)
      close(fd);
    return NULL;
  }
  unsigned char *b = malloc((size_t)st.st_size + 1);
  *size = pread(fd, b, (size_t)st.st_size, 0);
  close(fd);
  return b;
}

/* Rank 0: 1 when files a and b hold the same bytes. */
static int same_files(const char *a, const char *b, const char *what, int k) {
  int same = 1;
  if (rank == 0) {
    int64_t na = -1, nb = -2;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    same = x && y && na == nb && memcmp(x, y, (size_t)na) == 0;
    int64_t first = -1;
    for (int64_t i = 0; x && y && !same && i < (na < nb ? na : nb) && first < 0; i++)
      if (x[i] != y[i])
        first = i;
    CHECK(same, "case %d: %s: sizes %" PRId64 " and %" PRId64 ", first difference at %" PRId64,
          k, what, na, nb, first);
    free(x);
    free(y);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same;
}

/* 1 where the expected image is defined by the writes or the background;
 * 0 in holes past the background's end, where POSIX reads zeros (and aggio
 * must leave them) but ROMIO and OMPIO write back whatever their
 * read-modify-write buffer held (test_patterns.c says more). */
static unsigned char *defined_mask(const struct layout *L, int64_t size) {
  unsigned char *m = calloc((size_t)size + 1, 1);
  for (int64_t i = 0; i < L->bg && i < size; i++)
    m[i] = 1;
  for (int b = 0; b < L->nblocks; b++)
    for (int64_t i = L->bstart[b]; L->owner[b] >= 0 && i < L->bstart[b + 1]; i++)
      m[L->base + i] = 1;
  return m;
}

/* Rank 0: 1 when file p holds the image of L (every byte when strict, the
 * defined ones otherwise) and has its size.  A reference that is not even
 * right where it is defined is the MPI library's bug: a warning. */
static int as_expected(const char *p, const struct layout *L, int strict, const char *what,
                       int k) {
  int ok = 1;
  if (rank == 0) {
    int64_t n = -1, want = 0, first = -1;
    unsigned char *x = slurp(p, &n), *img = expected_image(L, &want);
    unsigned char *def = defined_mask(L, want);
    ok = x && n == want;
    for (int64_t i = 0; ok && i < n; i++)
      if (x[i] != img[i] && (strict || def[i])) {
        first = i;
        ok = 0;
      }
    if (strict)
      CHECK(ok, "case %d: %s: size %" PRId64 ", expected %" PRId64 ", first difference at %"
            PRId64 " (base %" PRId64 ", background %" PRId64 ")", k, what, n, want, first,
            L->base, L->bg);
    else if (!ok)
      fprintf(stderr, "WARNING case %d: %s differs from the expected bytes at %" PRId64
              ": not used as a reference\n", k, what, first);
    free(x);
    free(img);
    free(def);
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return ok;
}

/* Rank 0: 1 when files a and b agree where L defines the bytes, and in size. */
static int same_defined(const char *a, const char *b, const struct layout *L, const char *what,
                        int k) {
  int same = 1;
  if (rank == 0) {
    int64_t na = -1, nb = -2, want = 0, first = -1;
    unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
    unsigned char *img = expected_image(L, &want), *def = defined_mask(L, want);
    same = x && y && na == nb && na == want;
    for (int64_t i = 0; same && i < na; i++)
      if (def[i] && x[i] != y[i]) {
        first = i;
        same = 0;
      }
    CHECK(same, "case %d: %s: sizes %" PRId64 " and %" PRId64 ", first difference at %" PRId64,
          k, what, na, nb, first);
    free(x);
    free(y);
    free(img);
    free(def);
  }
  MPI_Bcast(&same, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return same;
}

static void reference_write(const struct layout *L) {
  MPI_File f;
  MPI_Datatype t = view_type(L);
  put_background(path_ref, L->bg);
  CHECK(MPI_File_open(MPI_COMM_WORLD, path_ref, MPI_MODE_RDWR, MPI_INFO_NULL, &f) ==
            MPI_SUCCESS, "MPI_File_open");
  MPI_File_set_view(f, L->base, MPI_BYTE, t, "native", MPI_INFO_NULL);
  CHECK(MPI_File_write_at_all(f, 0, L->data, (int)L->bytes, MPI_BYTE, MPI_STATUS_IGNORE) ==
            MPI_SUCCESS, "MPI_File_write_at_all");
  MPI_File_close(&f);
  MPI_Type_free(&t);
}

static void expect_selected(aggio_file fh, const char *want, const char *why_has, int k) {
  MPI_Info info;
  char v[MPI_MAX_INFO_VAL + 1] = "", w[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0, wflag = 0;
  CHECK(aggio_file_get_info(fh, &info) == 0, "get_info");
  MPI_Info_get(info, "aggio_exchange_selected", MPI_MAX_INFO_VAL, v, &flag);
  MPI_Info_get(info, "aggio_exchange_error", MPI_MAX_INFO_VAL, w, &wflag);
  MPI_Info_free(&info);
  CHECK(flag && strcmp(v, want) == 0, "case %d: aggio_exchange_selected \"%s\", expected %s", k,
        flag ? v : "(absent)", want);
  if (why_has)
    CHECK(wflag && strstr(w, why_has), "case %d: aggio_exchange_error \"%s\" lacks \"%s\"", k,
          wflag ? w : "(absent)", why_has);
  else
    CHECK(!wflag, "case %d: unexpected aggio_exchange_error \"%s\"", k, w);
}

/* Writes L through aggio with the given hints; 0 on success. */
static int aggio_write(const char *p, const struct layout *L, MPI_Info info, int nonblocking,
                       const char *want, const char *why_has, int k) {
  aggio_file fh;
  MPI_Datatype t = view_type(L);
  put_background(p, L->bg);
  int e = aggio_file_open(MPI_COMM_WORLD, p, MPI_MODE_RDWR, info, &fh);
  CHECK(e == 0, "case %d: aggio_file_open: %s", k, aggio_error_message());
  if (e != 0)
    return e;
  e = aggio_file_set_view(fh, L->base, MPI_BYTE, t, "native", MPI_INFO_NULL);
  MPI_Status st;
  if (e == 0 && nonblocking) {
    aggio_request r;
    e = aggio_file_iwrite_at_all(fh, 0, L->data, (int)L->bytes, MPI_BYTE, &r);
    if (e == 0)
      e = aggio_wait(&r, &st);
  } else if (e == 0) {
    e = aggio_file_write_at_all(fh, 0, L->data, (int)L->bytes, MPI_BYTE, &st);
  }
  CHECK(e == 0, "case %d: collective write: %s", k, aggio_error_message());
  int got = -1;
  MPI_Get_count(&st, MPI_BYTE, &got);
  CHECK(e != 0 || got == (int)L->bytes, "case %d: write count %d, expected %" PRId64, k, got,
        L->bytes);
  if (want)
    expect_selected(fh, want, why_has, k);
  CHECK(aggio_file_close(&fh) == 0, "close");
  MPI_Type_free(&t);
  return e;
}

/* Reads L back through the view, then a range crossing the end of file. */
static void aggio_read_back(const char *p, const struct layout *L, MPI_Info info,
                            int nonblocking, rng_t *g, int k) {
  aggio_file fh;
  MPI_Datatype t = view_type(L);
  CHECK(aggio_file_open(MPI_COMM_WORLD, p, MPI_MODE_RDONLY, info, &fh) == 0, "open for read");
  aggio_file_set_view(fh, L->base, MPI_BYTE, t, "native", MPI_INFO_NULL);
  unsigned char *buf = malloc((size_t)L->bytes + 1);
  memset(buf, 0xA5, (size_t)L->bytes + 1);
  MPI_Status st;
  int e;
  if (nonblocking) {
    aggio_request r;
    e = aggio_file_iread_at_all(fh, 0, buf, (int)L->bytes, MPI_BYTE, &r);
    if (e == 0)
      e = aggio_wait(&r, &st);
  } else {
    e = aggio_file_read_at_all(fh, 0, buf, (int)L->bytes, MPI_BYTE, &st);
  }
  CHECK(e == 0, "case %d: collective read: %s", k, aggio_error_message());
  CHECK(memcmp(buf, L->data, (size_t)L->bytes) == 0 && buf[L->bytes] == 0xA5,
        "case %d rank %d: read back differs from the data", k, rank);
  free(buf);

  /* bytes [x, x + len) of the file, x somewhere about its end */
  struct stat sb;
  stat(p, &sb);
  int64_t size = sb.st_size;
  rng_t mine = {g->s ^ (uint64_t)(rank + 1) * 0x9E3779B97F4A7C15ull};
  int64_t x = rng_range(&mine, size > 30000 ? size - 30000 : 0, size + 2000);
  int len = (int)rng_range(&mine, 1, 40000);
  unsigned char *want = malloc((size_t)len), *got = malloc((size_t)len + 1);
  memset(got, 0xA5, (size_t)len + 1);
  int fd = open(p, O_RDONLY);
  ssize_t nwant = pread(fd, want, (size_t)len, x);
  close(fd);
  aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  e = aggio_file_read_at_all(fh, x, got, len, MPI_BYTE, &st);
  int n = -1;
  MPI_Get_count(&st, MPI_BYTE, &n);
  CHECK(e == 0 && n == (int)nwant, "case %d rank %d: read [%" PRId64 ", +%d) of a %" PRId64
        "-byte file: %d bytes, expected %zd", k, rank, x, len, size, n, nwant);
  int untouched = 1;
  for (int i = (int)(nwant > 0 ? nwant : 0); i <= len; i++)
    untouched &= got[i] == 0xA5;
  CHECK(nwant <= 0 || memcmp(got, want, (size_t)nwant) == 0, "case %d rank %d: bytes read "
        "across the end of file differ", k, rank);
  CHECK(untouched, "case %d rank %d: bytes past the end of file were overwritten", k, rank);
  free(want);
  free(got);
  CHECK(aggio_file_close(&fh) == 0, "close after read");
  MPI_Type_free(&t);
}

static MPI_Info case_hints(rng_t *g, const char *exchange) {
  static const char *cb[] = {"4096", "5000", "8192", "16384"};
  static const char *tri[] = {"enable", "disable", "automatic"};
  char v[32];
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "aggio_exchange", exchange);
  MPI_Info_set(info, "cb_buffer_size", cb[rng_range(g, 0, 3)]);
  snprintf(v, sizeof v, "%d", (int)rng_range(g, 1, nprocs));
  MPI_Info_set(info, "cb_nodes", v);
  snprintf(v, sizeof v, "%d", (int)rng_range(g, 1, 4));
  MPI_Info_set(info, "aggio_emulate_nodes", v);
  MPI_Info_set(info, "romio_ds_write", tri[rng_range(g, 0, 2)]);
  MPI_Info_set(info, "romio_ds_read", tri[rng_range(g, 0, 2)]);
  MPI_Info_set(info, "aggio_pipeline", tri[rng_range(g, 0, 2)]);
  MPI_Info_set(info, "striping_unit", rng_range(g, 0, 1) ? "4096" : "0");
  return info;
}

static void part_patterns(uint64_t seed, int ncases, int all_nonblocking) {
  for (int k = 0; k < ncases; k++) {
    rng_t g = {seed + 1000003ull * (uint64_t)k};
    struct layout L;
    make_layout(&g, &L);
    MPI_Info rma = case_hints(&g, "rma");
    MPI_Info two;
    MPI_Info_dup(rma, &two);
    MPI_Info_set(two, "aggio_exchange", "two_sided");
    int nb_write = (int)rng_range(&g, 0, 2) == 0, nb_read = (int)rng_range(&g, 0, 2) == 0;
    nb_write |= all_nonblocking;
    nb_read |= all_nonblocking;
    reference_write(&L);
    int ref_ok = as_expected(path_ref, &L, 0, "the MPI library's MPI-IO", k);
    if (aggio_write(path_rma, &L, rma, nb_write, "rma", NULL, k) == 0 &&
        as_expected(path_rma, &L, 1, "rma vs the expected bytes", k) &&
        (!ref_ok || same_defined(path_ref, path_rma, &L, "rma vs the MPI library's MPI-IO", k)))
      aggio_read_back(path_rma, &L, rma, nb_read, &g, k);
    if (aggio_write(path_two, &L, two, 0, "two_sided", NULL, k) == 0)
      same_files(path_rma, path_two, "rma vs two_sided", k);
    MPI_Info_free(&rma);
    MPI_Info_free(&two);
    free_layout(&L);
  }
}

/* The selection under each value of the hint, and before any call. */
static void part_info(uint64_t seed) {
  static const struct {
    const char *hint, *want, *why;
  } cases[] = {{"rma", "rma", NULL},
               {"two_sided", "two_sided", NULL},
               {"automatic", "two_sided", NULL},
               {"sideways", "two_sided", "\"sideways\" is not two_sided, rma or automatic"}};
  for (int c = 0; c < 4; c++) {
    rng_t g = {seed + (uint64_t)c};
    struct layout L;
    make_layout(&g, &L);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "aggio_strategy", "two_phase");
    MPI_Info_set(info, "aggio_exchange", cases[c].hint);
    MPI_Info_set(info, "cb_buffer_size", "4096");
    if (c <= 1) {
      /* An RMA window exists only in blocking form: it is made at open, so
       * that a non-blocking first call finds it; two_sided is set up by the
       * strategy's first call, and nothing is selected before it. */
      aggio_file fh;
      MPI_Info got;
      char v[64] = "";
      int flag = 1;
      put_background(path_rma, 0);
      aggio_file_open(MPI_COMM_WORLD, path_rma, MPI_MODE_RDWR, info, &fh);
      aggio_file_get_info(fh, &got);
      MPI_Info_get(got, "aggio_exchange_selected", sizeof v - 1, v, &flag);
      if (c == 0)
        CHECK(flag && strcmp(v, "rma") == 0, "rma: aggio_exchange_selected at open is \"%s\"",
              flag ? v : "(none)");
      else
        CHECK(!flag, "aggio_exchange_selected reported before any collective call");
      MPI_Info_free(&got);
      aggio_file_close(&fh);
    }
    reference_write(&L);
    int ref_ok = as_expected(path_ref, &L, 0, "the MPI library's MPI-IO", c);
    if (aggio_write(path_rma, &L, info, 0, cases[c].want, cases[c].why, c) == 0 &&
        as_expected(path_rma, &L, 1, cases[c].hint, c) && ref_ok)
      same_defined(path_ref, path_rma, &L, cases[c].hint, c);
    MPI_Info_free(&info);
    free_layout(&L);
  }
}

/* aggio_file_set_info changes the exchange of an open file: the window is
 * freed and the next call runs the new method (and the file stays right). */
static void part_set_info(uint64_t seed) {
  rng_t g = {seed + 5};
  struct layout L;
  make_layout(&g, &L);
  MPI_Datatype t = view_type(&L);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "aggio_exchange", "rma");
  MPI_Info_set(info, "cb_buffer_size", "4096");
  reference_write(&L);
  put_background(path_rma, L.bg);
  aggio_file fh;
  CHECK(aggio_file_open(MPI_COMM_WORLD, path_rma, MPI_MODE_RDWR, info, &fh) == 0, "open");
  aggio_file_set_view(fh, L.base, MPI_BYTE, t, "native", MPI_INFO_NULL);
  static const char *order[] = {"rma", "two_sided", "rma"};
  for (int i = 0; i < 3; i++) {
    MPI_Info_set(info, "aggio_exchange", order[i]);
    CHECK(aggio_file_set_info(fh, info) == 0, "set_info %s", order[i]);
    CHECK(aggio_file_write_at_all(fh, 0, L.data, (int)L.bytes, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "write after set_info %s: %s", order[i], aggio_error_message());
    expect_selected(fh, order[i], NULL, 100 + i);
  }
  CHECK(aggio_file_close(&fh) == 0, "close");
  int ref_ok = as_expected(path_ref, &L, 0, "the MPI library's MPI-IO", 100);
  if (as_expected(path_rma, &L, 1, "after set_info", 100) && ref_ok)
    same_defined(path_ref, path_rma, &L, "after set_info vs MPI-IO", 100);
  MPI_Info_free(&info);
  MPI_Type_free(&t);
  free_layout(&L);
}

/* A window refused on the last rank: every rank falls back to two_sided. */
static void part_fallback(uint64_t seed) {
  char rule[64], why[64];
  snprintf(rule, sizeof rule, "rma_window@%d", nprocs - 1);
  snprintf(why, sizeof why, "could not be made on rank %d; two_sided", nprocs - 1);
  for (int c = 0; c < 3; c++) {
    rng_t g = {seed + 77 * (uint64_t)c};
    struct layout L;
    make_layout(&g, &L);
    MPI_Info info = case_hints(&g, "rma");
    reference_write(&L);
    int ref_ok = as_expected(path_ref, &L, 0, "the MPI library's MPI-IO", c);
    setenv("AGGIO_FAULTS", rule, 1); /* read at open */
    int e = aggio_write(path_rma, &L, info, c == 2, "two_sided", why, c);
    unsetenv("AGGIO_FAULTS");
    if (e == 0 && as_expected(path_rma, &L, 1, "fallback", c) &&
        (!ref_ok || same_defined(path_ref, path_rma, &L, "fallback vs MPI-IO", c)))
      aggio_read_back(path_rma, &L, info, 0, &g, c);
    MPI_Info_free(&info);
    free_layout(&L);
  }
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "patterns";
  int level = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv,
                  strcmp(part, "threads") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE,
                  &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  const char *s = getenv("AGGIO_TEST_SEED");
  uint64_t seed = s && *s ? strtoull(s, NULL, 0) : 20261125;
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path_ref, sizeof path_ref, "%s/exchange.%d.mpiio", test_dir(), id);
  snprintf(path_rma, sizeof path_rma, "%s/exchange.%d.rma", test_dir(), id);
  snprintf(path_two, sizeof path_two, "%s/exchange.%d.two", test_dir(), id);
  if (rank == 0)
    printf("test_exchange %s: %d ranks, seed %" PRIu64 " (AGGIO_TEST_SEED)\n", part, nprocs,
           seed);
  if (strcmp(part, "patterns") == 0)
    part_patterns(seed, nprocs >= 8 ? 6 : 12, 0);
  else if (strcmp(part, "threads") == 0 && level < MPI_THREAD_MULTIPLE)
    test_skip("MPI gives thread level %d, not MPI_THREAD_MULTIPLE", level);
  else if (strcmp(part, "threads") == 0)
    part_patterns(seed + 7, nprocs >= 8 ? 3 : 6, 1);
  else if (strcmp(part, "info") == 0) {
    part_info(seed);
    part_set_info(seed);
  }
  else if (strcmp(part, "fallback") == 0)
    part_fallback(seed);
  else
    CHECK(0, "unknown part %s", part);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(path_rma);
    unlink(path_two);
  }
  return test_finish_mpi(path_ref);
}
