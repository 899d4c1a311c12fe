/*
 * passthrough.c - which files go to the MPI library's own MPI-IO.
 *
 * The hint aggio_passthrough=true, set like any other hint (AGGIO_HINTS by
 * path pattern, e.g. AGGIO_HINTS='*.h5:aggio_passthrough=true', the hints
 * files, or the MPI_Info of the open), makes MPI_File_open call
 * PMPI_File_open: every later call on that handle then reaches the MPI
 * library, because the handle is not in aggio's table (handles.c).  Such a
 * file and aggio's files coexist in one program.
 */
#include "hints.h"
#include "info.h"
#include "mpiio.h"
#include "next.h"

int mpiio_passthrough_here(const char *path, MPI_Info info) {
  struct aggio__hints h;
  aggio__hints_gather(&h, info, path ? path : "", 0, 1);
  return h.passthrough.num != 0;
}

/* MPI_Allreduce(MAX) of n ints that lets this process's non-blocking
 * aggio operations advance while it waits (aggio_progress): a rank that
 * has not reached the open yet may be waiting for one of them, in a
 * completion call that needs this rank's part (below MPI_THREAD_MULTIPLE
 * nothing else would run it).  libaggio's own collectives wait the same
 * way. */
static int allreduce_progressing(const int *mine, int *all, int n, MPI_Comm comm) {
  MPI_Request r;
  int rc = PMPI_Iallreduce(mine, all, n, MPI_INT, MPI_MAX, comm, &r);
  for (int flag = 0, round = 0; rc == MPI_SUCCESS && !flag;) {
    rc = MPIIO_NEXT(Test)(&r, &flag, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !flag && !aggio_progress())
      mpiio_pause(&round);
  }
  return rc;
}

int mpiio_passthrough_wanted(MPI_Comm comm, const char *path, MPI_Info info, int ready,
                             int *wanted) {
  int pass = mpiio_passthrough_here(path, info);
  /* must_match: every rank has to send the file the same way, else half
   * of them would wait in the other library's collective open.  The same
   * reduction tells whether every rank is ready for an aggio open (a
   * handle pointer, memory for the handle), so that none enters it alone. */
  int mine[4] = {pass, !pass, ready == MPIIO_NOT_READY_ARG, ready == MPIIO_NOT_READY_MEM};
  int all[4] = {0, 0, 0, 0};
  int rc = allreduce_progressing(mine, all, 4, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (all[0] && all[1])
    return mpiio_error_with_message(
        MPI_ERR_NOT_SAME, "aggio: the hint aggio_passthrough differs between ranks");
  if (all[2])
    return mpiio_error_with_message(MPI_ERR_ARG, "aggio: a rank passed a NULL file "
                                                 "handle pointer to MPI_File_open");
  if (all[3] && !all[0])
    return mpiio_error_with_message(MPI_ERR_NO_MEM, "aggio: a rank had no memory for the "
                                                    "file handle");
  *wanted = all[0];
  return MPI_SUCCESS;
}
