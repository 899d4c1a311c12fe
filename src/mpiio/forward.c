/*
 * forward.c - the MPI_File_* definitions generated from calls.h.
 */
#include "calls.h"
#include "mpiio.h"

#define MPIIO_ARGS(...) __VA_ARGS__

#define MPIIO_DEFINE_FORWARD(name, params, args)                       \
  int MPI_File_##name params {                                         \
    struct mpiio_file *f = mpiio_lookup(fh);                           \
    if (!f)                                                            \
      return PMPI_File_##name(fh, MPIIO_ARGS args);                    \
    return mpiio_finish(f, aggio_file_##name(f->af, MPIIO_ARGS args)); \
  }
MPIIO_FORWARD_CALLS(MPIIO_DEFINE_FORWARD)

/* libaggio reports a negative count as an invalid argument (on every rank
 * of a collective call); the rank that passed it gets MPI_ERR_COUNT. */
static int finish_data(struct mpiio_file *f, int rc, int count) {
  if (rc == AGGIO_ERR_ARG && count < 0)
    return mpiio_raise(f,
                       mpiio_error_with_message(MPI_ERR_COUNT, "aggio: negative count"));
  return mpiio_finish(f, rc);
}

#define MPIIO_DEFINE_DATA(name, params, args)                                \
  int MPI_File_##name params {                                               \
    struct mpiio_file *f = mpiio_lookup(fh);                                 \
    if (!f)                                                                  \
      return PMPI_File_##name(fh, MPIIO_ARGS args);                          \
    return finish_data(f, aggio_file_##name(f->af, MPIIO_ARGS args), count); \
  }
MPIIO_DATA_CALLS(MPIIO_DEFINE_DATA)

/* An argument error or failure is the starting call's (the operation ran
 * in it): no request is made then. */
#define MPIIO_DEFINE_NONBLOCKING(name, params, args, blocking)                     \
  int MPI_File_##name params {                                                     \
    struct mpiio_file *f = mpiio_lookup(fh);                                       \
    if (!f)                                                                        \
      return PMPI_File_##name(fh, MPIIO_ARGS args, request);                       \
    if (!request)                                                                  \
      return mpiio_raise(                                                          \
          f, mpiio_error_with_message(MPI_ERR_REQUEST, "aggio: request is NULL")); \
    *request = MPI_REQUEST_NULL;                                                   \
    MPI_Status status;                                                             \
    int rc = aggio_file_##blocking(f->af, MPIIO_ARGS args, &status);               \
    rc = finish_data(f, rc, count);                                                \
    if (rc != MPI_SUCCESS)                                                         \
      return rc;                                                                   \
    return mpiio_raise(f, mpiio_completed_request(&status, request));              \
  }
MPIIO_NONBLOCKING_CALLS(MPIIO_DEFINE_NONBLOCKING)
