/*
 * files.c - MPI_File_open, close, delete, set_view and sync on aggio, the
 * data representations, and the end of the program: MPI_Finalize closes
 * what the program left open and says what could not be written;
 * MPI_Abort first writes out what write-behind holds on this node.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpiio.h"
#include "next.h"

/* A new handle, entered in the table; NULL when memory runs out. */
static struct mpiio_file *new_file(int amode) {
  struct mpiio_file *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->amode = amode;
  f->slot = -1;
  f->errhandler = MPI_ERRHANDLER_NULL;
  if (mpiio_register(f) == MPI_FILE_NULL) {
    free(f);
    return NULL;
  }
  return f;
}

static void drop_file(struct mpiio_file *f) {
  if (f->errhandler != MPI_ERRHANDLER_NULL)
    mpiio_detach_errhandler(f);
  mpiio_unregister(f);
  free(f);
}

/* MPI_ERR_COMM for what MPI_File_open cannot take (checked before any
 * collective call, so that a bad communicator cannot hang). */
static int check_comm(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL)
    return mpiio_error_with_message(MPI_ERR_COMM,
                                    "aggio: MPI_File_open on MPI_COMM_NULL");
  int inter = 0;
  if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
    return mpiio_error_with_message(MPI_ERR_COMM, "aggio: MPI_File_open needs an "
                                                  "intracommunicator");
  return MPI_SUCCESS;
}

int MPI_File_open(MPI_Comm comm, const char *filename, int amode, MPI_Info info,
                  MPI_File *fh) {
  int rc = check_comm(comm);
  if (rc != MPI_SUCCESS)
    return mpiio_raise(NULL, rc);
  struct mpiio_file *f = fh ? new_file(amode) : NULL;
  int ready = !fh ? MPIIO_NOT_READY_ARG : !f ? MPIIO_NOT_READY_MEM : MPIIO_READY;
  int pass = 0;
  rc = mpiio_passthrough_wanted(comm, filename, info, ready, &pass);
  if (rc != MPI_SUCCESS || pass) {
    if (f)
      drop_file(f);
    return rc != MPI_SUCCESS ? mpiio_raise(NULL, rc)
                             : MPIIO_NEXT(File_open)(comm, filename, amode, info, fh);
  }
  rc = aggio_file_open(comm, filename, amode, info, &f->af);
  if (rc != AGGIO_SUCCESS) {
    drop_file(f);
    *fh = MPI_FILE_NULL;
    return mpiio_raise(NULL, mpiio_error_code(rc, amode));
  }
  mpiio_attach_errhandler(f, mpiio_default_errhandler());
  *fh = (MPI_File)f;
  return MPI_SUCCESS;
}
MPIIO_PROFILED(File_open)

int MPI_File_close(MPI_File *fh) {
  struct mpiio_file *f = fh ? mpiio_lookup(*fh) : NULL;
  if (!f)
    return MPIIO_NEXT(File_close)(fh);
  /* the handler runs while the handle is still valid */
  int rc = mpiio_finish(f, aggio_file_close(&f->af));
  mpiio_requests_closed(f); /* the close completed their operations */
  drop_file(f);
  *fh = MPI_FILE_NULL;
  return rc;
}
MPIIO_PROFILED(File_close)

int MPI_File_delete(const char *filename, MPI_Info info) {
  if (mpiio_passthrough_here(filename, info))
    return MPIIO_NEXT(File_delete)(filename, info);
  return mpiio_finish(NULL, aggio_file_delete(filename, info));
}
MPIIO_PROFILED(File_delete)

/* "native", "internal" and "external32" (aggio.h says which types);
 * registered representations and external32 types aggio cannot keep in
 * the native layout are refused with MPI_ERR_UNSUPPORTED_DATAREP on every
 * rank: libaggio agrees on the outcome, and the data representation is
 * its only UNSUPPORTED reason. */
int MPI_File_set_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, MPI_Info info) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f)
    return MPIIO_NEXT(File_set_view)(fh, disp, etype, filetype, datarep, info);
  int rc = aggio_file_set_view(f->af, disp, etype, filetype, datarep, info);
  if (rc == AGGIO_ERR_UNSUPPORTED) {
    char msg[512];
    snprintf(msg, sizeof msg, "aggio: %s", aggio_error_message());
    return mpiio_raise(f, mpiio_error_with_message(MPI_ERR_UNSUPPORTED_DATAREP, msg));
  }
  return mpiio_finish(f, rc);
}
MPIIO_PROFILED(File_set_view)

int MPI_File_sync(MPI_File fh) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f)
    return MPIIO_NEXT(File_sync)(fh);
  int rc = mpiio_finish(f, aggio_file_sync(f->af));
  mpiio_requests_reap(); /* the sync completed the file's operations */
  return rc;
}
MPIIO_PROFILED(File_sync)

/* A registered representation could only serve the MPI library's own
 * files, and aggio's would refuse it: the call fails, clearly. */
int mpiio_refuse_datarep(const char *call, const char *datarep) {
  char msg[512];
  snprintf(msg, sizeof msg,
           "aggio: %s(\"%s\"): user data "
           "representations are not supported by aggio (native, internal, external32)",
           call, datarep ? datarep : "(null)");
  return mpiio_raise(NULL, mpiio_error_with_message(MPI_ERR_UNSUPPORTED_DATAREP, msg));
}

int MPI_Register_datarep(const char *datarep,
                         MPI_Datarep_conversion_function *read_conversion_fn,
                         MPI_Datarep_conversion_function *write_conversion_fn,
                         MPI_Datarep_extent_function *dtype_file_extent_fn,
                         void *extra_state) {
  (void)read_conversion_fn, (void)write_conversion_fn, (void)dtype_file_extent_fn;
  (void)extra_state;
  return mpiio_refuse_datarep("MPI_Register_datarep", datarep);
}
MPIIO_PROFILED(Register_datarep)

/* aggio's MPI_Finalize hook is set right after MPI_Init (aggio_init), so
 * that it runs after the hooks of libraries initialised later: HDF5 closes
 * its files from its MPI_COMM_SELF attribute, through the MPI-IO calls
 * served here, inside MPI_Finalize. */
int MPI_Init(int *argc, char ***argv) {
  int rc = MPIIO_NEXT(Init)(argc, argv);
  if (rc == MPI_SUCCESS)
    aggio_init();
  return rc;
}
MPIIO_PROFILED(Init)

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int rc = MPIIO_NEXT(Init_thread)(argc, argv, required, provided);
  if (rc == MPI_SUCCESS)
    aggio_init();
  return rc;
}
MPIIO_PROFILED(Init_thread)

/* MPI_Finalize: the libraries' hooks run first (HDF5 writes and closes its
 * files through aggio), then aggio's closes what is left, in the order it
 * was opened (every rank of a file's communicator opened its files in the
 * same order, which the handle table's slots, reused as files close, do
 * not keep), saying on stderr what write-behind acknowledged and could not
 * write.  Its outcome makes this call fail, with the error's class (no
 * code with a message can be made after MPI_Finalize), MPI finalized all
 * the same: the program can do nothing else about it.  The handles stay
 * valid until then. */
int MPI_Finalize(void) {
  mpiio_requests_closed(NULL);
  int mpi_rc = MPIIO_NEXT(Finalize)();
  int rc = aggio_finalize(); /* after MPI_Finalize: the outcome of its closes */
  struct mpiio_file *f = NULL;
  while (mpiio_all_files(&f, 1) == 1) { /* every one was closed by the hook; */
    mpiio_unregister(f);                 /* MPI is gone: its handler stays */
    free(f);
  }
  return rc != AGGIO_SUCCESS ? mpiio_error_class(rc) : mpi_rc;
}
MPIIO_PROFILED(Finalize)

/* MPI_Abort writes out what write-behind holds first (mpiio_abort). */
int MPI_Abort(MPI_Comm comm, int errorcode) { return mpiio_abort(comm, errorcode); }
MPIIO_PROFILED(Abort)
