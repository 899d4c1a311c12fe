/*
 * errors.c - aggio's errors as MPI error classes and codes, and the file
 * error handlers (MPI 3.1 sections 8.3.3 and 13.7).
 *
 * Codes.  Each AGGIO_ERR_* maps to one MPI class (the table below).  Each
 * error reported gets an MPI error code of its own (MPI_Add_error_code, of
 * that class), so MPI_Error_class gives the class the standard names, and
 * MPI_Error_string - which this library also defines - gives that error's
 * message ("rank 3: open(/x): Permission denied"), however many errors
 * came after it.  MPI cannot free an added code, so they are recycled
 * (below, "added codes").  Where the MPI library refuses to add a code the
 * class itself is returned and MPI_Error_string is the MPI library's.
 *
 * Handlers.  MPI's handler objects cannot be invoked on a file that is not
 * the MPI library's, so this library remembers the function behind every
 * handler made by MPI_File_create_errhandler and calls it itself.  The
 * default on files is MPI_ERRORS_RETURN (the handler of MPI_FILE_NULL,
 * which MPI_File_set_errhandler(MPI_FILE_NULL, ...) changes); with
 * MPI_ERRORS_ARE_FATAL (or MPI_ERRORS_ABORT) the program asked for the
 * message and the abort.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpiio.h"
#include "next.h"

/* X(AGGIO name, MPI class) */
#define MPIIO_CLASS_MAP(X)                      \
  X(ARG, MPI_ERR_ARG)                           \
  X(BAD_FILE, MPI_ERR_FILE)                     \
  X(AMODE, MPI_ERR_AMODE)                       \
  X(NO_SUCH_FILE, MPI_ERR_NO_SUCH_FILE)         \
  X(FILE_EXISTS, MPI_ERR_FILE_EXISTS)           \
  X(ACCESS, MPI_ERR_ACCESS)                     \
  X(NO_SPACE, MPI_ERR_NO_SPACE)                 \
  X(IO, MPI_ERR_IO)                             \
  X(OVERFLOW, MPI_ERR_COUNT)                    \
  X(OFFSET, MPI_ERR_ARG)                        \
  X(TYPE, MPI_ERR_TYPE)                         \
  X(NOMEM, MPI_ERR_NO_MEM)                      \
  X(HINT_MISMATCH, MPI_ERR_NOT_SAME)            \
  X(MPI, MPI_ERR_OTHER)                         \
  X(READ_ONLY, MPI_ERR_READ_ONLY)               \
  X(UNSUPPORTED, MPI_ERR_UNSUPPORTED_OPERATION) \
  X(NOT_SAME, MPI_ERR_NOT_SAME)                 \
  X(FILE_IN_USE, MPI_ERR_FILE_IN_USE)           \
  X(NAME, MPI_ERR_BAD_FILE)                     \
  X(REQUEST, MPI_ERR_REQUEST)

static int class_of(int aggio_code) {
  switch (aggio_code) {
#define MPIIO__CASE(name, cls) \
  case AGGIO_ERR_##name: return cls;
    MPIIO_CLASS_MAP(MPIIO__CASE)
#undef MPIIO__CASE
  default: return MPI_ERR_OTHER;
  }
}

/* ---- added codes and their messages ----------------------------------- */
/*
 * A code per distinct message (class and text): the same message again
 * gets its code again, so a program failing in a loop adds no codes.  The
 * texts of the last MPIIO_KEPT messages are kept; an older code says that
 * its message is gone rather than show another error's.  At most
 * MPIIO_MAX_CODES codes are added (and one more for each class met only
 * after that); past that a new message takes the code of its class whose
 * message went longest ago (or, when none of its class has gone, the
 * oldest of its class).  Only then can an old code read a newer message:
 * MPI gives no way to tell the two errors apart.
 */

#define MPIIO_KEPT 64
#define MPIIO_MAX_CODES 256
#define MPIIO_CLASSES 64 /* more than the classes aggio reports */
#define MPIIO_MSG_LEN 512

struct added_code {
  int mpi_class;
  int code;
  int kept;           /* its message's index in kept[], -1 once gone */
  unsigned long used; /* when it was last given (tick) */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct added_code codes[MPIIO_MAX_CODES + MPIIO_CLASSES];
static int ncodes;
static char kept[MPIIO_KEPT][MPIIO_MSG_LEN];
static int nkept; /* entries of kept[] ever used; then every one is */
static unsigned long tick;

/* The code whose kept message is cls/msg, or NULL (locked). */
static struct added_code *code_of_message(int mpi_class, const char *msg) {
  for (int i = 0; i < ncodes; i++)
    if (codes[i].mpi_class == mpi_class && codes[i].kept >= 0 &&
        strcmp(kept[codes[i].kept], msg) == 0)
      return &codes[i];
  return NULL;
}

/* The code of mpi_class given longest ago, one whose message is gone
 * before one whose message is kept; NULL when the class has none (locked). */
static struct added_code *oldest_of_class(int mpi_class) {
  struct added_code *best = NULL;
  for (int i = 0; i < ncodes; i++) {
    struct added_code *c = &codes[i];
    if (c->mpi_class != mpi_class)
      continue;
    int gone = c->kept < 0, best_gone = best && best->kept < 0;
    if (!best || gone > best_gone || (gone == best_gone && c->used < best->used))
      best = c;
  }
  return best;
}

/* The code of mpi_class to carry a new message: a new one while fewer than
 * MPIIO_MAX_CODES exist, or when the class has none yet (so that a class
 * met late still gets its messages: at most MPIIO_CLASSES more); else the
 * class's oldest (locked).  NULL when the MPI library adds no code. */
static struct added_code *code_for(int mpi_class) {
  struct added_code *old = oldest_of_class(mpi_class);
  int code;
  int room =
      ncodes < MPIIO_MAX_CODES || (!old && ncodes < MPIIO_MAX_CODES + MPIIO_CLASSES);
  if (room && PMPI_Add_error_code(mpi_class, &code) == MPI_SUCCESS) {
    codes[ncodes] = (struct added_code){mpi_class, code, -1, 0};
    return &codes[ncodes++];
  }
  return old;
}

/* A slot of kept[] for c's message: a free one, else the one of the code
 * given longest ago, whose message is then gone (locked). */
static int kept_slot(struct added_code *c) {
  if (c->kept >= 0)
    return c->kept;
  if (nkept < MPIIO_KEPT)
    return nkept++;
  struct added_code *oldest = NULL;
  for (int i = 0; i < ncodes; i++)
    if (codes[i].kept >= 0 && (!oldest || codes[i].used < oldest->used))
      oldest = &codes[i];
  int slot = oldest->kept; /* MPIIO_KEPT messages are kept: one exists */
  oldest->kept = -1;
  return slot;
}

int mpiio_error_with_message(int mpi_class, const char *msg) {
  pthread_mutex_lock(&lock);
  struct added_code *c = code_of_message(mpi_class, msg);
  if (!c && (c = code_for(mpi_class)) != NULL) {
    c->kept = kept_slot(c);
    snprintf(kept[c->kept], sizeof kept[c->kept], "%s", msg);
  }
  int code = c ? c->code : mpi_class;
  if (c)
    c->used = ++tick;
  pthread_mutex_unlock(&lock);
  return code;
}

int mpiio_error_class(int aggio_code) {
  return aggio_code == AGGIO_SUCCESS ? MPI_SUCCESS : class_of(aggio_code);
}

int mpiio_error_code(int aggio_code, int amode) {
  if (aggio_code == AGGIO_SUCCESS)
    return MPI_SUCCESS;
  int cls = class_of(aggio_code);
  if (aggio_code == AGGIO_ERR_READ_ONLY && (amode & MPI_MODE_WRONLY))
    cls = MPI_ERR_ACCESS; /* a read on a write-only file, as ROMIO says */
  const char *detail = aggio_error_message();
  char msg[MPIIO_MSG_LEN];
  snprintf(msg, sizeof msg, "aggio: %s%s%s", aggio_strerror(aggio_code),
           detail && *detail ? ": " : "", detail ? detail : "");
  return mpiio_error_with_message(cls, msg);
}

/* A count above INT_MAX reaches libaggio's int API as a derived datatype
 * and count 1 (large_count.c), so it comes here only when no datatype
 * could describe it: libaggio was then given a negative count, for every
 * rank of a collective call to fail with it rather than wait. */
int mpiio_data_error(int aggio_code, int amode, MPI_Count count) {
  if (aggio_code == AGGIO_ERR_ARG && count < 0)
    return mpiio_error_with_message(MPI_ERR_COUNT, "aggio: negative count");
  if (aggio_code == AGGIO_ERR_ARG && count > INT_MAX) {
    char msg[MPIIO_MSG_LEN];
    snprintf(msg, sizeof msg,
             "aggio: count %lld: no derived datatype describes that many elements "
             "of this datatype",
             (long long)count);
    return mpiio_error_with_message(MPI_ERR_COUNT, msg);
  }
  return mpiio_error_code(aggio_code, amode);
}

int mpiio_finish_data(struct mpiio_file *f, int aggio_rc, MPI_Count count) {
  return aggio_rc == AGGIO_SUCCESS
             ? MPI_SUCCESS
             : mpiio_raise(f, mpiio_data_error(aggio_rc, f->amode, count));
}

int mpiio_null_request(struct mpiio_file *f) {
  return mpiio_raise(f,
                     mpiio_error_with_message(MPI_ERR_REQUEST, "aggio: request is NULL"));
}

/* The text of an added code (locked): its message, or, once that is gone,
 * what it was and that it is gone.  0 when the code is not aggio's. */
static int added_code_text(int errorcode, char *string) {
  for (int i = 0; i < ncodes; i++) {
    const struct added_code *c = &codes[i];
    if (c->code != errorcode || c->code == c->mpi_class)
      continue;
    if (c->kept >= 0) {
      snprintf(string, MPI_MAX_ERROR_STRING, "%s", kept[c->kept]);
      return 1;
    }
    char cls[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPIIO_NEXT(Error_string)(c->mpi_class, cls, &len);
    snprintf(string, MPI_MAX_ERROR_STRING,
             "aggio: %s (this error's message is no longer kept: aggio keeps the "
             "last %d)",
             cls, MPIIO_KEPT);
    return 1;
  }
  return 0;
}

/* MPI_Error_string: aggio's message for aggio's codes. */
int MPI_Error_string(int errorcode, char *string, int *resultlen) {
  int found = 0;
  if (string && resultlen) {
    pthread_mutex_lock(&lock);
    found = added_code_text(errorcode, string);
    pthread_mutex_unlock(&lock);
  }
  if (!found)
    return MPIIO_NEXT(Error_string)(errorcode, string, resultlen);
  *resultlen = (int)strlen(string);
  return MPI_SUCCESS;
}
MPIIO_PROFILED(Error_string)

/* ---- handlers ------------------------------------------------------------- */

/* A handler made by MPI_File_create_errhandler: its function, and the
 * references that keep the MPI object alive: the program's (create and
 * each get_errhandler give one, MPI_Errhandler_free takes one) and aggio
 * files' (each file it is attached to). */
struct handler {
  MPI_Errhandler eh;
  MPI_File_errhandler_function *fn;
  int user_refs;
  int file_refs;
};

#define MPIIO_MAX_HANDLERS 256
static struct handler handlers[MPIIO_MAX_HANDLERS];
static int nhandlers;
/* References to predefined handlers handed out by get_errhandler on aggio
 * files, which the MPI library never counted: their MPI_Errhandler_free
 * must not reach it. */
static int predefined_refs;
static MPI_Errhandler null_handler = MPI_ERRORS_RETURN; /* MPI_FILE_NULL's */

static struct handler *find_handler(MPI_Errhandler eh) { /* locked */
  for (int i = 0; i < nhandlers; i++)
    if (handlers[i].eh == eh)
      return &handlers[i];
  return NULL;
}

static int is_predefined(MPI_Errhandler eh) {
#ifdef MPI_ERRORS_ABORT
  if (eh == MPI_ERRORS_ABORT)
    return 1;
#endif
  return eh == MPI_ERRORS_RETURN || eh == MPI_ERRORS_ARE_FATAL;
}

/* Drops a reference; the MPI object goes once nothing holds it (locked). */
static void release(struct handler *h) {
  if (h->user_refs > 0 || h->file_refs > 0)
    return;
  MPI_Errhandler eh = h->eh;
  *h = handlers[--nhandlers];
  MPIIO_NEXT(Errhandler_free)(&eh);
}

MPI_Errhandler mpiio_default_errhandler(void) {
  pthread_mutex_lock(&lock);
  MPI_Errhandler eh = null_handler;
  pthread_mutex_unlock(&lock);
  return eh;
}

void mpiio_attach_errhandler(struct mpiio_file *f, MPI_Errhandler eh) {
  pthread_mutex_lock(&lock);
  struct handler *h = find_handler(eh);
  if (h)
    h->file_refs++;
  pthread_mutex_unlock(&lock);
  f->errhandler = eh;
}

void mpiio_detach_errhandler(struct mpiio_file *f) {
  pthread_mutex_lock(&lock);
  struct handler *h = find_handler(f->errhandler);
  if (h) {
    h->file_refs--;
    release(h);
  }
  pthread_mutex_unlock(&lock);
  f->errhandler = MPI_ERRHANDLER_NULL;
}

/* Runs the handler of f (NULL: MPI_FILE_NULL's) for code. */
static void invoke(struct mpiio_file *f, int code) {
  MPI_File fh = f ? (MPI_File)f : MPI_FILE_NULL;
  pthread_mutex_lock(&lock);
  MPI_Errhandler eh = f ? f->errhandler : null_handler;
  struct handler *h = find_handler(eh);
  MPI_File_errhandler_function *fn = h ? h->fn : NULL;
  pthread_mutex_unlock(&lock);
  if (eh == MPI_ERRORS_RETURN)
    return;
  if (fn) {
    fn(&fh, &code);
    return;
  }
  if (is_predefined(eh) || eh == MPI_ERRHANDLER_NULL) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(code, msg, &len);
    fprintf(stderr, "aggio-mpiio: MPI_ERRORS_ARE_FATAL on a file: %s\n", msg);
    fflush(stderr);
    mpiio_abort(MPI_COMM_WORLD, code);
  }
}

int mpiio_raise(struct mpiio_file *f, int code) {
  if (code != MPI_SUCCESS)
    invoke(f, code);
  return code;
}

int mpiio_finish(struct mpiio_file *f, int aggio_rc) {
  if (aggio_rc == AGGIO_SUCCESS)
    return MPI_SUCCESS;
  return mpiio_raise(f, mpiio_error_code(aggio_rc, f ? f->amode : 0));
}

int MPI_File_create_errhandler(MPI_File_errhandler_function *fn, MPI_Errhandler *eh) {
  int rc = MPIIO_NEXT(File_create_errhandler)(fn, eh);
  if (rc != MPI_SUCCESS)
    return rc;
  pthread_mutex_lock(&lock);
  if (nhandlers < MPIIO_MAX_HANDLERS)
    handlers[nhandlers++] = (struct handler){*eh, fn, 1, 0};
  else
    rc = MPI_ERR_INTERN; /* it could not be called on aggio's files */
  pthread_mutex_unlock(&lock);
  if (rc != MPI_SUCCESS)
    MPIIO_NEXT(Errhandler_free)(eh);
  return rc;
}
MPIIO_PROFILED(File_create_errhandler)

int MPI_Errhandler_free(MPI_Errhandler *eh) {
  if (!eh)
    return MPIIO_NEXT(Errhandler_free)(eh);
  pthread_mutex_lock(&lock);
  struct handler *h = find_handler(*eh);
  int mine = 0;
  if (h && h->user_refs > 0) {
    h->user_refs--;
    release(h);
    mine = 1;
  } else if (is_predefined(*eh) && predefined_refs > 0) {
    predefined_refs--;
    mine = 1;
  }
  pthread_mutex_unlock(&lock);
  if (!mine)
    return MPIIO_NEXT(Errhandler_free)(eh);
  *eh = MPI_ERRHANDLER_NULL;
  return MPI_SUCCESS;
}
MPIIO_PROFILED(Errhandler_free)

/* 1 when eh can serve an aggio file: predefined, or made by
 * MPI_File_create_errhandler here. */
static int usable_on_files(MPI_Errhandler eh) {
  pthread_mutex_lock(&lock);
  int ok = is_predefined(eh) || find_handler(eh) != NULL;
  pthread_mutex_unlock(&lock);
  return ok;
}

int MPI_File_set_errhandler(MPI_File fh, MPI_Errhandler eh) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f) {
    int rc = MPIIO_NEXT(File_set_errhandler)(fh, eh);
    if (rc == MPI_SUCCESS && fh == MPI_FILE_NULL) {
      pthread_mutex_lock(&lock);
      null_handler = eh;
      pthread_mutex_unlock(&lock);
    }
    return rc;
  }
  if (!usable_on_files(eh)) {
    const char *msg = "aggio: not a file error handler (make it with "
                      "MPI_File_create_errhandler)";
    return mpiio_raise(f, mpiio_error_with_message(MPI_ERR_ARG, msg));
  }
  mpiio_detach_errhandler(f);
  mpiio_attach_errhandler(f, eh);
  return MPI_SUCCESS;
}
MPIIO_PROFILED(File_set_errhandler)

int MPI_File_get_errhandler(MPI_File fh, MPI_Errhandler *eh) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f)
    return MPIIO_NEXT(File_get_errhandler)(fh, eh);
  if (!eh)
    return mpiio_raise(
        f, mpiio_error_with_message(MPI_ERR_ARG, "aggio: errhandler is NULL"));
  pthread_mutex_lock(&lock);
  *eh = f->errhandler;
  struct handler *h = find_handler(*eh);
  if (h)
    h->user_refs++;
  else
    predefined_refs++;
  pthread_mutex_unlock(&lock);
  return MPI_SUCCESS;
}
MPIIO_PROFILED(File_get_errhandler)

int MPI_File_call_errhandler(MPI_File fh, int errorcode) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f)
    return MPIIO_NEXT(File_call_errhandler)(fh, errorcode);
  invoke(f, errorcode);
  return MPI_SUCCESS;
}
MPIIO_PROFILED(File_call_errhandler)

/* MPI lets a process do local work before it aborts, not communicate:
 * aggio_drain writes what write-behind holds on this node for every open
 * file (saying on stderr what it could not), which the kill that follows
 * would otherwise lose although the writes had returned success. */
int mpiio_abort(MPI_Comm comm, int errorcode) {
  aggio_drain();
  return MPIIO_NEXT(Abort)(comm, errorcode);
}
