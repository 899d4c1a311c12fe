/*
 * nonblocking.c - the non-blocking and split collective entry points
 * (aggio_file_i*, the _begin and _end calls): each makes a call
 * (core/call.c) and starts it as a request (core/request.c), whose
 * scheduler runs it; the request's own functions (aggio_wait, aggio_test,
 * ...) live with it.
 */
#include "api.h"
#include "request.h"

static int istart(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                  MPI_Datatype type, aggio_request *request, int is_write, int collective,
                  int use_fp) {
  struct call c = {.fh = fh, .offset = offset, .buf = (void *)buf, .count = count,
                   .type = type, .is_write = is_write, .collective = collective,
                   .use_fp = use_fp};
  return aggio__request_start(&c, request, 0);
}

int aggio_file_iwrite_at(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                         MPI_Datatype datatype, aggio_request *request) {
  return istart(fh, offset, buf, count, datatype, request, 1, 0, 0);
}

int aggio_file_iread_at(aggio_file fh, MPI_Offset offset, void *buf, int count,
                        MPI_Datatype datatype, aggio_request *request) {
  return istart(fh, offset, buf, count, datatype, request, 0, 0, 0);
}

int aggio_file_iwrite_at_all(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                             MPI_Datatype datatype, aggio_request *request) {
  return istart(fh, offset, buf, count, datatype, request, 1, 1, 0);
}

int aggio_file_iread_at_all(aggio_file fh, MPI_Offset offset, void *buf, int count,
                            MPI_Datatype datatype, aggio_request *request) {
  return istart(fh, offset, buf, count, datatype, request, 0, 1, 0);
}

int aggio_file_iwrite(aggio_file fh, const void *buf, int count, MPI_Datatype datatype,
                      aggio_request *request) {
  return istart(fh, 0, buf, count, datatype, request, 1, 0, 1);
}

int aggio_file_iread(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                     aggio_request *request) {
  return istart(fh, 0, buf, count, datatype, request, 0, 0, 1);
}

int aggio_file_iwrite_all(aggio_file fh, const void *buf, int count, MPI_Datatype datatype,
                          aggio_request *request) {
  return istart(fh, 0, buf, count, datatype, request, 1, 1, 1);
}

int aggio_file_iread_all(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                         aggio_request *request) {
  return istart(fh, 0, buf, count, datatype, request, 0, 1, 1);
}

/* The pointer moves when the call starts, by the whole request (MPI: the
 * next shared access may start before this one completes); a failure to
 * move it is the request's outcome. */
static int istart_shared(aggio_file fh, const void *buf, int count, MPI_Datatype type,
                         aggio_request *request, int is_write) {
  struct call c = {.fh = fh, .buf = (void *)buf, .count = count, .type = type,
                   .is_write = is_write, .kind = AGGIO_CALL_SHARED};
  if (fh && request)
    aggio__call_claim_shared(&c);
  return aggio__request_start(&c, request, 0);
}

int aggio_file_iwrite_shared(aggio_file fh, const void *buf, int count,
                             MPI_Datatype datatype, aggio_request *request) {
  return istart_shared(fh, buf, count, datatype, request, 1);
}

int aggio_file_iread_shared(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                            aggio_request *request) {
  return istart_shared(fh, buf, count, datatype, request, 0);
}

/* ---- split collectives ---------------------------------------------------------- */

/* kind: enum aggio__call_kind.  An ordered begin places every rank's data
 * first (blocking collectives, after the file's earlier operations), then
 * starts the collective access like the other split collectives. */
static int begin_kind(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                      MPI_Datatype type, int is_write, int use_fp, int kind) {
  struct aggio__err e = {0};
  if (fh && fh->nb.split) {
    aggio__fail(&e, AGGIO_ERR_REQUEST, "rank %d: a split collective is already active on "
                "this file (MPI allows one per file handle)", fh->rank);
    return aggio__finish(&e);
  }
  struct call c = {.fh = fh, .offset = offset, .buf = (void *)buf, .count = count,
                   .type = type, .is_write = is_write, .collective = 1, .use_fp = use_fp,
                   .kind = kind};
  if (fh && kind == AGGIO_CALL_ORDERED) {
    aggio__requests_settle(fh);
    aggio__call_claim_ordered(&c);
  }
  return aggio__request_start(&c, NULL, 1);
}

static int begin(aggio_file fh, MPI_Offset offset, const void *buf, int count,
                 MPI_Datatype type, int is_write, int use_fp) {
  return begin_kind(fh, offset, buf, count, type, is_write, use_fp, AGGIO_CALL_PLAIN);
}

static int end(aggio_file fh, const void *buf, MPI_Status *status, int is_write, int use_fp) {
  return aggio__split_end(fh, buf, status, is_write, use_fp, AGGIO_CALL_PLAIN);
}

int aggio_file_write_at_all_begin(aggio_file fh, MPI_Offset offset, const void *buf,
                                  int count, MPI_Datatype datatype) {
  return begin(fh, offset, buf, count, datatype, 1, 0);
}

int aggio_file_write_at_all_end(aggio_file fh, const void *buf, MPI_Status *status) {
  return end(fh, buf, status, 1, 0);
}

int aggio_file_read_at_all_begin(aggio_file fh, MPI_Offset offset, void *buf, int count,
                                 MPI_Datatype datatype) {
  return begin(fh, offset, buf, count, datatype, 0, 0);
}

int aggio_file_read_at_all_end(aggio_file fh, void *buf, MPI_Status *status) {
  return end(fh, buf, status, 0, 0);
}

int aggio_file_write_all_begin(aggio_file fh, const void *buf, int count,
                               MPI_Datatype datatype) {
  return begin(fh, 0, buf, count, datatype, 1, 1);
}

int aggio_file_write_all_end(aggio_file fh, const void *buf, MPI_Status *status) {
  return end(fh, buf, status, 1, 1);
}

int aggio_file_read_all_begin(aggio_file fh, void *buf, int count, MPI_Datatype datatype) {
  return begin(fh, 0, buf, count, datatype, 0, 1);
}

int aggio_file_read_all_end(aggio_file fh, void *buf, MPI_Status *status) {
  return end(fh, buf, status, 0, 1);
}

int aggio_file_write_ordered_begin(aggio_file fh, const void *buf, int count,
                                   MPI_Datatype datatype) {
  return begin_kind(fh, 0, buf, count, datatype, 1, 0, AGGIO_CALL_ORDERED);
}

int aggio_file_write_ordered_end(aggio_file fh, const void *buf, MPI_Status *status) {
  return aggio__split_end(fh, buf, status, 1, 0, AGGIO_CALL_ORDERED);
}

int aggio_file_read_ordered_begin(aggio_file fh, void *buf, int count, MPI_Datatype datatype) {
  return begin_kind(fh, 0, buf, count, datatype, 0, 0, AGGIO_CALL_ORDERED);
}

int aggio_file_read_ordered_end(aggio_file fh, void *buf, MPI_Status *status) {
  return aggio__split_end(fh, buf, status, 0, 0, AGGIO_CALL_ORDERED);
}
