/*
 * test_faults.c - failures no real file system produces on demand, made
 * with AGGIO_FAULTS (src/base/fault.h), and the engine's answers to them:
 *   - every small allocation of a two-phase call (with either exchange,
 *     two_sided and rma) or of a node_local call (and of node_local's
 *     set-up, its shared window included) failing in turn on one rank:
 *     every rank returns the same outcome, none hangs;
 *   - a failing fstat on the rank that used to find the end of file for a
 *     collective read, and under MPI_MODE_APPEND at open;
 *   - writes behind the calls failing with EIO, once on every rank (one
 *     emulated node each): the next collective call, sync or close reports
 *     each failure on every rank, exactly once, naming the failing rank and
 *     pwrite, and the file works again;
 *   - fsync failing with EINVAL or EROFS: sync reports it on every rank;
 *   - direct I/O from unaligned memory on several I/O threads at once (the
 *     bounce buffers must not be shared).
 *
 * aggio-test-ranks: 1 2 4
 */
#include <aggio.h>

#include "harness.h"
#include "internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int rank, nprocs;
static char path[512];

static void faults(const char *spec) {
  if (spec)
    setenv("AGGIO_FAULTS", spec, 1);
  else
    unsetenv("AGGIO_FAULTS");
}

static aggio_file open_with(const char *strategy, int amode, const char *k, const char *v) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", strategy);
  MPI_Info_set(info, "cb_buffer_size", "65536");
  if (k)
    MPI_Info_set(info, k, v);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, amode, info, &fh);
  MPI_Info_free(&info);
  return rc == AGGIO_SUCCESS ? fh : AGGIO_FILE_NULL;
}

/* The same outcome on every rank: all succeed, or all fail. */
static int agreed(int rc, const char *what) {
  int lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK((lo == 0) == (hi == 0), "%s: rank %d returned %d, ranks range %d..%d (%s)", what, rank,
        rc, lo, hi, aggio_error_message());
  return hi;
}

static unsigned char pat(int r, int64_t i) { return (unsigned char)(r * 31 + i * 7 + i / 253); }

/* Strided collective writes and reads (several pieces per rank, several
 * rounds) through `strategy` (two-phase with `exchange`) with the nth
 * allocation of the last rank failing, n = 1, 2, ... until a call gets
 * through untouched.  node_local runs on two emulated nodes, so that a
 * failure on one node must reach the other. */
static void t_alloc(const char *strategy, const char *exchange) {
  enum { REC = 1000, NREC = 40 };
  unsigned char buf[REC * NREC], back[REC * NREC];
  for (int i = 0; i < REC * NREC; i++)
    buf[i] = pat(rank, i);
  MPI_Datatype ft;
  MPI_Type_vector(NREC, REC, REC * nprocs, MPI_BYTE, &ft);
  MPI_Type_commit(&ft);
  int clean = 0;
  for (int n = 1; n <= 200 && !clean; n++) {
    char spec[64];
    snprintf(spec, sizeof spec, "alloc@%d#%d=ENOMEM", nprocs - 1, n);
    char hints[64];
    snprintf(hints, sizeof hints, "*:aggio_exchange=%s", exchange);
    setenv("AGGIO_HINTS", hints, 1);
    faults(spec);
    int nl = strcmp(strategy, "node_local") == 0;
    aggio_file fh = open_with(strategy, MPI_MODE_CREATE | MPI_MODE_RDWR,
                              nl ? "aggio_emulate_nodes" : "cb_buffer_size", nl ? "2" : "8192");
    faults(NULL);
    unsetenv("AGGIO_HINTS");
    /* the open's own allocations count too: a failed one fails the open on
     * every rank */
    char what0[80];
    snprintf(what0, sizeof what0, "%s/%s open with allocation %d failing", strategy, exchange, n);
    if (agreed(fh ? 0 : AGGIO_ERR_NOMEM, what0) != 0)
      continue;
    aggio_file_set_view(fh, (MPI_Offset)rank * REC, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    int w = aggio_file_write_at_all(fh, 0, buf, REC * NREC, MPI_BYTE, MPI_STATUS_IGNORE);
    char what[80];
    snprintf(what, sizeof what, "%s/%s write_at_all with allocation %d failing", strategy, exchange, n);
    int wrc = agreed(w, what);
    CHECK(w == 0 || w == AGGIO_ERR_NOMEM, "%s: rank %d got %d", what, rank, w);
    memset(back, 0, sizeof back);
    int r = aggio_file_read_at_all(fh, 0, back, REC * NREC, MPI_BYTE, MPI_STATUS_IGNORE);
    snprintf(what, sizeof what, "%s/%s read_at_all after allocation %d failed", strategy, exchange, n);
    int rrc = agreed(r, what);
    if (wrc == 0 && rrc == 0)
      CHECK(memcmp(buf, back, sizeof buf) == 0, "%s: data differs", what);
    clean = wrc == 0 && rrc == 0;
    aggio_file_close(&fh);
  }
  CHECK(clean, "allocations kept failing: the count of allocations grew past 200");
  MPI_Type_free(&ft);
}

/* A collective read must not depend on one rank's fstat (rank 0's failing
 * fstat once let the others return 0 bytes and success), and MPI_MODE_APPEND
 * must not drop a failing fstat. */
static void t_fstat(void) {
  enum { N = 4096 };
  unsigned char buf[N], back[N];
  for (int i = 0; i < N; i++)
    buf[i] = pat(rank, i);
  aggio_file fh = open_with("two_phase", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL);
  CHECK(fh && aggio_file_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE,
                                       MPI_STATUS_IGNORE) == 0, "write");
  aggio_file_close(&fh);
  static const char *strategies[] = {"two_phase", "independent", "write_behind"};
  for (int s = 0; s < 3; s++) {
    faults("size@*#1+=EIO");
    fh = open_with(strategies[s], MPI_MODE_RDONLY, NULL, NULL);
    faults(NULL);
    CHECK(fh != AGGIO_FILE_NULL, "open read-only: %s", aggio_error_message());
    if (!fh)
      continue;
    MPI_Status st;
    MPI_Count n = -1;
    memset(back, 0, sizeof back);
    int rc = aggio_file_read_at_all(fh, (MPI_Offset)rank * N, back, N, MPI_BYTE, &st);
    if (agreed(rc, strategies[s]) == 0) {
      MPI_Get_elements_x(&st, MPI_BYTE, &n);
      CHECK(n == N && memcmp(buf, back, N) == 0, "%s: read %lld bytes, data %s", strategies[s],
            (long long)n, memcmp(buf, back, N) ? "differs" : "right");
    }
    aggio_file_close(&fh);
  }
  char spec[32];
  snprintf(spec, sizeof spec, "size@%d=EIO", nprocs - 1);
  faults(spec);
  fh = open_with("auto", MPI_MODE_WRONLY | MPI_MODE_APPEND, NULL, NULL);
  faults(NULL);
  int rc = fh ? 0 : -1;
  CHECK(agreed(rc, "open with MPI_MODE_APPEND and a failing fstat") != 0,
        "open with MPI_MODE_APPEND succeeded though rank %d's fstat failed", nprocs - 1);
  if (fh)
    aggio_file_close(&fh);
}

/* The ranks a deferred report names as failing, as a bit mask: every R of
 * "rank R: pwrite(" in msg (ranks below 31). */
static int failing_ranks(const char *msg) {
  int mask = 0;
  const char *call = strstr(msg, ": pwrite(");
  for (; call; call = strstr(call + 1, ": pwrite(")) {
    const char *p = call;
    while (p > msg && p[-1] >= '0' && p[-1] <= '9')
      p--;
    if (p < call && p - msg >= 5 && strncmp(p - 5, "rank ", 5) == 0 && atoi(p) < 31)
      mask |= 1 << atoi(p);
  }
  return mask;
}

/* Bookkeeping of one t_deferred run on this rank. */
struct reports {
  int named[31]; /* reports that named each rank's failure */
  int unnamed;   /* reports that named no failed pwrite of a rank */
};

/* One call's outcome: agreed on every rank and, when it is a report, a
 * deferred EIO whose message names the same failures on every rank. */
static void note(struct reports *r, int rc, const char *what) {
  agreed(rc, what);
  if (rc == 0)
    return;
  const char *msg = aggio_error_message();
  CHECK(rc == AGGIO_ERR_IO, "%s: rank %d: a deferred EIO reported as %d (%s)", what, rank,
        rc, msg);
  int mask = failing_ranks(msg), any, all;
  MPI_Allreduce(&mask, &any, 1, MPI_INT, MPI_BOR, MPI_COMM_WORLD);
  MPI_Allreduce(&mask, &all, 1, MPI_INT, MPI_BAND, MPI_COMM_WORLD);
  CHECK(any == all,
        "%s: the ranks name different failures (ranks %#x on some, %#x on all): "
        "rank %d has '%s'",
        what, any, all, rank, msg);
  r->unnamed += mask == 0;
  for (int q = 0; q < 31; q++)
    r->named[q] += (mask >> q) & 1;
}

/* Writes behind the calls fail: with one emulated node per rank every rank
 * holds its own blocks and writes them itself, and the first system write
 * of each fails (pwrite@*#1), so there are exactly nprocs failures, one per
 * rank.  docs/strategies.md ("When write-behind reports errors") promises each of them
 * reported once, on every rank, by the next collective call, sync (where
 * 0), collective read (1) or close (2), with a message naming the failing
 * rank and system call; and the file working again after the reports.  So:
 * every report is the same error on every rank, naming the same failures
 * ("rank R: pwrite(...)": one report per failure, or one naming several),
 * and each rank's failure is named by exactly one report. */
static void t_deferred(void) {
  enum { N = 64 << 10 };
  unsigned char *buf = malloc(N), *back = malloc(N);
  memset(buf, 0x5a, N);
  char nodes[16];
  snprintf(nodes, sizeof nodes, "%d", nprocs);
  for (int where = 0; where < 3; where++) {
    faults("pwrite@*#1=EIO");
    setenv("AGGIO_EMULATE_NODES", nodes, 1);
    aggio_file fh = open_with("write_behind", MPI_MODE_CREATE | MPI_MODE_RDWR,
                              "aggio_write_behind_size", "131072");
    unsetenv("AGGIO_EMULATE_NODES");
    faults(NULL);
    CHECK(fh != AGGIO_FILE_NULL, "open: %s", aggio_error_message());
    if (!fh)
      continue;
    CHECK(fh->topo.nnodes == nprocs, "one emulated node per rank: %d nodes",
          fh->topo.nnodes);
    struct reports r = {0};
    char what[96];
    /* whole blocks are written behind the calls */
    for (int k = 0; k < 16; k++) {
      snprintf(what, sizeof what, "write_at_all %d while writes behind fail (where %d)",
               k, where);
      note(&r, aggio_file_write_at_all(fh, ((MPI_Offset)k * nprocs + rank) * N, buf, N,
                                       MPI_BYTE, MPI_STATUS_IGNORE), what);
    }
    snprintf(what, sizeof what, "%s after failed writes behind",
             where == 0 ? "sync" : where == 1 ? "read_at_all" : "close");
    if (where == 0)
      note(&r, aggio_file_sync(fh), what);
    else if (where == 1)
      note(&r, aggio_file_read_at_all(fh, 0, back, 1, MPI_BYTE, MPI_STATUS_IGNORE), what);
    if (where < 2) {
      /* after the reports the file works again: a new write reaches it */
      MPI_Offset at = ((MPI_Offset)16 * nprocs + rank) * N;
      memset(buf, 0x33 + where, N);
      int rc = aggio_file_write_at_all(fh, at, buf, N, MPI_BYTE, MPI_STATUS_IGNORE);
      note(&r, rc, "write after the reports");
      note(&r, aggio_file_sync(fh), "sync after the reports");
      memset(back, 0, N);
      rc = aggio_file_read_at_all(fh, at, back, N, MPI_BYTE, MPI_STATUS_IGNORE);
      note(&r, rc, "read after the reports");
      CHECK(rc == 0 && memcmp(buf, back, N) == 0, "rank %d: the write after the reports "
            "did not reach the file (where %d)", rank, where);
      memset(buf, 0x5a, N);
    }
    note(&r, aggio_file_close(&fh), "close after failed writes behind");
    CHECK(r.unnamed == 0,
          "rank %d: %d reports name no failing rank and pwrite (where %d)", rank,
          r.unnamed, where);
    for (int q = 0; q < nprocs && q < 31; q++)
      CHECK(r.named[q] == 1, "rank %d: rank %d's failure reported %d times (where %d)",
            rank, q, r.named[q], where);
  }
  free(buf);
  free(back);
}

/* A failure behind the calls must not be lost when the call that would
 * report it fails for another reason: a bad offset on the failing rank
 * itself (which used to mark its failure reported and drop it), or on
 * another rank whose error wins the agreement.  The bad call returns the
 * offset error on every rank; the sync after it must still report the
 * write that failed. */
static void t_deferred_behind_own_error(void) {
  enum { N = 64 << 10 };
  unsigned char *buf = malloc(N);
  memset(buf, 0x6b, N);
  char nodes[16], spec[32];
  snprintf(nodes, sizeof nodes, "%d", nprocs);
  snprintf(spec, sizeof spec, "pwrite@%d#1=EIO", nprocs - 1);
  for (int bad_rank = nprocs - 1, v = 0; v < 2; v++, bad_rank = 0) {
    faults(spec);
    setenv("AGGIO_EMULATE_NODES", nodes, 1);
    aggio_file fh = open_with("write_behind", MPI_MODE_CREATE | MPI_MODE_RDWR,
                              "aggio_write_behind_size", "131072");
    unsetenv("AGGIO_EMULATE_NODES");
    faults(NULL);
    CHECK(fh != AGGIO_FILE_NULL, "open: %s", aggio_error_message());
    if (!fh)
      continue;
    /* two whole blocks, written behind the call by the I/O threads (the
     * first write of the last rank's fails); the cache holds four, so no
     * later call of this rank writes (or reports) anything before the bad
     * one */
    CHECK(aggio_file_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE,
                                  MPI_STATUS_IGNORE) == 0, "write: %s", aggio_error_message());
    usleep(400000); /* the I/O threads have tried by now (aggio_write_behind_delay too) */
    MPI_Offset at = rank == bad_rank ? -1 : ((MPI_Offset)nprocs + rank) * N;
    int rc = aggio_file_write_at_all(fh, at, buf, N, MPI_BYTE, MPI_STATUS_IGNORE);
    char what[96];
    snprintf(what, sizeof what, "a bad offset on rank %d with a failure behind", bad_rank);
    CHECK(agreed(rc, what) != 0, "%s: the call succeeded", what);
    CHECK(rc == AGGIO_ERR_OFFSET, "%s: rank %d returned %d (%s), expected the offset error",
          what, rank, rc, aggio_error_message());
    rc = aggio_file_sync(fh);
    snprintf(what, sizeof what, "sync after %s", "the bad offset");
    agreed(rc, what);
    CHECK(rc == AGGIO_ERR_IO && failing_ranks(aggio_error_message()) == 1 << (nprocs - 1),
          "%s (bad offset on rank %d): rank %d returned %d (%s): the write that failed behind "
          "the calls was not reported", what, bad_rank, rank, rc, aggio_error_message());
    aggio_file_close(&fh);
    if (nprocs == 1)
      break;
  }
  free(buf);
}

/* fsync failing with EINVAL or EROFS on the last rank: sync must not call
 * the data durable.  Every rank returns AGGIO_ERR_IO, the failing rank's
 * message names fsync and the errno, the others name the failing rank;
 * the next sync (fsync working again) succeeds and the data is there. */
static void t_fsync(void) {
  enum { N = 4096 };
  static const struct {
    const char *name;
    int err;
  } errs[] = {{"EINVAL", EINVAL}, {"EROFS", EROFS}};
  unsigned char buf[N], back[N];
  for (int i = 0; i < N; i++)
    buf[i] = pat(rank, i);
  for (int k = 0; k < 2; k++) {
    char spec[64];
    snprintf(spec, sizeof spec, "fsync@%d#1=%s", nprocs - 1, errs[k].name);
    faults(spec);
    aggio_file fh = open_with("two_phase", MPI_MODE_CREATE | MPI_MODE_RDWR, NULL, NULL);
    faults(NULL);
    CHECK(fh != AGGIO_FILE_NULL, "open: %s", aggio_error_message());
    if (!fh)
      continue;
    int rc = aggio_file_write_at_all(fh, (MPI_Offset)rank * N, buf, N, MPI_BYTE,
                                     MPI_STATUS_IGNORE);
    CHECK(rc == 0, "write: %s", aggio_error_message());
    rc = aggio_file_sync(fh);
    const char *msg = aggio_error_message();
    char want[64];
    snprintf(want, sizeof want, "rank %d", nprocs - 1);
    CHECK(rc == AGGIO_ERR_IO, "rank %d: sync after fsync failed with %s returned %d (%s)",
          rank, errs[k].name, rc, rc ? msg : "success");
    if (rank == nprocs - 1)
      CHECK(rc != 0 && strstr(msg, "fsync") && strstr(msg, strerror(errs[k].err)),
            "the message names fsync and %s: %s", errs[k].name, msg);
    else
      CHECK(rc != 0 && strstr(msg, want), "the message names %s: %s", want, msg);
    rc = aggio_file_sync(fh);
    CHECK(rc == 0, "the next sync: %s", aggio_error_message());
    memset(back, 0, sizeof back);
    rc = aggio_file_read_at_all(fh, (MPI_Offset)rank * N, back, N, MPI_BYTE,
                                MPI_STATUS_IGNORE);
    CHECK(rc == 0 && memcmp(buf, back, N) == 0, "read back after the failed sync: %d",
          rc);
    CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
  }
}

/* Four threads write 2 MiB each through direct I/O from unaligned memory:
 * each needs its own bounce buffer. */
struct tw {
  aggio_file fh;
  int id;
  int rc;
};

static void *thread_write(void *arg) {
  struct tw *w = arg;
  enum { N = 2 << 20 };
  char *mem = malloc(N + 1), *p = mem + 1; /* never aligned */
  for (int i = 0; i < N; i++)
    p[i] = (char)pat(w->id + 10, i);
  struct aggio__err e = {0};
  w->rc = aggio__pwrite(w->fh, p, N, (int64_t)w->id * N, AGGIO_IO_DIRECT_OK, &e);
  free(mem);
  return NULL;
}

static void t_bounce(void) {
  enum { N = 2 << 20, T = 4 };
  setenv("AGGIO_TEST_DIO_ALIGN", "65536", 1);
  aggio_file fh = open_with("independent", MPI_MODE_CREATE | MPI_MODE_RDWR, "aggio_direct_io",
                            "enable");
  unsetenv("AGGIO_TEST_DIO_ALIGN");
  CHECK(fh != AGGIO_FILE_NULL, "open: %s", aggio_error_message());
  if (!fh)
    return;
  if (rank == 0 && fh->st.dio == AGGIO_DIO_ON) {
    struct tw w[T];
    pthread_t th[T];
    for (int i = 0; i < T; i++) {
      w[i] = (struct tw){fh, i, -1};
      pthread_create(&th[i], NULL, thread_write, &w[i]);
    }
    for (int i = 0; i < T; i++)
      pthread_join(th[i], NULL);
    char *got = malloc(N);
    for (int i = 0; i < T; i++) {
      CHECK(w[i].rc == 0, "thread %d: %d", i, w[i].rc);
      int64_t n = 0;
      struct aggio__err e = {0};
      aggio__pread(fh, got, N, (int64_t)i * N, &n, 0, &e);
      int bad = -1;
      for (int j = 0; j < N && bad < 0; j++)
        if (got[j] != (char)pat(i + 10, j))
          bad = j;
      CHECK(n == N && bad < 0, "thread %d's 2 MiB: %lld bytes, first wrong byte %d", i,
            (long long)n, bad);
    }
    free(got);
  } else if (rank == 0) {
    printf("note: direct I/O is off here (%s): the bounce test wrote nothing\n", fh->fstype);
  }
  aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  alarm(240); /* a hang is a failure: SIGALRM ends the test */
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/faults.%d", test_dir(), id);
  t_alloc("two_phase", "two_sided");
  t_alloc("two_phase", "rma");
  t_alloc("node_local", "two_sided");
  t_fstat();
  t_deferred();
  t_deferred_behind_own_error();
  t_fsync();
  t_bounce();
  return test_finish_mpi(path);
}
