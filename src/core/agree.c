/*
 * agree.c - the agreement that makes every collective call's outcome the
 * same on all ranks (as ROMIO's collective writes end in an Allreduce of
 * the error code): posted, and waited for while the process's non-blocking
 * operations progress (request.c), since it is the first collective of
 * most blocking calls (docs/engine.md, "Liveness").
 */
#include <string.h>

#include "internal.h"

int aggio__allreduce_progress(const void *in, void *out, int count, MPI_Datatype type,
                              MPI_Op op, MPI_Comm comm) {
#ifdef AGGIO_SIMGRID
  /* SMPI (SimGrid 3.32) runs a posted allreduce with far more messages
   * than its blocking one (a 2,048-rank sim/run line: over 5 minutes
   * against 60 s), and the simulated programs make blocking calls only, on
   * every rank alike (engine.c, coll_slot): so it blocks, by the algorithm
   * sim/run names. */
  return MPI_Allreduce(in, out, count, type, op, comm);
#else
  MPI_Request r;
  int rc = MPI_Iallreduce(in, out, count, type, op, comm, &r);
  return rc == MPI_SUCCESS ? aggio__wait_progress(&r) : rc;
#endif
}

int64_t aggio__agree_values(MPI_Comm comm, struct aggio__err *e, int64_t *values, int n) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  int64_t mine[AGGIO_AGREE_VALUES + 1], low[AGGIO_AGREE_VALUES + 1];
  if (n < 0 || n > AGGIO_AGREE_VALUES)
    n = 0; /* a caller's bug: agree on the outcome alone, on every rank alike */
  mine[0] = aggio__err_encode(e->code, rank);
  for (int i = 0; i < n; i++)
    mine[i + 1] = values[i];
  /* MIN: error codes are negative, so the most negative code wins and
   * ties go to the lowest rank; 0 survives only if every rank succeeded.
   * Posted and waited for while the process's non-blocking operations
   * progress: this is the first collective of most blocking calls, their
   * entry (docs/engine.md, "Liveness"). */
  int rc = aggio__allreduce_progress(mine, low, n + 1, MPI_INT64_T, MPI_MIN, comm);
  if (rc != MPI_SUCCESS) {
    aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allreduce failed while agreeing on the "
                "outcome", rank);
    return aggio__err_encode(e->code, rank);
  }
  for (int i = 0; i < n; i++)
    values[i] = low[i + 1];
  aggio__err_decode(low[0], rank, e);
  int root = aggio__err_rank(low[0]);
  if (root >= 0) { /* every rank is in this call now: the message may block */
    char msg[AGGIO_ERRMSG_LEN];
    memcpy(msg, e->msg, sizeof msg);
    if (MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, root, comm) == MPI_SUCCESS)
      aggio__err_take_message(rank, root, msg, e);
  }
  return low[0];
}

int64_t aggio__agree_encoded(MPI_Comm comm, struct aggio__err *e) {
  return aggio__agree_values(comm, e, NULL, 0);
}

int aggio__agree(MPI_Comm comm, struct aggio__err *e) {
  aggio__agree_encoded(comm, e);
  return e->code;
}
