/*
 * test_nonblocking_errors.c - how non-blocking calls fail (aggio.h): a NULL
 * request pointer or file handle fails the starting call; every other
 * error is agreed and returned by the completing call on every rank: a bad
 * argument on one rank, and a full file system (ENOSPC from AGGIO_FAULTS)
 * under every strategy, completed by wait, waitall, a test loop, or after
 * close; never lost.  Good requests outstanding beside a failing one keep
 * their own outcome and data.
 *
 * aggio-test-ranks: 1 2 4 8
 * aggio-test-parts: single multiple
 *
 * The part is the thread level, as in test_nonblocking.c.
 */
#include <aggio.h>

#include "harness.h"
#include "nb_common.h"

#include <stdint.h>
#include <string.h>

static const char *strategies[] = {"independent", "two_phase", "write_behind", "auto"};

/* An error every rank must return, naming bad_rank when >= 0. */
static void expect_all(struct nb *c, const char *what, int rc, int want, int bad_rank) {
  const char *msg = aggio_error_message();
  CHECK(rc == want, "%s: %s: rank %d returned %d (%s), expected %d (%s); message \"%s\"",
        nb_current, what, c->rank, rc, aggio_strerror(rc), want, aggio_strerror(want), msg);
  if (bad_rank >= 0 && rc != 0) {
    char tag[32];
    snprintf(tag, sizeof tag, "rank %d", bad_rank);
    CHECK(strstr(msg, tag) != NULL, "%s: %s: rank %d: the message does not name rank %d: "
          "\"%s\"", nb_current, what, c->rank, bad_rank, msg);
  }
}

/* ---- the starting call -------------------------------------------------------- */

static void t_start_args(struct nb *c) {
  nb_begin(c, "starting calls: NULL request or file handle");
  aggio_file fh;
  if (nb_open(c, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, "auto", &fh) != 0)
    return;
  char buf[16] = {0};
  aggio_request r = (aggio_request)(uintptr_t)1; /* must be overwritten */
  nb_expect(c, "iwrite_at(request NULL)", aggio_file_iwrite_at(fh, 0, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  nb_expect(c, "iread_at(request NULL)", aggio_file_iread_at(fh, 0, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  nb_expect(c, "iwrite_at_all(request NULL)",
            aggio_file_iwrite_at_all(fh, 0, buf, 1, MPI_BYTE, NULL), AGGIO_ERR_ARG);
  nb_expect(c, "iread_at_all(request NULL)",
            aggio_file_iread_at_all(fh, 0, buf, 1, MPI_BYTE, NULL), AGGIO_ERR_ARG);
  nb_expect(c, "iwrite(request NULL)", aggio_file_iwrite(fh, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  nb_expect(c, "iread(request NULL)", aggio_file_iread(fh, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  nb_expect(c, "iwrite_all(request NULL)", aggio_file_iwrite_all(fh, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  nb_expect(c, "iread_all(request NULL)", aggio_file_iread_all(fh, buf, 1, MPI_BYTE, NULL),
            AGGIO_ERR_ARG);
  MPI_Offset pos = -1;
  aggio_file_get_position(fh, &pos);
  CHECK(pos == 0, "a failed start moved the file pointer to %lld", (long long)pos);
  nb_expect(c, "iwrite_at_all(fh NULL)",
            aggio_file_iwrite_at_all(AGGIO_FILE_NULL, 0, buf, 1, MPI_BYTE, &r),
            AGGIO_ERR_BAD_FILE);
  CHECK(r == AGGIO_REQUEST_NULL, "a failed start left the request set");
  nb_expect(c, "wait(NULL)", aggio_wait(NULL, MPI_STATUS_IGNORE), AGGIO_ERR_ARG);
  r = AGGIO_REQUEST_NULL;
  nb_ok(c, "wait(AGGIO_REQUEST_NULL)", aggio_wait(&r, MPI_STATUS_IGNORE));
  /* no request was left behind: close does not wait for one */
  nb_ok(c, "close", aggio_file_close(&fh));
}

/* ---- bad arguments on one rank ------------------------------------------------ */

/* Between two good collective writes, a collective call with a bad
 * argument on the last rank: it starts everywhere; its completion returns
 * the bad rank's code on every rank; the good ones write their data. */
static void t_one_bad(struct nb *c, const char *strategy) {
  enum { N = 3000 };
  char what[160];
  snprintf(what, sizeof what, "bad argument on one rank (%s)", strategy);
  nb_begin(c, what);
  aggio_file fh;
  if (nb_open(c, c->path[0], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, &fh) != 0)
    return;
  int bad = c->rank == c->np - 1;
  unsigned char *w = malloc(2 * N), *r = malloc(N);
  for (int i = 0; i < 2 * N; i++)
    w[i] = nb_datum(6, c->rank, i);
  static const struct {
    const char *name;
    int code;
  } cases[] = {{"iwrite_at_all, negative count", AGGIO_ERR_ARG},
               {"iwrite_at_all, negative offset", AGGIO_ERR_OFFSET},
               {"iread_at_all, negative count", AGGIO_ERR_ARG},
               {"iwrite_at_all, MPI_DATATYPE_NULL", AGGIO_ERR_TYPE}};
  for (int k = 0; k < 4; k++) {
    aggio_request q[3];
    MPI_Status st[3];
    nb_ok(c, "iwrite_at_all (good, before)",
          aggio_file_iwrite_at_all(fh, (MPI_Offset)c->rank * N, w, N, MPI_BYTE, &q[0]));
    MPI_Offset off = (MPI_Offset)(c->np + c->rank) * N;
    int rc = k == 0   ? aggio_file_iwrite_at_all(fh, off, w, bad ? -3 : N, MPI_BYTE, &q[1])
             : k == 1 ? aggio_file_iwrite_at_all(fh, bad ? -5 : off, w, N, MPI_BYTE, &q[1])
             : k == 2 ? aggio_file_iread_at_all(fh, off, r, bad ? -1 : N, MPI_BYTE, &q[1])
                      : aggio_file_iwrite_at_all(fh, off, w, N,
                                                 bad ? MPI_DATATYPE_NULL : MPI_BYTE, &q[1]);
    nb_ok(c, "the starting call of a bad argument (reported at completion)", rc);
    nb_ok(c, "iwrite_at_all (good, after)",
          aggio_file_iwrite_at_all(fh, (MPI_Offset)(c->np + c->rank) * N, w + N, N, MPI_BYTE,
                                   &q[2]));
    char w2[200];
    snprintf(w2, sizeof w2, "%s, completed by %s", cases[k].name,
             k % 2 ? "a test loop" : "wait");
    /* complete the bad one first or last, by rank */
    int order[3] = {1, 0, 2};
    if (c->rank % 2)
      order[0] = 2, order[2] = 1;
    for (int i = 0; i < 3; i++) {
      int j = order[i];
      if (k % 2) {
        int flag = 0;
        do
          rc = aggio_test(&q[j], &flag, &st[j]);
        while (!flag);
      } else {
        rc = aggio_wait(&q[j], &st[j]);
      }
      if (j == 1)
        expect_all(c, w2, rc, cases[k].code, c->np - 1);
      else
        nb_ok(c, "a good request beside the bad one", rc);
    }
    int cnt = -1;
    MPI_Get_count(&st[2], MPI_BYTE, &cnt);
    CHECK(cnt == N, "%s: good request after the bad one: count %d", w2, cnt);
  }
  /* the same for an independent call on the last rank alone */
  if (bad) {
    aggio_request q;
    nb_ok(c, "iwrite_at negative count (start)",
          aggio_file_iwrite_at(fh, 0, w, -1, MPI_BYTE, &q));
    expect_all(c, "iwrite_at negative count (wait)", aggio_wait(&q, MPI_STATUS_IGNORE),
               AGGIO_ERR_ARG, -1);
  }
  nb_ok(c, "close", aggio_file_close(&fh));
  int64_t total = (int64_t)2 * c->np * N;
  unsigned char *expect = malloc((size_t)total);
  for (int p = 0; p < c->np; p++)
    for (int i = 0; i < N; i++) {
      expect[(int64_t)p * N + i] = nb_datum(6, p, i);
      expect[(int64_t)(c->np + p) * N + i] = nb_datum(6, p, N + i);
    }
  nb_compare_file(c, c->path[0], expect, total, what);
  free(expect);
  free(w);
  free(r);
}

/* ---- a full file system ---------------------------------------------------------- */

enum { ENOSPC_N = 64 << 10 };

/* Opens with every pwrite of the named ranks failing with ENOSPC
 * (AGGIO_FAULTS, read at open); every rank is an aggregator, so that the
 * failing rank writes whatever the strategy. */
static int open_full(struct nb *c, const char *strategy, const char *who, aggio_file *fh) {
  char spec[64], nodes[16];
  snprintf(spec, sizeof spec, "pwrite@%s#1+=ENOSPC", who);
  snprintf(nodes, sizeof nodes, "%d", c->np);
  setenv("AGGIO_FAULTS", spec, 1);
  int rc = nb_open_with(c, c->path[1], MPI_MODE_RDWR | MPI_MODE_CREATE, strategy, "cb_nodes",
                        nodes, fh);
  unsetenv("AGGIO_FAULTS");
  return rc;
}

/* After a write that reported success: every rank's data is in the file
 * (read back with the MPI library's own MPI-IO after a sync). */
static void enospc_data_there(struct nb *c, int nreq, const char *what, aggio_file fh) {
  if (fh)
    aggio_file_sync(fh);
  int64_t total = (int64_t)nreq * c->np * ENOSPC_N;
  unsigned char *expect = malloc((size_t)total);
  for (int j = 0; j < nreq; j++)
    for (int p = 0; p < c->np; p++)
      for (int i = 0; i < ENOSPC_N; i++)
        expect[((int64_t)j * c->np + p) * ENOSPC_N + i] = nb_datum(7, p, (int64_t)j * ENOSPC_N + i);
  char w2[240];
  snprintf(w2, sizeof w2, "%s: reported success, so the data is there", what);
  nb_compare_file(c, c->path[1], expect, total, w2);
  free(expect);
}

/* ENOSPC in non-blocking collective writes, on every rank or on the last
 * only, completed in three ways; write-behind may hold the data past the
 * wait, and then sync reports it. */
static void t_enospc(struct nb *c, const char *strategy, int one) {
  char who[16], what[200];
  snprintf(who, sizeof who, one ? "%d" : "*", c->np - 1);
  unsigned char *w = malloc(2 * ENOSPC_N);
  for (int i = 0; i < 2 * ENOSPC_N; i++)
    w[i] = nb_datum(7, c->rank, i);
  int deferred = strcmp(strategy, "write_behind") == 0 || strcmp(strategy, "auto") == 0;
  for (int how = 0; how < 3; how++) {
    static const char *hows[] = {"wait", "waitall of two", "wait after close"};
    snprintf(what, sizeof what, "ENOSPC in iwrite_at_all (%s, %s, %s)", strategy,
             one ? "last rank's writes fail" : "every rank's writes fail", hows[how]);
    nb_begin(c, what);
    aggio_file fh;
    if (open_full(c, strategy, who, &fh) != 0)
      continue;
    aggio_request q[2] = {AGGIO_REQUEST_NULL, AGGIO_REQUEST_NULL};
    int nreq = how == 1 ? 2 : 1, rc;
    for (int j = 0; j < nreq; j++)
      nb_ok(c, "iwrite_at_all (start)",
            aggio_file_iwrite_at_all(fh, ((MPI_Offset)j * c->np + c->rank) * ENOSPC_N,
                                     w + j * ENOSPC_N, ENOSPC_N, MPI_BYTE, &q[j]));
    int crc = 0;
    if (how == 2)
      crc = aggio_file_close(&fh); /* its own outcome: either; the request keeps its own */
    MPI_Status sts[2];
    rc = how == 1 ? aggio_waitall(2, q, sts) : aggio_wait(&q[0], &sts[0]);
    int lo, hi;
    MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    CHECK(lo == hi, "%s: ranks disagree: %d..%d", what, lo, hi);
    if (rc == 0 && deferred) {
      /* held behind the call: sync (or close) reports it, everywhere.  When
       * only the last rank's pwrites fail, the node cache's blocks may all
       * be written by other ranks' threads: then nothing failed, and the
       * file must hold every byte (success never hides a loss). */
      int src = how == 2 ? crc : aggio_file_sync(fh);
      int agreed;
      MPI_Allreduce(&src, &agreed, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      if (one && agreed == 0)
        enospc_data_there(c, nreq, what, fh);
      else
        expect_all(c, how == 2 ? "close after a write-behind failure" : "sync after write-behind",
                   src, AGGIO_ERR_NO_SPACE, -1);
    } else {
      expect_all(c, what, rc, AGGIO_ERR_NO_SPACE, -1);
    }
    if (fh)
      aggio_file_close(&fh); /* may report it again: the pwrites still fail */
    for (int j = 0; j < 2; j++)
      CHECK(q[j] == AGGIO_REQUEST_NULL, "%s: request %d left set", what, j);
    MPI_Barrier(MPI_COMM_WORLD);
    if (c->rank == 0)
      unlink(c->path[1]);
  }
  free(w);
}

int main(int argc, char **argv) {
  struct nb c;
  if (nb_init(&c, &argc, &argv, "nonblocking_errors") != 0)
    return nb_finish(&c);
  t_start_args(&c);
  for (int s = 0; s < 4; s++) {
    t_one_bad(&c, strategies[s]);
    t_enospc(&c, strategies[s], 0);
    t_enospc(&c, strategies[s], 1);
  }
  return nb_finish(&c);
}
