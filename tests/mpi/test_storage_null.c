/*
 * test_storage_null.c - the null storage back end (aggio_storage=null,
 * src/storage/storage_null.c): it is the one selected, it creates no file, it
 * counts in the statistics exactly the system writes the POSIX back end
 * counts for the same collective writes (same number, same bytes, the
 * total the ranks wrote), reads return zeros for every byte asked, and an
 * unknown back end fails the open on every rank with a message that names
 * it.  A later aggio_storage in set_info is reported ignored.
 *
 * aggio-test-ranks: 1 2 4
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "internal.h"

static int rank, nprocs;

/* This rank's piece: sizes differ per rank so that file domains cut
 * through pieces and rounds. */
static int64_t piece_len(int r) { return 100000 + 4099 * (int64_t)r; }

static int64_t piece_off(int r) {
  int64_t off = 0;
  for (int i = 0; i < r; i++)
    off += piece_len(i);
  return off;
}

static MPI_Info make_info(const char *storage) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_storage", storage);
  MPI_Info_set(info, "aggio_strategy", "two_phase");
  MPI_Info_set(info, "cb_buffer_size", "65536"); /* several rounds */
  MPI_Info_set(info, "aggio_direct_io", "disable"); /* one pwrite per piece in both */
  MPI_Info_set(info, "aggio_stats", "true");        /* fh->obs.stats, printed at close */
  return info;
}

struct counts {
  int64_t writes, bytes, aggr_bytes;
};

/* Opens path on `storage`, writes every rank's piece collectively, and
 * returns the system writes counted on all ranks together. */
static struct counts write_pieces(const char *path, const char *storage) {
  struct counts c = {0, 0, 0}, all = {0, 0, 0};
  MPI_Info info = make_info(storage);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open on %s: %s", storage, aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return all;
  CHECK(strcmp(fh->st.ops->name, storage) == 0, "back end %s, asked %s", fh->st.ops->name,
        storage);
  int64_t n = piece_len(rank);
  char *buf = malloc((size_t)n);
  for (int64_t i = 0; i < n; i++)
    buf[i] = (char)(1 + (piece_off(rank) + i) % 251);
  MPI_Status st;
  rc = aggio_file_write_at_all(fh, piece_off(rank), buf, (int)n, MPI_BYTE, &st);
  CHECK(rc == AGGIO_SUCCESS, "write on %s: %s", storage, aggio_error_message());
  c.writes = fh->obs.stats->c[AGGIO_C_SYS_WRITES];
  c.bytes = fh->obs.stats->c[AGGIO_C_SYS_WRITE_BYTES];
  c.aggr_bytes = fh->obs.stats->c[AGGIO_C_AGGR_WRITE_BYTES];
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  free(buf);
  MPI_Allreduce(&c, &all, 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

static void test_counts_like_posix(void) {
  char pp[512], np[512];
  snprintf(pp, sizeof pp, "%s/storage_null_posix_np%d.dat", test_dir(), nprocs);
  snprintf(np, sizeof np, "%s/storage_null_none_np%d.dat", test_dir(), nprocs);
  if (rank == 0) {
    unlink(pp);
    unlink(np);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  struct counts px = write_pieces(pp, "posix");
  struct counts nl = write_pieces(np, "null");
  int64_t total = piece_off(nprocs);
  CHECK(nl.bytes == total, "null counted %lld bytes written, the ranks wrote %lld",
        (long long)nl.bytes, (long long)total);
  CHECK(nl.aggr_bytes == total, "null counted %lld aggregator bytes, expected %lld",
        (long long)nl.aggr_bytes, (long long)total);
  CHECK(nl.writes == px.writes && nl.bytes == px.bytes && nl.aggr_bytes == px.aggr_bytes,
        "null counted %lld writes / %lld bytes / %lld aggregator bytes, posix %lld / %lld / "
        "%lld", (long long)nl.writes, (long long)nl.bytes, (long long)nl.aggr_bytes,
        (long long)px.writes, (long long)px.bytes, (long long)px.aggr_bytes);
  CHECK(nl.writes > 0, "no write counted");
  if (rank == 0) {
    struct stat sb;
    CHECK(stat(np, &sb) != 0 && errno == ENOENT, "the null back end created %s", np);
    CHECK(stat(pp, &sb) == 0 && sb.st_size == total, "posix file is not %lld bytes",
          (long long)total);
    unlink(pp);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Collective and independent reads on the null back end: zeros, whole. */
static void test_reads_zeros(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/storage_null_read_np%d.dat", test_dir(), nprocs);
  MPI_Info info = make_info("null");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info,
                           &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  int64_t n = piece_len(rank);
  unsigned char *buf = malloc((size_t)n);
  for (int pass = 0; pass < 2; pass++) {
    memset(buf, 0xff, (size_t)n);
    MPI_Status st;
    rc = pass == 0 ? aggio_file_read_at_all(fh, piece_off(rank), buf, (int)n, MPI_BYTE, &st)
                   : aggio_file_read_at(fh, piece_off(rank) + 12345, buf, (int)n, MPI_BYTE, &st);
    CHECK(rc == AGGIO_SUCCESS, "read (pass %d): %s", pass, aggio_error_message());
    int count = -1;
    MPI_Get_count(&st, MPI_BYTE, &count);
    CHECK(count == (int)n, "pass %d read %d bytes of %lld", pass, count, (long long)n);
    int64_t nonzero = 0;
    for (int64_t i = 0; i < n; i++)
      nonzero += buf[i] != 0;
    CHECK(nonzero == 0, "pass %d: %lld bytes are not zero", pass, (long long)nonzero);
  }
  CHECK(fh->obs.stats->c[AGGIO_C_SYS_READ_BYTES] >= n || fh->topo.my_aggr_index < 0,
        "an aggregator counted %lld bytes read",
        (long long)fh->obs.stats->c[AGGIO_C_SYS_READ_BYTES]);
  /* set_info cannot move an open file to another back end: reported ignored */
  MPI_Info later;
  MPI_Info_create(&later);
  MPI_Info_set(later, "aggio_storage", "posix");
  CHECK(aggio_file_set_info(fh, later) == AGGIO_SUCCESS, "set_info: %s", aggio_error_message());
  MPI_Info_free(&later);
  MPI_Info used;
  char val[MPI_MAX_INFO_VAL + 1] = "";
  int flag = 0;
  CHECK(aggio_file_get_info(fh, &used) == AGGIO_SUCCESS, "get_info");
  MPI_Info_get(used, "aggio_hints_ignored", MPI_MAX_INFO_VAL, val, &flag);
  MPI_Info_free(&used);
  CHECK(flag && strstr(val, "aggio_storage=posix: ") && strstr(val, "still null"),
        "aggio_storage after set_info: \"%s\"", val);
  CHECK(strcmp(fh->st.ops->name, "null") == 0, "back end changed to %s", fh->st.ops->name);
  /* DELETE_ON_CLOSE: nothing to remove, and no error for it */
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  free(buf);
}

static void test_unknown_backend(void) {
  char path[512];
  snprintf(path, sizeof path, "%s/storage_null_bogus_np%d.dat", test_dir(), nprocs);
  MPI_Info info = make_info("tape");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  const char *msg = aggio_error_message();
  CHECK(rc == AGGIO_ERR_UNSUPPORTED, "open with aggio_storage=tape returned %d", rc);
  CHECK(fh == AGGIO_FILE_NULL, "a handle came back");
  /* the hint matches on every rank, so every rank failed itself */
  CHECK(strstr(msg, "\"tape\"") && strstr(msg, "posix, null"),
        "message: %s", msg);
  struct stat sb;
  CHECK(rank != 0 || (stat(path, &sb) != 0 && errno == ENOENT), "the failed open created %s",
        path);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  test_counts_like_posix();
  test_reads_zeros();
  test_unknown_backend();
  char path[512];
  snprintf(path, sizeof path, "%s/storage_null_none_np%d.dat", test_dir(), nprocs);
  return test_finish_mpi(path);
}
