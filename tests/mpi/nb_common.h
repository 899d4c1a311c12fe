/*
 * nb_common.h - what the tests of non-blocking I/O share (test_nonblocking,
 * test_nonblocking_errors, test_overlap): start-up at the thread level the
 * test's part names, a scratch directory, a hang guard that names the case,
 * the byte pattern, and the check of a whole file through the MPI
 * library's own MPI-IO.  Header-only, like harness.h.
 */
#ifndef AGGIO_TEST_NB_COMMON_H
#define AGGIO_TEST_NB_COMMON_H

#include <aggio.h>

#include "harness.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct nb {
  int rank, np;
  int level;          /* the thread level MPI gave */
  const char *part;   /* "single" or "multiple" */
  uint64_t seed;      /* AGGIO_TEST_SEED or the default */
  char dir[512];      /* per-run scratch directory */
  char path[2][600];  /* two files in it */
};

static const char *volatile nb_current = "start";

static inline void nb_on_alarm(int sig) {
  static const char m[] = "TIMEOUT (a call hung?) in: ";
  (void)sig;
  if (write(2, m, sizeof m - 1) < 0 || write(2, nb_current, strlen(nb_current)) < 0 ||
      write(2, "\n", 1) < 0)
    _exit(4);
  _exit(4);
}

/* MPI_Init_thread at the level argv[1] names ("single", "multiple"; other
 * parts a test knows are its own business: level single).  Returns 0, or
 * -1 when the test cannot run (the reason recorded as a failure or a
 * skip; call nb_finish). */
static inline int nb_init(struct nb *c, int *argc, char ***argv, const char *name) {
  memset(c, 0, sizeof *c);
  c->part = *argc > 1 ? (*argv)[1] : "single";
  int want = strcmp(c->part, "multiple") == 0 ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE;
  MPI_Init_thread(argc, argv, want, &c->level);
  MPI_Comm_rank(MPI_COMM_WORLD, &c->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c->np);
  const char *t = getenv("AGGIO_TEST_TIMEOUT");
  signal(SIGALRM, nb_on_alarm);
  alarm(t && *t ? (unsigned)atoi(t) : 270);
  const char *s = getenv("AGGIO_TEST_SEED");
  c->seed = s && *s ? strtoull(s, NULL, 0) : 20240917u;
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(c->dir, sizeof c->dir, "%s/%s.%d", test_dir(), name, id);
  for (int f = 0; f < 2; f++)
    snprintf(c->path[f], sizeof c->path[f], "%s/file%d", c->dir, f);
  int ok = 1;
  if (c->rank == 0) {
    printf("%s: part %s, thread level %d (asked %d), seed %llu\n", name, c->part, c->level,
           want, (unsigned long long)c->seed);
    if (mkdir(c->dir, 0755) != 0) {
      fprintf(stderr, "mkdir %s: %s\n", c->dir, strerror(errno));
      ok = 0;
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(ok, "no scratch directory");
  if (!ok)
    return -1;
  if (want == MPI_THREAD_MULTIPLE && c->level < MPI_THREAD_MULTIPLE) {
    if (c->rank == 0)
      test_skip("the MPI library gives thread level %d, not MPI_THREAD_MULTIPLE: no "
                "progress thread to test", c->level);
    return -1;
  }
  return 0;
}

/* Removes the scratch files; the ranks agree on the outcome; MPI ends. */
static inline int nb_finish(struct nb *c) {
  nb_current = "cleanup";
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank == 0 && c->dir[0]) {
    for (int f = 0; f < 2; f++)
      unlink(c->path[f]);
    if (rmdir(c->dir) != 0 && errno != ENOENT)
      fprintf(stderr, "note: %s left behind: %s\n", c->dir, strerror(errno));
  }
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}

static inline void nb_begin(struct nb *c, const char *name) {
  nb_current = name;
  MPI_Barrier(MPI_COMM_WORLD);
  (void)c;
}

/* Never 0, so that a hole is told from data. */
static inline unsigned char nb_datum(int tag, int rank, int64_t off) {
  uint64_t x = ((uint64_t)tag << 48) ^ ((uint64_t)rank << 36) ^ (uint64_t)off;
  x *= 0x9E3779B97F4A7C15ull;
  return (unsigned char)(x >> 56) | 1;
}

static inline int nb_ok(struct nb *c, const char *what, int rc) {
  CHECK(rc == 0, "%s: %s: rank %d returned %d (%s): %s", nb_current, what, c->rank, rc,
        aggio_strerror(rc), aggio_error_message());
  return rc;
}

static inline void nb_expect(struct nb *c, const char *what, int rc, int want) {
  CHECK(rc == want, "%s: %s: rank %d returned %d (%s), expected %d (%s); message \"%s\"",
        nb_current, what, c->rank, rc, aggio_strerror(rc), want, aggio_strerror(want),
        aggio_error_message());
}

/* Opens with the strategy and a small collective buffer (several rounds
 * per call); extra hint k=v when k is not NULL.  Collective. */
static inline int nb_open_with(struct nb *c, const char *path, int amode, const char *strategy,
                        const char *k, const char *v, aggio_file *fh) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", strategy);
  MPI_Info_set(info, "cb_buffer_size", "8192");
  if (k)
    MPI_Info_set(info, k, v);
  *fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, amode, info, fh);
  MPI_Info_free(&info);
  return nb_ok(c, "open", rc);
}

static inline int nb_open(struct nb *c, const char *path, int amode, const char *strategy,
                   aggio_file *fh) {
  return nb_open_with(c, path, amode, strategy, NULL, NULL, fh);
}

/* The whole file, read by the MPI library's own MPI-IO (MPI_File_read_at,
 * each rank a share), must be `expect` (total bytes), and no longer.
 * Collective; rank 0 removes the file afterwards. */
static inline void nb_compare_file(struct nb *c, const char *path, const unsigned char *expect,
                            int64_t total, const char *what) {
  MPI_File mf;
  MPI_Barrier(MPI_COMM_WORLD);
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &mf);
  CHECK(rc == MPI_SUCCESS, "%s: MPI_File_open(%s) failed", what, path);
  if (rc != MPI_SUCCESS)
    return;
  MPI_Offset size = -1;
  MPI_File_get_size(mf, &size);
  CHECK(size == total, "%s: the file has %lld bytes, expected %lld", what, (long long)size,
        (long long)total);
  int64_t lo = total * c->rank / c->np, hi = total * (c->rank + 1) / c->np;
  unsigned char *got = malloc((size_t)(hi - lo) + 1);
  int64_t at = lo, bad = -1;
  while (at < hi) { /* in pieces below 2 GiB */
    int n = (int)(hi - at < (1 << 30) ? hi - at : (1 << 30));
    MPI_Status st;
    int cnt = -1;
    rc = MPI_File_read_at(mf, at, got + (at - lo), n, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(rc == MPI_SUCCESS && cnt == n, "%s: MPI_File_read_at(%lld, %d): rc %d, %d bytes",
          what, (long long)at, n, rc, cnt);
    if (rc != MPI_SUCCESS || cnt != n)
      break;
    at += n;
  }
  for (int64_t i = lo; i < at && bad < 0; i++)
    if (got[i - lo] != expect[i])
      bad = i;
  CHECK(bad < 0, "%s: rank %d: file byte %lld is 0x%02x, expected 0x%02x", what, c->rank,
        (long long)bad, bad >= 0 ? got[bad - lo] : 0, bad >= 0 ? expect[bad] : 0);
  free(got);
  MPI_File_close(&mf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
}

#endif
