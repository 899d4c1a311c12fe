/*
 * harness.h - the tests' tiny harness: one assertion macro that records the
 * failure with file and line and carries on, a way to skip with a reason,
 * and a summary at the end that is the test's exit status.
 *
 * Unit tests:   CHECK(cond, "fmt", ...); ...; return test_summary();
 * MPI tests:    same, then test_summary_mpi(comm) agrees across ranks, so
 *               the test fails if any rank saw a failure.
 *
 * Exit status: 1 when a check failed, and also when no check ran at all (a
 * test that checks nothing proves nothing); TEST_SKIPPED (77, ctest's
 * SKIP_RETURN_CODE for every test here) when test_skip() was called and
 * nothing failed, so that ctest counts a skip as a skip, not a pass.
 */
#ifndef AGGIO_TEST_HARNESS_H
#define AGGIO_TEST_HARNESS_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TEST_SKIPPED 77

static int test_failures;
static int test_checks;
static int test_skips;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    test_checks++;                                                             \
    if (!(cond)) {                                                             \
      test_failures++;                                                         \
      fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
      fprintf(stderr, __VA_ARGS__);                                            \
      fprintf(stderr, "\n");                                                   \
    }                                                                          \
  } while (0)

/* Records that part of the test could not run here, and prints why on a
 * line starting "SKIP" (scripts/test lists these lines). */
static inline void test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static inline void test_skip(const char *fmt, ...) {
  va_list ap;
  test_skips++;
  printf("SKIP: ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* The exit status for these totals (see the top of this file). */
static inline int test_status(int checks, int failures, int skips) {
  if (failures)
    return 1;
  if (skips)
    return TEST_SKIPPED;
  if (checks == 0) {
    fprintf(stderr, "FAIL: no check ran (a test that checks nothing fails)\n");
    return 1;
  }
  return 0;
}

static inline int test_summary(void) {
  printf("%d checks, %d failed%s\n", test_checks, test_failures,
         test_skips ? ", some skipped" : "");
  return test_status(test_checks, test_failures, test_skips);
}

#ifdef MPI_VERSION
static inline int test_summary_mpi(MPI_Comm comm) {
  int mine[3] = {test_failures, test_checks, test_skips}, all[3] = {0, 0, 0}, rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Allreduce(mine, all, 3, MPI_INT, MPI_SUM, comm);
  if (rank == 0)
    printf("%d checks on all ranks, %d failed%s\n", all[1], all[0],
           all[2] ? ", some skipped" : "");
  return test_status(all[1], all[0], all[2]);
}

/* 1 when v is the same on every rank of MPI_COMM_WORLD (an outcome or a
 * count the library promises to agree on). */
static inline int test_same_everywhere(int64_t v) {
  int64_t lo, hi;
  MPI_Allreduce(&v, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&v, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

/* The end of an MPI test's main: once every rank is done with the test
 * file, rank 0 removes it; the ranks agree on the outcome; MPI ends.
 * Returns main's exit status. */
static inline int test_finish_mpi(const char *path) {
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}

/* Directory for test files: $AGGIO_TEST_DIR or /tmp. */
static inline const char *test_dir(void) {
  const char *d = getenv("AGGIO_TEST_DIR");
  return d && *d ? d : "/tmp";
}
#endif

#endif
