/*
 * test_shared_fp.c - the shared file pointer calls, checked against the MPI
 * library's own MPI-IO doing the same calls on a second file:
 *   - ordered writes (blocking and split), under a view with a
 *     displacement: the two files' bytes are equal, and so are the shared
 *     pointers; read_ordered gives each rank its data back;
 *   - shared writes (blocking and non-blocking) of records tagged with rank
 *     and sequence number: the order between ranks is free, so both files
 *     must hold every record exactly once, whole, with no hole or overlap
 *     (the same set of records); read_shared hands out every record once and
 *     short counts at end of file (MPI_Get_count);
 *   - seek_shared (mismatched arguments are an agreed error), set_view
 *     resetting the pointer, MPI_MODE_APPEND, MPI_MODE_SEQUENTIAL's rules
 *     (and MPI_DISPLACEMENT_CURRENT), preallocate (against
 *     MPI_File_preallocate, an injected failure agreed), get_type_extent.
 * Part "shm": the ranks on one node, the pointer in shared memory.  Part
 * "rma": aggio_emulate_nodes makes every rank its own node, so the pointer
 * lives in an RMA window on rank 0 (skipped with one rank: one rank is one
 * node).
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: shm rma
 */
#include <aggio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "internal.h"

enum { REC = 8, NREC = 6 }; /* ints per shared record, records per rank */

static int rank, nprocs, use_rma;
static char dir_path[512];

static MPI_Info part_info(void) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (use_rma) {
    char n[16];
    snprintf(n, sizeof n, "%d", nprocs);
    MPI_Info_set(info, "aggio_emulate_nodes", n);
  }
  return info;
}

static void path_of(char *out, size_t len, const char *what) {
  snprintf(out, len, "%s/shfp_%s_%s_np%d.dat", dir_path, use_rma ? "rma" : "shm", what,
           nprocs);
}

static void remove_file(const char *p) {
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    unlink(p);
  MPI_Barrier(MPI_COMM_WORLD);
}

static aggio_file open_aggio(const char *p, int amode) {
  aggio_file fh = AGGIO_FILE_NULL;
  MPI_Info info = part_info();
  int rc = aggio_file_open(MPI_COMM_WORLD, p, amode, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == AGGIO_SUCCESS, "open %s: %s", p, aggio_error_message());
  return rc == AGGIO_SUCCESS ? fh : AGGIO_FILE_NULL;
}

/* The whole file, read by the calling rank (*len bytes; free it). */
static char *slurp(const char *p, long *len) {
  FILE *f = fopen(p, "rb");
  *len = 0;
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  *len = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)*len + 1);
  if (b && fread(b, 1, (size_t)*len, f) != (size_t)*len)
    *len = -1;
  fclose(f);
  return b;
}

/* ---- the mechanism the part asks for -------------------------------------- */

static void test_mechanism(void) {
  char p[600];
  path_of(p, sizeof p, "mech");
  aggio_file fh = open_aggio(p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
  if (!fh)
    return;
  CHECK(fh->sfp.win != MPI_WIN_NULL, "no shared pointer window");
  CHECK(fh->sfp.shm == !use_rma, "pointer kept %s, expected %s",
        fh->sfp.shm ? "in shared memory" : "in an RMA window", use_rma ? "RMA" : "shm");
  MPI_Offset pos = -1;
  CHECK(aggio_file_get_position_shared(fh, &pos) == 0 && pos == 0, "start position %lld",
        (long long)pos);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
}

/* ---- ordered --------------------------------------------------------------- */

static int tag(int r, int call, int i) { return 1000000 * (r + 1) + 1000 * call + i; }

/* Three ordered writes of rank-dependent sizes under a view starting at
 * byte 12, the second as a split collective. */
static void ordered_writes_aggio(aggio_file fh, int *buf) {
  for (int call = 0; call < 3; call++) {
    int n = (rank + 1) * (call + 2);
    for (int i = 0; i < n; i++)
      buf[i] = tag(rank, call, i);
    MPI_Status st;
    int rc, got = -1;
    if (call == 1) {
      rc = aggio_file_write_ordered_begin(fh, buf, n, MPI_INT);
      CHECK(rc == 0, "write_ordered_begin: %s", aggio_error_message());
      rc = aggio_file_write_ordered_end(fh, buf, &st);
    } else {
      rc = aggio_file_write_ordered(fh, buf, n, MPI_INT, &st);
    }
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(rc == 0 && got == n, "write_ordered %d: rc %d, %d of %d ints: %s", call, rc, got,
          n, aggio_error_message());
  }
}

static void ordered_writes_mpi(MPI_File fh, int *buf) {
  for (int call = 0; call < 3; call++) {
    int n = (rank + 1) * (call + 2);
    for (int i = 0; i < n; i++)
      buf[i] = tag(rank, call, i);
    MPI_Status st;
    if (call == 1) {
      MPI_File_write_ordered_begin(fh, buf, n, MPI_INT);
      MPI_File_write_ordered_end(fh, buf, &st);
    } else {
      MPI_File_write_ordered(fh, buf, n, MPI_INT, &st);
    }
  }
}

static void test_ordered(void) {
  char pa[600], pm[600];
  path_of(pa, sizeof pa, "ord_aggio");
  path_of(pm, sizeof pm, "ord_mpi");
  int *buf = malloc(sizeof(int) * 4 * (size_t)(nprocs + 1));
  aggio_file fh = open_aggio(pa, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (!fh || !buf) {
    free(buf);
    return;
  }
  CHECK(aggio_file_set_view(fh, 12, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == 0,
        "set_view: %s", aggio_error_message());
  ordered_writes_aggio(fh, buf);
  MPI_Offset pos_a = -1, pos_m = -2;
  CHECK(aggio_file_get_position_shared(fh, &pos_a) == 0, "get_position_shared: %s",
        aggio_error_message());

  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, pm, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  MPI_File_set_view(mf, 12, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  ordered_writes_mpi(mf, buf);
  MPI_File_get_position_shared(mf, &pos_m);
  MPI_File_close(&mf);
  CHECK(pos_a == pos_m, "shared pointer after the ordered writes: aggio %lld, MPI-IO %lld",
        (long long)pos_a, (long long)pos_m);

  /* read_ordered from the start: each rank gets its first call's data */
  CHECK(aggio_file_seek_shared(fh, 0, MPI_SEEK_SET) == 0, "seek_shared: %s",
        aggio_error_message());
  int n = (rank + 1) * 2, *back = calloc((size_t)n, sizeof(int)), got = -1, bad = 0;
  MPI_Status st;
  CHECK(back && aggio_file_read_ordered(fh, back, n, MPI_INT, &st) == 0, "read_ordered: %s",
        aggio_error_message());
  MPI_Get_count(&st, MPI_INT, &got);
  for (int i = 0; back && i < n; i++)
    bad += back[i] != tag(rank, 0, i);
  CHECK(got == n && bad == 0, "read_ordered: %d of %d ints, %d wrong", got, n, bad);
  /* the split form of the read, continuing from there */
  n = (rank + 1) * 3;
  int *back2 = calloc((size_t)n, sizeof(int));
  CHECK(back2 && aggio_file_read_ordered_begin(fh, back2, n, MPI_INT) == 0 &&
            aggio_file_read_ordered_end(fh, back2, &st) == 0,
        "read_ordered_begin/end: %s", aggio_error_message());
  bad = 0;
  for (int i = 0; back2 && i < n; i++)
    bad += back2[i] != tag(rank, 1, i);
  CHECK(bad == 0, "read_ordered_begin/end: %d wrong", bad);
  free(back);
  free(back2);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());

  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    long la, lm;
    char *a = slurp(pa, &la), *m = slurp(pm, &lm);
    CHECK(a && m && la == lm && la > 12 && memcmp(a, m, (size_t)la) == 0,
          "ordered files differ: aggio %ld bytes, MPI-IO %ld bytes", la, lm);
    free(a);
    free(m);
  }
  free(buf);
  remove_file(pa);
  remove_file(pm);
}

/* ---- shared ---------------------------------------------------------------- */

static void fill_record(int *r, int writer, int seq) {
  r[0] = writer;
  r[1] = seq;
  for (int i = 2; i < REC; i++)
    r[i] = writer * 7919 + seq * 104729 + i;
}

/* Records 0, 2, 4 by write_shared, the others by iwrite_shared. */
static void shared_writes_aggio(aggio_file fh) {
  int rec[NREC][REC];
  aggio_request req[NREC];
  int nreq = 0;
  for (int s = 0; s < NREC; s++) {
    fill_record(rec[s], rank, s);
    int rc;
    if (s % 2 == 0) {
      MPI_Status st;
      int got = -1;
      rc = aggio_file_write_shared(fh, rec[s], REC, MPI_INT, &st);
      MPI_Get_count(&st, MPI_INT, &got);
      CHECK(got == REC, "write_shared wrote %d ints", got);
    } else {
      rc = aggio_file_iwrite_shared(fh, rec[s], REC, MPI_INT, &req[nreq++]);
    }
    CHECK(rc == 0, "write_shared %d: %s", s, aggio_error_message());
  }
  MPI_Status st[NREC];
  CHECK(aggio_waitall(nreq, req, st) == 0, "waitall: %s", aggio_error_message());
  for (int i = 0; i < nreq; i++) {
    int got = -1;
    MPI_Get_count(&st[i], MPI_INT, &got);
    CHECK(got == REC, "iwrite_shared wrote %d ints", got);
  }
}

static void shared_writes_mpi(MPI_File fh) {
  int rec[NREC][REC];
  for (int s = 0; s < NREC; s++) {
    fill_record(rec[s], rank, s);
    MPI_File_write_shared(fh, rec[s], REC, MPI_INT, MPI_STATUS_IGNORE);
  }
}

static int cmp_rec(const void *a, const void *b) {
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] > y[0]) - (x[0] < y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* Every rank's every record exactly once and whole, nothing else: the
 * file is the records back to back (no hole, no overlap).  Sorts the file
 * image in place. */
static int check_records(char *img, long len, const char *who) {
  long want = (long)nprocs * NREC * REC * (long)sizeof(int);
  CHECK(len == want, "%s: file has %ld bytes, expected %ld", who, len, want);
  if (len != want)
    return 0;
  int nrec = nprocs * NREC, bad = 0;
  qsort(img, (size_t)nrec, REC * sizeof(int), cmp_rec);
  for (int k = 0; k < nrec; k++) {
    int expect[REC];
    fill_record(expect, k / NREC, k % NREC);
    bad += memcmp(img + (size_t)k * REC * sizeof(int), expect, sizeof expect) != 0;
  }
  CHECK(bad == 0, "%s: %d of %d records missing, torn or doubled", who, bad, nrec);
  return bad == 0;
}

static void test_read_shared(aggio_file fh) {
  CHECK(aggio_file_seek_shared(fh, 0, MPI_SEEK_SET) == 0, "seek_shared: %s",
        aggio_error_message());
  /* every rank reads records until end of file: each one exactly once */
  int seen[64 * NREC] = {0}, mine = 0, rec[REC], torn = 0;
  for (;;) {
    MPI_Status st;
    int got = -1;
    int rc = aggio_file_read_shared(fh, rec, REC, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(rc == 0 && (got == REC || got == 0), "read_shared: rc %d, %d ints: %s", rc, got,
          aggio_error_message());
    if (rc != 0 || got != REC)
      break;
    int expect[REC];
    fill_record(expect, rec[0], rec[1]);
    if (rec[0] < 0 || rec[0] >= nprocs || rec[1] < 0 || rec[1] >= NREC ||
        memcmp(rec, expect, sizeof rec) != 0) {
      torn++;
      continue;
    }
    seen[rec[0] * NREC + rec[1]]++;
    mine++;
  }
  int all[64 * NREC];
  MPI_Allreduce(seen, all, nprocs * NREC, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  int wrong = 0;
  for (int k = 0; k < nprocs * NREC; k++)
    wrong += all[k] != 1;
  CHECK(torn == 0 && wrong == 0, "read_shared: %d torn records, %d not read exactly once",
        torn, wrong);
  /* a short count: 2 ints before end of file, rank 0 asks for 4 */
  MPI_Offset total = (MPI_Offset)nprocs * NREC * REC;
  CHECK(aggio_file_seek_shared(fh, total - 2, MPI_SEEK_SET) == 0, "seek_shared: %s",
        aggio_error_message());
  if (rank == 0) {
    MPI_Status st;
    int got = -1;
    CHECK(aggio_file_read_shared(fh, rec, 4, MPI_INT, &st) == 0, "read_shared at end: %s",
          aggio_error_message());
    MPI_Get_count(&st, MPI_INT, &got);
    CHECK(got == 2, "read_shared 2 ints before end of file got %d", got);
    MPI_Offset pos = -1;
    aggio_file_get_position_shared(fh, &pos);
    CHECK(pos == total + 2, "the pointer moves by the request (%lld, expected %lld)",
          (long long)pos, (long long)(total + 2));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  /* seek_shared from the end and from the current position */
  CHECK(aggio_file_seek_shared(fh, -REC, MPI_SEEK_END) == 0, "seek_shared END: %s",
        aggio_error_message());
  MPI_Offset pos = -1;
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == total - REC, "seek_shared(-%d, END) at %lld", REC, (long long)pos);
  CHECK(aggio_file_seek_shared(fh, -1, MPI_SEEK_CUR) == 0, "seek_shared CUR: %s",
        aggio_error_message());
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == total - REC - 1, "seek_shared(-1, CUR) at %lld", (long long)pos);
}

static void test_shared(void) {
  char pa[600], pm[600];
  path_of(pa, sizeof pa, "sh_aggio");
  path_of(pm, sizeof pm, "sh_mpi");
  aggio_file fh = open_aggio(pa, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (!fh)
    return;
  CHECK(aggio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == 0,
        "set_view: %s", aggio_error_message());
  shared_writes_aggio(fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos = -1;
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == (MPI_Offset)nprocs * NREC * REC, "pointer after the shared writes: %lld",
        (long long)pos);
  test_read_shared(fh);
  /* set_view resets the shared pointer (MPI 3.1 section 13.3) */
  CHECK(aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL) == 0,
        "set_view: %s", aggio_error_message());
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == 0, "pointer after set_view: %lld", (long long)pos);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());

  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, pm, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  MPI_File_set_view(mf, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  shared_writes_mpi(mf);
  MPI_File_close(&mf);
  if (rank == 0) {
    long la, lm;
    char *a = slurp(pa, &la), *m = slurp(pm, &lm);
    /* the order is free: both files hold the same set of records */
    int ok = a && m && check_records(a, la, "aggio") && check_records(m, lm, "MPI-IO");
    CHECK(ok && memcmp(a, m, (size_t)la) == 0, "the sorted records differ from MPI-IO's");
    free(a);
    free(m);
  }
  /* MPI_MODE_APPEND: the shared pointer starts at the end */
  fh = open_aggio(pa, MPI_MODE_WRONLY | MPI_MODE_APPEND);
  if (fh) {
    aggio_file_get_position_shared(fh, &pos);
    CHECK(pos == (MPI_Offset)nprocs * NREC * REC * (MPI_Offset)sizeof(int),
          "MPI_MODE_APPEND: shared pointer at %lld", (long long)pos);
    aggio_file_close(&fh);
  }
  remove_file(pa);
  remove_file(pm);
}

/* ---- errors and the other calls ------------------------------------------- */

static void test_seek_errors(void) {
  char p[600];
  path_of(p, sizeof p, "seekerr");
  aggio_file fh = open_aggio(p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
  if (!fh)
    return;
  int rc = aggio_file_seek_shared(fh, 5, 12345);
  CHECK(rc == AGGIO_ERR_ARG, "bad whence: rc %d", rc);
  rc = aggio_file_seek_shared(fh, -1, MPI_SEEK_SET);
  CHECK(rc == AGGIO_ERR_OFFSET, "negative seek_shared: rc %d", rc);
  if (nprocs > 1) {
    rc = aggio_file_seek_shared(fh, rank == nprocs - 1 ? 7 : 3, MPI_SEEK_SET);
    CHECK(rc == AGGIO_ERR_NOT_SAME, "mismatched offsets: rc %d (%s)", rc, aggio_error_message());
    rc = aggio_file_seek_shared(fh, 0, rank == 0 ? MPI_SEEK_SET : MPI_SEEK_CUR);
    CHECK(rc == AGGIO_ERR_NOT_SAME, "mismatched whence: rc %d", rc);
  }
  MPI_Offset pos = -1;
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == 0, "a failed seek_shared moved the pointer to %lld", (long long)pos);
  /* a wrong datatype on one rank: the ordered write fails everywhere and
   * the pointer stays */
  MPI_Datatype three;
  MPI_Type_contiguous(3, MPI_BYTE, &three);
  MPI_Type_commit(&three);
  int data[4] = {1, 2, 3, 4};
  CHECK(aggio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == 0,
        "set_view: %s", aggio_error_message());
  rc = aggio_file_write_ordered(fh, data, 1, rank == nprocs - 1 ? three : MPI_INT,
                                MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_ERR_TYPE, "write_ordered with a 3-byte type on one rank: rc %d", rc);
  rc = aggio_file_write_shared(fh, data, 1, three, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_ERR_TYPE, "write_shared with a 3-byte type: rc %d", rc);
  MPI_Type_free(&three);
  MPI_Barrier(MPI_COMM_WORLD);
  aggio_file_get_position_shared(fh, &pos);
  CHECK(pos == 0, "failed calls moved the pointer to %lld", (long long)pos);
  aggio_file_close(&fh);
}

static void test_sequential(void) {
  char p[600];
  path_of(p, sizeof p, "seq");
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, p,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == AGGIO_ERR_AMODE, "RDWR with SEQUENTIAL: rc %d", rc);
  fh = open_aggio(p, MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL);
  if (!fh)
    return;
  int data[4] = {rank, rank, rank, rank};
  CHECK(aggio_file_write_at(fh, 0, data, 4, MPI_INT, MPI_STATUS_IGNORE) ==
            AGGIO_ERR_UNSUPPORTED, "write_at allowed on a sequential file");
  CHECK(aggio_file_write(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE) == AGGIO_ERR_UNSUPPORTED,
        "write allowed on a sequential file");
  CHECK(aggio_file_write_at_all(fh, 0, data, 4, MPI_INT, MPI_STATUS_IGNORE) ==
            AGGIO_ERR_UNSUPPORTED, "write_at_all allowed on a sequential file");
  CHECK(aggio_file_seek(fh, 0, MPI_SEEK_SET) == AGGIO_ERR_UNSUPPORTED, "seek allowed");
  CHECK(aggio_file_seek_shared(fh, 0, MPI_SEEK_SET) == AGGIO_ERR_UNSUPPORTED,
        "seek_shared allowed");
  CHECK(aggio_file_preallocate(fh, 4096) == AGGIO_ERR_UNSUPPORTED, "preallocate allowed");
  rc = aggio_file_write_ordered(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == 0, "write_ordered on a sequential file: %s", aggio_error_message());
  /* MPI_DISPLACEMENT_CURRENT: the new view starts where the pointer is */
  rc = aggio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native",
                           MPI_INFO_NULL);
  CHECK(rc == 0, "set_view MPI_DISPLACEMENT_CURRENT: %s", aggio_error_message());
  MPI_Offset disp = -1;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING];
  aggio_file_get_view(fh, &disp, &et, &ft, rep);
  CHECK(disp == (MPI_Offset)nprocs * 4 * (MPI_Offset)sizeof(int),
        "MPI_DISPLACEMENT_CURRENT gave %lld", (long long)disp);
  rc = aggio_file_write_shared(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == 0, "write_shared on a sequential file: %s", aggio_error_message());
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
  struct stat stb;
  if (rank == 0)
    CHECK(stat(p, &stb) == 0 && stb.st_size == (off_t)nprocs * 8 * (off_t)sizeof(int),
          "sequential file has %lld bytes", (long long)stb.st_size);
  /* without MPI_MODE_SEQUENTIAL, MPI_DISPLACEMENT_CURRENT is an error */
  fh = open_aggio(p, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
  if (fh) {
    rc = aggio_file_set_view(fh, MPI_DISPLACEMENT_CURRENT, MPI_INT, MPI_INT, "native",
                             MPI_INFO_NULL);
    CHECK(rc == AGGIO_ERR_OFFSET, "MPI_DISPLACEMENT_CURRENT on a plain file: rc %d", rc);
    aggio_file_close(&fh);
  }
}

static void test_preallocate(void) {
  char pa[600], pm[600];
  path_of(pa, sizeof pa, "pre_aggio");
  path_of(pm, sizeof pm, "pre_mpi");
  aggio_file fh = open_aggio(pa, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (!fh)
    return;
  MPI_Offset sa = -1, sm = -2;
  CHECK(aggio_file_preallocate(fh, 100000) == 0, "preallocate: %s", aggio_error_message());
  CHECK(aggio_file_preallocate(fh, 1000) == 0, "smaller preallocate: %s",
        aggio_error_message());
  aggio_file_get_size(fh, &sa);
  if (nprocs > 1) {
    int rc = aggio_file_preallocate(fh, rank == 0 ? 5 : 6);
    CHECK(rc == AGGIO_ERR_NOT_SAME, "mismatched preallocate sizes: rc %d", rc);
  }
  CHECK(aggio_file_preallocate(fh, -1) == AGGIO_ERR_OFFSET, "negative preallocate");
  aggio_file_close(&fh);
  MPI_File mf;
  MPI_File_open(MPI_COMM_WORLD, pm, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &mf);
  MPI_File_preallocate(mf, 100000);
  MPI_File_preallocate(mf, 1000);
  MPI_File_get_size(mf, &sm);
  MPI_File_close(&mf);
  CHECK(sa == 100000 && sa == sm, "size after preallocate: aggio %lld, MPI-IO %lld",
        (long long)sa, (long long)sm);
  /* an injected failure on rank 0 is every rank's error */
  setenv("AGGIO_FAULTS", "preallocate@0#1=ENOSPC", 1);
  fh = open_aggio(pa, MPI_MODE_RDWR);
  unsetenv("AGGIO_FAULTS");
  if (fh) {
    int rc = aggio_file_preallocate(fh, 200000);
    CHECK(rc != 0 && test_same_everywhere(rc), "injected preallocate failure: rc %d", rc);
    CHECK(aggio_file_preallocate(fh, 200000) == 0, "preallocate after the failure: %s",
          aggio_error_message());
    aggio_file_close(&fh);
  }
  remove_file(pa);
  remove_file(pm);
}

/* A rank that cannot set up the pointer's window: the open still works on
 * every rank, other calls too, and the shared-pointer calls fail on every
 * rank with AGGIO_ERR_UNSUPPORTED (the windows made are freed: close and
 * the next open work). */
static void test_window_failure(void) {
  char p[600], spec[64];
  path_of(p, sizeof p, "winfail");
  snprintf(spec, sizeof spec, "window@%d#1=ENOMEM", nprocs - 1);
  setenv("AGGIO_FAULTS", spec, 1);
  aggio_file fh = AGGIO_FILE_NULL;
  MPI_Info info = part_info();
  int rc = aggio_file_open(MPI_COMM_WORLD, p,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  unsetenv("AGGIO_FAULTS");
  CHECK(rc == 0, "open with a failing window: %s", aggio_error_message());
  if (rc == 0) {
    int data[2] = {rank, rank};
    CHECK(aggio_file_write_at_all(fh, 2 * rank, data, 2, MPI_INT, MPI_STATUS_IGNORE) == 0,
          "write_at_all without a shared pointer: %s", aggio_error_message());
    rc = aggio_file_write_shared(fh, data, 2, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_ERR_UNSUPPORTED, "write_shared without a pointer: rc %d", rc);
    rc = aggio_file_write_ordered(fh, data, 2, MPI_INT, MPI_STATUS_IGNORE);
    CHECK(rc == AGGIO_ERR_UNSUPPORTED, "write_ordered without a pointer: rc %d", rc);
    rc = aggio_file_seek_shared(fh, 0, MPI_SEEK_SET);
    CHECK(rc == AGGIO_ERR_UNSUPPORTED, "seek_shared without a pointer: rc %d", rc);
    CHECK(aggio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == 0,
          "set_view without a shared pointer: %s", aggio_error_message());
    CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
  }
  rc = aggio_file_open(MPI_COMM_WORLD, p,
                       MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open after the failure: %s", aggio_error_message());
  if (rc == 0)
    aggio_file_close(&fh);
}

/* aggio_shared_fp=disable: no window is made at open; the shared-pointer
 * calls fail on every rank with AGGIO_ERR_UNSUPPORTED naming the hint,
 * and everything else works. */
static void test_disabled(void) {
  char p[600];
  path_of(p, sizeof p, "nofp");
  aggio_file fh = AGGIO_FILE_NULL;
  MPI_Info info = part_info();
  MPI_Info_set(info, "aggio_shared_fp", "disable");
  int rc = aggio_file_open(MPI_COMM_WORLD, p,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open with aggio_shared_fp=disable: %s", aggio_error_message());
  if (rc != 0)
    return;
  int data[2] = {rank, rank}, got[2] = {-1, -1};
  MPI_Offset at = (MPI_Offset)sizeof data * rank;
  CHECK(aggio_file_write_at_all(fh, at, data, 2, MPI_INT, MPI_STATUS_IGNORE) == 0,
        "write_at_all without a shared pointer: %s", aggio_error_message());
  rc = aggio_file_write_shared(fh, data, 2, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_ERR_UNSUPPORTED, "write_shared with the pointer disabled: rc %d", rc);
  CHECK(strstr(aggio_error_message(), "aggio_shared_fp=disable") != NULL,
        "the error names the hint: \"%s\"", aggio_error_message());
  rc = aggio_file_read_ordered(fh, got, 2, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc == AGGIO_ERR_UNSUPPORTED, "read_ordered with the pointer disabled: rc %d", rc);
  CHECK(aggio_file_read_at_all(fh, at, got, 2, MPI_INT, MPI_STATUS_IGNORE) == 0 &&
            got[0] == rank && got[1] == rank,
        "read_at_all back: %d %d (%s)", got[0], got[1], aggio_error_message());
  MPI_Info used = MPI_INFO_NULL;
  char v[64] = "";
  int flag = 0;
  if (aggio_file_get_info(fh, &used) == 0) {
    MPI_Info_get(used, "aggio_shared_fp", sizeof v - 1, v, &flag);
    MPI_Info_free(&used);
  }
  CHECK(flag && strcmp(v, "disable") == 0, "get_info: aggio_shared_fp=\"%s\"", v);
  CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
}

static void test_type_extent(void) {
  char p[600];
  path_of(p, sizeof p, "ext");
  aggio_file fh = open_aggio(p, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE);
  if (!fh)
    return;
  MPI_Datatype v;
  MPI_Type_vector(3, 2, 5, MPI_DOUBLE, &v);
  MPI_Type_commit(&v);
  MPI_Aint ea = -1, em = -2;
  CHECK(aggio_file_get_type_extent(fh, v, &ea) == 0, "get_type_extent: %s",
        aggio_error_message());
  MPI_File mf;
  char pm[600];
  path_of(pm, sizeof pm, "ext_mpi");
  MPI_File_open(MPI_COMM_WORLD, pm, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                MPI_INFO_NULL, &mf);
  MPI_File_get_type_extent(mf, v, &em);
  MPI_File_close(&mf);
  CHECK(ea == em && ea == 12 * (MPI_Aint)sizeof(double), "extent: aggio %ld, MPI-IO %ld",
        (long)ea, (long)em);
  CHECK(aggio_file_get_type_extent(fh, v, NULL) == AGGIO_ERR_ARG, "NULL extent accepted");
  MPI_Type_free(&v);
  aggio_file_close(&fh);
}

/* The trace holds the new calls under their own codes (docs/trace-format.md):
 * read back by rank 0 from the header's records_offset and total_records
 * (little-endian hosts only, which is what this test runs on). */
static void test_trace_codes(void) {
  char p[600], tp[640];
  path_of(p, sizeof p, "trc");
  snprintf(tp, sizeof tp, "%s.trace", p);
  MPI_Info info = part_info();
  MPI_Info_set(info, "aggio_trace", tp);
  aggio_file fh = AGGIO_FILE_NULL;
  int rc = aggio_file_open(MPI_COMM_WORLD, p,
                           MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open with a trace: %s", aggio_error_message());
  if (rc != 0)
    return;
  int data[4] = {rank, rank, rank, rank};
  aggio_request req;
  aggio_file_write_shared(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  aggio_file_iwrite_shared(fh, data, 4, MPI_INT, &req);
  aggio_wait(&req, MPI_STATUS_IGNORE);
  aggio_file_write_ordered(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  aggio_file_seek_shared(fh, 0, MPI_SEEK_SET);
  aggio_file_read_shared(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  aggio_file_read_ordered(fh, data, 4, MPI_INT, MPI_STATUS_IGNORE);
  aggio_file_preallocate(fh, 65536);
  CHECK(aggio_file_close(&fh) == 0, "close with a trace: %s", aggio_error_message());
  if (rank == 0) {
    long len;
    char *t = slurp(tp, &len);
    int count[64] = {0};
    if (t && len >= 64) {
      uint64_t total, off;
      memcpy(&total, t + 24, 8);
      memcpy(&off, t + 48, 8);
      for (uint64_t i = 0; off + 48 * (i + 1) <= (uint64_t)len && i < total; i++) {
        uint16_t op;
        memcpy(&op, t + off + 48 * i + 40, 2);
        count[op < 64 ? op : 0]++;
      }
    }
    /* write_shared 15, read_shared 16, iwrite_shared 17, write_ordered 19,
     * read_ordered 20, seek_shared 21, preallocate 22, fallocate 38 */
    CHECK(count[15] == nprocs && count[16] == nprocs && count[17] == nprocs &&
              count[19] == nprocs && count[20] == nprocs && count[21] == nprocs &&
              count[22] == nprocs && count[38] == 1,
          "trace op counts: %d %d %d %d %d %d %d %d", count[15], count[16], count[17],
          count[19], count[20], count[21], count[22], count[38]);
    free(t);
    unlink(tp);
  }
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  const char *part = argc > 1 ? argv[1] : "shm";
  use_rma = strcmp(part, "rma") == 0;
  snprintf(dir_path, sizeof dir_path, "%s", test_dir());
  if (use_rma && nprocs == 1) {
    if (rank == 0)
      test_skip("part rma needs 2 ranks or more (one rank is always one node)");
  } else if (nprocs > 64) {
    if (rank == 0)
      test_skip("at most 64 ranks");
  } else {
    test_mechanism();
    test_ordered();
    test_shared();
    test_seek_errors();
    test_sequential();
    test_preallocate();
    test_type_extent();
    test_trace_codes();
    test_window_failure();
    test_disabled();
  }
  char last[600];
  path_of(last, sizeof last, "seq");
  return test_finish_mpi(last);
}
