/*
 * test_mpiio_errors.c - errors as MPI error classes, MPI_Error_string
 * (a code and a message per error, codes recycled from a bounded pool),
 * file error handlers (the default MPI_ERRORS_RETURN, a handler of the
 * program's own: set, get, call, kept alive after MPI_Errhandler_free, on
 * MPI_FILE_NULL for failed opens), MPI_File_c2f/f2c and the refused data
 * representations.  Classes where the MPI libraries themselves differ are
 * checked under aggio only.  With the argument "fatal": a write on a
 * read-only file under MPI_ERRORS_ARE_FATAL, which must end the job.
 * aggio-test-ranks: 1 2 4
 */
#include <unistd.h>

#include "mpiio_common.h"

static int handler_calls, handler_last_class;
static MPI_File handler_file;

static void count_errors(MPI_File *fh, int *code, ...) {
  handler_calls++;
  handler_last_class = error_class(*code);
  handler_file = *fh;
}

static int rank, nranks, aggio;

static void open_errors(const char *path, const char *dir) {
  MPI_File fh = MPI_FILE_NULL;
  char missing[600];
  snprintf(missing, sizeof missing, "%s/no/such/dir/x.dat", dir);
  int rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "missing file: class %d",
        error_class(rc));
  char msg[MPI_MAX_ERROR_STRING] = "";
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  CHECK(len > 0 && (int)strlen(msg) == len, "error string '%s'", msg);
  if (aggio)
    CHECK(strncmp(msg, "aggio", 5) == 0 && strstr(msg, "x.dat"), "aggio's message '%s'",
          msg);
  rc = MPI_File_open(MPI_COMM_WORLD, path,
                     MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL,
                     &fh);
  CHECK(error_class(rc) == MPI_ERR_FILE_EXISTS, "exclusive create: class %d",
        error_class(rc));
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_WRONLY,
                     MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_AMODE, "RDONLY|WRONLY: class %d", error_class(rc));
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_CREATE,
                     MPI_INFO_NULL, &fh);
  CHECK(error_class(rc) == MPI_ERR_AMODE, "RDONLY|CREATE: class %d", error_class(rc));
  rc = MPI_File_delete(missing, MPI_INFO_NULL);
  CHECK(error_class(rc) == MPI_ERR_NO_SUCH_FILE, "delete missing: class %d",
        error_class(rc));
  if (aggio) {
    char longname[5000];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    longname[0] = '/';
    rc = MPI_File_open(MPI_COMM_WORLD, longname, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(error_class(rc) == MPI_ERR_BAD_FILE, "name too long: class %d",
          error_class(rc));
  }
}

static void error_text(int code, char *msg) {
  int len = 0;
  msg[0] = '\0';
  MPI_Error_string(code, msg, &len);
}

static int last_used_code(void) {
  int *v = NULL, flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &v, &flag);
  return flag && v ? *v : -1;
}

/* Each error has its own code and message (aggio only: the MPI libraries'
 * own strings differ): two errors of one class, then one of another, and
 * the first code still reads its own message and class; the same error
 * again gives its code again; after 64 newer errors (the messages aggio
 * keeps) the first says its message is gone instead of showing another's;
 * hundreds of errors add a bounded number of codes. */
static void per_error_codes(const char *dir) {
  char a[600], b[600], msg[MPI_MAX_ERROR_STRING + 1], name[600];
  snprintf(a, sizeof a, "%s/first-missing-%d.dat", dir, rank);
  snprintf(b, sizeof b, "%s/second-missing-%d.dat", dir, rank);
  int ca = MPI_File_delete(a, MPI_INFO_NULL);
  int cb = MPI_File_delete(b, MPI_INFO_NULL);
  MPI_File fh = MPI_FILE_NULL;
  int cc = MPI_File_open(MPI_COMM_SELF, a, MPI_MODE_RDONLY | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &fh);
  CHECK(ca != cb && ca != cc && cb != cc, "three errors, three codes: %d %d %d", ca, cb,
        cc);
  error_text(ca, msg);
  CHECK(strstr(msg, "first-missing") && !strstr(msg, "second-missing"),
        "the first error's code reads its own message after two more: '%s'", msg);
  CHECK(error_class(ca) == MPI_ERR_NO_SUCH_FILE, "the first error's class %d",
        error_class(ca));
  error_text(cb, msg);
  CHECK(strstr(msg, "second-missing"), "the second error's message: '%s'", msg);
  CHECK(error_class(cb) == MPI_ERR_NO_SUCH_FILE && error_class(cc) == MPI_ERR_AMODE,
        "classes %d %d", error_class(cb), error_class(cc));
  CHECK(MPI_File_delete(a, MPI_INFO_NULL) == ca, "the same error again: the same code");
  for (int i = 0; i < 64; i++) {
    snprintf(name, sizeof name, "%s/later-missing-%d-%d.dat", dir, i, rank);
    MPI_File_delete(name, MPI_INFO_NULL);
  }
  error_text(ca, msg);
  CHECK(strstr(msg, "no longer kept") && !strstr(msg, "missing"),
        "after 64 newer errors the first says its message is gone: '%s'", msg);
  CHECK(error_class(ca) == MPI_ERR_NO_SUCH_FILE, "and keeps its class %d",
        error_class(ca));
  int before = last_used_code(), last[2] = {0, 0};
  for (int i = 0; i < 600; i++) {
    snprintf(name, sizeof name, "%s/many-missing-%d-%d.dat", dir, i, rank);
    last[i % 2] = MPI_File_delete(name, MPI_INFO_NULL);
  }
  int after = last_used_code();
  CHECK(before > 0 && after - before <= 256, "600 errors added %d codes (at most 256)",
        after - before);
  /* recycled codes carry their new errors' messages */
  error_text(last[0], msg);
  CHECK(strstr(msg, "many-missing-598-"), "a recycled code, the 599th error: '%s'", msg);
  error_text(last[1], msg);
  CHECK(strstr(msg, "many-missing-599-") && error_class(last[1]) == MPI_ERR_NO_SUCH_FILE,
        "a recycled code, the 600th error: '%s'", msg);
  /* a class first met after all that still gets a code and its message */
  int cd = MPI_Register_datarep("late", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL,
                                NULL, NULL);
  error_text(cd, msg);
  CHECK(error_class(cd) == MPI_ERR_UNSUPPORTED_DATAREP && strstr(msg, "\"late\""),
        "a class met late: class %d, '%s'", error_class(cd), msg);
}

static void access_errors(const char *path) {
  MPI_File fh;
  int v[4] = {1, 2, 3, 4};
  MPI_Status st;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open read-only %d", rc);
  rc = MPI_File_write_at(fh, 0, v, 4, MPI_INT, &st);
  int cls = error_class(rc);
  CHECK(cls == MPI_ERR_READ_ONLY || (!aggio && cls == MPI_ERR_ACCESS),
        "write on a read-only file: class %d", cls);
  rc = MPI_File_read_at(fh, 0, v, -1, MPI_INT, &st);
  CHECK(error_class(rc) == MPI_ERR_COUNT || (!aggio && rc != MPI_SUCCESS),
        "negative count: class %d", error_class(rc));
  rc = MPI_File_read_at(fh, 0, v, 1, MPI_DATATYPE_NULL, &st);
  CHECK(error_class(rc) == MPI_ERR_TYPE, "null datatype: class %d", error_class(rc));
  if (aggio) {
    rc = MPI_File_read_at(fh, -4, v, 1, MPI_INT, &st);
    CHECK(error_class(rc) == MPI_ERR_ARG, "negative offset: class %d", error_class(rc));
  }
  MPI_File_close(&fh);
  rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open write-only %d", rc);
  rc = MPI_File_read_at(fh, 0, v, 4, MPI_INT, &st);
  cls = error_class(rc);
  CHECK(cls == MPI_ERR_ACCESS || (!aggio && rc != MPI_SUCCESS),
        "read on a write-only file: class %d", cls);
  MPI_File_close(&fh);
}

static void handlers(const char *path) {
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
  MPI_File_get_errhandler(fh, &got);
  CHECK(got == MPI_ERRORS_RETURN, "default handler on a file is MPI_ERRORS_RETURN");
  MPI_Errhandler_free(&got);
  rc = MPI_File_create_errhandler(count_errors, &eh);
  CHECK(rc == MPI_SUCCESS, "create_errhandler %d", rc);
  MPI_File_set_errhandler(fh, eh);
  MPI_File_get_errhandler(fh, &got);
  CHECK(got == eh, "get_errhandler gives the handler set");
  MPI_Errhandler_free(&got);
  MPI_Errhandler_free(&eh); /* the file keeps it alive */
  int v = 0;
  rc = MPI_File_write_at(fh, 0, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(rc != MPI_SUCCESS && handler_calls == 1, "handler called once (%d)",
        handler_calls);
  CHECK(handler_file == fh, "handler got the file");
  CHECK(handler_last_class == error_class(rc), "handler got the code");
  MPI_File_call_errhandler(fh, MPI_ERR_IO);
  CHECK(handler_calls == 2 && handler_last_class == MPI_ERR_IO, "call_errhandler (%d)",
        handler_calls);
  MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN);
  MPI_File_write_at(fh, 0, &v, 1, MPI_INT, MPI_STATUS_IGNORE);
  CHECK(handler_calls == 2, "MPI_ERRORS_RETURN again: no call");
  MPI_File_close(&fh);

  /* MPI_FILE_NULL's handler: failed opens */
  MPI_Errhandler eh2;
  MPI_File_create_errhandler(count_errors, &eh2);
  MPI_File_set_errhandler(MPI_FILE_NULL, eh2);
  char missing[600];
  snprintf(missing, sizeof missing, "%s.missing", path);
  handler_calls = 0;
  rc = MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(handler_calls == 1 && handler_last_class == MPI_ERR_NO_SUCH_FILE,
        "MPI_FILE_NULL's handler on a failed open (%d calls)", handler_calls);
  CHECK(handler_file == MPI_FILE_NULL, "handler got MPI_FILE_NULL");
  MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN);
  MPI_Errhandler_free(&eh2);
}

static void fortran_handles(const char *path) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  MPI_Fint f = MPI_File_c2f(fh);
  MPI_File back = MPI_File_f2c(f);
  CHECK(back == fh, "f2c(c2f(fh)) == fh");
  MPI_Offset size = -1;
  int rc = MPI_File_get_size(back, &size);
  CHECK(rc == MPI_SUCCESS && size == 16 * nranks, "get_size through f2c %lld",
        (long long)size);
  MPI_File_close(&fh);
  CHECK(MPI_File_c2f(MPI_FILE_NULL) == MPI_File_c2f(fh),
        "closed handle is MPI_FILE_NULL");
}

static void datareps(const char *path) {
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  if (aggio) {
    int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "xdr", MPI_INFO_NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "xdr: class %d", error_class(rc));
    /* a type whose external32 size differs from its native one, where the
     * MPI library has one (MPICH: MPI_WCHAR, MPI_LONG; Open MPI 4.1: none) */
    MPI_Datatype t[] = {MPI_WCHAR, MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_DOUBLE};
    for (int i = 0; i < 4; i++) {
      MPI_Aint ext = 0;
      int size = 0;
      MPI_Pack_external_size("external32", 1, t[i], &ext);
      MPI_Type_size(t[i], &size);
      if (ext == size)
        continue;
      rc = MPI_File_set_view(fh, 0, t[i], t[i], "external32", MPI_INFO_NULL);
      CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP,
            "external32, a type of %d bytes there and %d here: class %d", (int)ext, size,
            error_class(rc));
      break;
    }
    rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "internal", MPI_INFO_NULL);
    CHECK(rc == MPI_SUCCESS, "internal: class %d", error_class(rc));
    rc = MPI_Register_datarep("mine", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL,
                              NULL, NULL);
    CHECK(error_class(rc) == MPI_ERR_UNSUPPORTED_DATAREP, "register_datarep: class %d",
          error_class(rc));
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    CHECK(strstr(msg, "not supported"), "register_datarep message '%s'", msg);
  }
  int rc = MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  CHECK(rc == MPI_SUCCESS, "native view after the refusals %d", rc);
  MPI_File_close(&fh);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  aggio = mpiio_check_mode();
  char path[512];
  mpiio_path(path, sizeof path, "errors");
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                &fh);
  char rec[16];
  memset(rec, 'e', sizeof rec);
  MPI_File_write_at_all(fh, 16 * rank, rec, 16, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_File_close(&fh);
  if (argc > 1 && strcmp(argv[1], "fatal") == 0) {
    /* ctest expects the abort and its message (mpiio.errors_are_fatal) */
    MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    MPI_File_set_errhandler(fh, MPI_ERRORS_ARE_FATAL);
    MPI_File_write_at(fh, 0, rec, 16, MPI_BYTE, MPI_STATUS_IGNORE);
    fprintf(stderr, "FAIL: still running after an error under MPI_ERRORS_ARE_FATAL\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  open_errors(path, test_dir());
  if (aggio)
    per_error_codes(test_dir());
  access_errors(path);
  handlers(path);
  fortran_handles(path);
  datareps(path);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    MPI_File_delete(path, MPI_INFO_NULL);
  int status = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}
