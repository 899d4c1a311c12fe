/*
 * test_large.c - more than 2 GiB per rank in one call: count x type size
 * exceeds INT_MAX (2049 elements of a 1 MiB type), written collectively,
 * checked on disk with POSIX reads, read back through aggio and checked
 * again.  The data is a function of the file offset, so no reference copy
 * is needed.  Two runs: every rank 2049 MiB through an interleaved view (rank
 * r owns every np-th MiB), written by the independent strategy and read by
 * two-phase; then rank 0 alone 2049 MiB (the others 1 MiB each, in blocks
 * one after the other), written by two-phase and read independently.
 *
 * aggio-test-ranks: 1 2
 *
 * AGGIO_TEST_SKIP_LARGE=1 skips it.  The file goes to /dev/shm when it has
 * room (else the test directory); AGGIO_TEST_LARGE_DIR overrides that.
 * AGGIO_TEST_LARGE_MIB changes the MiB per rank (2049 by default).
 */
#include <aggio.h>

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MIB ((int64_t)1 << 20)

/* The 8-byte word at file offset x (a multiple of 8). */
static uint64_t word_at(int64_t x) {
  uint64_t z = (uint64_t)x * 0x9E3779B97F4A7C15ull + 0x1234567ull;
  z ^= z >> 31;
  return z * 0xBF58476D1CE4E5B9ull;
}

/* Where this rank's MiB blocks go: interleaved (block b at b*np + r) or
 * blocked (all of them from `base` on). */
struct layout {
  int rank, np, interleaved;
  int64_t mib;  /* this rank's MiB */
  int64_t base; /* blocked: the first byte of this rank's region */
};

/* File offset of byte i of this rank's buffer. */
static int64_t file_offset(const struct layout *L, int64_t i) {
  if (!L->interleaved)
    return L->base + i;
  return ((i / MIB) * L->np + L->rank) * MIB + i % MIB;
}

static void fill(uint64_t *buf, const struct layout *L) {
  for (int64_t i = 0; i < L->mib * MIB; i += 8)
    buf[i / 8] = word_at(file_offset(L, i));
}

/* Returns the first wrong byte index or -1. */
static int64_t verify(const uint64_t *buf, const struct layout *L) {
  for (int64_t i = 0; i < L->mib * MIB; i += 8)
    if (buf[i / 8] != word_at(file_offset(L, i)))
      return i;
  return -1;
}

static int run(const char *path, const struct layout *L, int64_t file_size,
               const char *wstrat, const char *rstrat) {
  int rank = L->rank, np = L->np;
  int64_t nbytes = L->mib * MIB;
  int count = (int)L->mib, rc;
  double t0 = MPI_Wtime();
  uint64_t *buf = malloc((size_t)nbytes);
  int ok = buf != NULL, all_ok;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ok) {
    if (rank == 0)
      test_skip("large: cannot allocate %" PRId64 " MiB per rank", L->mib);
    free(buf);
    return 0;
  }
  fill(buf, L);
  double tf = MPI_Wtime();

  /* memory: count x 1 MiB; file: my MiB in every np MiB, or one block */
  MPI_Datatype mib, ft;
  MPI_Type_contiguous((int)MIB, MPI_BYTE, &mib);
  MPI_Type_commit(&mib);
  MPI_Type_create_resized(mib, 0, L->interleaved ? np * MIB : MIB, &ft);
  MPI_Type_commit(&ft);
  MPI_Offset disp = L->interleaved ? (MPI_Offset)rank * MIB : L->base;
  MPI_Count tsize;
  MPI_Type_size_x(mib, &tsize);
  if ((int64_t)count * tsize <= INT_MAX && rank == 0)
    printf("note: %d MiB per rank does not exceed INT_MAX bytes\n", count);

  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", wstrat);
  aggio_file fh = AGGIO_FILE_NULL;
  MPI_Status st;
  MPI_Count n = -1;
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
  CHECK(rc == 0, "open(%s): %s", path, aggio_error_message());
  if (rc == 0) {
    rc = aggio_file_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    CHECK(rc == 0, "set_view: %s", aggio_error_message());
    rc = aggio_file_write_at_all(fh, 0, buf, count, mib, &st);
    CHECK(rc == 0, "rank %d: write_at_all of %d x 1 MiB (%s): %s", rank, count, wstrat,
          aggio_error_message());
    if (rc == 0) {
      MPI_Get_elements_x(&st, MPI_BYTE, &n);
      CHECK(n == nbytes, "rank %d: write status says %lld bytes, expected %lld", rank,
            (long long)n, (long long)nbytes);
    }
    rc = aggio_file_close(&fh);
    CHECK(rc == 0, "close: %s", aggio_error_message());
  }
  MPI_Info_free(&info);
  double t1 = MPI_Wtime();

  /* on disk, through POSIX: each rank checks its own MiB blocks */
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && sb.st_size == file_size, "file size %lld, expected %lld",
        (long long)sb.st_size, (long long)file_size);
  int fd = open(path, O_RDONLY);
  CHECK(fd >= 0, "open(%s): %s", path, strerror(errno));
  if (fd >= 0) {
    uint64_t *blk = malloc((size_t)MIB);
    int64_t bad_at = -1;
    for (int64_t b = 0; b < count && bad_at < 0; b++) {
      int64_t off = file_offset(L, b * MIB);
      if (pread(fd, blk, (size_t)MIB, off) != MIB) {
        bad_at = off;
        break;
      }
      for (int64_t i = 0; i < MIB; i += 8)
        if (blk[i / 8] != word_at(off + i)) {
          bad_at = off + i;
          break;
        }
    }
    CHECK(bad_at < 0, "rank %d: file holds wrong data at offset %lld (%s write)", rank,
          (long long)bad_at, wstrat);
    free(blk);
    close(fd);
  }

  /* read back through aggio into the cleared buffer */
  memset(buf, 0, (size_t)nbytes);
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", rstrat);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, info, &fh);
  CHECK(rc == 0, "open(%s) for reading: %s", path, aggio_error_message());
  if (rc == 0) {
    rc = aggio_file_set_view(fh, disp, MPI_BYTE, ft, "native", MPI_INFO_NULL);
    CHECK(rc == 0, "set_view: %s", aggio_error_message());
    rc = aggio_file_read_at_all(fh, 0, buf, count, mib, &st);
    CHECK(rc == 0, "rank %d: read_at_all of %d x 1 MiB (%s): %s", rank, count, rstrat,
          aggio_error_message());
    if (rc == 0) {
      int cnt = -1;
      MPI_Get_elements_x(&st, MPI_BYTE, &n);
      MPI_Get_count(&st, mib, &cnt);
      CHECK(n == nbytes && cnt == count, "rank %d: read status says %lld bytes (%d of the "
            "type), expected %lld (%d)", rank, (long long)n, cnt, (long long)nbytes, count);
      int64_t bad = verify(buf, L);
      CHECK(bad < 0, "rank %d: read-back buffer wrong at byte %lld (file offset %lld) (%s "
            "read)", rank, (long long)bad, (long long)file_offset(L, bad < 0 ? 0 : bad),
            rstrat);
    }
    rc = aggio_file_close(&fh);
    CHECK(rc == 0, "close: %s", aggio_error_message());
  }
  MPI_Info_free(&info);
  if (rank == 0)
    printf("large: %d x 1 MiB on rank 0 (%s, %d ranks): fill %.1f s, write (%s) %.1f s, "
           "check and read (%s) %.1f s\n", count, L->interleaved ? "interleaved" : "blocked",
           np, tf - t0, wstrat, t1 - tf, rstrat, MPI_Wtime() - t1);
  MPI_Type_free(&ft);
  MPI_Type_free(&mib);
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(path);
  return 0;
}

int main(int argc, char **argv) {
  int rank, np;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char *skip = getenv("AGGIO_TEST_SKIP_LARGE");
  if (skip && *skip && strcmp(skip, "0") != 0) {
    if (rank == 0)
      test_skip("large: AGGIO_TEST_SKIP_LARGE is set");
    int rc = test_summary_mpi(MPI_COMM_WORLD);
    MPI_Finalize();
    return rc;
  }
  const char *dir = getenv("AGGIO_TEST_LARGE_DIR");
  const char *m = getenv("AGGIO_TEST_LARGE_MIB");
  int64_t mib = m && *m ? atoll(m) : 2049; /* 2049 MiB > INT_MAX bytes */
  /* /dev/shm is much faster than most disks; use it if it has room */
  struct statvfs vf;
  int64_t need = (np * mib + 64) * MIB;
  if (!(dir && *dir))
    dir = statvfs("/dev/shm", &vf) == 0 && (int64_t)vf.f_bavail * (int64_t)vf.f_frsize > need
              ? "/dev/shm" : test_dir();
  char path[600];
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/aggio-large.%d", dir, id);
  if (rank == 0)
    printf("large: file %s\n", path);
  struct layout L = {rank, np, 1, mib, 0};
  run(path, &L, np * mib * MIB, "independent", "two_phase");
  /* rank 0: mib MiB from 0; rank r > 0: 1 MiB after everything before it */
  struct layout B = {rank, np, 0, rank == 0 ? mib : 1, rank == 0 ? 0 : (mib + rank - 1) * MIB};
  run(path, &B, (mib + np - 1) * MIB, "two_phase", "independent");
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
