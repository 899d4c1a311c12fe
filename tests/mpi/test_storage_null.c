/*
 * test_storage_null.c - the null storage back end (aggio_storage=null,
 * src/storage/storage_null.c): it is the one selected, it creates no file, it
 * counts in the statistics exactly the system writes the POSIX back end
 * counts for the same collective writes (same number, same bytes, the
 * total the ranks wrote), reads return zeros for every byte asked, and an
 * unknown back end fails the open on every rank with a message that names
 * it.  A later aggio_storage in set_info is reported ignored.  With
 * aggio_subfiles it is a subfiled file over null subfiles: a collective
 * two-phase write is cut into the subfiles' stripes and counted, get_size
 * is the logical end of what the rank wrote (the largest over the ranks
 * is the logical size), get_info shows both hints honoured,
 * and nothing reaches the disk (no layout, no subfile); a layout already
 * at the name is not read.
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

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* The value of key in the hints in effect ("" when absent). */
static void info_value(aggio_file fh, const char *key, char *val) {
  MPI_Info used;
  int flag = 0;
  val[0] = '\0';
  if (aggio_file_get_info(fh, &used) != AGGIO_SUCCESS)
    return;
  MPI_Info_get(used, key, MPI_MAX_INFO_VAL, val, &flag);
  if (!flag)
    val[0] = '\0';
  MPI_Info_free(&used);
}

/* Null subfiles (aggio_storage=null, aggio_subfiles=3: what the SimGrid
 * build runs as subfiles per I/O node). */
static void test_subfiled(void) {
  char path[512], sub[600], val[MPI_MAX_INFO_VAL + 1];
  snprintf(path, sizeof path, "%s/storage_null_subfiled_np%d.dat", test_dir(), nprocs);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Info info = make_info("null");
  MPI_Info_set(info, "aggio_subfiles", "3");
  MPI_Info_set(info, "aggio_subfile_stripe", "8192"); /* many stripes per piece */
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info,
                           &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open: %s", aggio_error_message());
  if (rc != AGGIO_SUCCESS)
    return;
  CHECK(strcmp(fh->st.ops->name, "subfile") == 0 && fh->st.subfile_ops &&
            strcmp(fh->st.subfile_ops->name, "null") == 0 && fh->st.subfiles == 3,
        "back end %s over %s, %d subfiles", fh->st.ops->name,
        fh->st.subfile_ops ? fh->st.subfile_ops->name : "nothing", fh->st.subfiles);
  int64_t n = piece_len(rank), total = piece_off(nprocs);
  char *buf = malloc((size_t)n);
  memset(buf, 7, (size_t)n);
  MPI_Status st;
  rc = aggio_file_write_at_all(fh, piece_off(rank), buf, (int)n, MPI_BYTE, &st);
  CHECK(rc == AGGIO_SUCCESS, "write: %s", aggio_error_message());
  int64_t mine[2] = {fh->obs.stats->c[AGGIO_C_SYS_WRITE_BYTES],
                     fh->obs.stats->c[AGGIO_C_SYS_WRITES]},
          all[2] = {0, 0};
  MPI_Allreduce(mine, all, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  CHECK(all[0] == total, "counted %lld bytes written, the ranks wrote %lld",
        (long long)all[0], (long long)total);
  CHECK(all[1] >= total / 8192, "%lld writes: not cut at the 8192-byte stripes",
        (long long)all[1]);
  /* a null file's size is what this process wrote (the aggregators, in
   * two-phase): the one that wrote the last stripe sees the logical size */
  MPI_Offset size = -1, largest = -1;
  CHECK(aggio_file_get_size(fh, &size) == AGGIO_SUCCESS && size <= total, "get_size %lld",
        (long long)size);
  MPI_Allreduce(&size, &largest, 1, MPI_OFFSET, MPI_MAX, MPI_COMM_WORLD);
  CHECK(largest == total, "largest get_size %lld, the logical size is %lld",
        (long long)largest, (long long)total);
  /* one byte past it, each rank its own, in another subfile's stripe */
  MPI_Offset end = total + 8192 * (1 + rank) + 5 + 1;
  CHECK(aggio_file_write_at(fh, end - 1, "z", 1, MPI_BYTE, &st) == AGGIO_SUCCESS,
        "write_at: %s", aggio_error_message());
  CHECK(aggio_file_get_size(fh, &size) == AGGIO_SUCCESS && size == end,
        "get_size %lld after a byte at %lld", (long long)size, (long long)end - 1);
  CHECK(aggio_file_preallocate(fh, total + 100000) == AGGIO_SUCCESS, "preallocate: %s",
        aggio_error_message());
  CHECK(aggio_file_get_size(fh, &size) == AGGIO_SUCCESS && (rank != 0 || size == total + 100000),
        "get_size after preallocate: %lld", (long long)size);
  memset(buf, 0xff, (size_t)n);
  rc = aggio_file_read_at_all(fh, piece_off(rank), buf, (int)n, MPI_BYTE, &st);
  int nonzero = 0;
  for (int64_t i = 0; i < n; i++)
    nonzero += buf[i] != 0;
  CHECK(rc == AGGIO_SUCCESS && nonzero == 0, "read: rc %d, %d bytes not zero", rc, nonzero);
  free(buf);
  info_value(fh, "aggio_storage", val);
  CHECK(strcmp(val, "null") == 0, "get_info aggio_storage \"%s\"", val);
  info_value(fh, "aggio_subfiles", val);
  CHECK(strcmp(val, "3") == 0, "get_info aggio_subfiles \"%s\"", val);
  info_value(fh, "aggio_hints_ignored", val);
  CHECK(!strstr(val, "aggio_subfiles") && !strstr(val, "aggio_storage"),
        "aggio_hints_ignored \"%s\"", val);
  /* set_info naming the subfiles' back end keeps it honoured; another not */
  MPI_Info later;
  MPI_Info_create(&later);
  MPI_Info_set(later, "aggio_storage", "null");
  CHECK(aggio_file_set_info(fh, later) == AGGIO_SUCCESS, "set_info: %s", aggio_error_message());
  info_value(fh, "aggio_hints_ignored", val);
  CHECK(!strstr(val, "aggio_storage"), "aggio_storage=null reported \"%s\"", val);
  MPI_Info_set(later, "aggio_storage", "posix");
  CHECK(aggio_file_set_info(fh, later) == AGGIO_SUCCESS, "set_info: %s", aggio_error_message());
  MPI_Info_free(&later);
  info_value(fh, "aggio_hints_ignored", val);
  CHECK(strstr(val, "aggio_storage=posix: ") && strstr(val, "still null"),
        "aggio_storage=posix reported \"%s\"", val);
  /* nothing on disk, before and after close (DELETE_ON_CLOSE: nothing to remove) */
  for (int pass = 0; pass < 2; pass++) {
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(path), "pass %d: %s exists", pass, path);
    for (int k = 0; k < 3; k++) {
      snprintf(sub, sizeof sub, "%s.subfile.%d.of.3", path, k);
      CHECK(!exists(sub), "pass %d: %s exists", pass, sub);
    }
    if (pass == 0)
      CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  }
}

/* A layout at the name is read by the POSIX back end only: the null back
 * end opens no file, whatever lies there. */
static void test_layout_not_read(void) {
  char path[512], sub[600];
  snprintf(path, sizeof path, "%s/storage_null_layout_np%d.dat", test_dir(), nprocs);
  if (rank == 0)
    aggio_file_delete(path, MPI_INFO_NULL); /* a layout an earlier run left */
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Info info = make_info("posix");
  MPI_Info_set(info, "aggio_subfiles", "2");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == AGGIO_SUCCESS, "posix open: %s", aggio_error_message());
  char b = 'x';
  MPI_Status st;
  if (rc == AGGIO_SUCCESS) {
    CHECK(aggio_file_write_at_all(fh, 5000, &b, rank == 0, MPI_BYTE, &st) == AGGIO_SUCCESS,
          "posix write: %s", aggio_error_message());
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  }
  MPI_Info_set(info, "aggio_storage", "null");
  MPI_Info_set(info, "aggio_subfiles", "0");
  rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "null open: %s", aggio_error_message());
  if (rc == AGGIO_SUCCESS) {
    MPI_Offset size = -1;
    CHECK(strcmp(fh->st.ops->name, "null") == 0, "back end %s", fh->st.ops->name);
    CHECK(aggio_file_get_size(fh, &size) == AGGIO_SUCCESS && size == 0, "null size %lld",
          (long long)size);
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close: %s", aggio_error_message());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    CHECK(aggio__subfile_detect(path), "the layout at %s was touched", path);
    for (int k = 0; k < 2; k++) {
      snprintf(sub, sizeof sub, "%s.subfile.%d.of.2", path, k);
      struct stat sb;
      CHECK(stat(sub, &sb) == 0 && sb.st_size == (k == 0 ? 5001 : 0),
            "%s changed", sub);
    }
    aggio_file_delete(path, MPI_INFO_NULL);
    CHECK(!exists(path), "%s not deleted", path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
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
  test_subfiled();
  test_layout_not_read();
  char path[512];
  snprintf(path, sizeof path, "%s/storage_null_none_np%d.dat", test_dir(), nprocs);
  return test_finish_mpi(path);
}
