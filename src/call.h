/*
 * call.h - one data-access call as the user made it (io.c): what the
 * blocking entry points and the non-blocking requests (request.c) share.
 * A call is prepared (arguments checked, view mapped, memory packed) into
 * an operation, the engine runs the operation, and finishing the call
 * gives the user the result (unpacked data, status, file pointer).
 */
#ifndef AGGIO_CALL_H
#define AGGIO_CALL_H

#include "engine.h"

struct call {
  aggio_file fh;
  MPI_Offset offset;  /* in etypes; for individual-pointer calls the pointer */
  void *buf;
  int count;
  MPI_Datatype type;
  MPI_Status *status;
  int is_write;
  int collective;
  int use_fp;              /* moves the individual file pointer */
  int fp_at_start;         /* ... by the whole request when it starts
                            * (non-blocking calls), not by what was read */
  struct aggio__flat *mem; /* flattened memory type */
  int packed;              /* acc.stream is our copy */
  int64_t type_size;       /* size of the memory type (for the trace) */
  double t0;               /* when the call began */
};

/* Trace operation code of the call (AGGIO_OP_*). */
int aggio__call_trace_op(const struct call *c, int nonblocking);

/* Starts the call: takes the file pointer, checks the arguments and builds
 * op (op->err holds an argument error, to be agreed), ready to run with
 * `blocking` collectives.  Local. */
void aggio__call_begin(struct call *c, struct aggio__op *op, int blocking);

/* Gives the user the outcome of the completed op: unpacks what was read,
 * fills the status, moves the file pointer, counts; frees what the call
 * and the op hold. */
void aggio__call_end(struct call *c, struct aggio__op *op);

#endif
