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

/* Which pointer a call moves (struct call.kind). */
enum aggio__call_kind {
  AGGIO_CALL_PLAIN = 0, /* explicit offset or individual pointer */
  AGGIO_CALL_SHARED,    /* write/read_shared and their i* forms */
  AGGIO_CALL_ORDERED    /* write/read_ordered and their split forms */
};

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
  int external32;          /* the view's data representation was external32
                            * when the call began: the copy is converted */
  int own_type_held;       /* own_type is ours: an external32 read's copy of
                            * type (MPI_Type_dup), for the conversion at its
                            * end; MPI lets the caller free type as soon as
                            * a non-blocking or split call has started */
  MPI_Datatype own_type;
  int64_t type_size;       /* size of the memory type (for the trace) */
  double t0;               /* when the call began */
  int kind;                /* enum aggio__call_kind */
  struct aggio__err pre;   /* a failure before the operation (moving the shared
                            * pointer, or a peer's arguments to an ordered
                            * call): the operation carries it as this rank's
                            * error, so that it is agreed like one */
};

/* Trace operation code of the call (AGGIO_OP_*). */
int aggio__call_trace_op(const struct call *c, int nonblocking);

/* Starts the call: takes the file pointer, checks the arguments and builds
 * op (op->err holds an argument error, to be agreed), ready to run with
 * `blocking` collectives.  Local. */
void aggio__call_begin(struct call *c, struct aggio__op *op, int blocking);

/* The call's size in etypes of the view (shared pointer calls), after the
 * checks the operation would make of mode and datatype.  Local. */
int aggio__call_etypes(const struct call *c, int64_t *n, struct aggio__err *e);

/* Shared pointer calls: c->offset becomes the pointer, moved past the call
 * (atomically; independent).  A failure goes to c->pre. */
void aggio__call_claim_shared(struct call *c);

/* Gives the user the outcome of the completed op: unpacks what was read,
 * fills the status, moves the file pointer, counts; frees what the call
 * and the op hold. */
void aggio__call_end(struct call *c, struct aggio__op *op);

#endif
