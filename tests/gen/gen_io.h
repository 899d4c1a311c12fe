/*
 * gen_io.h - the I/O interface a generated program runs through, chosen
 * at compile time: plain MPI-IO (gen_mpiio: the MPI library's own, or
 * aggio's through interposition) or libaggio's API (gen_aggio, built with
 * GEN_AGGIO).  aggio's API mirrors MPI-IO's argument for argument, so the
 * mapping is a rename: GIO(write_at_all) is MPI_File_write_at_all or
 * aggio_file_write_at_all.  Only return codes differ: an MPI error code,
 * or 0 / a negative AGGIO_ERR_*.
 */
#ifndef AGGIO_GEN_IO_H
#define AGGIO_GEN_IO_H

#include <mpi.h>
#include <stdio.h>

#ifdef GEN_AGGIO
#include "aggio.h"

typedef aggio_file gio_file;
typedef aggio_request gio_request;
#define GIO_API "libaggio"
#define GIO_REQUEST_NULL AGGIO_REQUEST_NULL
#define GIO(call) aggio_file_##call
#define gio_wait aggio_wait
#define gio_test aggio_test
#define gio_waitall aggio_waitall
#define gio_testall aggio_testall
#define gio_waitany aggio_waitany

static inline int gio_ok(int rc) { return rc == AGGIO_SUCCESS; }

/* "fail:<what>" for a failed call's code, into out. */
static inline void gio_describe(int rc, char *out, size_t cap) {
  snprintf(out, cap, "fail:%s", aggio_strerror(rc));
}

/* What the library says about the failure, for stderr. */
static inline void gio_message(int rc, char *out, size_t cap) {
  (void)rc;
  snprintf(out, cap, "%s", aggio_error_message());
}

/* After a call on several requests returned rc: request i's outcome,
 * from its status (aggio keeps each request's outcome in MPI_ERROR). */
static inline int gio_outcome(int rc, const MPI_Status *st) {
  return rc == AGGIO_SUCCESS ? rc : st->MPI_ERROR;
}

#else

typedef MPI_File gio_file;
typedef MPI_Request gio_request;
#define GIO_API "MPI-IO"
#define GIO_REQUEST_NULL MPI_REQUEST_NULL
#define GIO(call) MPI_File_##call
#define gio_wait MPI_Wait
#define gio_test MPI_Test
#define gio_waitall MPI_Waitall
#define gio_testall MPI_Testall
#define gio_waitany MPI_Waitany

static inline int gio_ok(int rc) { return rc == MPI_SUCCESS; }

static inline void gio_describe(int rc, char *out, size_t cap) {
  int cls = -1;
  MPI_Error_class(rc, &cls);
  snprintf(out, cap, "fail:class%d", cls);
}

static inline void gio_message(int rc, char *out, size_t cap) {
  int len = 0;
  char msg[MPI_MAX_ERROR_STRING];
  MPI_Error_string(rc, msg, &len);
  snprintf(out, cap, "%s", msg);
}

/* MPI sets the statuses' MPI_ERROR only for MPI_ERR_IN_STATUS. */
static inline int gio_outcome(int rc, const MPI_Status *st) {
  return rc == MPI_ERR_IN_STATUS ? st->MPI_ERROR : rc;
}

#endif

#endif
