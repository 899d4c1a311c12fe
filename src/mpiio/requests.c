/*
 * requests.c - MPI_Requests for the non-blocking calls on aggio files.
 *
 * A generalized request (MPI_Grequest_start) is a real MPI_Request: the
 * program's MPI_Wait, MPI_Test, MPI_Waitall and MPI_Testany take it among
 * its other requests.  MPI calls nothing of ours while it waits, and a
 * generalized request completes only when MPI_Grequest_complete is called,
 * so the operation runs to completion inside the starting call and the
 * request is born complete - which MPI allows (docs/mpiio.md tells what
 * that costs).  The request keeps the operation's status for MPI_Wait's
 * status (MPI_Get_count, MPI_Get_elements).
 */
#include <stdlib.h>

#include "mpiio.h"

struct done {
  MPI_Count bytes;
};

static int query(void *extra, MPI_Status *status) {
  struct done *d = extra;
  MPI_Status_set_elements_x(status, MPI_BYTE, d->bytes);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS;
}

static int release(void *extra) {
  free(extra);
  return MPI_SUCCESS;
}

static int cancel(void *extra, int complete) {
  (void)extra, (void)complete; /* already complete: nothing to cancel */
  return MPI_SUCCESS;
}

int mpiio_completed_request(const MPI_Status *status, MPI_Request *request) {
  struct done *d = malloc(sizeof *d);
  if (!d)
    return mpiio_error_with_message(MPI_ERR_NO_MEM, "aggio: no memory for a request");
  d->bytes = 0;
  MPI_Get_elements_x(status, MPI_BYTE, &d->bytes);
  int rc = PMPI_Grequest_start(query, release, cancel, d, request);
  if (rc != MPI_SUCCESS) {
    free(d);
    return rc;
  }
  return PMPI_Grequest_complete(*request);
}
