/*
 * test_subfile.c - subfiling (aggio_subfiles, docs/subfiling.md) through
 * every strategy: the bytes a collective strided write, an independent
 * write past a hole and set_size leave are those the MPI library's own
 * MPI-IO leaves in an ordinary file, read back whole by the same ranks
 * and by communicators of other sizes (1 rank, and all but one) that pass
 * no hint; the name holds the layout, never data, and the subfiles sit
 * beside it; get_size, a shrinking set_size, preallocate, sync and atomic
 * mode work; a subfile that cannot be created fails the open on every
 * rank and leaves nothing at the name; aggio_file_delete removes the
 * subfiles too; a bad aggio_subfiles is a clear error; an existing file
 * keeps what it is (EXCL on a layout fails, an ordinary file stays one
 * with the hint reported ignored, a missing subfile fails the open); with
 * stripe-cyclic file domains each aggregator writes one subfile (N
 * aggregators over N subfiles, and over N/2).
 *
 * aggio-test-ranks: 1 2 3 4
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "internal.h"

#define BLOCK 5000   /* bytes per rank per stripe of the view */
#define BLOCKS 40    /* blocks per rank in the collective write */
#define STRIPE "8192"

static int rank, nprocs;
static char dir[512];

static char byte_at(int64_t off, int salt) { return (char)(1 + (off * 7 + salt) % 253); }

/* The test's writes on an open file, through aggio or the MPI library:
 * a collective strided write through a vector view, rank 0's independent
 * write past a hole, then set_size beyond the end.  Returns the size set. */
struct writes {
  int (*set_view)(void *, MPI_Offset, MPI_Datatype, MPI_Datatype, const char *, MPI_Info);
  int (*write_all)(void *, const void *, int, MPI_Datatype, MPI_Status *);
  int (*write_at)(void *, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *);
  int (*set_size)(void *, MPI_Offset);
};

static int a_view(void *f, MPI_Offset d, MPI_Datatype e, MPI_Datatype t, const char *r, MPI_Info i) {
  return aggio_file_set_view(*(aggio_file *)f, d, e, t, r, i);
}
static int a_write_all(void *f, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return aggio_file_write_all(*(aggio_file *)f, b, n, t, s);
}
static int a_write_at(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return aggio_file_write_at(*(aggio_file *)f, o, b, n, t, s);
}
static int a_set_size(void *f, MPI_Offset n) { return aggio_file_set_size(*(aggio_file *)f, n); }
static int m_view(void *f, MPI_Offset d, MPI_Datatype e, MPI_Datatype t, const char *r, MPI_Info i) {
  return MPI_File_set_view(*(MPI_File *)f, d, e, t, r, i);
}
static int m_write_all(void *f, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return MPI_File_write_all(*(MPI_File *)f, b, n, t, s);
}
static int m_write_at(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return MPI_File_write_at(*(MPI_File *)f, o, b, n, t, s);
}
static int m_set_size(void *f, MPI_Offset n) { return MPI_File_set_size(*(MPI_File *)f, n); }

static const struct writes via_aggio = {a_view, a_write_all, a_write_at, a_set_size};
static const struct writes via_mpi = {m_view, m_write_all, m_write_at, m_set_size};

static int64_t the_writes(const struct writes *w, void *f, int collective_only) {
  MPI_Datatype vec;
  MPI_Type_vector(BLOCKS, BLOCK, BLOCK * nprocs, MPI_BYTE, &vec);
  MPI_Type_commit(&vec);
  char *buf = malloc((size_t)BLOCK * BLOCKS);
  for (int64_t i = 0; i < (int64_t)BLOCK * BLOCKS; i++) {
    int64_t off = (i / BLOCK * nprocs + rank) * BLOCK + i % BLOCK;
    buf[i] = byte_at(off, 1);
  }
  MPI_Status st;
  int rc = w->set_view(f, (MPI_Offset)rank * BLOCK, MPI_BYTE, vec, "native", MPI_INFO_NULL);
  rc |= w->write_all(f, buf, BLOCK * BLOCKS, MPI_BYTE, &st);
  rc |= w->set_view(f, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  int64_t end = (int64_t)BLOCK * BLOCKS * nprocs, far = end + 3 * 8192 + 17;
  if (collective_only) {
    CHECK(rc == MPI_SUCCESS, "the collective write failed: %s", aggio_error_message());
    free(buf);
    MPI_Type_free(&vec);
    return end;
  }
  if (rank == 0) {
    for (int i = 0; i < 1000; i++)
      buf[i] = byte_at(far + i, 2);
    rc |= w->write_at(f, far, buf, 1000, MPI_BYTE, &st);
  }
  int64_t size = far + 1000 + 12345;
  rc |= w->set_size(f, size);
  CHECK(rc == MPI_SUCCESS, "the writes failed: %s", aggio_error_message());
  free(buf);
  MPI_Type_free(&vec);
  return size;
}

static MPI_Info subfile_info(const char *strategy, const char *count) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_subfiles", count);
  MPI_Info_set(info, "aggio_subfile_stripe", STRIPE);
  MPI_Info_set(info, "aggio_strategy", strategy);
  MPI_Info_set(info, "cb_buffer_size", "65536"); /* several two-phase rounds */
  return info;
}

/* The whole reference file, read with POSIX on every rank. */
static char *slurp(const char *path, int64_t *n) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return NULL;
  *n = sb.st_size;
  char *b = malloc((size_t)*n + 1);
  int fd = open(path, O_RDONLY);
  int64_t got = 0;
  while (fd >= 0 && got < *n) {
    ssize_t r = pread(fd, b + got, (size_t)(*n - got), got);
    if (r <= 0)
      break;
    got += r;
  }
  if (fd >= 0)
    close(fd);
  return b;
}

/* Reads the subfiled file on comm (no hint) in round-robin chunks with
 * collective reads, each rank checking its chunks against ref. */
static void read_back(MPI_Comm comm, const char *path, const char *ref, int64_t size,
                      const char *what) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_SUCCESS, "%s: open on %d ranks: %s", what, n, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  CHECK(strcmp(fh->st.ops->name, "subfile") == 0, "%s: opened on %s", what, fh->st.ops->name);
  MPI_Offset got_size = -1;
  aggio_file_get_size(fh, &got_size);
  CHECK(got_size == size, "%s: size %lld, the MPI library's %lld", what, (long long)got_size,
        (long long)size);
  const int64_t chunk = 7777;
  char *buf = malloc(chunk);
  int64_t bad = 0, rounds = (size + chunk * n - 1) / (chunk * n);
  for (int64_t r = 0; r < rounds + 1; r++) { /* one round past the end: reads 0 bytes */
    int64_t off = (r * n + me) * chunk;
    MPI_Status st;
    rc = aggio_file_read_at_all(fh, off, buf, (int)chunk, MPI_BYTE, &st);
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    int64_t want = off >= size ? 0 : size - off < chunk ? size - off : chunk;
    bad += rc != AGGIO_SUCCESS || count != want;
    for (int64_t i = 0; i < want && i < count; i++)
      bad += buf[i] != ref[off + i];
  }
  CHECK(bad == 0, "%s: %lld bad bytes or counts read on %d ranks", what, (long long)bad, n);
  free(buf);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "%s: close: %s", what, aggio_error_message());
}

/* Communicators of other sizes read the file: one rank, and all but one. */
static void read_elsewhere(const char *path, const char *ref, int64_t size, const char *what) {
  MPI_Comm one, rest;
  MPI_Comm_split(MPI_COMM_WORLD, rank == 0 ? 0 : MPI_UNDEFINED, 0, &one);
  if (one != MPI_COMM_NULL) {
    read_back(one, path, ref, size, what);
    MPI_Comm_free(&one);
  }
  if (nprocs > 2) {
    MPI_Comm_split(MPI_COMM_WORLD, rank > 0 ? 0 : MPI_UNDEFINED, 0, &rest);
    if (rest != MPI_COMM_NULL) {
      read_back(rest, path, ref, size, what);
      MPI_Comm_free(&rest);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void check_on_disk(const char *path, int m) {
  if (rank != 0)
    return;
  char head[40] = "", sub[700];
  int fd = open(path, O_RDONLY);
  if (fd >= 0) {
    CHECK(pread(fd, head, sizeof head - 1, 0) > 0, "read the layout");
    close(fd);
  }
  CHECK(strncmp(head, "aggio subfiled file, format 1\n", 30) == 0,
        "the name holds \"%.30s\", not the layout", head);
  for (int k = 0; k < m; k++) {
    snprintf(sub, sizeof sub, "%s.subfile.%d.of.%d", path, k, m);
    CHECK(access(sub, F_OK) == 0, "subfile %s missing", sub);
  }
}

static void one_case(const char *strategy, const char *count, int m) {
  char path[600], ref_path[600], what[128];
  snprintf(what, sizeof what, "%s, %s subfiles", strategy, count);
  snprintf(path, sizeof path, "%s/sub_%s_%s.dat", dir, strategy, count);
  snprintf(ref_path, sizeof ref_path, "%s/ref_%s_%s.dat", dir, strategy, count);
  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, ref_path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  int64_t size = the_writes(&via_mpi, &mf, 0);
  MPI_File_close(&mf);
  MPI_Info info = subfile_info(strategy, count);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "%s: open: %s", what, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  CHECK(strcmp(fh->st.ops->name, "subfile") == 0 && fh->st.subfiles == m,
        "%s: back end %s with %d subfiles", what, fh->st.ops->name, fh->st.subfiles);
  CHECK(the_writes(&via_aggio, &fh, 0) == size, "sizes");
  CHECK(aggio_file_sync(fh) == AGGIO_SUCCESS, "%s: sync: %s", what, aggio_error_message());
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "%s: close: %s", what, aggio_error_message());
  check_on_disk(path, m);
  int64_t n = 0;
  char *ref = slurp(ref_path, &n);
  CHECK(ref && n == size, "%s: reference of %lld bytes", what, (long long)n);
  if (ref && n == size) {
    read_back(MPI_COMM_WORLD, path, ref, size, what);
    read_elsewhere(path, ref, size, what);
  }
  free(ref);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(ref_path);
    CHECK(aggio_file_delete(path, MPI_INFO_NULL) == AGGIO_SUCCESS, "delete: %s",
          aggio_error_message());
    char sub[700];
    snprintf(sub, sizeof sub, "%s.subfile.0.of.%d", path, m);
    CHECK(access(path, F_OK) != 0 && access(sub, F_OK) != 0, "%s: delete left files", what);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Each aggregator on one subfile: with stripe-cyclic file domains (a
 * subfiled file's default) nprocs aggregators over `subfiles` subfiles
 * (nprocs, or nprocs / 2) write one subfile each, the statistics' writer
 * count is the aggregator count, and the bytes are the MPI library's;
 * contiguous domains (asked for) make every aggregator write to every
 * subfile its range crosses, which the count shows (so it can tell them
 * apart). */
static void writers(const char *domains, int subfiles) {
  char path[600], ref_path[600], m[16], naggr[16];
  snprintf(path, sizeof path, "%s/sub_writers_%s_%d.dat", dir, domains, subfiles);
  snprintf(ref_path, sizeof ref_path, "%s/ref_writers_%s_%d.dat", dir, domains, subfiles);
  snprintf(m, sizeof m, "%d", subfiles);
  snprintf(naggr, sizeof naggr, "%d", nprocs);
  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, ref_path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  int64_t size = the_writes(&via_mpi, &mf, 1);
  MPI_File_close(&mf);
  MPI_Info info = subfile_info("two_phase", m);
  MPI_Info_set(info, "cb_nodes", naggr);
  MPI_Info_set(info, "aggio_cb_domains", domains);
  MPI_Info_set(info, "aggio_stats", "true");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "writers %s: open: %s", domains, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  the_writes(&via_aggio, &fh, 1);
  long long mine = fh->obs.stats ? fh->obs.stats->c[AGGIO_C_SUBFILE_WRITERS] : -1, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "writers %s: close: %s", domains,
        aggio_error_message());
  if (strcmp(domains, "contiguous") == 0)
    CHECK(nprocs == 1 || all > nprocs, "contiguous domains: %lld writers of %d subfiles", all,
          subfiles);
  else /* each aggregator writes one subfile: as many pairs as aggregators */
    CHECK(all == nprocs, "%s domains, %d aggregators: %lld writers of %d subfiles", domains,
          nprocs, all, subfiles);
  int64_t n = 0;
  char *ref = slurp(ref_path, &n);
  CHECK(ref && n == size, "writers %s: reference of %lld bytes", domains, (long long)n);
  if (ref && n == size)
    read_back(MPI_COMM_WORLD, path, ref, size, domains);
  free(ref);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(ref_path);
    aggio_file_delete(path, MPI_INFO_NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* set_size down and up, preallocate, atomic mode, on a subfiled file. */
static void sizes_and_atomic(void) {
  char path[600];
  snprintf(path, sizeof path, "%s/sub_sizes.dat", dir);
  MPI_Info info = subfile_info("auto", "3");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR |
                           MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  MPI_Offset size = -1;
  rc = aggio_file_preallocate(fh, 100000);
  aggio_file_get_size(fh, &size);
  CHECK(rc == AGGIO_SUCCESS && size == 100000, "preallocate: size %lld", (long long)size);
  rc = aggio_file_set_size(fh, 8192 * 4 + 5);
  aggio_file_get_size(fh, &size);
  CHECK(rc == AGGIO_SUCCESS && size == 8192 * 4 + 5, "set_size down: %lld", (long long)size);
  CHECK(aggio_file_set_atomicity(fh, 1) == AGGIO_SUCCESS, "atomic: %s", aggio_error_message());
  char b[3000], back[3000];
  memset(b, 'a' + rank, sizeof b);
  MPI_Status st;
  int64_t off = 8000 + (int64_t)rank * 3000; /* across a stripe boundary */
  rc = aggio_file_write_at_all(fh, off, b, sizeof b, MPI_BYTE, &st);
  rc |= aggio_file_read_at_all(fh, off, back, sizeof back, MPI_BYTE, &st);
  CHECK(rc == AGGIO_SUCCESS && memcmp(b, back, sizeof b) == 0, "atomic write and read back");
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(access(path, F_OK) != 0, "MPI_MODE_DELETE_ON_CLOSE left the layout");
}

/* A subfile that cannot be created (a directory has its name): every rank
 * fails, and no layout is left at the name. */
static void cannot_create(void) {
  char path[600], sub[700];
  snprintf(path, sizeof path, "%s/sub_fail.dat", dir);
  snprintf(sub, sizeof sub, "%s.subfile.1.of.2", path);
  if (rank == 0)
    mkdir(sub, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Info info = subfile_info("auto", "2");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc != AGGIO_SUCCESS && strstr(aggio_error_message(), "subfile.1.of.2"),
        "open with an uncreatable subfile: rc %d, \"%s\"", rc, aggio_error_message());
  if (rc == AGGIO_SUCCESS)
    aggio_file_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  char sub0[700];
  snprintf(sub0, sizeof sub0, "%s.subfile.0.of.2", path);
  CHECK(access(path, F_OK) != 0 && access(sub0, F_OK) != 0,
        "the failed open left the layout or a subfile");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    rmdir(sub);
  info = subfile_info("auto", "many");
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc != AGGIO_SUCCESS && strstr(aggio_error_message(), "aggio_subfiles"),
        "aggio_subfiles=many: rc %d, \"%s\"", rc, aggio_error_message());
}

/* An existing file's layout wins over the hints: MPI_MODE_EXCL on a
 * layout fails; aggio_subfiles on an ordinary file with data is reported
 * ignored and the file stays one; a layout whose subfile is missing fails
 * the open on every rank, naming it. */
static void existing_files(void) {
  char path[600], plain[600], sub[700], val[MPI_MAX_INFO_VAL + 1] = "";
  snprintf(path, sizeof path, "%s/sub_exist.dat", dir);
  snprintf(plain, sizeof plain, "%s/plain_exist.dat", dir);
  MPI_Info info = subfile_info("auto", "2");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == AGGIO_SUCCESS, "create: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS)
    aggio_file_close(&fh);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR,
                       info, &fh);
  CHECK(rc != AGGIO_SUCCESS, "MPI_MODE_EXCL opened an existing layout");
  if (rc == AGGIO_SUCCESS)
    aggio_file_close(&fh);
  if (rank == 0) {
    FILE *f = fopen(plain, "w");
    fputs("data\n", f);
    fclose(f);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, plain, MPI_MODE_RDWR, info, &fh);
  CHECK(rc == AGGIO_SUCCESS && strcmp(fh->st.ops->name, "posix") == 0,
        "an ordinary file opened with aggio_subfiles: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    MPI_Info used;
    int flag = 0;
    aggio_file_get_info(fh, &used);
    MPI_Info_get(used, "aggio_hints_ignored", MPI_MAX_INFO_VAL, val, &flag);
    MPI_Info_free(&used);
    CHECK(flag && strstr(val, "aggio_subfiles"), "aggio_hints_ignored: \"%s\"", val);
    aggio_file_close(&fh);
  }
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
  snprintf(sub, sizeof sub, "%s.subfile.1.of.2", path);
  if (rank == 0)
    unlink(sub);
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc != AGGIO_SUCCESS && strstr(aggio_error_message(), "subfile.1.of.2"),
        "a missing subfile: rc %d, \"%s\"", rc, aggio_error_message());
  if (rc == AGGIO_SUCCESS)
    aggio_file_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    unlink(plain);
    aggio_file_delete(path, MPI_INFO_NULL);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(dir, sizeof dir, "%s/subfile.%d", test_dir(), id);
  if (rank == 0)
    mkdir(dir, 0755);
  MPI_Barrier(MPI_COMM_WORLD);
  const char *strategies[] = {"auto", "independent", "two_phase", "write_behind", "node_local"};
  for (size_t s = 0; s < sizeof strategies / sizeof strategies[0]; s++)
    one_case(strategies[s], "3", 3);
  one_case("auto", "1", 1);
  one_case("two_phase", "auto", 1); /* one node here: one subfile */
  writers("automatic", nprocs);
  writers("contiguous", nprocs);
  if (nprocs % 2 == 0) /* twice the aggregators: two writers per subfile, all busy */
    writers("automatic", nprocs / 2);
  sizes_and_atomic();
  cannot_create();
  existing_files();
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    rmdir(dir);
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
