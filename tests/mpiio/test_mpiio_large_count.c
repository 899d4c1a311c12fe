/*
 * test_mpiio_large_count.c - MPI 4.0's large-count calls (MPI_File_*_c).
 * Part "calls": every one of them with small counts - the 14 ways to write
 * and the 14 to read (explicit offsets, individual and shared pointers,
 * ordered, split, non-blocking), each in a region of its own; the file's
 * bytes checked through the MPI library's own MPI-IO (MPI_OWN), what each
 * read brings back, and every status with MPI_Get_count_c; a negative
 * count, get_type_extent_c, Register_datarep_c, and a file left to the
 * MPI library (aggio_passthrough) reached through the _c calls.  Part
 * "large": rank 0 writes and reads 2^31 + 64 bytes in one call (a count
 * above INT_MAX), blocking and non-blocking, independent at one rank and
 * collective at more, in /dev/shm when it has room (AGGIO_TEST_LARGE_DIR
 * overrides); skipped where 2.1 GiB cannot be allocated or
 * AGGIO_TEST_SKIP_LARGE=1, and in MPICH's own MPI-IO, which aborts on such
 * a count.  Where mpi.h has no _c calls (Open MPI 4.1) both parts report
 * themselves skipped.
 * aggio-test-ranks: 1 2
 * aggio-test-parts: calls large
 */
#include "mpiio_common.h"

#ifdef AGGIO_TEST_LARGE_COUNT_IO

#include <limits.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define M 256 /* MPI_INTs per rank and call */
#define B (M * (MPI_Offset)sizeof(int))

static int rank, nranks, aggio;

/* The data calls, each writing and then reading a region of its own. */
enum kind {
  AT, AT_ALL, INDIV, INDIV_ALL, AT_ALL_SPLIT, ALL_SPLIT, SHARED, ORDERED, ORDERED_SPLIT,
  I_AT, I_AT_ALL, I_INDIV, I_INDIV_ALL, I_SHARED, NKINDS
};
static const char *kind_name[NKINDS] = {
    "_at_c", "_at_all_c", "_c", "_all_c", "_at_all_begin_c", "_all_begin_c", "_shared_c",
    "_ordered_c", "_ordered_begin_c", "i_at_c", "i_at_all_c", "i_c", "i_all_c",
    "i_shared_c"};

/* Rank r's block of region k; its bytes are fill(k, r). */
static MPI_Offset block_at(int k, int r) { return ((MPI_Offset)k * nranks + r) * B; }

static void fill(int *buf, int k, int r) {
  for (int i = 0; i < M; i++)
    buf[i] = k * 1000003 + r * 1009 + i;
}

/* Where the call's pointer must be: the individual one at this rank's
 * block, the shared one at the region's start (the ranks then go in rank
 * order).  Collective. */
static void place(MPI_File fh, int k) {
  if (k == SHARED || k == ORDERED || k == ORDERED_SPLIT || k == I_SHARED)
    MPI_File_seek_shared(fh, block_at(k, 0), MPI_SEEK_SET);
  else
    MPI_File_seek(fh, block_at(k, rank), MPI_SEEK_SET);
}

static int waited(int rc, MPI_Request *req, MPI_Status *st) {
  return rc != MPI_SUCCESS ? rc : MPI_Wait(req, st);
}

/* MPI_File_write<suffix> or MPI_File_read<suffix> (I: iwrite, iread), as w
 * says. */
#define RW(w, suffix, ...) \
  ((w) ? MPI_File_write##suffix(__VA_ARGS__) : MPI_File_read##suffix(__VA_ARGS__))
#define IRW(w, suffix, ...) \
  ((w) ? MPI_File_iwrite##suffix(__VA_ARGS__) : MPI_File_iread##suffix(__VA_ARGS__))

/* One call of kind k on this rank's block, writing buf (w) or reading
 * into it; st gets the status (of the _end call, or of MPI_Wait). */
static int access_block(MPI_File fh, int k, int w, int *buf, MPI_Status *st) {
  MPI_Offset at = block_at(k, rank);
  MPI_Count n = M;
  MPI_Request req;
  int rc;
  switch (k) {
  case AT: return RW(w, _at_c, fh, at, buf, n, MPI_INT, st);
  case AT_ALL: return RW(w, _at_all_c, fh, at, buf, n, MPI_INT, st);
  case INDIV: return RW(w, _c, fh, buf, n, MPI_INT, st);
  case INDIV_ALL: return RW(w, _all_c, fh, buf, n, MPI_INT, st);
  case SHARED: return RW(w, _shared_c, fh, buf, n, MPI_INT, st);
  case ORDERED: return RW(w, _ordered_c, fh, buf, n, MPI_INT, st);
  case AT_ALL_SPLIT:
    rc = RW(w, _at_all_begin_c, fh, at, buf, n, MPI_INT);
    return rc != MPI_SUCCESS ? rc : RW(w, _at_all_end, fh, buf, st);
  case ALL_SPLIT:
    rc = RW(w, _all_begin_c, fh, buf, n, MPI_INT);
    return rc != MPI_SUCCESS ? rc : RW(w, _all_end, fh, buf, st);
  case ORDERED_SPLIT:
    rc = RW(w, _ordered_begin_c, fh, buf, n, MPI_INT);
    return rc != MPI_SUCCESS ? rc : RW(w, _ordered_end, fh, buf, st);
  case I_AT: return waited(IRW(w, _at_c, fh, at, buf, n, MPI_INT, &req), &req, st);
  case I_AT_ALL:
    return waited(IRW(w, _at_all_c, fh, at, buf, n, MPI_INT, &req), &req, st);
  case I_INDIV: return waited(IRW(w, _c, fh, buf, n, MPI_INT, &req), &req, st);
  case I_INDIV_ALL: return waited(IRW(w, _all_c, fh, buf, n, MPI_INT, &req), &req, st);
  case I_SHARED: return waited(IRW(w, _shared_c, fh, buf, n, MPI_INT, &req), &req, st);
  }
  return MPI_ERR_ARG;
}

/* The status of a call that moved M ints, by MPI_Get_count_c and
 * MPI_Get_elements_c. */
static void check_status(int k, int w, int rc, MPI_Status *st) {
  MPI_Count count = -1, elements = -1;
  if (rc == MPI_SUCCESS) {
    MPI_Get_count_c(st, MPI_INT, &count);
    MPI_Get_elements_c(st, MPI_INT, &elements);
  }
  CHECK(rc == MPI_SUCCESS && count == M && elements == M,
        "MPI_File_%s%s: rc %d, count %lld, elements %lld", w ? "write" : "read",
        kind_name[k], rc, (long long)count, (long long)elements);
}

/* Every rank makes call k (collective or not); the shared-pointer ones in
 * rank order, so that each rank's block is where block_at says. */
static void one_call(MPI_File fh, int k, int w, int *buf) {
  MPI_Status st;
  int rc = MPI_SUCCESS, in_turn = k == SHARED || k == I_SHARED;
  place(fh, k);
  for (int r = 0; r < (in_turn ? nranks : 1); r++) {
    if (!in_turn || r == rank)
      rc = access_block(fh, k, w, buf, &st);
    if (in_turn)
      MPI_Barrier(MPI_COMM_WORLD);
  }
  check_status(k, w, rc, &st);
}

/* The file as the MPI library's own MPI-IO reads it: fill(k, r) in every
 * block. */
static void check_reference(const char *path) {
  MPI_Offset len = 0;
  int *file = (int *)mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == block_at(NKINDS, 0), "reference read: %lld bytes", (long long)len);
  int want[M];
  for (int k = 0; file && len == block_at(NKINDS, 0) && k < NKINDS; k++)
    for (int r = 0; r < nranks; r++) {
      fill(want, k, r);
      CHECK(memcmp(file + block_at(k, r) / (MPI_Offset)sizeof(int), want, B) == 0,
            "MPI_File_write%s: rank %d's block differs in the file", kind_name[k], r);
    }
  free(file);
}

static void every_call(MPI_File fh, const char *path) {
  int buf[M], want[M];
  for (int k = 0; k < NKINDS; k++) {
    fill(buf, k, rank);
    one_call(fh, k, 1, buf);
  }
  MPI_File_sync(fh); /* sync, barrier, sync: MPI's way to see others' writes */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  check_reference(path);
  for (int k = 0; k < NKINDS; k++) {
    memset(buf, 0, sizeof buf);
    one_call(fh, k, 0, buf);
    fill(want, k, rank);
    CHECK(memcmp(buf, want, sizeof buf) == 0, "MPI_File_read%s brought back other bytes",
          kind_name[k]);
  }
}

/* A negative count is MPI_ERR_COUNT, independent, collective (every
 * rank's) and non-blocking (at the start or at the completion). */
static void negative_count(MPI_File fh) {
  int buf[M] = {0};
  MPI_Status st;
  MPI_Request req;
  int rc = MPI_File_write_at_c(fh, 0, buf, -1, MPI_INT, &st);
  CHECK(error_class(rc) == MPI_ERR_COUNT, "write_at_c count -1: class %d",
        error_class(rc));
  rc = MPI_File_read_at_all_c(fh, 0, buf, -5, MPI_INT, &st);
  CHECK(error_class(rc) == MPI_ERR_COUNT, "read_at_all_c count -5: class %d",
        error_class(rc));
  rc = waited(MPI_File_iwrite_at_c(fh, 0, buf, -1, MPI_INT, &req), &req, &st);
  CHECK(error_class(rc) == MPI_ERR_COUNT, "iwrite_at_c count -1: class %d",
        error_class(rc));
}

/* A file extent for MPI_Register_datarep_c (MPICH wants one). */
static int file_extent(MPI_Datatype type, MPI_Aint *extent, void *state) {
  MPI_Aint lb;
  (void)state;
  return MPI_Type_get_extent(type, &lb, extent);
}

static void the_others(MPI_File fh) {
  MPI_Count extent = -1;
  int rc = MPI_File_get_type_extent_c(fh, MPI_INT, &extent);
  CHECK(rc == MPI_SUCCESS && extent == (MPI_Count)sizeof(int),
        "get_type_extent_c: rc %d, extent %lld", rc, (long long)extent);
  /* aggio refuses user data representations, the MPI library takes them */
  rc = MPI_Register_datarep_c("aggio_test_rep", MPI_CONVERSION_FN_NULL_C,
                              MPI_CONVERSION_FN_NULL_C, file_extent, NULL);
  if (aggio)
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "Register_datarep_c: class %d",
          error_class(rc));
  else
    CHECK(rc == MPI_SUCCESS, "Register_datarep_c: rc %d", rc);
}

static void calls(void) {
  char path[512];
  mpiio_fresh_path(path, sizeof path, "large_count_calls");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                         MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open %d", rc);
  if (rc != MPI_SUCCESS)
    return;
  every_call(fh, path);
  negative_count(fh);
  the_others(fh);
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    MPI_OWN(File_delete)(path, MPI_INFO_NULL);
}

/* A file the MPI library serves (aggio_passthrough): the _c calls reach
 * it, with its own handle. */
static void passthrough(void) {
  char path[512];
  mpiio_fresh_path(path, sizeof path, "large_count_pass");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_passthrough", "true");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path,
                         MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info,
                         &fh);
  MPI_Info_free(&info);
  CHECK(rc == MPI_SUCCESS && PMPI_File_c2f(fh) < 0x40000000, "passthrough open %d", rc);
  int buf[M], back[M];
  fill(buf, 1, rank);
  MPI_Status st;
  MPI_Request req;
  rc = MPI_File_write_at_all_c(fh, block_at(0, rank), buf, (MPI_Count)M, MPI_INT, &st);
  check_status(AT_ALL, 1, rc, &st);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  rc = MPI_File_iread_at_c(fh, block_at(0, rank), back, (MPI_Count)M, MPI_INT, &req);
  check_status(I_AT, 0, waited(rc, &req, &st), &st);
  CHECK(memcmp(buf, back, sizeof buf) == 0, "passthrough: read back other bytes");
  MPI_File_close(&fh);
}

/* ---- part "large" ---------------------------------------------------------------- */
/*
 * Byte j of the data is large_byte(j), at file offset LARGE_AT + j.  Rank
 * 0 moves bytes [0, LARGE) in one call, a count above INT_MAX; at more
 * than one rank the calls are collective and every other rank moves SMALL
 * bytes after those.
 */
#define LARGE (((MPI_Count)1 << 31) + 64)
#define SMALL 64
#define LARGE_AT 8 /* not 0 */

/* No short period, and cheap: the pattern is made and checked 5 times. */
static unsigned char large_byte(MPI_Count j) {
  return (unsigned char)(j ^ (j >> 8) ^ (j >> 16) ^ (j >> 24) ^ (j >> 30));
}

/* The first byte of p[0, n) that is not byte from + i of the data, or -1. */
static MPI_Count first_wrong(const unsigned char *p, MPI_Count n, MPI_Count from) {
  for (MPI_Count i = 0; i < n; i++)
    if (p[i] != large_byte(from + i))
      return from + i;
  return -1;
}

/* The first `total` bytes of the data as the MPI library's own MPI-IO
 * reads them from the file, 64 MiB at a time. */
static void large_reference(const char *path, MPI_Count total) {
  const int chunk = 64 << 20;
  unsigned char *p = malloc(chunk);
  MPI_File fh;
  int rc = MPI_OWN(File_open)(MPI_COMM_SELF, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(p && rc == MPI_SUCCESS, "reference open %d", rc);
  MPI_Offset size = -1;
  MPI_OWN(File_get_size)(fh, &size);
  CHECK(size == LARGE_AT + total, "file size %lld", (long long)size);
  MPI_Count wrong = -1;
  for (MPI_Count at = 0; p && wrong < 0 && at < total; at += chunk) {
    int n = total - at < chunk ? (int)(total - at) : chunk;
    rc = MPI_OWN(File_read_at)(fh, LARGE_AT + at, p, n, MPI_BYTE, MPI_STATUS_IGNORE);
    wrong = rc != MPI_SUCCESS ? at : first_wrong(p, n, at);
  }
  CHECK(wrong < 0, "the file differs at byte %lld of the data", (long long)wrong);
  MPI_OWN(File_close)(&fh);
  free(p);
}

/* The outcome of a call that moved p[0, n), bytes from + i of the data
 * (p NULL: a write, nothing to compare). */
static void large_check(const char *what, int rc, MPI_Status *st, const unsigned char *p,
                        MPI_Count n, MPI_Count from) {
  MPI_Count count = -1, elements = -1;
  MPI_Get_count_c(st, MPI_BYTE, &count);
  MPI_Get_elements_c(st, MPI_BYTE, &elements);
  CHECK(rc == MPI_SUCCESS && count == n && elements == n,
        "%s of %lld bytes: rc %d, count %lld, elements %lld", what, (long long)n, rc,
        (long long)count, (long long)elements);
  MPI_Count wrong = p ? first_wrong(p, n, from) : -1;
  CHECK(wrong < 0, "%s: byte %lld of the data differs", what, (long long)wrong);
}

/* This rank's share, buf[0, n) = bytes from + i: written, checked in the
 * file through the MPI library, read back blocking and non-blocking;
 * collective calls where `all`. */
static void large_calls(MPI_File fh, const char *path, unsigned char *buf, MPI_Count n,
                        MPI_Count from, int all) {
  for (MPI_Count i = 0; i < n; i++)
    buf[i] = large_byte(from + i);
  MPI_Offset at = LARGE_AT + from;
  MPI_Status st;
  MPI_Request req;
  int rc = all ? MPI_File_write_at_all_c(fh, at, buf, n, MPI_BYTE, &st)
               : MPI_File_write_at_c(fh, at, buf, n, MPI_BYTE, &st);
  large_check(all ? "write_at_all_c" : "write_at_c", rc, &st, NULL, n, from);
  MPI_File_sync(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_sync(fh);
  if (rank == 0)
    large_reference(path, LARGE + (MPI_Count)SMALL * (nranks - 1));
  memset(buf, 0, (size_t)n);
  rc = all ? MPI_File_read_at_all_c(fh, at, buf, n, MPI_BYTE, &st)
           : MPI_File_read_at_c(fh, at, buf, n, MPI_BYTE, &st);
  large_check(all ? "read_at_all_c" : "read_at_c", rc, &st, buf, n, from);
  memset(buf, 0, (size_t)n);
  rc = all ? MPI_File_iread_at_all_c(fh, at, buf, n, MPI_BYTE, &req)
           : MPI_File_iread_at_c(fh, at, buf, n, MPI_BYTE, &req);
  large_check(all ? "iread_at_all_c" : "iread_at_c", waited(rc, &req, &st), &st, buf, n,
              from);
}

/* 1 when the large part can run: it says why not (a skip) otherwise.
 * Rank 0's buffer, 2.1 GiB, in *buf. */
static int large_ready(unsigned char **buf) {
  const char *skip = getenv("AGGIO_TEST_SKIP_LARGE");
  int wanted = !(skip && strcmp(skip, "1") == 0);
#ifdef MPICH_VERSION
  /* MPICH's own ROMIO hands the count on as an int: its _c calls assert
   * count <= INT_MAX and abort (pmodels/mpich#5866) */
  if (!aggio) {
    if (rank == 0)
      test_skip("large count: MPICH %s's own MPI-IO aborts on a count above INT_MAX "
                "(assertion count <= INT_MAX, pmodels/mpich#5866)",
                MPICH_VERSION);
    return 0;
  }
#endif
  *buf = !wanted ? NULL : malloc(rank == 0 ? (size_t)LARGE : SMALL);
  int have = *buf != NULL;
  MPI_Allreduce(MPI_IN_PLACE, &have, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!have && rank == 0)
    test_skip("large count: %s", wanted ? "2.1 GiB could not be allocated"
                                        : "AGGIO_TEST_SKIP_LARGE=1");
  return have;
}

/* The large file goes to /dev/shm when it has room, as test_large's does
 * (much faster than most disks), else to the test directory;
 * AGGIO_TEST_LARGE_DIR overrides that.  Rank 0 decides for every rank. */
static void large_path(char *path, size_t cap) {
  const char *dir = getenv("AGGIO_TEST_LARGE_DIR");
  struct statvfs vf;
  unsigned long long need = 2 * (unsigned long long)LARGE;
  int room = statvfs("/dev/shm", &vf) == 0 &&
             (unsigned long long)vf.f_bavail * vf.f_frsize > need;
  if (!(dir && *dir))
    dir = room ? "/dev/shm" : test_dir();
  snprintf(path, cap, "%s/mpiio_large_count_%d_%s.dat", dir, (int)getpid(),
           getenv("AGGIO_TEST_TAG") ? getenv("AGGIO_TEST_TAG") : "x");
  MPI_Bcast(path, (int)cap, MPI_CHAR, 0, MPI_COMM_WORLD);
}

/* One rank: independent calls; more: collective ones. */
static void large(void) {
  char path[512];
  large_path(path, sizeof path);
  unsigned char *buf = NULL;
  if (large_ready(&buf)) {
    MPI_File fh;
    int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
    CHECK(rc == MPI_SUCCESS, "open %d", rc);
    MPI_Count n = rank == 0 ? LARGE : SMALL;
    MPI_Count from = rank == 0 ? 0 : LARGE + (MPI_Count)SMALL * (rank - 1);
    if (rc == MPI_SUCCESS)
      large_calls(fh, path, buf, n, from, nranks > 1);
    MPI_File_close(&fh);
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    MPI_OWN(File_delete)(path, MPI_INFO_NULL);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "calls";
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  aggio = mpiio_check_mode();
  if (strcmp(part, "large") == 0) {
    large();
  } else {
    calls();
    passthrough();
  }
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

#else /* mpi.h declares no MPI_File_*_c */

int main(int argc, char **argv) {
  int rank;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  mpiio_check_mode();
  if (rank == 0)
    test_skip("mpi.h (MPI %d.%d) declares no MPI 4.0 large-count MPI-IO calls "
              "(MPI_File_*_c): nothing to test",
              MPI_VERSION, MPI_SUBVERSION);
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

#endif
