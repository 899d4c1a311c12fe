/*
 * test_stage.c - staging through a node-local directory (aggio_stage_dir,
 * docs/staging.md), each part on its own files:
 *   modes   for each aggio_stage_drain (background, at_close, none): a
 *           collective interleaved write, each rank's independent rewrite
 *           of part of its first block (the newest bytes win), its own
 *           bytes read back before any sync (from the stage), sync, a
 *           second collective write, close; the file then holds exactly
 *           the bytes the MPI library's own MPI-IO leaves after the same
 *           calls.  at_close: nothing reaches the file before the sync,
 *           and the sync removes each rank's stage files; none: close
 *           leaves the second write in the stage only, and the next open
 *           moves it.  The stage directory is gone at the end.
 *   sync    aggio_stage_sync=stage: the sync leaves the stage files and
 *           the bytes out of the file; close moves them.
 *   fail    the movers' first write to the file fails, on the last rank
 *           (aggio_stage_merge=rank) or on the node's mover, rank 0 (node):
 *           close fails on every rank with the same code, the stage keeps
 *           the bytes, and the next open writes them (the file is whole).
 *   atomic  set_atomicity(1) moves what is staged and writes through;
 *           set_size cuts staged bytes too (none come back at close).
 *   size    set_size past every staged byte (HDF5 sets its end of
 *           allocation at each flush and close) leaves the bytes staged
 *           (drain at_close: the file has the new size and none of them
 *           yet); close writes them; the file equals the MPI library's.
 *   order   writes of different ranks to the same bytes ordered by a
 *           barrier only, as HDF5 writes fill values from rank 0 and then
 *           the data from every rank: once over a collective write, once
 *           over independent ones.  Rank 0 then keeps staging small writes
 *           for 100 ms, so that its movers stay idle and move its fill
 *           values after the other ranks' movers moved their data; the
 *           file must still equal the MPI library's after the same calls.
 *   detach  aggio_stage_drain=detach: close hands the stage to a drainer
 *           process (aggio-stage-drain, the build's) that outlives it;
 *           the file then becomes the reference's, the stage goes, and
 *           the drainer's log says so.  With no drainer to be found
 *           (AGGIO_STAGE_DRAINER names none), close writes the stage
 *           itself: the file is whole when close returns.  And
 *           MPI_File_delete right after such a close waits for the
 *           drainer: the deleted file does not come back.
 *   merge   aggio_stage_merge: rank, where each rank's movers write its
 *           blocks one by one (as many writes as blocks); node, where the
 *           movers of the node's first rank join every rank's interleaved
 *           blocks into one run (a few writes); and with an even number
 *           of ranks node on two emulated nodes (a run per node's blocks).
 *           The file equals the MPI library's each time.
 *   groups  two groups of ranks have the same file open at once, each with
 *           its own session (MPI allows it; the generated program of seed
 *           504 does it): the first group stages a round, the second opens
 *           the file, the first stages another round and closes.  The
 *           second's open must not take the first's live stage files for
 *           leftovers (it replayed and removed them, and the node's movers
 *           then lost the second round): the first group's index files
 *           are still there after the other open, and the file holds both
 *           rounds.  Needs 2 ranks.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: modes sync fail atomic size order detach merge groups
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "harness.h"
#include "internal.h"
#include "stage_log.h"

#define BLK 5000 /* bytes per block; blocks interleave rank by rank */
#define NBLK 24  /* blocks per rank per collective write */

static int rank, nprocs;
static char dir[512], stage[600];
static const char *merge = "node";     /* aggio_stage_merge of every open */
static const char *emulate_nodes = "0"; /* aggio_emulate_nodes */

static unsigned char pat(int salt, int64_t off) {
  return (unsigned char)(1 + (off * 13 + salt * 101) % 251);
}

/* ---- the writes, through aggio or through the MPI library ------------------------- */

struct api {
  int (*write_at_all)(void *, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *);
  int (*write_at)(void *, MPI_Offset, const void *, int, MPI_Datatype, MPI_Status *);
  int (*sync)(void *);
};

static int a_wall(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return aggio_file_write_at_all(*(aggio_file *)f, o, b, n, t, s);
}
static int a_w(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return aggio_file_write_at(*(aggio_file *)f, o, b, n, t, s);
}
static int a_sync(void *f) { return aggio_file_sync(*(aggio_file *)f); }
static int m_wall(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return MPI_File_write_at_all(*(MPI_File *)f, o, b, n, t, s);
}
static int m_w(void *f, MPI_Offset o, const void *b, int n, MPI_Datatype t, MPI_Status *s) {
  return MPI_File_write_at(*(MPI_File *)f, o, b, n, t, s);
}
static int m_sync(void *f) { return MPI_File_sync(*(MPI_File *)f); }

static const struct api via_aggio = {a_wall, a_w, a_sync}, via_mpi = {m_wall, m_w, m_sync};

static int64_t block_off(int round, int k, int r) {
  return ((int64_t)round * NBLK * nprocs + (int64_t)k * nprocs + r) * BLK;
}

/* Round `round`: every rank's NBLK blocks, one collective call per block. */
static int round_write(const struct api *a, void *f, int round) {
  unsigned char buf[BLK];
  int rc = 0;
  for (int k = 0; k < NBLK && rc == 0; k++) {
    int64_t off = block_off(round, k, rank);
    for (int j = 0; j < BLK; j++)
      buf[j] = pat(round + 1, off + j);
    MPI_Status st;
    rc = a->write_at_all(f, off, buf, BLK, MPI_BYTE, &st);
  }
  return rc;
}

/* Each rank rewrites bytes [1000, 3000) of its first block of round 0. */
static int rewrite(const struct api *a, void *f) {
  unsigned char buf[2000];
  int64_t off = block_off(0, 0, rank) + 1000;
  for (int j = 0; j < 2000; j++)
    buf[j] = pat(9, off + j);
  MPI_Status st;
  return a->write_at(f, off, buf, 2000, MPI_BYTE, &st);
}

static unsigned char expected(int64_t off) {
  int64_t blk = off / BLK, in = off % BLK;
  int round = (int)(blk / ((int64_t)NBLK * nprocs));
  int first = blk % ((int64_t)NBLK * nprocs) < nprocs;
  if (round == 0 && first && in >= 1000 && in < 3000)
    return pat(9, off);
  return pat(round + 1, off);
}

/* The reference: the same calls through the MPI library's MPI-IO. */
static void reference(const char *path, int rounds) {
  MPI_File f;
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f);
  round_write(&via_mpi, &f, 0);
  rewrite(&via_mpi, &f);
  via_mpi.sync(&f);
  for (int r = 1; r < rounds; r++)
    round_write(&via_mpi, &f, r);
  MPI_File_close(&f);
}

/* The order part's calls: rank 0's fill of a region, a barrier, every
 * rank's blocks over it (collective calls in the first region,
 * independent ones in the second), then rank 0's small writes past both,
 * spread over 100 ms when `spread`. */
#define ORDER_BLKS 4
static int order_calls(const struct api *a, void *f, int spread) {
  int64_t region = (int64_t)nprocs * ORDER_BLKS * BLK;
  unsigned char *b = malloc((size_t)region);
  int rc = b ? 0 : -1;
  MPI_Status st;
  for (int part = 0; part < 2 && rc == 0; part++) {
    int64_t base = part * region;
    if (rank == 0) {
      for (int64_t j = 0; j < region; j++)
        b[j] = pat(20 + part, base + j);
      rc = a->write_at(f, base, b, (int)region, MPI_BYTE, &st);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    for (int k = 0; k < ORDER_BLKS && rc == 0; k++) {
      int64_t off = base + ((int64_t)k * nprocs + rank) * BLK;
      for (int j = 0; j < BLK; j++)
        b[j] = pat(30 + part, off + j);
      rc = part == 0 ? a->write_at_all(f, off, b, BLK, MPI_BYTE, &st)
                     : a->write_at(f, off, b, BLK, MPI_BYTE, &st);
    }
  }
  for (int i = 0; rank == 0 && i < 100 && rc == 0; i++) {
    int64_t off = 2 * region + i * 512;
    for (int j = 0; j < 512; j++)
      b[j] = pat(40, off + j);
    rc = a->write_at(f, off, b, 512, MPI_BYTE, &st);
    if (spread)
      usleep(1000);
  }
  free(b);
  return rc;
}

/* ---- looking at files with POSIX ------------------------------------------------------ */

static int64_t file_size(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0 ? (int64_t)sb.st_size : -1;
}

static unsigned char *slurp(const char *path, int64_t *n) {
  *n = file_size(path);
  unsigned char *b = malloc(*n > 0 ? (size_t)*n : 1);
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
  *n = got;
  return b;
}

/* Rank 0: the two files hold the same bytes. */
static void same_files(const char *a, const char *b, const char *what) {
  if (rank != 0)
    return;
  int64_t na, nb;
  unsigned char *x = slurp(a, &na), *y = slurp(b, &nb);
  CHECK(na == nb, "%s: %s is %lld bytes, the MPI library's %lld", what, a, (long long)na,
        (long long)nb);
  int64_t n = na < nb ? na : nb, first = -1;
  for (int64_t i = 0; i < n && first < 0; i++)
    if (x[i] != y[i])
      first = i;
  CHECK(first < 0, "%s: byte %lld differs from the MPI library's (0x%02x, not 0x%02x)",
        what, (long long)first, first >= 0 ? x[first] : 0, first >= 0 ? y[first] : 0);
  free(x);
  free(y);
}

/* Files in the stage directory whose name ends in `suffix`, in every
 * file's directory under the stage root. */
static int stage_files(const char *suffix) {
  int n = 0;
  DIR *root = opendir(stage);
  struct dirent *d;
  while (root && (d = readdir(root))) {
    if (d->d_name[0] == '.')
      continue;
    char sub[1200];
    snprintf(sub, sizeof sub, "%s/%s", stage, d->d_name);
    DIR *s = opendir(sub);
    struct dirent *e;
    while (s && (e = readdir(s))) {
      size_t l = strlen(e->d_name), k = strlen(suffix);
      n += l >= k && strcmp(e->d_name + l - k, suffix) == 0;
    }
    if (s)
      closedir(s);
  }
  if (root)
    closedir(root);
  return n;
}

/* The stage root holds no file's directory any more. */
static int stage_empty(void) {
  DIR *root = opendir(stage);
  int n = 0;
  struct dirent *d;
  while (root && (d = readdir(root))) /* the drainer's log is no directory */
    n += d->d_name[0] != '.' && strcmp(d->d_name, "aggio-stage-drain.log") != 0;
  if (root)
    closedir(root);
  return n == 0;
}

/* ---- aggio ------------------------------------------------------------------------------- */

static MPI_Info stage_info(const char *drain, const char *sync) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stage_dir", stage);
  MPI_Info_set(info, "aggio_stage_drain", drain);
  MPI_Info_set(info, "aggio_stage_sync", sync);
  MPI_Info_set(info, "aggio_stage_movers", "2");
  MPI_Info_set(info, "aggio_stage_merge", merge);
  MPI_Info_set(info, "aggio_emulate_nodes", emulate_nodes);
  MPI_Info_set(info, "aggio_stats", "true");
  return info;
}

static aggio_file open_staged(const char *path, int amode, const char *drain,
                              const char *sync) {
  MPI_Info info = stage_info(drain, sync);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, amode, info, &fh);
  CHECK(rc == AGGIO_SUCCESS, "open %s (drain %s): %d", path, drain, rc);
  MPI_Info_free(&info);
  return fh;
}

/* Each rank reads its own blocks of round 0 (the rewrite included). */
static void read_own(aggio_file fh, const char *what) {
  unsigned char buf[BLK];
  int bad = 0;
  for (int k = 0; k < NBLK; k++) {
    int64_t off = block_off(0, k, rank);
    MPI_Status st;
    int rc = aggio_file_read_at(fh, off, buf, BLK, MPI_BYTE, &st);
    int count = 0;
    MPI_Get_count(&st, MPI_BYTE, &count);
    bad += rc != AGGIO_SUCCESS || count != BLK;
    for (int j = 0; j < BLK; j++)
      bad += buf[j] != expected(off + j);
  }
  CHECK(bad == 0, "%s: rank %d read %d wrong bytes of its own before the sync", what, rank,
        bad);
}

static void drained_everywhere(const char *what) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    CHECK(stage_empty(), "%s: the stage directory still holds a file's directory", what);
}

static void part_modes(void) {
  const char *modes[] = {"background", "at_close", "none"};
  char ref[700], path[700];
  snprintf(ref, sizeof ref, "%s/stage.ref", dir);
  reference(ref, 2);
  for (int m = 0; m < 3; m++) {
    snprintf(path, sizeof path, "%s/stage.%s", dir, modes[m]);
    if (rank == 0)
      unlink(path);
    MPI_Barrier(MPI_COMM_WORLD);
    aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, modes[m], "final");
    if (!fh)
      continue;
    CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "%s: round 0", modes[m]);
    CHECK(rewrite(&via_aggio, &fh) == AGGIO_SUCCESS, "%s: rewrite", modes[m]);
    read_own(fh, modes[m]);
    MPI_Offset size = 0;
    aggio_file_get_size(fh, &size);
    CHECK(size >= block_off(0, NBLK - 1, rank) + BLK, "%s: size %lld below this rank's end",
          modes[m], (long long)size);
    MPI_Barrier(MPI_COMM_WORLD);
    if (m > 0 && rank == 0)
      CHECK(file_size(path) == 0, "%s: %lld bytes reached the file before the sync",
            modes[m], (long long)file_size(path));
    CHECK(stage_files(".index") >= 1, "%s: no index file in the stage", modes[m]);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(aggio_file_sync(fh) == AGGIO_SUCCESS, "%s: sync", modes[m]);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(stage_files(".index") == 0, "%s: %d index files left after the sync", modes[m],
          stage_files(".index"));
    /* a collective write need not wait for the other ranks before its
     * I/O (a call that runs independently may do it first, docs/engine.md,
     * "One round"): round 1's records wait until every rank has looked */
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(round_write(&via_aggio, &fh, 1) == AGGIO_SUCCESS, "%s: round 1", modes[m]);
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "%s: close", modes[m]);
    MPI_Barrier(MPI_COMM_WORLD);
    if (m == 2) { /* none: round 1 waits in the stage until the next open */
      if (rank == 0)
        CHECK(file_size(path) == block_off(1, 0, 0), "none: the file is %lld bytes after "
              "close, not round 0's %lld", (long long)file_size(path),
              (long long)block_off(1, 0, 0));
      CHECK(stage_files(".index") == nprocs, "none: %d index files after close, not %d",
            stage_files(".index"), nprocs);
      MPI_Barrier(MPI_COMM_WORLD);
      fh = open_staged(path, MPI_MODE_RDONLY, "background", "final");
      if (fh)
        aggio_file_close(&fh);
    }
    same_files(path, ref, modes[m]);
    drained_everywhere(modes[m]);
  }
}

static void part_sync(void) {
  char ref[700], path[700];
  snprintf(ref, sizeof ref, "%s/stage.sync.ref", dir);
  snprintf(path, sizeof path, "%s/stage.sync", dir);
  reference(ref, 1);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "at_close", "stage");
  if (!fh)
    return;
  round_write(&via_aggio, &fh, 0);
  rewrite(&via_aggio, &fh);
  CHECK(aggio_file_sync(fh) == AGGIO_SUCCESS, "sync to the stage");
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(stage_files(".index") == nprocs, "sync=stage: %d index files after the sync",
        stage_files(".index"));
  if (rank == 0)
    CHECK(file_size(path) == 0, "sync=stage: the sync wrote %lld bytes to the file",
          (long long)file_size(path));
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close");
  same_files(path, ref, "sync=stage");
  drained_everywhere("sync=stage");
}

/* The movers' first write to the file fails: with merge=rank on the last
 * rank, with merge=node on the node's mover process (rank 0). */
static void fail_with(const char *how) {
  char ref[700], path[700], rule[64];
  snprintf(ref, sizeof ref, "%s/stage.fail.ref", dir);
  snprintf(path, sizeof path, "%s/stage.fail.%s", dir, how);
  reference(ref, 1);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  merge = how;
  int mover = strcmp(how, "node") == 0 ? 0 : nprocs - 1;
  /* NBLK + 1 staged writes count as pwrite calls; the movers' first write
   * to the file is the next one */
  snprintf(rule, sizeof rule, "pwrite@%d#%d+", mover, NBLK + 2);
  setenv("AGGIO_FAULTS", rule, 1);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "at_close", "final");
  unsetenv("AGGIO_FAULTS");
  if (!fh)
    return;
  CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "%s: writes before the failure",
        how);
  CHECK(rewrite(&via_aggio, &fh) == AGGIO_SUCCESS, "%s: rewrite before the failure", how);
  int rc = aggio_file_close(&fh);
  int lo = rc, hi = rc;
  MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(rc != AGGIO_SUCCESS && lo == hi, "%s: close after the movers failed: %d (ranks "
        "%d..%d)", how, rc, lo, hi);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(stage_files(".index") >= 1, "%s: the failed rank's stage files are gone", how);
  MPI_Barrier(MPI_COMM_WORLD);
  fh = open_staged(path, MPI_MODE_RDWR, "at_close", "final"); /* moves them */
  if (fh)
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "%s: close after the replay", how);
  same_files(path, ref, "after the movers failed and the next open");
  drained_everywhere("fail");
  merge = "node";
}

static void part_fail(void) {
  fail_with("rank");
  fail_with("node");
}

static void part_atomic(void) {
  char path[700];
  snprintf(path, sizeof path, "%s/stage.atomic", dir);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "none", "final");
  if (!fh)
    return;
  round_write(&via_aggio, &fh, 0);
  CHECK(aggio_file_set_atomicity(fh, 1) == AGGIO_SUCCESS, "set_atomicity");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    CHECK(file_size(path) == block_off(1, 0, 0), "atomic mode: the file is %lld bytes, not "
          "%lld", (long long)file_size(path), (long long)block_off(1, 0, 0));
  rewrite(&via_aggio, &fh); /* written through: in the file at once */
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(stage_files(".data") <= nprocs, "atomic mode staged a new writer's files");
  aggio_file_set_atomicity(fh, 0);
  round_write(&via_aggio, &fh, 1); /* staged again (drain none) */
  MPI_Offset cut = block_off(1, NBLK / 2, 0);
  CHECK(aggio_file_set_size(fh, cut) == AGGIO_SUCCESS, "set_size");
  MPI_Offset size = 0;
  aggio_file_get_size(fh, &size);
  CHECK(size == cut, "get_size after set_size: %lld, not %lld", (long long)size,
        (long long)cut);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "close");
  MPI_Barrier(MPI_COMM_WORLD);
  fh = open_staged(path, MPI_MODE_RDWR, "none", "final"); /* replays what is left, if any */
  if (fh)
    aggio_file_close(&fh);
  if (rank == 0) {
    int64_t n;
    unsigned char *b = slurp(path, &n);
    CHECK(n == cut, "after close and a new open the file is %lld bytes, not %lld: staged "
          "bytes came back past set_size", (long long)n, (long long)cut);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
      bad += b[i] != expected(i);
    CHECK(bad == 0, "atomic/set_size: %d wrong bytes", bad);
    free(b);
  }
  drained_everywhere("atomic");
}

/* A part's file and its reference file, both made anew; the reference
 * opened through the MPI library's MPI-IO. */
static MPI_File fresh_pair(const char *name, char ref[700], char path[700]) {
  snprintf(ref, 700, "%s/stage.%s.ref", dir, name);
  snprintf(path, 700, "%s/stage.%s", dir, name);
  MPI_File f;
  if (rank == 0) {
    unlink(ref);
    unlink(path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_open(MPI_COMM_WORLD, ref, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &f);
  return f;
}

static void part_size(void) {
  char ref[700], path[700];
  MPI_Offset size = block_off(1, 0, 0) + 1000; /* past round 0 */
  MPI_File f = fresh_pair("size", ref, path);
  round_write(&via_mpi, &f, 0);
  MPI_File_set_size(f, size);
  MPI_File_close(&f);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "at_close", "final");
  if (!fh)
    return;
  CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "size: round 0");
  CHECK(aggio_file_set_size(fh, size) == AGGIO_SUCCESS, "size: set_size");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    CHECK(file_size(path) == size, "size: the file is %lld bytes after set_size, not %lld",
          (long long)file_size(path), (long long)size);
  CHECK(stage_files(".index") == nprocs, "size: set_size past the staged bytes moved them "
        "(%d index files left, not %d)", stage_files(".index"), nprocs);
  MPI_Offset got = 0;
  aggio_file_get_size(fh, &got);
  CHECK(got == size, "size: get_size %lld, not %lld", (long long)got, (long long)size);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "size: close");
  same_files(path, ref, "set_size past the staged bytes");
  drained_everywhere("size");
}

static void part_order(void) {
  char ref[700], path[700];
  MPI_File f = fresh_pair("order", ref, path);
  order_calls(&via_mpi, &f, 0);
  MPI_File_close(&f);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "background", "final");
  if (!fh)
    return;
  CHECK(order_calls(&via_aggio, &fh, 1) == AGGIO_SUCCESS, "order: the writes");
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "order: close");
  same_files(path, ref, "order (fill values from rank 0, then data over them)");
  drained_everywhere("order");
}

/* The detached drainer's work, seen from rank 0: the file equals the
 * reference and the stage is gone, within 30 s. */
static void wait_for_drainer(const char *path, const char *ref) {
  int done = 0;
  if (rank == 0)
    for (int i = 0; i < 300 && !done; i++) {
      int64_t n = 0, m = 0;
      unsigned char *a = slurp(path, &n), *b = slurp(ref, &m);
      done = a && b && n == m && memcmp(a, b, (size_t)n) == 0 && stage_empty() &&
             stage_log_says_drained(stage);
      free(a);
      free(b);
      if (!done)
        usleep(100000);
    }
  MPI_Bcast(&done, 1, MPI_INT, 0, MPI_COMM_WORLD);
  CHECK(done, "detach: the drainer did not complete %s (and log it) within 30 s", path);
}

static void part_detach(void) {
  char ref[700], path[700];
  snprintf(ref, sizeof ref, "%s/stage.detach.ref", dir);
  reference(ref, 1);
  for (int found = 0; found < 2; found++) {
    snprintf(path, sizeof path, "%s/stage.detach%d", dir, found);
    if (found)
      unsetenv("AGGIO_STAGE_DRAINER"); /* the build's */
    else
      setenv("AGGIO_STAGE_DRAINER", "/nonexistent/aggio-stage-drain", 1);
    MPI_Barrier(MPI_COMM_WORLD);
    aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "detach", "final");
    if (!fh)
      return;
    CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "detach: round 0");
    CHECK(rewrite(&via_aggio, &fh) == AGGIO_SUCCESS, "detach: rewrite");
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "detach: close");
    if (!found) { /* no drainer: close wrote the stage */
      same_files(path, ref, "detach without a drainer");
      drained_everywhere("detach without a drainer");
    } else {
      wait_for_drainer(path, ref);
    }
  }
  /* delete right after close: the drainer must not bring the file back */
  snprintf(path, sizeof path, "%s/stage.detach-deleted", dir);
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "detach", "final");
  if (!fh)
    return;
  CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "detach: round 0");
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "detach: close");
  MPI_Info info = stage_info("detach", "final");
  if (rank == 0)
    CHECK(aggio_file_delete(path, info) == AGGIO_SUCCESS, "detach: delete");
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
  usleep(1000000);
  if (rank == 0)
    CHECK(file_size(path) < 0 && stage_empty(), "detach: %s came back after its delete "
          "(%lld bytes)", path, (long long)file_size(path));
}

/* The file's writes to the final file by movers, summed over the ranks. */
static int64_t behind_writes(aggio_file fh) {
  int64_t n = fh->obs.stats ? fh->obs.stats->c[AGGIO_C_BEHIND_WRITES] : -1, all = 0;
  MPI_Allreduce(&n, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

/* Round 0 and the rewrite staged with aggio_stage_merge=how on `nodes`
 * emulated nodes (drain at_close), then sync: the movers' writes to the
 * file, after checking that the file equals ref. */
static int64_t merged_round(const char *how, const char *nodes, const char *ref) {
  char path[700];
  snprintf(path, sizeof path, "%s/stage.merge.%s.%s", dir, how, nodes);
  if (rank == 0)
    unlink(path);
  MPI_Barrier(MPI_COMM_WORLD);
  merge = how, emulate_nodes = nodes;
  aggio_file fh = open_staged(path, MPI_MODE_CREATE | MPI_MODE_RDWR, "at_close", "final");
  merge = "node", emulate_nodes = "0";
  if (!fh)
    return -1;
  CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "merge %s: round 0", how);
  CHECK(rewrite(&via_aggio, &fh) == AGGIO_SUCCESS, "merge %s: rewrite", how);
  CHECK(aggio_file_sync(fh) == AGGIO_SUCCESS, "merge %s: sync", how);
  int64_t n = behind_writes(fh);
  CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "merge %s: close", how);
  same_files(path, ref, how);
  drained_everywhere(how);
  return n;
}

static void part_merge(void) {
  char ref[700];
  snprintf(ref, sizeof ref, "%s/stage.merge.ref", dir);
  reference(ref, 1);
  int64_t by_rank = merged_round("rank", "0", ref), by_node = merged_round("node", "0", ref);
  if (rank == 0)
    printf("merge: %d blocks: %lld writes to the file with merge=rank, %lld with node\n",
           NBLK * nprocs, (long long)by_rank, (long long)by_node);
  if (nprocs == 1) { /* one rank's blocks adjoin: one run either way */
    CHECK(by_rank >= 1 && by_rank <= 6 && by_node >= 1 && by_node <= 6,
          "one rank: %lld and %lld writes", (long long)by_rank, (long long)by_node);
    return;
  }
  /* each rank's blocks are apart: one write each; the node's movers join
   * all ranks' blocks into one run (three writes at most: an unaligned
   * head and tail around a direct middle), and each rank's rewrite */
  CHECK(by_rank >= NBLK * nprocs, "merge=rank: %lld writes for %d blocks",
        (long long)by_rank, NBLK * nprocs);
  CHECK(by_node >= 1 && by_node <= 3 + 3 * nprocs, "merge=node: %lld writes for %d blocks",
        (long long)by_node, NBLK * nprocs);
  if (nprocs >= 4 && nprocs % 2 == 0) { /* two emulated nodes: a run holds one node's ranks' blocks */
    int64_t two = merged_round("node", "2", ref);
    if (rank == 0)
      printf("merge: %lld writes with node on two emulated nodes\n", (long long)two);
    CHECK(two >= 2 * NBLK && two < NBLK * nprocs + nprocs,
          "merge=node, two nodes: %lld writes for %d blocks", (long long)two, NBLK * nprocs);
  }
}

static void part_groups(void) {
  if (nprocs < 2) {
    test_skip("groups: two groups of ranks need 2 ranks");
    return;
  }
  char path[700];
  snprintf(path, sizeof path, "%s/stage.groups", dir);
  if (rank == 0)
    unlink(path);
  int first = rank < nprocs / 2, writers = nprocs / 2;
  MPI_Comm group;
  MPI_Comm_split(MPI_COMM_WORLD, first ? 0 : 1, rank, &group);
  MPI_Info info = stage_info("at_close", "final");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = first ? aggio_file_open(group, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) : 0;
  CHECK(rc == AGGIO_SUCCESS, "groups: the first group's open: %d", rc);
  if (first && rc == 0)
    CHECK(round_write(&via_aggio, &fh, 0) == AGGIO_SUCCESS, "groups: round 0");
  MPI_Barrier(MPI_COMM_WORLD);
  if (!first) {
    rc = aggio_file_open(group, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    CHECK(rc == AGGIO_SUCCESS, "groups: the second group's open: %d", rc);
  }
  MPI_Info_free(&info);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(stage_files(".index") == writers, "groups: %d index files after the second group's "
        "open, not the first group's %d", stage_files(".index"), writers);
  MPI_Barrier(MPI_COMM_WORLD);
  if (first && fh)
    CHECK(round_write(&via_aggio, &fh, 1) == AGGIO_SUCCESS, "groups: round 1");
  if (fh)
    CHECK(aggio_file_close(&fh) == AGGIO_SUCCESS, "groups: close");
  MPI_Comm_free(&group);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank != 0)
    return;
  int64_t n = 0, bad = 0;
  unsigned char *f = slurp(path, &n);
  for (int round = 0; f && round < 2; round++)
    for (int r = 0; r < writers; r++)
      for (int k = 0; k < NBLK; k++)
        for (int64_t j = 0, at = block_off(round, k, r); j < BLK; j++)
          bad += at + j >= n || f[at + j] != pat(round + 1, at + j);
  CHECK(f && bad == 0, "groups: %lld bytes of the first group's two rounds are wrong or "
        "missing", (long long)bad);
  free(f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  aggio_init();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  const char *part = argc > 1 ? argv[1] : "modes";
  const char *base = getenv("AGGIO_TEST_DIR") ? getenv("AGGIO_TEST_DIR") : "/tmp";
  int pid = (int)getpid();
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(dir, sizeof dir, "%s/aggio-stage.%d", base, pid);
  snprintf(stage, sizeof stage, "%s/stage-root", dir);
  if (rank == 0)
    mkdir(dir, 0700);
  MPI_Barrier(MPI_COMM_WORLD);
  static const struct {
    const char *name;
    void (*run)(void);
  } parts[] = {{"modes", part_modes}, {"sync", part_sync},   {"fail", part_fail},
               {"atomic", part_atomic}, {"size", part_size}, {"order", part_order},
               {"detach", part_detach}, {"merge", part_merge}, {"groups", part_groups}};
  size_t p = 0;
  while (p < sizeof parts / sizeof parts[0] && strcmp(part, parts[p].name) != 0)
    p++;
  if (p < sizeof parts / sizeof parts[0])
    parts[p].run();
  else
    CHECK(0, "no part %s", part);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0, "removing %s", dir);
  }
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
