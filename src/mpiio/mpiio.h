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
/* Every registered file, oldest first, into out (at most cap); the count. */
int mpiio_all_files(struct mpiio_file **out, int cap);
int mpiio_file_count(void);

/* ---- errors.c -------------------------------------------------------------- */

/* The MPI error code for an AGGIO_ERR_* code (0 -> MPI_SUCCESS); amode
 * tells a read on a write-only file (MPI_ERR_ACCESS) from a write on a
 * read-only one (MPI_ERR_READ_ONLY), which libaggio reports alike. */
int mpiio_error_code(int aggio_code, int amode);
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
 * error code when the ranks disagree or, for an aggio open, a rank is not
 * ready (ready 0: it could not make room for the handle). */
int mpiio_passthrough_wanted(MPI_Comm comm, const char *path, MPI_Info info,
                             int ready, int *wanted);

/* ---- requests.c ------------------------------------------------------------ */

/* A completed MPI generalized request reporting status (the outcome of a
 * non-blocking call that ran to completion when it started). */
int mpiio_completed_request(const MPI_Status *status, MPI_Request *request);

#endif
