/*
 * test_nonblocking.c - non-blocking and split collective data access
 * (aggio.h), judged byte for byte by the MPI library's own MPI-IO: many
 * requests outstanding at once on one file and on two (one with a strided
 * view), collective and independent, writes then reads, contiguous and
 * vector memory types, completed in a seeded random order that differs per
 * rank with aggio_wait, aggio_test loops, aggio_waitall, aggio_testall and
 * aggio_waitany; the four split collectives and their misuse; individual
 * file pointers advanced when the call starts; close and sync with
 * operations outstanding.  Each case runs under every strategy.  The
 * errors of non-blocking calls are in test_nonblocking_errors.c.
 *
 * aggio-test-ranks: 1 2 4 8
 * aggio-test-parts: single multiple
 *
 * The part is the thread level: "multiple" (MPI_THREAD_MULTIPLE: aggio's
 * progress thread runs) or "single" (MPI_THREAD_SINGLE: progress only in
 * aggio calls and on the I/O threads).  AGGIO_TEST_SEED changes the seed.
 */
#include <aggio.h>

#include "harness.h"
#include "nb_common.h"
#include "rng.h"

#include <stdint.h>
#include <string.h>

/* ---- completing a set of requests in a random order ------------------------- */

/* Completes reqs[0..n) by a method drawn from g (per rank: the order of
 * completion may differ between ranks), and checks each status count
 * against want[] (bytes).  Returns the number of failed requests. */
static int complete_all(struct nb *c, rng_t *g, int n, aggio_request *reqs,
                        const int64_t *want, const char *what) {
  MPI_Status *st = calloc((size_t)n, sizeof *st);
  int *order = malloc((size_t)n * sizeof *order), bad = 0, rc = 0;
  int method = (int)rng_range(g, 0, 4);
  static const char *names[] = {"wait", "test loop", "waitall", "testall", "waitany"};
  for (int i = 0; i < n; i++)
    order[i] = i;
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates */
    int j = (int)rng_range(g, 0, i), t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  switch (method) {
  case 0:
    for (int i = 0; i < n; i++) {
      int k = order[i];
      rc = aggio_wait(&reqs[k], &st[k]);
      bad += rc != 0;
      CHECK(rc == 0, "%s: rank %d: aggio_wait(request %d): %s", what, c->rank, k,
            aggio_error_message());
    }
    break;
  case 1: { /* aggio_test on a random live request until every one is done */
    int left = n;
    while (left > 0) {
      int k = order[rng_range(g, 0, n - 1)], flag = 0;
      if (!reqs[k])
        continue;
      rc = aggio_test(&reqs[k], &flag, &st[k]);
      bad += rc != 0;
      CHECK(rc == 0, "%s: rank %d: aggio_test(request %d): %s", what, c->rank, k,
            aggio_error_message());
      if (flag) {
        CHECK(reqs[k] == AGGIO_REQUEST_NULL, "%s: completed request not set to NULL", what);
        left--;
      } else {
        CHECK(reqs[k] != AGGIO_REQUEST_NULL, "%s: incomplete request set to NULL", what);
      }
    }
    break;
  }
  case 2:
    rc = aggio_waitall(n, reqs, st);
    bad += rc != 0;
    CHECK(rc == 0, "%s: rank %d: aggio_waitall: %s", what, c->rank, aggio_error_message());
    break;
  case 3: {
    int flag = 0;
    while (!flag) {
      rc = aggio_testall(n, reqs, &flag, st);
      bad += rc != 0;
      CHECK(rc == 0, "%s: rank %d: aggio_testall: %s", what, c->rank, aggio_error_message());
      if (rc != 0)
        break;
      if (!flag)
        for (int i = 0; i < n; i++)
          CHECK(reqs[i] != AGGIO_REQUEST_NULL, "%s: testall freed request %d before all "
                "were complete", what, i);
    }
    break;
  }
  default:
    for (int done = 0; done < n; done++) {
      int idx = -1;
      MPI_Status one;
      rc = aggio_waitany(n, reqs, &idx, &one);
      bad += rc != 0;
      CHECK(rc == 0 && idx >= 0 && idx < n, "%s: rank %d: aggio_waitany: index %d, %s", what,
            c->rank, idx, aggio_error_message());
      if (idx < 0 || idx >= n)
        break;
      st[idx] = one;
      CHECK(reqs[idx] == AGGIO_REQUEST_NULL, "%s: waitany left request %d set", what, idx);
    }
    int idx = 0;
    rc = aggio_waitany(n, reqs, &idx, MPI_STATUS_IGNORE);
    CHECK(rc == 0 && idx == MPI_UNDEFINED, "%s: waitany on no live request: rc %d, index %d",
          what, rc, idx);
    break;
  }
  for (int i = 0; i < n; i++) {
    CHECK(reqs[i] == AGGIO_REQUEST_NULL, "%s: %s left request %d live", what, names[method], i);
    int cnt = -1;
    MPI_Get_count(&st[i], MPI_BYTE, &cnt);
    CHECK(cnt == want[i], "%s (%s): rank %d: request %d: MPI_Get_count %d bytes, expected "
          "%lld", what, names[method], c->rank, i, cnt, (long long)want[i]);
  }
  free(order);
  free(st);
  return bad;
}

/* ---- many requests outstanding ---------------------------------------------- */

/* One request of a batch: where it goes, how big, how it is called. */
struct slot {
  int64_t off;   /* byte offset of this rank's piece (view: plain bytes) */
  int64_t len;   /* bytes */
  int collective;
  int vector;    /* memory type: 4 of every 8 bytes (MPI_Type_vector) */
};

/* The batch: NREQ slots; slot k holds every rank's piece side by side.
 * Sizes are drawn from the shared seed (the same on every rank). */
static int64_t plan_batch(struct nb *c, uint64_t seed, struct slot *s, int nreq) {
  rng_t g = {seed};
  int64_t base = 0;
  for (int k = 0; k < nreq; k++) {
    /* multiples of 64 bytes (the strided view's block), up to 16 KiB */
    int64_t len = 64 * rng_range(&g, 1, k % 3 == 0 ? 256 : 24);
    s[k].collective = (int)rng_range(&g, 0, 2) != 0;
    s[k].vector = (int)rng_range(&g, 0, 2) == 0;
    s[k].len = len;
    s[k].off = base + (int64_t)c->rank * len;
    base += len * c->np;
  }
  return base;
}

/* Memory for a slot's piece: the packed bytes, or spread as the vector
 * type lays them out (4 data bytes of every 8; the gaps hold 0xEE). */
static unsigned char *slot_memory(const struct slot *s, const unsigned char *packed,
                                  MPI_Datatype *type, int *count) {
  size_t len = s->len > 0 ? (size_t)s->len : 0; /* lengths are 64..16384 */
  if (!s->vector) {
    *type = MPI_BYTE;
    *count = (int)len;
    unsigned char *m = malloc(len + 1);
    if (packed)
      memcpy(m, packed, len);
    return m;
  }
  MPI_Type_vector((int)(s->len / 4), 4, 8, MPI_BYTE, type);
  MPI_Type_commit(type);
  *count = 1;
  unsigned char *m = malloc(2 * len + 1);
  memset(m, 0xEE, 2 * len);
  if (packed)
    for (int64_t i = 0; i < s->len; i++)
      m[(i / 4) * 8 + i % 4] = packed[i];
  return m;
}

static void slot_unpack(const struct slot *s, const unsigned char *m, unsigned char *out) {
  for (int64_t i = 0; i < s->len; i++)
    out[i] = s->vector ? m[(i / 4) * 8 + i % 4] : m[i];
}

/* A batch of NREQ writes on each of the files, all outstanding together,
 * completed in a random order; then the same as reads.  File 1 has a
 * strided view: rank r's bytes are blocks r, r + np, ... of 64 bytes, so
 * its slot offsets are offsets in the view. */
static void t_many(struct nb *c, const char *strategy, int nfiles) {
  enum { NREQ = 12 };
  struct slot s[NREQ];
  char what[200];
  snprintf(what, sizeof what, "many outstanding (%s, %d file%s)", strategy, nfiles,
           nfiles > 1 ? "s" : "");
  nb_begin(c, what);
  uint64_t shared = c->seed ^ (uint64_t)nfiles * 7919;
  plan_batch(c, shared, s, NREQ);
  aggio_file fh[2] = {AGGIO_FILE_NULL, AGGIO_FILE_NULL};
  MPI_Datatype ft = MPI_DATATYPE_NULL;
  MPI_Type_vector(1, 64, 64 * c->np, MPI_BYTE, &ft);
  MPI_Datatype ftr;
  MPI_Type_create_resized(ft, 0, 64 * c->np, &ftr);
  MPI_Type_free(&ft);
  MPI_Type_commit(&ftr);
  for (int f = 0; f < nfiles; f++) {
    if (nb_open(c, c->path[f], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, &fh[f]) != 0)
      goto out;
    if (f == 1)
      nb_ok(c, "set_view strided", aggio_file_set_view(fh[1], 64 * c->rank, MPI_BYTE, ftr,
                                                       "native", MPI_INFO_NULL));
  }
  aggio_request reqs[2 * NREQ];
  unsigned char *mem[2 * NREQ], *packed[2 * NREQ];
  MPI_Datatype types[2 * NREQ];
  int64_t want[2 * NREQ];
  /* start order: slot k on file 0, then on file 1; collective ones must be
   * started in the same order everywhere, which this is */
  for (int pass = 0; pass < 2; pass++) {
    int n = 0;
    for (int k = 0; k < NREQ; k++)
      for (int f = 0; f < nfiles; f++, n++) {
        packed[n] = malloc((size_t)s[k].len);
        if (pass == 0)
          for (int64_t i = 0; i < s[k].len; i++)
            packed[n][i] = nb_datum(f, c->rank, s[k].off + i);
        int count;
        mem[n] = slot_memory(&s[k], pass == 0 ? packed[n] : NULL, &types[n], &count);
        want[n] = s[k].len;
        /* in the strided view, this rank's bytes are contiguous: its slot k
         * starts after its pieces of slots 0..k-1 */
        MPI_Offset off = s[k].off;
        if (f == 1) {
          off = 0;
          for (int j = 0; j < k; j++)
            off += s[j].len;
        }
        int rc;
        if (pass == 0)
          rc = s[k].collective ? aggio_file_iwrite_at_all(fh[f], off, mem[n], count, types[n],
                                                          &reqs[n])
                               : aggio_file_iwrite_at(fh[f], off, mem[n], count, types[n],
                                                      &reqs[n]);
        else
          rc = s[k].collective ? aggio_file_iread_at_all(fh[f], off, mem[n], count, types[n],
                                                         &reqs[n])
                               : aggio_file_iread_at(fh[f], off, mem[n], count, types[n],
                                                     &reqs[n]);
        CHECK(rc == 0 && reqs[n] != AGGIO_REQUEST_NULL, "%s: rank %d: starting request %d: "
              "%s", what, c->rank, n, aggio_error_message());
      }
    rng_t order = {c->seed * 31 + (uint64_t)c->rank * 1000003 + (uint64_t)pass};
    complete_all(c, &order, n, reqs, want, pass == 0 ? "writes" : "reads");
    for (int i = 0; i < n; i++) {
      if (pass == 1) { /* what was read is what this rank wrote there */
        unsigned char *got = malloc((size_t)want[i]);
        int k = i / nfiles, f = i % nfiles;
        slot_unpack(&s[k], mem[i], got);
        int64_t bad = -1;
        for (int64_t j = 0; j < want[i] && bad < 0; j++)
          if (got[j] != nb_datum(f, c->rank, s[k].off + j))
            bad = j;
        CHECK(bad < 0, "%s: rank %d: read request %d (slot %d, file %d, %s) differs at byte "
              "%lld", what, c->rank, i, k, f, s[k].collective ? "collective" : "independent",
              (long long)bad);
        free(got);
      }
      if (types[i] != MPI_BYTE)
        MPI_Type_free(&types[i]);
      free(mem[i]);
      free(packed[i]);
    }
    if (pass == 0)
      for (int f = 0; f < nfiles; f++) /* make the writes visible to the reads */
        nb_ok(c, "sync", aggio_file_sync(fh[f]));
    MPI_Barrier(MPI_COMM_WORLD);
    if (pass == 0)
      for (int f = 0; f < nfiles; f++)
        nb_ok(c, "sync", aggio_file_sync(fh[f]));
  }
out:
  for (int f = 0; f < nfiles; f++)
    if (fh[f])
      nb_ok(c, "close", aggio_file_close(&fh[f]));
  MPI_Type_free(&ftr);
  /* the files as the MPI library's MPI-IO reads them */
  int64_t total = 0;
  for (int k = 0; k < NREQ; k++)
    total += s[k].len * c->np;
  for (int f = 0; f < nfiles; f++) {
    unsigned char *expect = malloc((size_t)total);
    int64_t pos = 0;
    for (int k = 0; k < NREQ; k++)
      for (int r = 0; r < c->np; r++)
        for (int64_t i = 0; i < s[k].len; i++, pos++)
          expect[pos] = nb_datum(f, r, s[k].off - (int64_t)c->rank * s[k].len +
                                           (int64_t)r * s[k].len + i);
    if (f == 1) { /* the strided view: rank r's stream in its 64-byte blocks */
      for (int r = 0; r < c->np; r++) {
        int64_t sp = 0;
        for (int k = 0; k < NREQ; k++) {
          int64_t soff = s[k].off - (int64_t)c->rank * s[k].len + (int64_t)r * s[k].len;
          for (int64_t i = 0; i < s[k].len; i++, sp++) {
            int64_t at = (sp / 64) * 64 * c->np + (int64_t)r * 64 + sp % 64;
            expect[at] = nb_datum(1, r, soff + i);
          }
        }
      }
    }
    nb_compare_file(c, c->path[f], expect, total, what);
    free(expect);
  }
}

/* ---- split collectives -------------------------------------------------------- */

static void t_split(struct nb *c, const char *strategy) {
  enum { N = 6000 };
  char what[160];
  snprintf(what, sizeof what, "split collectives (%s)", strategy);
  nb_begin(c, what);
  aggio_file fh;
  if (nb_open(c, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, &fh) != 0)
    return;
  unsigned char *w = malloc(N), *w2 = malloc(N), *r = malloc(N), *r2 = malloc(N);
  for (int i = 0; i < N; i++) {
    w[i] = nb_datum(2, c->rank, i);
    w2[i] = nb_datum(3, c->rank, i);
  }
  MPI_Status st;
  int cnt, rc;
  /* an end without a begin, of each kind */
  nb_expect(c, "write_at_all_end without begin", aggio_file_write_at_all_end(fh, w, &st),
            AGGIO_ERR_REQUEST);
  nb_expect(c, "read_at_all_end without begin", aggio_file_read_at_all_end(fh, r, &st),
            AGGIO_ERR_REQUEST);
  nb_expect(c, "write_all_end without begin", aggio_file_write_all_end(fh, w, &st),
            AGGIO_ERR_REQUEST);
  nb_expect(c, "read_all_end without begin", aggio_file_read_all_end(fh, r, &st),
            AGGIO_ERR_REQUEST);

  /* write_at_all: a second begin while one is active, and an end of the
   * wrong kind, fail and leave the active one alone */
  nb_ok(c, "write_at_all_begin",
        aggio_file_write_at_all_begin(fh, (MPI_Offset)c->rank * N, w, N, MPI_BYTE));
  nb_expect(c, "second write_at_all_begin while one is active",
            aggio_file_write_at_all_begin(fh, (MPI_Offset)(c->np + c->rank) * N, w2, N,
                                          MPI_BYTE),
            AGGIO_ERR_REQUEST);
  nb_expect(c, "read_at_all_begin while a write is active",
            aggio_file_read_at_all_begin(fh, 0, r, N, MPI_BYTE), AGGIO_ERR_REQUEST);
  nb_expect(c, "read_at_all_end for an active write", aggio_file_read_at_all_end(fh, r, &st),
            AGGIO_ERR_REQUEST);
  nb_expect(c, "write_all_end for an active write_at_all",
            aggio_file_write_all_end(fh, w, &st), AGGIO_ERR_REQUEST);
  rc = aggio_file_write_at_all_end(fh, w, &st);
  nb_ok(c, "write_at_all_end", rc);
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(rc != 0 || cnt == N, "%s: write_at_all_end count %d, expected %d", what, cnt, N);
  nb_expect(c, "write_at_all_end a second time", aggio_file_write_at_all_end(fh, w, &st),
            AGGIO_ERR_REQUEST);

  /* write_all through the file pointer, with a non-blocking write
   * outstanding beside it; the pointer moves at begin */
  nb_ok(c, "seek", aggio_file_seek(fh, (MPI_Offset)(c->np + c->rank) * N, MPI_SEEK_SET));
  aggio_request req = AGGIO_REQUEST_NULL;
  unsigned char tail[100];
  for (int i = 0; i < 100; i++)
    tail[i] = nb_datum(4, c->rank, i);
  nb_ok(c, "iwrite_at beside a split collective",
        aggio_file_iwrite_at(fh, (MPI_Offset)2 * c->np * N + c->rank * 100, tail, 100,
                             MPI_BYTE, &req));
  nb_ok(c, "write_all_begin", aggio_file_write_all_begin(fh, w2, N, MPI_BYTE));
  MPI_Offset pos = -1;
  aggio_file_get_position(fh, &pos);
  CHECK(pos == (MPI_Offset)(c->np + c->rank + 1) * N, "%s: rank %d: position %lld right after "
        "write_all_begin, expected %lld", what, c->rank, (long long)pos,
        (long long)(c->np + c->rank + 1) * N);
  nb_expect(c, "write_at_all_end for an active write_all",
            aggio_file_write_at_all_end(fh, w2, &st), AGGIO_ERR_REQUEST);
  nb_expect(c, "write_all_end with another buffer", aggio_file_write_all_end(fh, w, &st),
            AGGIO_ERR_ARG);
  rc = aggio_file_write_all_end(fh, w2, &st);
  nb_ok(c, "write_all_end", rc);
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(rc != 0 || cnt == N, "%s: write_all_end count %d", what, cnt);
  nb_ok(c, "wait (iwrite_at)", aggio_wait(&req, &st));
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(cnt == 100, "%s: iwrite_at count %d", what, cnt);
  nb_ok(c, "sync", aggio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  nb_ok(c, "sync", aggio_file_sync(fh));

  /* the two reads back: read_at_all of the first block, read_all of the
   * second through the pointer */
  memset(r, 0, N);
  memset(r2, 0, N);
  nb_ok(c, "read_at_all_begin",
        aggio_file_read_at_all_begin(fh, (MPI_Offset)c->rank * N, r, N, MPI_BYTE));
  nb_expect(c, "read_all_begin while read_at_all is active",
            aggio_file_read_all_begin(fh, r2, N, MPI_BYTE), AGGIO_ERR_REQUEST);
  rc = aggio_file_read_at_all_end(fh, r, &st);
  nb_ok(c, "read_at_all_end", rc);
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(rc != 0 || (cnt == N && memcmp(r, w, N) == 0), "%s: rank %d: read_at_all_end: count "
        "%d, data %s", what, c->rank, cnt, memcmp(r, w, N) ? "differs" : "right");
  nb_ok(c, "seek", aggio_file_seek(fh, (MPI_Offset)(c->np + c->rank) * N, MPI_SEEK_SET));
  nb_ok(c, "read_all_begin", aggio_file_read_all_begin(fh, r2, N, MPI_BYTE));
  aggio_file_get_position(fh, &pos);
  CHECK(pos == (MPI_Offset)(c->np + c->rank + 1) * N, "%s: position %lld after read_all_begin",
        what, (long long)pos);
  rc = aggio_file_read_all_end(fh, r2, &st);
  nb_ok(c, "read_all_end", rc);
  MPI_Get_count(&st, MPI_BYTE, &cnt);
  CHECK(rc != 0 || (cnt == N && memcmp(r2, w2, N) == 0), "%s: rank %d: read_all_end: count "
        "%d, data %s", what, c->rank, cnt, memcmp(r2, w2, N) ? "differs" : "right");
  nb_ok(c, "close", aggio_file_close(&fh));

  int64_t total = (int64_t)2 * c->np * N + 100 * c->np;
  unsigned char *expect = malloc((size_t)total);
  for (int q = 0; q < c->np; q++)
    for (int i = 0; i < N; i++) {
      expect[(int64_t)q * N + i] = nb_datum(2, q, i);
      expect[(int64_t)(c->np + q) * N + i] = nb_datum(3, q, i);
    }
  for (int q = 0; q < c->np; q++)
    for (int i = 0; i < 100; i++)
      expect[(int64_t)2 * c->np * N + q * 100 + i] = nb_datum(4, q, i);
  nb_compare_file(c, c->path[0], expect, total, what);
  free(expect);
  free(w), free(w2), free(r), free(r2);
}

/* ---- individual file pointers ----------------------------------------------------- */

/* Each rank's region of the file is its view (disp = rank * REGION, etype
 * MPI_INT): iwrite and iwrite_all move the pointer at once, by the whole
 * request; so do iread and iread_all, even past end of file. */
static void t_pointer(struct nb *c, const char *strategy) {
  enum { A = 700, B = 1300, REGION = 4 * (A + B) };
  char what[160];
  snprintf(what, sizeof what, "file pointers (%s)", strategy);
  nb_begin(c, what);
  aggio_file fh;
  if (nb_open(c, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, &fh) != 0)
    return;
  nb_ok(c, "set_view", aggio_file_set_view(fh, (MPI_Offset)c->rank * REGION, MPI_INT, MPI_INT,
                                           "native", MPI_INFO_NULL));
  int *w = malloc(sizeof(int) * (A + B)), *r = calloc(A + B + 64, sizeof(int));
  for (int i = 0; i < A + B; i++)
    w[i] = (int)(0x1000000 * (c->rank + 1) + i);
  aggio_request q[4];
  MPI_Offset pos = -1;
  nb_ok(c, "iwrite", aggio_file_iwrite(fh, w, A, MPI_INT, &q[0]));
  aggio_file_get_position(fh, &pos);
  CHECK(pos == A, "%s: rank %d: position %lld right after iwrite of %d ints", what, c->rank,
        (long long)pos, A);
  nb_ok(c, "iwrite_all", aggio_file_iwrite_all(fh, w + A, B, MPI_INT, &q[1]));
  aggio_file_get_position(fh, &pos);
  CHECK(pos == A + B, "%s: rank %d: position %lld right after iwrite_all, expected %d", what,
        c->rank, (long long)pos, A + B);
  int64_t want[2] = {4 * A, 4 * B};
  aggio_request two[2] = {q[1], q[0]}; /* the later one first */
  int64_t want2[2] = {want[1], want[0]};
  rng_t g = {c->seed + (uint64_t)c->rank};
  complete_all(c, &g, 2, two, want2, "pointer writes");
  nb_ok(c, "sync", aggio_file_sync(fh));
  MPI_Barrier(MPI_COMM_WORLD);
  nb_ok(c, "sync", aggio_file_sync(fh));

  nb_ok(c, "seek", aggio_file_seek(fh, 0, MPI_SEEK_SET));
  nb_ok(c, "iread_all", aggio_file_iread_all(fh, r, A, MPI_INT, &q[2]));
  aggio_file_get_position(fh, &pos);
  CHECK(pos == A, "%s: position %lld right after iread_all of %d", what, (long long)pos, A);
  /* the last rank's region ends the file: reading 64 ints more comes back
   * short, and the pointer still moves by the whole request */
  int extra = c->rank == c->np - 1 ? 64 : 0;
  nb_ok(c, "iread", aggio_file_iread(fh, r + A, B + extra, MPI_INT, &q[3]));
  aggio_file_get_position(fh, &pos);
  CHECK(pos == A + B + extra, "%s: rank %d: position %lld right after iread of %d, expected "
        "%d", what, c->rank, (long long)pos, B + extra, A + B + extra);
  int64_t rwant[2] = {4 * B, 4 * A};
  aggio_request rq[2] = {q[3], q[2]};
  complete_all(c, &g, 2, rq, rwant, "pointer reads");
  CHECK(memcmp(r, w, sizeof(int) * (A + B)) == 0, "%s: rank %d read other data", what,
        c->rank);
  aggio_file_get_position(fh, &pos);
  CHECK(pos == A + B + extra, "%s: position %lld after the reads completed", what,
        (long long)pos);
  nb_ok(c, "close", aggio_file_close(&fh));

  int64_t total = (int64_t)c->np * REGION;
  unsigned char *expect = malloc((size_t)total);
  for (int p = 0; p < c->np; p++)
    for (int i = 0; i < A + B; i++) {
      int v = (int)(0x1000000 * (p + 1) + i);
      memcpy(expect + (int64_t)p * REGION + 4 * i, &v, 4);
    }
  nb_compare_file(c, c->path[0], expect, total, what);
  free(expect);
  free(w);
  free(r);
}

/* ---- close and sync with operations outstanding -------------------------------------- */

static void t_close_sync(struct nb *c, const char *strategy) {
  enum { N = 5000, K = 4 };
  char what[160];
  snprintf(what, sizeof what, "close and sync with requests outstanding (%s)", strategy);
  nb_begin(c, what);
  unsigned char *w = malloc((size_t)N * K * 2);
  for (int i = 0; i < N * K * 2; i++)
    w[i] = nb_datum(5, c->rank, i);
  aggio_file fh;
  if (nb_open(c, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, &fh) != 0)
    return;
  /* rank r's piece j of the first half at (j * np + r) * N */
  aggio_request q[K];
  for (int j = 0; j < K; j++) {
    MPI_Offset off = ((MPI_Offset)j * c->np + c->rank) * N;
    int rc = j % 2 ? aggio_file_iwrite_at(fh, off, w + j * N, N, MPI_BYTE, &q[j])
                   : aggio_file_iwrite_at_all(fh, off, w + j * N, N, MPI_BYTE, &q[j]);
    nb_ok(c, "start before sync", rc);
  }
  nb_ok(c, "sync with requests outstanding", aggio_file_sync(fh));
  for (int j = 0; j < K; j++) { /* sync completed them: a test finds each done */
    int flag = 0;
    MPI_Status st;
    int cnt = -1;
    nb_ok(c, "test after sync", aggio_test(&q[j], &flag, &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(flag && cnt == N, "%s: rank %d: request %d after sync: flag %d, count %d", what,
          c->rank, j, flag, cnt);
    if (!flag)
      aggio_wait(&q[j], MPI_STATUS_IGNORE);
  }
  /* the second half, left outstanding at close */
  for (int j = 0; j < K; j++) {
    MPI_Offset off = ((MPI_Offset)(K + j) * c->np + c->rank) * N;
    int rc = j % 2 ? aggio_file_iwrite_at_all(fh, off, w + (K + j) * N, N, MPI_BYTE, &q[j])
                   : aggio_file_iwrite_at(fh, off, w + (K + j) * N, N, MPI_BYTE, &q[j]);
    nb_ok(c, "start before close", rc);
  }
  nb_ok(c, "close with requests outstanding", aggio_file_close(&fh));
  CHECK(fh == AGGIO_FILE_NULL, "close left the handle");
  for (int j = K - 1; j >= 0; j--) {
    MPI_Status st;
    int cnt = -1;
    nb_ok(c, "wait after close", aggio_wait(&q[j], &st));
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(cnt == N, "%s: rank %d: request %d waited after close: count %d", what, c->rank, j,
          cnt);
  }
  int64_t total = (int64_t)2 * K * c->np * N;
  unsigned char *expect = malloc((size_t)total);
  for (int j = 0; j < 2 * K; j++)
    for (int p = 0; p < c->np; p++)
      for (int i = 0; i < N; i++)
        expect[((int64_t)j * c->np + p) * N + i] = nb_datum(5, p, (int64_t)j * N + i);
  nb_compare_file(c, c->path[0], expect, total, what);
  free(expect);
  free(w);
}

int main(int argc, char **argv) {
  struct nb c;
  if (nb_init(&c, &argc, &argv, "nonblocking") != 0)
    return nb_finish(&c);
  static const char *strategies[] = {"independent", "two_phase", "write_behind", "auto"};
  for (int s = 0; s < 4; s++) {
    t_many(&c, strategies[s], 1);
    t_many(&c, strategies[s], 2);
    t_split(&c, strategies[s]);
    t_pointer(&c, strategies[s]);
    t_close_sync(&c, strategies[s]);
  }
  return nb_finish(&c);
}
