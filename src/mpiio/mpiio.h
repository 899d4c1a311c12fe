/*
 * mpiio.h - what the files of libaggio-mpiio share.  The library defines
 * the MPI_File_* functions (MPI 3.1, chapter 13) on top of libaggio, so that
 * an unmodified program reaches aggio by LD_PRELOAD, by linking this library
 * before the MPI library, or through aggio-run (docs/mpiio.md).
 *
 * Handles.  MPI_File is an opaque pointer in both Open MPI and MPICH.  A
 * file that aggio serves gets a struct mpiio_file of ours, and the MPI_File
 * the program sees is that struct's address, registered in a table
 * (handles.c).  A file sent to the MPI library's own MPI-IO (passthrough.c)
 * keeps the MPI library's handle, which is never in the table: every call
 * looks the handle up and forwards to aggio or to PMPI_File_*.
 */
#ifndef AGGIO_MPIIO_H
#define AGGIO_MPIIO_H

#include <mpi.h>

#include "aggio.h"

/* Fortran handles of aggio files (MPI_File_c2f) start here, far above
 * those the MPI libraries give out (small table indices), so that f2c
 * tells the two apart. */
#define MPIIO_FINT_BASE 0x40000000

struct mpiio_file {
  aggio_file af;
  MPI_Errhandler errhandler; /* the file's handler (errors.c) */
  int amode;                 /* to tell a read on a write-only file */
  int slot;                  /* index in the handle table (Fortran handle) */
};

/* ---- handles.c ------------------------------------------------------------- */

/* The aggio file behind fh, or NULL when fh is not one of ours (the MPI
 * library's handle, MPI_FILE_NULL, or garbage). */
struct mpiio_file *mpiio_lookup(MPI_File fh);
/* Enters f in the table and returns its MPI_File; MPI_FILE_NULL when the
 * table cannot grow. */
MPI_File mpiio_register(struct mpiio_file *f);
void mpiio_unregister(struct mpiio_file *f);
/* The aggio file of a Fortran handle, or NULL. */
struct mpiio_file *mpiio_from_fint(MPI_Fint fint);
/* Registered files, in slot order, into out (at most cap); the count. */
int mpiio_all_files(struct mpiio_file **out, int cap);
int mpiio_file_count(void);

/* ---- errors.c -------------------------------------------------------------- */

/* The MPI error class of an AGGIO_ERR_* code (0 -> MPI_SUCCESS): after
 * MPI_Finalize, where no code with a message can be made any more. */
int mpiio_error_class(int aggio_code);
/* The MPI error code for an AGGIO_ERR_* code (0 -> MPI_SUCCESS); amode
 * tells a read on a write-only file (MPI_ERR_ACCESS) from a write on a
 * read-only one (MPI_ERR_READ_ONLY), which libaggio reports alike. */
int mpiio_error_code(int aggio_code, int amode);
/* The same for a data access of count elements: the rank that passed a
 * negative count gets MPI_ERR_COUNT (libaggio says "invalid argument" on
 * every rank of a collective call), and so does one whose large count
 * (above INT_MAX) no datatype could describe (large_count.c). */
int mpiio_data_error(int aggio_code, int amode, MPI_Count count);
/* The end of a blocking data call on f: MPI_SUCCESS, or the mapped code
 * (mpiio_data_error) through f's handler. */
int mpiio_finish_data(struct mpiio_file *f, int aggio_rc, MPI_Count count);
/* A non-blocking call's NULL request pointer: MPI_ERR_REQUEST through f's
 * handler. */
int mpiio_null_request(struct mpiio_file *f);
/* An error code of the given MPI class whose MPI_Error_string is msg. */
int mpiio_error_with_message(int mpi_class, const char *msg);
/* The end of every call on an aggio file: maps rc, remembers aggio's
 * message for MPI_Error_string and invokes the file's error handler (f
 * NULL: the handler of MPI_FILE_NULL).  Returns the MPI code. */
int mpiio_finish(struct mpiio_file *f, int aggio_rc);
/* The same for an MPI error code found by this library itself. */
int mpiio_raise(struct mpiio_file *f, int mpi_code);
/* The handler new aggio files start with (MPI_FILE_NULL's). */
MPI_Errhandler mpiio_default_errhandler(void);
/* Attaches eh to f, keeping the handler alive while it is attached. */
void mpiio_attach_errhandler(struct mpiio_file *f, MPI_Errhandler eh);
void mpiio_detach_errhandler(struct mpiio_file *f);

/* ---- passthrough.c --------------------------------------------------------- */

/* 1 when the hints in effect for path on this rank (environment, hints
 * files, info) send the file to the MPI library's MPI-IO. */
int mpiio_passthrough_here(const char *path, MPI_Info info);
/* Collective over comm: *wanted = 1 when the file goes to the MPI library,
 * 0 when aggio serves it.  Returns MPI_SUCCESS, or on every rank an MPI
 * error code when the ranks disagree or a rank is not ready (ready: 0, or
 * why not: a NULL handle pointer; no memory for an aggio handle). */
enum { MPIIO_READY = 0, MPIIO_NOT_READY_ARG = 1, MPIIO_NOT_READY_MEM = 2 };
int mpiio_passthrough_wanted(MPI_Comm comm, const char *path, MPI_Info info, int ready,
                             int *wanted);

/* ---- requests.c ------------------------------------------------------------ */

/* A non-blocking call on an aggio file, in three steps (forward.c):
 *   q = mpiio_request_new(f, count);     the MPI request, made first: once
 *                                        libaggio has started a collective
 *                                        operation, it has to run;
 *   rc = aggio_file_i...(..., &ar);
 *   return mpiio_request_started(f, q, count, rc, ar, request);
 * q is NULL when memory ran out; started() then lets the operation run to
 * its end and fails the call with MPI_ERR_NO_MEM.  The program's MPI_Wait,
 * MPI_Test... (defined in requests.c) complete the request. */
struct mpiio_request;
struct mpiio_request *mpiio_request_new(struct mpiio_file *f, MPI_Count count);
int mpiio_request_started(struct mpiio_file *f, struct mpiio_request *q, MPI_Count count,
                          int aggio_rc, aggio_request ar, MPI_Request *request);
/* After f's close (NULL: after every file's, at MPI_Finalize), which
 * completed their operations: the requests of f take their outcome, and
 * report it, if they report anything, through MPI_FILE_NULL's handler. */
void mpiio_requests_closed(struct mpiio_file *f);
/* Completes the freed requests whose operation has ended. */
void mpiio_requests_reap(void);
/* Between two rounds of a loop that polls MPI and aggio and moved nothing
 * (*round counts them, from 0): the first ones yield the processor (the
 * other side may be one message away), then sleep from 10 us, doubling up
 * to 200 us. */
void mpiio_pause(int *round);

/* ---- files.c --------------------------------------------------------------- */

/* What MPI_Abort does (MPI_ERRORS_ARE_FATAL too): what write-behind holds
 * on this node reaches the file first, then PMPI_Abort. */
int mpiio_abort(MPI_Comm comm, int errorcode);
/* MPI_Register_datarep and its large-count twin `call`: refused, with
 * MPI_ERR_UNSUPPORTED_DATAREP through MPI_FILE_NULL's handler. */
int mpiio_refuse_datarep(const char *call, const char *datarep);

#endif
