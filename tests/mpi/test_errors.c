/*
 * test_errors.c - every error the API promises, checked on every rank: bad
 * arguments on all ranks and on one rank only (every rank must then fail
 * with that rank's code, none may hang, the bad rank's message says what
 * happened), access modes, missing and existing files, permissions, hints,
 * datatypes, short reads at end of file and a full file system in the
 * middle of a collective write.  After each error the file must still work.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: core permission enospc
 *
 * The argument names the part to run (all of them without one).  The
 * root-only parts (an immutable file for "permission denied", a 1 MiB tmpfs
 * for ENOSPC) are separate tests so that when they cannot run they show as
 * skipped, with the reason, while the core still counts as passed.
 * AGGIO_TEST_TIMEOUT (seconds, default 150) turns a hang into a failure.
 */
#include <aggio.h>

#include "harness.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

struct ectx {
  int rank, np, last; /* last: the rank that passes the bad argument */
  char dir[512];      /* per-run scratch directory */
  char path[600];     /* a file in it */
};

/* The test being run, for the hang report, and the paths made immutable
 * for the permission test, which a crash must not leave behind (nobody could
 * delete the build directory).  Test-only globals. */
static const char *volatile current_test = "start";
static char immutable_paths[2][700];
static char mounted_path[600]; /* the small tmpfs of the ENOSPC test */

static int set_immutable(const char *path, int on);

static void clear_immutable(void) {
  for (int i = 0; i < 2; i++)
    if (immutable_paths[i][0]) {
      set_immutable(immutable_paths[i], 0);
      immutable_paths[i][0] = 0;
    }
}

static void on_signal(int sig) {
  clear_immutable();
  if (mounted_path[0])
    umount2(mounted_path, MNT_DETACH);
  if (sig == SIGALRM) {
    static const char m[] = "test_errors: TIMEOUT (a collective call hung?) in: ";
    if (write(2, m, sizeof m - 1) < 0 || write(2, current_test, strlen(current_test)) < 0 ||
        write(2, "\n", 1) < 0)
      _exit(4);
    _exit(4);
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

static void begin(struct ectx *c, const char *name) {
  current_test = name;
  MPI_Barrier(MPI_COMM_WORLD);
  (void)c;
}

/* A collective call that must fail on every rank with `want` (the failing
 * rank's code, as aggio.h promises); every rank has a message, and when
 * bad_rank >= 0 it names that rank. */
static void expect_all(struct ectx *c, const char *what, int rc, int want, int bad_rank) {
  const char *msg = aggio_error_message();
  CHECK(rc == want, "%s: rank %d returned %d (%s), expected %d (%s); message \"%s\"", what,
        c->rank, rc, aggio_strerror(rc), want, aggio_strerror(want), msg ? msg : "(null)");
  CHECK(msg && *msg, "%s: rank %d has no error message", what, c->rank);
  if (bad_rank >= 0 && msg && rc != 0) {
    char tag[32];
    snprintf(tag, sizeof tag, "rank %d", bad_rank);
    CHECK(strstr(msg, tag) != NULL, "%s: rank %d: message does not name the failing "
          "rank %d: \"%s\"", what, c->rank, bad_rank, msg);
  }
}

/* Same, when two codes are acceptable. */
static void expect_either(struct ectx *c, const char *what, int rc, int want1, int want2) {
  const char *msg = aggio_error_message();
  CHECK(rc == want1 || rc == want2, "%s: rank %d returned %d (%s), expected %s or %s; "
        "message \"%s\"", what, c->rank, rc, aggio_strerror(rc), aggio_strerror(want1),
        aggio_strerror(want2), msg ? msg : "(null)");
  CHECK(msg && *msg, "%s: rank %d has no error message", what, c->rank);
}

/* A call that must succeed. */
static int expect_ok(struct ectx *c, const char *what, int rc) {
  CHECK(rc == 0, "%s: rank %d returned %d (%s): %s", what, c->rank, rc, aggio_strerror(rc),
        aggio_error_message());
  return rc;
}

/* Every rank's rc must be an error (any code), the same everywhere. */
static void expect_agreed_error(struct ectx *c, const char *what, int rc) {
  int lo, hi;
  MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&rc, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(rc < 0, "%s: rank %d returned %d, expected an error: %s", what, c->rank, rc,
        aggio_error_message());
  CHECK(lo == hi, "%s: ranks disagree (codes %d..%d)", what, lo, hi);
}

static MPI_Info info_of(const char *k1, const char *v1, const char *k2, const char *v2) {
  MPI_Info info;
  MPI_Info_create(&info);
  if (k1)
    MPI_Info_set(info, k1, v1);
  if (k2)
    MPI_Info_set(info, k2, v2);
  return info;
}

static int open_file(struct ectx *c, const char *path, int amode, const char *strategy,
                     aggio_file *fh) {
  MPI_Info info = info_of("aggio_strategy", strategy, "cb_buffer_size", "4096");
  int rc = aggio_file_open(MPI_COMM_WORLD, path, amode, info, fh);
  MPI_Info_free(&info);
  (void)c;
  return rc;
}

static unsigned char pat(int rank, int64_t i, int salt) {
  return (unsigned char)((i * 31 + rank * 7 + salt * 13) ^ (i >> 8));
}

/* The file still works: every rank writes 3000 bytes (rank order) with a
 * collective call, reads them back collectively and compares. */
static void still_usable(struct ectx *c, aggio_file fh, const char *after, int salt) {
  enum { N = 3000 };
  unsigned char w[N], r[N];
  char what[160];
  for (int i = 0; i < N; i++)
    w[i] = pat(c->rank, i, salt);
  snprintf(what, sizeof what, "good write_at_all after %s", after);
  int rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  expect_ok(c, "set_view(bytes)", rc);
  rc = aggio_file_write_at_all(fh, (MPI_Offset)c->rank * N, w, N, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_ok(c, what, rc);
  memset(r, 0, sizeof r);
  snprintf(what, sizeof what, "good read_at_all after %s", after);
  rc = aggio_file_read_at_all(fh, (MPI_Offset)c->rank * N, r, N, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_ok(c, what, rc);
  CHECK(rc != 0 || memcmp(w, r, N) == 0, "after %s: rank %d read back other data", after,
        c->rank);
}

/* ---- arguments -------------------------------------------------------------- */

static void t_open_args(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  int rc;
  begin(c, "open: NULL file name");
  rc = aggio_file_open(MPI_COMM_WORLD, NULL, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
  expect_either(c, "open(NULL name)", rc, AGGIO_ERR_NAME, AGGIO_ERR_ARG);
  CHECK(fh == AGGIO_FILE_NULL, "open(NULL name) set a handle");

  begin(c, "open: empty file name");
  rc = aggio_file_open(MPI_COMM_WORLD, "", MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL, &fh);
  expect_either(c, "open(\"\")", rc, AGGIO_ERR_NAME, AGGIO_ERR_ARG);

  begin(c, "open: NULL handle pointer");
  rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       NULL);
  expect_all(c, "open(fh=NULL)", rc, AGGIO_ERR_ARG, -1);

  begin(c, "open: NULL handle pointer on one rank");
  rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       c->rank == c->last ? NULL : &fh);
  expect_all(c, "open(fh=NULL on one rank)", rc, AGGIO_ERR_ARG, c->last);
  CHECK(fh == AGGIO_FILE_NULL, "rank %d: failed open left a handle", c->rank);

  begin(c, "open: MPI_COMM_NULL");
  rc = aggio_file_open(MPI_COMM_NULL, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
  expect_all(c, "open(MPI_COMM_NULL)", rc, AGGIO_ERR_ARG, -1);
}

static void t_amode(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  static const struct {
    int amode;
    const char *name;
  } bad[] = {
      {MPI_MODE_RDONLY | MPI_MODE_WRONLY, "RDONLY|WRONLY"},
      {MPI_MODE_RDONLY | MPI_MODE_RDWR, "RDONLY|RDWR"},
      {MPI_MODE_WRONLY | MPI_MODE_RDWR | MPI_MODE_CREATE, "WRONLY|RDWR|CREATE"},
      {0, "no access mode"},
      {MPI_MODE_CREATE, "CREATE alone"},
      {MPI_MODE_RDONLY | MPI_MODE_CREATE, "RDONLY|CREATE"},
      {MPI_MODE_RDONLY | MPI_MODE_EXCL, "RDONLY|EXCL"},
      {MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, "RDWR|SEQUENTIAL"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char what[96];
    snprintf(what, sizeof what, "open amode %s", bad[i].name);
    begin(c, what);
    int rc = aggio_file_open(MPI_COMM_WORLD, c->path, bad[i].amode, MPI_INFO_NULL, &fh);
    expect_all(c, what, rc, AGGIO_ERR_AMODE, -1);
    CHECK(fh == AGGIO_FILE_NULL, "%s left a handle", what);
  }

  /* amode must be the same on every rank */
  if (c->np > 1) {
    begin(c, "open: amode differs on one rank");
    int rc = aggio_file_open(MPI_COMM_WORLD, c->path,
                             c->rank == c->last ? MPI_MODE_RDONLY
                                                : MPI_MODE_RDWR | MPI_MODE_CREATE,
                             MPI_INFO_NULL, &fh);
    expect_agreed_error(c, "open with amode differing on one rank", rc);
    if (rc == 0)
      aggio_file_close(&fh);
  }
}

static void t_existence(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  char missing[700], nodir[700];
  int rc;
  snprintf(missing, sizeof missing, "%s/does-not-exist", c->dir);
  snprintf(nodir, sizeof nodir, "%s/no-such-dir/file", c->dir);

  begin(c, "open: missing file without CREATE");
  rc = aggio_file_open(MPI_COMM_WORLD, missing, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  expect_all(c, "open(missing, RDWR)", rc, AGGIO_ERR_NO_SUCH_FILE, -1);
  rc = aggio_file_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  expect_all(c, "open(missing, RDONLY)", rc, AGGIO_ERR_NO_SUCH_FILE, -1);
  struct stat sb;
  CHECK(stat(missing, &sb) != 0, "open without CREATE created %s", missing);

  begin(c, "open: CREATE in a missing directory");
  rc = aggio_file_open(MPI_COMM_WORLD, nodir, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
  expect_all(c, "open(CREATE under missing directory)", rc, AGGIO_ERR_NO_SUCH_FILE, -1);

  begin(c, "open: EXCL on an existing file");
  if (c->rank == 0) {
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && close(fd) == 0, "cannot create %s", c->path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL,
                       MPI_INFO_NULL, &fh);
  expect_all(c, "open(EXCL, existing)", rc, AGGIO_ERR_FILE_EXISTS, -1);

  begin(c, "open: EXCL on a new file");
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank == 0)
    unlink(c->path);
  MPI_Barrier(MPI_COMM_WORLD);
  rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE | MPI_MODE_EXCL,
                       MPI_INFO_NULL, &fh);
  if (expect_ok(c, "open(EXCL, new file)", rc) == 0) {
    still_usable(c, fh, "open with EXCL", 1);
    expect_ok(c, "close", aggio_file_close(&fh));
  }

  begin(c, "open: a directory");
  rc = aggio_file_open(MPI_COMM_WORLD, c->dir, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  expect_agreed_error(c, "open(a directory)", rc);
  if (rc == 0)
    aggio_file_close(&fh);

  begin(c, "open: a path under a regular file");
  snprintf(nodir, sizeof nodir, "%s/x", c->path);
  rc = aggio_file_open(MPI_COMM_WORLD, nodir, MPI_MODE_RDWR | MPI_MODE_CREATE, MPI_INFO_NULL,
                       &fh);
  expect_agreed_error(c, "open(file/x)", rc);
  if (rc == 0)
    aggio_file_close(&fh);

  begin(c, "delete: missing file");
  if (c->rank == 0) {
    rc = aggio_file_delete(missing, MPI_INFO_NULL);
    expect_all(c, "delete(missing)", rc, AGGIO_ERR_NO_SUCH_FILE, -1);
  }
}

/* Sets FS_IMMUTABLE_FL on path (on = 1) or clears it; -1 with errno. */
static int set_immutable(const char *path, int on) {
  int fd = open(path, O_RDONLY | O_NONBLOCK), flags = 0, rc = -1;
  if (fd < 0)
    return -1;
  if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
    flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
    rc = ioctl(fd, FS_IOC_SETFLAGS, &flags);
  }
  int err = errno;
  close(fd);
  errno = err;
  return rc;
}

static void t_permission(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  char file[700], subdir[700], inside[800];
  char why[2048] = "";
  int ok = 1, immutable = 0, rc;
  snprintf(file, sizeof file, "%s/perm-file", c->dir);
  snprintf(subdir, sizeof subdir, "%s/perm-dir", c->dir);
  snprintf(inside, sizeof inside, "%s/new-file", subdir);
  begin(c, "permission denied");
  /* Root ignores mode bits, but not the immutable attribute (EPERM). */
  if (c->rank == 0) {
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "0123456789", 10) != 10 || close(fd) != 0 ||
        mkdir(subdir, 0755) != 0) {
      ok = 0;
      snprintf(why, sizeof why, "cannot create %s: %s", file, strerror(errno));
    } else if (geteuid() == 0) {
      immutable = 1;
      snprintf(immutable_paths[0], sizeof immutable_paths[0], "%s", file);
      snprintf(immutable_paths[1], sizeof immutable_paths[1], "%s", subdir);
      if (set_immutable(file, 1) != 0 || set_immutable(subdir, 1) != 0) {
        ok = 0;
        snprintf(why, sizeof why, "running as root and cannot set the immutable "
                 "attribute in %s: %s", c->dir, strerror(errno));
      }
    } else if (chmod(file, 0) != 0 || chmod(subdir, 0555) != 0) {
      ok = 0;
      snprintf(why, sizeof why, "chmod: %s", strerror(errno));
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Bcast(&immutable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    if (c->rank == 0)
      test_skip("permission denied: %s", why);
  } else {
    rc = aggio_file_open(MPI_COMM_WORLD, file, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    expect_all(c, immutable ? "open(RDWR) of an immutable file" : "open(RDWR) of a 0000 file",
               rc, AGGIO_ERR_ACCESS, -1);
    if (rc == 0)
      aggio_file_close(&fh);
    rc = aggio_file_open(MPI_COMM_WORLD, file, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
    expect_all(c, "open(WRONLY) of a read-only file", rc, AGGIO_ERR_ACCESS, -1);
    if (rc == 0)
      aggio_file_close(&fh);
    if (immutable) { /* reading an immutable file is allowed */
      rc = aggio_file_open(MPI_COMM_WORLD, file, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
      if (expect_ok(c, "open(RDONLY) of an immutable file", rc) == 0) {
        char buf[16] = {0};
        MPI_Status st;
        int n = -1;
        rc = aggio_file_read_at_all(fh, 0, buf, 10, MPI_BYTE, &st);
        expect_ok(c, "read of an immutable file", rc);
        MPI_Get_count(&st, MPI_BYTE, &n);
        CHECK(rc != 0 || (n == 10 && memcmp(buf, "0123456789", 10) == 0),
              "immutable file read back %d bytes \"%.10s\"", n, buf);
        aggio_file_close(&fh);
      }
    } else {
      rc = aggio_file_open(MPI_COMM_WORLD, file, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
      expect_all(c, "open(RDONLY) of a 0000 file", rc, AGGIO_ERR_ACCESS, -1);
      if (rc == 0)
        aggio_file_close(&fh);
    }
    rc = aggio_file_open(MPI_COMM_WORLD, inside, MPI_MODE_RDWR | MPI_MODE_CREATE,
                         MPI_INFO_NULL, &fh);
    expect_all(c, "open(CREATE) in a read-only directory", rc, AGGIO_ERR_ACCESS, -1);
    if (rc == 0)
      aggio_file_close(&fh);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank == 0) {
    if (immutable)
      clear_immutable();
    chmod(subdir, 0755);
    unlink(file);
    rmdir(subdir);
  }
}

/* Data-access arguments: on every rank, then on one rank only. */
static void t_access_args(struct ectx *c, const char *strategy) {
  aggio_file fh = AGGIO_FILE_NULL;
  char what[200];
  unsigned char buf[4096];
  int rc, bad = c->rank == c->last;
  memset(buf, 0x5A, sizeof buf);
  snprintf(what, sizeof what, "access arguments (%s)", strategy);
  begin(c, what);
  if (expect_ok(c, "open", open_file(c, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, strategy,
                                     &fh)) != 0)
    return;
  expect_ok(c, "set_view", aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
                                                MPI_INFO_NULL));

#define ONE(call_all, call_one, code, label)                                          \
  do {                                                                                \
    snprintf(what, sizeof what, "%s on every rank (%s)", label, strategy);            \
    current_test = label;                                                             \
    rc = (call_all);                                                                  \
    expect_all(c, what, rc, code, -1);                                                \
    still_usable(c, fh, what, 2);                                                     \
    snprintf(what, sizeof what, "%s on rank %d only (%s)", label, c->last, strategy); \
    rc = (call_one);                                                                  \
    expect_all(c, what, rc, code, c->last);                                           \
    still_usable(c, fh, what, 3);                                                     \
  } while (0)

  ONE(aggio_file_write_at_all(fh, -1, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, bad ? -5 : c->rank * 10, buf, 10, MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_OFFSET, "write_at_all negative offset");
  ONE(aggio_file_read_at_all(fh, -1, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE),
      aggio_file_read_at_all(fh, bad ? -5 : c->rank * 10, buf, 10, MPI_BYTE,
                             MPI_STATUS_IGNORE),
      AGGIO_ERR_OFFSET, "read_at_all negative offset");
  ONE(aggio_file_write_at_all(fh, 0, NULL, 10, MPI_BYTE, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, c->rank * 10, bad ? NULL : buf, 10, MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_ARG, "write_at_all NULL buffer with count > 0");
  ONE(aggio_file_read_at_all(fh, 0, NULL, 10, MPI_BYTE, MPI_STATUS_IGNORE),
      aggio_file_read_at_all(fh, c->rank * 10, bad ? NULL : buf, 10, MPI_BYTE,
                             MPI_STATUS_IGNORE),
      AGGIO_ERR_ARG, "read_at_all NULL buffer with count > 0");
  ONE(aggio_file_write_at_all(fh, 0, buf, -1, MPI_BYTE, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, c->rank * 10, buf, bad ? -3 : 10, MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_ARG, "write_at_all negative count");
  ONE(aggio_file_write_at_all(fh, 0, buf, 10, MPI_DATATYPE_NULL, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, c->rank * 10, buf, 10, bad ? MPI_DATATYPE_NULL : MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_TYPE, "write_at_all MPI_DATATYPE_NULL");

  /* an uncommitted memory type */
  MPI_Datatype unc;
  MPI_Type_contiguous(4, MPI_BYTE, &unc);
  ONE(aggio_file_write_at_all(fh, 0, buf, 2, unc, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, c->rank * 10, buf, bad ? 2 : 8, bad ? unc : MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_TYPE, "write_at_all uncommitted datatype");
  MPI_Type_free(&unc);

  /* count x size beyond any file: 2^60-byte type, 16 of them (no memory is
   * touched before the check) */
  MPI_Datatype gib, huge;
  MPI_Type_contiguous(1 << 30, MPI_BYTE, &gib);
  MPI_Type_contiguous(1 << 30, gib, &huge);
  MPI_Type_commit(&huge);
  ONE(aggio_file_write_at_all(fh, 0, buf, 16, huge, MPI_STATUS_IGNORE),
      aggio_file_write_at_all(fh, c->rank * 10, buf, bad ? 16 : 10, bad ? huge : MPI_BYTE,
                              MPI_STATUS_IGNORE),
      AGGIO_ERR_OVERFLOW, "write_at_all count x size overflows");
  ONE(aggio_file_read_at_all(fh, 0, buf, INT_MAX, huge, MPI_STATUS_IGNORE),
      aggio_file_read_at_all(fh, c->rank * 10, buf, bad ? INT_MAX : 10, bad ? huge : MPI_BYTE,
                             MPI_STATUS_IGNORE),
      AGGIO_ERR_OVERFLOW, "read_at_all count x size overflows");
  MPI_Type_free(&huge);
  MPI_Type_free(&gib);
#undef ONE

  /* an offset whose byte position overflows: INT64_MAX etypes of 8 bytes */
  snprintf(what, sizeof what, "write_at_all offset overflows (%s)", strategy);
  current_test = what;
  expect_ok(c, "set_view(double)", aggio_file_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, "native",
                                                        MPI_INFO_NULL));
  rc = aggio_file_write_at_all(fh, bad ? INT64_MAX / 2 : c->rank, buf, 1, MPI_DOUBLE,
                               MPI_STATUS_IGNORE);
  expect_either(c, what, rc, AGGIO_ERR_OVERFLOW, AGGIO_ERR_OFFSET);
  expect_agreed_error(c, what, rc);
  still_usable(c, fh, what, 4);
  /* a byte range ending past INT64_MAX: an error, and no signed overflow
   * on the way (UBSan watches in the sanitizer builds) */
  expect_ok(c, "set_view(byte)", aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native",
                                                      MPI_INFO_NULL));
  snprintf(what, sizeof what, "write_at_all ending past INT64_MAX (%s)", strategy);
  current_test = what;
  rc = aggio_file_write_at_all(fh, bad ? INT64_MAX - 2 : c->rank, buf, 4, MPI_BYTE,
                               MPI_STATUS_IGNORE);
  expect_all(c, what, rc, AGGIO_ERR_OVERFLOW, c->last);
  if (bad) {
    rc = aggio_file_write_at(fh, INT64_MAX - 2, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "write_at(INT64_MAX - 2, 4 bytes)", rc, AGGIO_ERR_OVERFLOW, c->rank);
    MPI_Offset disp = 0;
    rc = aggio_file_get_byte_offset(fh, INT64_MAX - 1, &disp);
    CHECK(rc == 0 && disp == INT64_MAX - 1, "get_byte_offset(INT64_MAX - 1): %d, %lld", rc,
          (long long)disp);
    rc = aggio_file_get_byte_offset(fh, INT64_MAX, &disp);
    CHECK(rc == AGGIO_ERR_OVERFLOW, "get_byte_offset(INT64_MAX): %d", rc);
  }
  still_usable(c, fh, what, 6);

  /* independent calls fail alone */
  current_test = "independent write_at negative offset";
  if (bad) {
    rc = aggio_file_write_at(fh, -1, buf, 10, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "write_at(-1)", rc, AGGIO_ERR_OFFSET, c->rank);
    rc = aggio_file_read_at(fh, 0, NULL, 10, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "read_at(NULL buffer)", rc, AGGIO_ERR_ARG, c->rank);
  }
  still_usable(c, fh, "independent errors on one rank", 5);

  /* seek */
  current_test = "seek";
  rc = aggio_file_seek(fh, -1, MPI_SEEK_SET);
  expect_all(c, "seek(-1, SET)", rc, AGGIO_ERR_OFFSET, -1);
  rc = aggio_file_seek(fh, 0, 12345);
  expect_all(c, "seek(whence 12345)", rc, AGGIO_ERR_ARG, -1);
  MPI_Offset pos = -1;
  expect_ok(c, "seek(10, SET)", aggio_file_seek(fh, 10, MPI_SEEK_SET));
  rc = aggio_file_seek(fh, -11, MPI_SEEK_CUR);
  expect_all(c, "seek(-11, CUR) from 10", rc, AGGIO_ERR_OFFSET, -1);
  expect_ok(c, "get_position", aggio_file_get_position(fh, &pos));
  CHECK(pos == 10, "failed seek moved the pointer to %lld", (long long)pos);

  /* file pointer with a NULL argument */
  rc = aggio_file_get_position(fh, NULL);
  expect_all(c, "get_position(NULL)", rc, AGGIO_ERR_ARG, -1);
  rc = aggio_file_get_size(fh, NULL);
  expect_all(c, "get_size(NULL)", rc, AGGIO_ERR_ARG, -1);

  /* set_size: collective, must match */
  current_test = "set_size";
  if (c->np > 1) {
    rc = aggio_file_set_size(fh, bad ? 5000 : 6000);
    expect_all(c, "set_size differing on one rank", rc, AGGIO_ERR_NOT_SAME, -1);
  }
  rc = aggio_file_set_size(fh, -1);
  expect_either(c, "set_size(-1)", rc, AGGIO_ERR_ARG, AGGIO_ERR_OFFSET);
  still_usable(c, fh, "set_size errors", 6);
  expect_ok(c, "close", aggio_file_close(&fh));
}

static void t_handles(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  char buf[16];
  int rc;
  begin(c, "NULL file handles");
  rc = aggio_file_write_at_all(AGGIO_FILE_NULL, 0, buf, 1, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_either(c, "write_at_all(NULL fh)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_read_at(AGGIO_FILE_NULL, 0, buf, 1, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_either(c, "read_at(NULL fh)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_set_view(AGGIO_FILE_NULL, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  expect_either(c, "set_view(NULL fh)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_close(NULL);
  expect_either(c, "close(NULL)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_close(&fh);
  expect_either(c, "close(&NULL handle)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_get_size(AGGIO_FILE_NULL, &(MPI_Offset){0});
  expect_either(c, "get_size(NULL fh)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  rc = aggio_file_sync(AGGIO_FILE_NULL);
  expect_either(c, "sync(NULL fh)", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);

  /* after close the handle is AGGIO_FILE_NULL */
  if (expect_ok(c, "open", open_file(c, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, "auto",
                                     &fh)) == 0) {
    expect_ok(c, "close", aggio_file_close(&fh));
    CHECK(fh == AGGIO_FILE_NULL, "close did not reset the handle");
    rc = aggio_file_write_at_all(fh, 0, buf, 1, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_either(c, "write after close", rc, AGGIO_ERR_BAD_FILE, AGGIO_ERR_ARG);
  }

  /* strerror covers every code */
  for (int code = 0; code > AGGIO_ERR_LAST; code--) {
    const char *s = aggio_strerror(code);
    CHECK(s && *s, "aggio_strerror(%d) is empty", code);
  }
  CHECK(aggio_strerror(-1000) != NULL, "aggio_strerror(unknown) is NULL");
  CHECK(aggio_strerror(7) != NULL, "aggio_strerror(positive) is NULL");
}

static void t_modes(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  char buf[64] = "data";
  int rc;
  begin(c, "read-only and write-only files");
  if (c->rank == 0) {
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, "abcdefghij", 10) == 10 && close(fd) == 0, "setup");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (expect_ok(c, "open RDONLY", open_file(c, c->path, MPI_MODE_RDONLY, "two_phase", &fh)) ==
      0) {
    rc = aggio_file_write_at_all(fh, 0, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "write_at_all to a RDONLY file", rc, AGGIO_ERR_READ_ONLY, -1);
    rc = aggio_file_write_at(fh, 0, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "write_at to a RDONLY file", rc, AGGIO_ERR_READ_ONLY, -1);
    rc = aggio_file_write_all(fh, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "write_all to a RDONLY file", rc, AGGIO_ERR_READ_ONLY, -1);
    rc = aggio_file_set_size(fh, 0);
    expect_all(c, "set_size on a RDONLY file", rc, AGGIO_ERR_READ_ONLY, -1);
    char r[10] = {0};
    rc = aggio_file_read_at_all(fh, 0, r, 10, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_ok(c, "read of a RDONLY file", rc);
    CHECK(memcmp(r, "abcdefghij", 10) == 0, "RDONLY read gave \"%.10s\"", r);
    expect_ok(c, "close", aggio_file_close(&fh));
  }
  if (expect_ok(c, "open WRONLY", open_file(c, c->path, MPI_MODE_WRONLY, "two_phase", &fh)) ==
      0) {
    rc = aggio_file_read_at_all(fh, 0, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE);
    expect_all(c, "read_at_all from a WRONLY file", rc, AGGIO_ERR_READ_ONLY, -1);
    expect_ok(c, "write to a WRONLY file",
              aggio_file_write_at_all(fh, c->rank * 4, buf, 4, MPI_BYTE, MPI_STATUS_IGNORE));
    expect_ok(c, "close", aggio_file_close(&fh));
  }
}

/* A type whose external32 size the MPI library gives as other than its
 * native size, or MPI_DATATYPE_NULL. */
static MPI_Datatype ext32_resized_type(void) {
  MPI_Datatype t[] = {MPI_WCHAR, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_DOUBLE};
  for (int i = 0; i < 4; i++) {
    MPI_Aint ext = 0;
    int size = 0;
    MPI_Pack_external_size("external32", 1, t[i], &ext);
    MPI_Type_size(t[i], &size);
    if (ext != size)
      return t[i];
  }
  return MPI_DATATYPE_NULL;
}

static void t_views(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  int rc, bad = c->rank == c->last;
  begin(c, "file views");
  if (expect_ok(c, "open", open_file(c, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, "two_phase",
                                     &fh)) != 0)
    return;
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "xdr", MPI_INFO_NULL);
  expect_all(c, "set_view datarep xdr", rc, AGGIO_ERR_UNSUPPORTED, -1);
  /* external32 with a type whose size there is not its native one, where
   * the MPI library has one (MPICH: MPI_WCHAR, MPI_LONG; Open MPI 4.1: none) */
  MPI_Datatype odd_ext = ext32_resized_type();
  if (odd_ext != MPI_DATATYPE_NULL) {
    rc = aggio_file_set_view(fh, 0, odd_ext, odd_ext, "external32", MPI_INFO_NULL);
    expect_all(c, "set_view external32 with a resized type", rc, AGGIO_ERR_UNSUPPORTED, -1);
  }
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, bad ? "xdr" : "native",
                           MPI_INFO_NULL);
  expect_all(c, "set_view datarep xdr on one rank", rc, AGGIO_ERR_UNSUPPORTED, c->last);
  still_usable(c, fh, "bad datarep", 7);
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, MPI_BYTE, NULL, MPI_INFO_NULL);
  expect_either(c, "set_view datarep NULL", rc, AGGIO_ERR_ARG, AGGIO_ERR_UNSUPPORTED);
  rc = aggio_file_set_view(fh, -1, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  expect_either(c, "set_view negative disp", rc, AGGIO_ERR_OFFSET, AGGIO_ERR_ARG);

  /* decreasing displacements in the file type */
  int bl[2] = {4, 4};
  MPI_Aint dec[2] = {16, 0}, neg[2] = {-8, 0}, ok[2] = {0, 16};
  MPI_Datatype down, negative, good, unc, odd;
  MPI_Type_create_hindexed(2, bl, dec, MPI_BYTE, &down);
  MPI_Type_commit(&down);
  MPI_Type_create_hindexed(2, bl, neg, MPI_BYTE, &negative);
  MPI_Type_commit(&negative);
  MPI_Type_create_hindexed(2, bl, ok, MPI_BYTE, &good);
  MPI_Type_commit(&good);
  MPI_Type_contiguous(8, MPI_BYTE, &unc);
  MPI_Type_contiguous(6, MPI_BYTE, &odd); /* not a multiple of a 4-byte etype */
  MPI_Type_commit(&odd);

  rc = aggio_file_set_view(fh, 0, MPI_BYTE, down, "native", MPI_INFO_NULL);
  expect_all(c, "filetype with decreasing displacements", rc, AGGIO_ERR_TYPE, -1);
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, bad ? down : good, "native", MPI_INFO_NULL);
  expect_all(c, "decreasing displacements on one rank", rc, AGGIO_ERR_TYPE, c->last);
  still_usable(c, fh, "bad file type", 8);
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, negative, "native", MPI_INFO_NULL);
  expect_all(c, "filetype with a negative displacement", rc, AGGIO_ERR_TYPE, -1);
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, unc, "native", MPI_INFO_NULL);
  expect_all(c, "uncommitted filetype", rc, AGGIO_ERR_TYPE, -1);
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, bad ? unc : good, "native", MPI_INFO_NULL);
  expect_all(c, "uncommitted filetype on one rank", rc, AGGIO_ERR_TYPE, c->last);
  rc = aggio_file_set_view(fh, 0, MPI_INT, odd, "native", MPI_INFO_NULL);
  expect_all(c, "filetype not made of etypes", rc, AGGIO_ERR_TYPE, -1);
  rc = aggio_file_set_view(fh, 0, MPI_DATATYPE_NULL, MPI_BYTE, "native", MPI_INFO_NULL);
  expect_all(c, "etype MPI_DATATYPE_NULL", rc, AGGIO_ERR_TYPE, -1);

  /* a write whose size is not a whole number of etypes */
  expect_ok(c, "set_view(int)", aggio_file_set_view(fh, 0, MPI_INT, MPI_INT, "native",
                                                     MPI_INFO_NULL));
  char buf[8] = {0};
  rc = aggio_file_write_at_all(fh, c->rank * 2, buf, bad ? 3 : 4, MPI_BYTE, MPI_STATUS_IGNORE);
  expect_all(c, "write of 3 bytes through an int etype on one rank", rc, AGGIO_ERR_TYPE,
             c->last);

  /* a failed set_view keeps the old view */
  MPI_Offset disp = -1;
  MPI_Datatype et, ft;
  char rep[MPI_MAX_DATAREP_STRING + 1] = "";
  expect_ok(c, "set_view(good)", aggio_file_set_view(fh, 100, MPI_BYTE, good, "native",
                                                      MPI_INFO_NULL));
  rc = aggio_file_set_view(fh, 0, MPI_BYTE, down, "native", MPI_INFO_NULL);
  expect_all(c, "set_view with decreasing displacements", rc, AGGIO_ERR_TYPE, -1);
  expect_ok(c, "get_view", aggio_file_get_view(fh, &disp, &et, &ft, rep));
  CHECK(disp == 100 && strcmp(rep, "native") == 0, "failed set_view changed the view: disp "
        "%lld datarep %s", (long long)disp, rep);
  int sz = 0;
  MPI_Type_size(ft, &sz);
  CHECK(sz == 8, "failed set_view changed the filetype (size %d)", sz);
  int ni, na, nd, comb;
  MPI_Type_get_envelope(et, &ni, &na, &nd, &comb);
  if (comb != MPI_COMBINER_NAMED)
    MPI_Type_free(&et);
  MPI_Type_get_envelope(ft, &ni, &na, &nd, &comb);
  if (comb != MPI_COMBINER_NAMED)
    MPI_Type_free(&ft);

  MPI_Type_free(&down);
  MPI_Type_free(&negative);
  MPI_Type_free(&good);
  MPI_Type_free(&unc);
  MPI_Type_free(&odd);
  still_usable(c, fh, "view errors", 9);
  expect_ok(c, "close", aggio_file_close(&fh));
}

static void t_hints(struct ectx *c) {
  aggio_file fh = AGGIO_FILE_NULL;
  int rc, bad = c->rank == c->last;
  begin(c, "hints");
  if (c->np > 1) {
    MPI_Info info = info_of("cb_buffer_size", bad ? "8192" : "65536", NULL, NULL);
    rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
    expect_all(c, "open: cb_buffer_size differs on one rank", rc, AGGIO_ERR_HINT_MISMATCH, -1);
    CHECK(fh == AGGIO_FILE_NULL, "failed open left a handle");
    if (rc == 0)
      aggio_file_close(&fh);
    MPI_Info_free(&info);
    info = info_of("aggio_strategy", bad ? "independent" : "two_phase", NULL, NULL);
    rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
    expect_all(c, "open: aggio_strategy differs on one rank", rc, AGGIO_ERR_HINT_MISMATCH, -1);
    if (rc == 0)
      aggio_file_close(&fh);
    MPI_Info_free(&info);
    /* set_info on an open file: same rule, and the file stays usable */
    if (expect_ok(c, "open", open_file(c, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, "two_phase",
                                       &fh)) == 0) {
      info = info_of("cb_nodes", bad ? "1" : "2", NULL, NULL);
      rc = aggio_file_set_info(fh, info);
      expect_all(c, "set_info: cb_nodes differs on one rank", rc, AGGIO_ERR_HINT_MISMATCH, -1);
      MPI_Info_free(&info);
      still_usable(c, fh, "hint mismatch in set_info", 10);
      expect_ok(c, "close", aggio_file_close(&fh));
    }
  }

  /* a malformed value is a warning: the default stays in effect */
  MPI_Info info = info_of("cb_buffer_size", "12abc", "aggio_strategy", "bogus");
  rc = aggio_file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
  MPI_Info_free(&info);
  if (expect_ok(c, "open with malformed hint values", rc) == 0) {
    MPI_Info used;
    char v[MPI_MAX_INFO_VAL + 1] = "";
    int flag = 0;
    if (expect_ok(c, "get_info", aggio_file_get_info(fh, &used)) == 0) {
      MPI_Info_get(used, "cb_buffer_size", MPI_MAX_INFO_VAL, v, &flag);
      CHECK(flag && strcmp(v, "16777216") == 0, "malformed cb_buffer_size: in effect \"%s\", "
            "expected the default 16777216", flag ? v : "(unset)");
      MPI_Info_get(used, "aggio_strategy", MPI_MAX_INFO_VAL, v, &flag);
      CHECK(flag && strcmp(v, "auto") == 0, "malformed aggio_strategy: in effect \"%s\", "
            "expected the default auto", flag ? v : "(unset)");
      /* the warning is kept for the program (the library prints nothing) */
      MPI_Info_get(used, "aggio_hint_warnings", MPI_MAX_INFO_VAL, v, &flag);
      CHECK(flag && strstr(v, "cb_buffer_size") && strstr(v, "12abc"),
            "aggio_hint_warnings names the malformed hint: \"%s\"", flag ? v : "(unset)");
      MPI_Info_free(&used);
    }
    still_usable(c, fh, "malformed hints", 11);
    expect_ok(c, "close", aggio_file_close(&fh));
  }
}

/* Short reads at end of file: the status holds the bytes read. */
static void t_eof(struct ectx *c, const char *strategy) {
  aggio_file fh = AGGIO_FILE_NULL;
  enum { SIZE = 1000, WANT = 300 };
  char what[160];
  unsigned char buf[WANT + 16];
  MPI_Status st;
  MPI_Count n;
  int cnt;
  snprintf(what, sizeof what, "read past end of file (%s)", strategy);
  begin(c, what);
  if (c->rank == 0) {
    int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    unsigned char data[SIZE];
    for (int i = 0; i < SIZE; i++)
      data[i] = pat(0, i, 12);
    CHECK(fd >= 0 && write(fd, data, SIZE) == SIZE && close(fd) == 0, "setup");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (expect_ok(c, what, open_file(c, c->path, MPI_MODE_RDONLY, strategy, &fh)) != 0)
    return;
  /* rank r reads WANT bytes at 850 + 100 r: 150, 50, 0, 0 bytes */
  for (int pass = 0; pass < 4; pass++) {
    MPI_Offset off = 850 + 100 * (MPI_Offset)c->rank;
    int64_t expect = SIZE - off > WANT ? WANT : SIZE - off > 0 ? SIZE - off : 0;
    int rc;
    memset(buf, 0xEE, sizeof buf);
    static const char *names[] = {"read_at_all", "read_at", "seek+read_all", "seek+read"};
    if (pass >= 2)
      expect_ok(c, "seek", aggio_file_seek(fh, off, MPI_SEEK_SET));
    rc = pass == 0   ? aggio_file_read_at_all(fh, off, buf, WANT, MPI_BYTE, &st)
         : pass == 1 ? aggio_file_read_at(fh, off, buf, WANT, MPI_BYTE, &st)
         : pass == 2 ? aggio_file_read_all(fh, buf, WANT, MPI_BYTE, &st)
                     : aggio_file_read(fh, buf, WANT, MPI_BYTE, &st);
    snprintf(what, sizeof what, "%s past end of file (%s)", names[pass], strategy);
    if (expect_ok(c, what, rc) != 0)
      continue;
    MPI_Get_elements_x(&st, MPI_BYTE, &n);
    MPI_Get_count(&st, MPI_BYTE, &cnt);
    CHECK(n == expect && cnt == expect, "%s: rank %d at %lld: status says %lld elements, "
          "count %d; expected %lld", what, c->rank, (long long)off, (long long)n, cnt,
          (long long)expect);
    int same = 1, untouched = 1;
    for (int64_t i = 0; i < expect; i++)
      same &= buf[i] == pat(0, off + i, 12);
    CHECK(same, "%s: rank %d read wrong data before end of file", what, c->rank);
    /* MPI-IO leaves the buffer past the count as it was (ROMIO's rd_end) */
    for (int64_t i = expect; i < WANT; i++)
      untouched &= buf[i] == 0xEE;
    CHECK(untouched, "%s: rank %d: the buffer past the %lld bytes read was written", what,
          c->rank, (long long)expect);
    if (pass >= 2) {
      MPI_Offset pos = -1;
      aggio_file_get_position(fh, &pos);
      CHECK(pos == off + expect, "%s: rank %d: file pointer %lld, expected %lld after a short "
            "read", what, c->rank, (long long)pos, (long long)(off + expect));
    }
  }
  /* strided view across end of file, int elements: short in bytes */
  MPI_Datatype vec;
  MPI_Type_vector(2, 1, c->np, MPI_INT, &vec);
  MPI_Datatype ft;
  MPI_Type_create_resized(vec, 0, (MPI_Aint)2 * c->np * 4, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&vec);
  expect_ok(c, "set_view strided", aggio_file_set_view(fh, (MPI_Offset)c->rank * 4, MPI_INT, ft,
                                                       "native", MPI_INFO_NULL));
  int ints[200];
  int rc = aggio_file_read_at_all(fh, 0, ints, 200, MPI_INT, &st);
  snprintf(what, sizeof what, "strided read_at_all past end of file (%s)", strategy);
  if (expect_ok(c, what, rc) == 0) {
    /* rank r's ints: file bytes [4r + 4np k, +4) for k = 0, 1, ...; the
     * file has 250 whole ints */
    int64_t expect = 0;
    for (int64_t k = 0; k < 200; k++) {
      int64_t at = 4 * c->rank + 4 * (int64_t)c->np * k;
      if (at + 4 <= SIZE)
        expect += 4;
    }
    MPI_Get_elements_x(&st, MPI_BYTE, &n);
    CHECK(n == expect, "%s: rank %d: status says %lld bytes, expected %lld", what, c->rank,
          (long long)n, (long long)expect);
  }
  MPI_Type_free(&ft);
  expect_ok(c, "close", aggio_file_close(&fh));
}

/* A full file system in the middle of a collective write. */
static void t_enospc(struct ectx *c) {
  char mnt[600], file[700], why[2048] = "";
  int ok = 1;
  begin(c, "ENOSPC");
  snprintf(mnt, sizeof mnt, "%s/full", c->dir);
  snprintf(file, sizeof file, "%s/file", mnt);
  if (c->rank == 0) {
    if (geteuid() != 0) {
      ok = 0;
      snprintf(why, sizeof why, "not running as root: cannot mount a small tmpfs");
    } else if (mkdir(mnt, 0755) != 0) {
      ok = 0;
      snprintf(why, sizeof why, "mkdir %s: %s", mnt, strerror(errno));
    } else if (mount("aggio-test", mnt, "tmpfs", 0, "size=1m") != 0) {
      ok = 0;
      snprintf(why, sizeof why, "mount -t tmpfs -o size=1m at %s: %s (in a container "
               "without CAP_SYS_ADMIN?)", mnt, strerror(errno));
      rmdir(mnt);
    } else {
      snprintf(mounted_path, sizeof mounted_path, "%s", mnt);
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!ok) {
    if (c->rank == 0)
      test_skip("ENOSPC: %s", why);
    return;
  }
  /* 3 MiB in all on a 1 MiB file system; with one rank, 3 MiB from it */
  const int64_t total = 3 << 20, mine = total / c->np;
  unsigned char *buf = malloc((size_t)mine);
  for (int64_t i = 0; i < mine; i++)
    buf[i] = pat(c->rank, i, 13);
  static const char *strategies[] = {"independent", "two_phase", "auto", "write_behind"};
  for (int s = 0; s < 4; s++) {
    for (int one = 0; one < 2; one++) {
      char what[200];
      aggio_file fh = AGGIO_FILE_NULL;
      snprintf(what, sizeof what, "ENOSPC in write_at_all (%s, %s)", strategies[s],
               one ? "only the last rank writes" : "every rank writes");
      current_test = what;
      MPI_Info info = info_of("aggio_strategy", strategies[s], "cb_buffer_size", "262144");
      MPI_Info_set(info, "aggio_direct_io", s == 1 ? "enable" : "disable");
      int rc = aggio_file_open(MPI_COMM_WORLD, file, MPI_MODE_RDWR | MPI_MODE_CREATE, info, &fh);
      MPI_Info_free(&info);
      if (expect_ok(c, "open on the small tmpfs", rc) != 0)
        continue;
      int cnt = one ? (c->rank == c->last ? (int)total : 0) : (int)mine;
      unsigned char *b = buf;
      if (one && c->rank == c->last) {
        b = malloc((size_t)total);
        memset(b, 0x77, (size_t)total);
      }
      rc = aggio_file_write_at_all(fh, one ? 0 : (MPI_Offset)c->rank * mine, b, cnt, MPI_BYTE,
                                   MPI_STATUS_IGNORE);
      if (s == 3) {
        /* write-behind may return before the blocks reach the full file
         * system: then sync reports it, on every rank */
        int lo;
        MPI_Allreduce(&rc, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
        CHECK(rc == lo, "%s: ranks disagree", what);
        if (rc == 0) {
          snprintf(what, sizeof what, "ENOSPC reported by sync after write-behind (%s)",
                   one ? "only the last rank writes" : "every rank writes");
          rc = aggio_file_sync(fh);
        }
      }
      expect_all(c, what, rc, AGGIO_ERR_NO_SPACE, -1);
      if (b != buf)
        free(b);
      /* free the space, then the file must work again */
      expect_ok(c, "set_size(0) after ENOSPC", aggio_file_set_size(fh, 0));
      still_usable(c, fh, what, 14);
      rc = aggio_file_close(&fh);
      expect_ok(c, "close after ENOSPC", rc);
      MPI_Barrier(MPI_COMM_WORLD);
      if (c->rank == 0)
        unlink(file);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  /* an independent write that fills the disk fails on its rank */
  current_test = "ENOSPC in write_at";
  aggio_file fh = AGGIO_FILE_NULL;
  if (expect_ok(c, "open", open_file(c, file, MPI_MODE_RDWR | MPI_MODE_CREATE, "auto", &fh)) ==
      0) {
    if (c->rank == c->last) {
      unsigned char *b = calloc(1, (size_t)total);
      int rc = aggio_file_write_at(fh, 0, b, (int)total, MPI_BYTE, MPI_STATUS_IGNORE);
      expect_all(c, "write_at filling the file system", rc, AGGIO_ERR_NO_SPACE, c->rank);
      free(b);
    }
    expect_ok(c, "close", aggio_file_close(&fh));
  }
  free(buf);
  MPI_Barrier(MPI_COMM_WORLD);
  if (c->rank == 0) {
    unlink(file);
    if (umount2(mnt, MNT_DETACH) != 0)
      fprintf(stderr, "umount %s: %s\n", mnt, strerror(errno));
    mounted_path[0] = 0;
    rmdir(mnt);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

static void run_core(struct ectx *c) {
  t_open_args(c);
  t_amode(c);
  t_existence(c);
  t_handles(c);
  t_modes(c);
  t_views(c);
  t_hints(c);
  t_access_args(c, "independent");
  t_access_args(c, "two_phase");
  t_eof(c, "independent");
  t_eof(c, "two_phase");
  t_eof(c, "write_behind");
  t_eof(c, "auto");
}

int main(int argc, char **argv) {
  struct ectx c;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &c.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &c.np);
  c.last = c.np - 1;
  const char *t = getenv("AGGIO_TEST_TIMEOUT");
  static const int sigs[] = {SIGALRM, SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGINT, SIGFPE};
  for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
    signal(sigs[i], on_signal);
  alarm(t && *t ? (unsigned)atoi(t) : 150);

  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(c.dir, sizeof c.dir, "%s/errors.%d", test_dir(), id);
  snprintf(c.path, sizeof c.path, "%s/file", c.dir);
  int ok = 1;
  if (c.rank == 0 && mkdir(c.dir, 0755) != 0) {
    fprintf(stderr, "mkdir %s: %s\n", c.dir, strerror(errno));
    ok = 0;
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const char *part = argc > 1 ? argv[1] : "all";
  int all = strcmp(part, "all") == 0;
  if (!all && strcmp(part, "core") && strcmp(part, "permission") && strcmp(part, "enospc")) {
    CHECK(0, "unknown part \"%s\" (core, permission, enospc)", part);
    ok = 0;
  }
  if (ok && (all || strcmp(part, "core") == 0))
    run_core(&c);
  if (ok && (all || strcmp(part, "permission") == 0))
    t_permission(&c);
  if (ok && (all || strcmp(part, "enospc") == 0))
    t_enospc(&c);
  CHECK(ok, "no scratch directory");
  current_test = "cleanup";
  MPI_Barrier(MPI_COMM_WORLD);
  if (c.rank == 0) {
    unlink(c.path);
    if (rmdir(c.dir) != 0)
      fprintf(stderr, "note: %s left behind: %s\n", c.dir, strerror(errno));
  }
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
