/*
 * forward.c - the MPI_File_* definitions generated from calls.h.
 */
#include "calls.h"
#include "mpiio.h"

#define MPIIO_ARGS(...) __VA_ARGS__

#define MPIIO_DEFINE_FORWARD(name, params, args)                   \
  int MPI_File_##name params {                                     \
    struct mpiio_file *f = mpiio_lookup(fh);                       \
    if (!f)                                                        \
      return PMPI_File_##name(fh, MPIIO_ARGS args);                \
    return mpiio_finish(f, aggio_file_##name(f->af, MPIIO_ARGS args)); \
  }
MPIIO_FORWARD_CALLS(MPIIO_DEFINE_FORWARD)

/* An argument error or failure is the starting call's (the operation ran
 * in it): no request is made then. */
#define MPIIO_DEFINE_NONBLOCKING(name, params, args, blocking)                    \
  int MPI_File_##name params {                                                    \
    struct mpiio_file *f = mpiio_lookup(fh);                                      \
    if (!f)                                                                       \
      return PMPI_File_##name(fh, MPIIO_ARGS args, request);                      \
    if (!request)                                                                 \
      return mpiio_raise(f, mpiio_error_with_message(MPI_ERR_REQUEST,             \
                                                     "aggio: request is NULL"));  \
    *request = MPI_REQUEST_NULL;                                                  \
    MPI_Status status;                                                            \
    int rc = mpiio_finish(f, aggio_file_##blocking(f->af, MPIIO_ARGS args, &status)); \
    if (rc != MPI_SUCCESS)                                                        \
      return rc;                                                                  \
    return mpiio_raise(f, mpiio_completed_request(&status, request));             \
  }
MPIIO_NONBLOCKING_CALLS(MPIIO_DEFINE_NONBLOCKING)
