/*
 * forward.c - the MPI_File_* definitions generated from calls.h (and their
 * PMPI_File_* names, next.h).
 */
#include "calls.h"
#include "mpiio.h"
#include "next.h"

#define MPIIO_ARGS(...) __VA_ARGS__

#define MPIIO_DEFINE_FORWARD(name, params, args)                       \
  int MPI_File_##name params {                                         \
    struct mpiio_file *f = mpiio_lookup(fh);                           \
    if (!f)                                                            \
      return MPIIO_NEXT(File_##name)(fh, MPIIO_ARGS args);          \
    return mpiio_finish(f, aggio_file_##name(f->af, MPIIO_ARGS args)); \
  }                                                                    \
  MPIIO_PROFILED(File_##name)
MPIIO_FORWARD_CALLS(MPIIO_DEFINE_FORWARD)

#define MPIIO_DEFINE_DATA(name, params, args)                                      \
  int MPI_File_##name params {                                                     \
    struct mpiio_file *f = mpiio_lookup(fh);                                       \
    if (!f)                                                                        \
      return MPIIO_NEXT(File_##name)(fh, MPIIO_ARGS args);                         \
    return mpiio_finish_data(f, aggio_file_##name(f->af, MPIIO_ARGS args), count); \
  }                                                                                \
  MPIIO_PROFILED(File_##name)
MPIIO_DATA_CALLS(MPIIO_DEFINE_DATA)

/* libaggio starts the operation and returns at once; an argument error
 * or a failure is the completing call's (requests.c), on every rank. */
#define MPIIO_DEFINE_NONBLOCKING(name, params, args)                               \
  int MPI_File_##name params {                                                     \
    struct mpiio_file *f = mpiio_lookup(fh);                                       \
    if (!f)                                                                        \
      return MPIIO_NEXT(File_##name)(fh, MPIIO_ARGS args, request);             \
    if (!request)                                                                  \
      return mpiio_null_request(f);                                                \
    struct mpiio_request *q = mpiio_request_new(f, count);                         \
    aggio_request ar = AGGIO_REQUEST_NULL;                                         \
    int rc = aggio_file_##name(f->af, MPIIO_ARGS args, &ar);                       \
    return mpiio_request_started(f, q, count, rc, ar, request);                    \
  }                                                                                \
  MPIIO_PROFILED(File_##name)
MPIIO_NONBLOCKING_CALLS(MPIIO_DEFINE_NONBLOCKING)
