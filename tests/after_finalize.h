/*
 * after_finalize.h - what the tests of MPI_Finalize with files left open
 * (mpi/test_finalize.c through the API, mpiio/test_mpiio_finalize.c
 * through MPI-IO) do once MPI is gone: catch what the library printed on
 * stderr, check the files' bytes, and tidy up without a barrier.  Include
 * after harness.h (CHECK).
 */
#ifndef AGGIO_TEST_AFTER_FINALIZE_H
#define AGGIO_TEST_AFTER_FINALIZE_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Byte i of the file as rank r wrote it. */
static inline unsigned char finalize_datum(int r, int64_t i) {
  return (unsigned char)(r * 37 + i * 11 + 1);
}

/* stderr goes to errpath until finalize_stderr_caught; returns the real
 * stderr. */
static inline int finalize_stderr_catch(const char *errpath) {
  fflush(stderr);
  int saved = dup(2);
  int fd = open(errpath, O_CREAT | O_TRUNC | O_WRONLY, 0644);
  dup2(fd, 2);
  close(fd);
  return saved;
}

/* Restores stderr and returns what was printed meanwhile (a static
 * buffer); errpath is removed. */
static inline char *finalize_stderr_caught(int saved, const char *errpath) {
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  static char text[8192];
  int fd = open(errpath, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  text[n > 0 ? n : 0] = '\0';
  if (fd >= 0)
    close(fd);
  unlink(errpath);
  return text;
}

/* The file p holds nrec records of rec bytes from each of np ranks,
 * interleaved record by record, every byte finalize_datum's. */
static inline void finalize_check_records(const char *p, int me, int np, int rec, int nrec) {
  int fd = open(p, O_RDONLY);
  CHECK(fd >= 0, "rank %d: %s is missing", me, p);
  if (fd < 0)
    return;
  int64_t total = (int64_t)rec * nrec * np, bad = -1;
  unsigned char *got = malloc((size_t)total);
  ssize_t n = got ? pread(fd, got, (size_t)total, 0) : -1;
  close(fd);
  CHECK(n == total, "rank %d: %s has %zd bytes, expected %lld", me, p, n, (long long)total);
  for (int64_t i = 0; n == total && i < total && bad < 0; i++)
    if (got[i] != finalize_datum((int)(i / rec % np), i))
      bad = i;
  CHECK(bad < 0, "rank %d: %s: byte %lld wrong after MPI_Finalize", me, p, (long long)bad);
  free(got);
}

/* After MPI there is no barrier: each rank leaves a mark beside the first
 * file once it has checked, and rank 0 removes the nfiles files when every
 * rank has (or after 30 s). */
static inline void finalize_tidy_up(char (*path)[512], int nfiles, int me, int np) {
  char mark[600];
  snprintf(mark, sizeof mark, "%.511s.done%d", path[0], me);
  close(open(mark, O_CREAT | O_WRONLY, 0644));
  if (me != 0)
    return;
  for (int r = 0, tries = 0; r < np && tries < 3000; tries++) {
    snprintf(mark, sizeof mark, "%.511s.done%d", path[0], r);
    if (access(mark, F_OK) == 0)
      r++;
    else
      usleep(10000);
  }
  for (int r = 0; r < np; r++) {
    snprintf(mark, sizeof mark, "%.511s.done%d", path[0], r);
    unlink(mark);
  }
  for (int f = 0; f < nfiles; f++)
    unlink(path[f]);
}

#endif
