/*
 * harness.h - the tests' tiny harness: one assertion macro that records the
 * failure with file and line and carries on, and a summary at the end.
 *
 * Unit tests:   CHECK(cond, "fmt", ...); ...; return test_summary();
 * MPI tests:    same, then test_summary_mpi(comm) agrees across ranks, so
 *               the test fails if any rank saw a failure.
 */
#ifndef AGGIO_TEST_HARNESS_H
#define AGGIO_TEST_HARNESS_H

#include <stdio.h>
#include <stdlib.h>

static int test_failures;
static int test_checks;

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

static inline int test_summary(void) {
  printf("%d checks, %d failed\n", test_checks, test_failures);
  return test_failures ? 1 : 0;
}

#ifdef MPI_VERSION
static inline int test_summary_mpi(MPI_Comm comm) {
  int total = 0, checks = 0, rank;
  MPI_Comm_rank(comm, &rank);
  MPI_Allreduce(&test_failures, &total, 1, MPI_INT, MPI_SUM, comm);
  MPI_Allreduce(&test_checks, &checks, 1, MPI_INT, MPI_SUM, comm);
  if (rank == 0)
    printf("%d checks on all ranks, %d failed\n", checks, total);
  return total ? 1 : 0;
}

/* Directory for test files: $AGGIO_TEST_DIR or /tmp. */
static inline const char *test_dir(void) {
  const char *d = getenv("AGGIO_TEST_DIR");
  return d && *d ? d : "/tmp";
}
#endif

#endif
