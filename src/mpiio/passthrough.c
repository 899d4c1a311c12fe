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

int mpiio_passthrough_here(const char *path, MPI_Info info) {
  struct aggio__hints h;
  aggio__hints_gather(&h, info, path ? path : "", 0, 1);
  return h.passthrough.num != 0;
}

int mpiio_passthrough_wanted(MPI_Comm comm, const char *path, MPI_Info info,
                             int ready, int *wanted) {
  int pass = mpiio_passthrough_here(path, info);
  /* must_match: every rank has to send the file the same way, else half
   * of them would wait in the other library's collective open.  The same
   * reduction tells whether every rank is ready (a handle slot) for an
   * aggio open, so that none enters it alone. */
  int mine[3] = {pass, !pass, !ready}, all[3] = {0, 0, 0};
  int rc = PMPI_Allreduce(mine, all, 3, MPI_INT, MPI_MAX, comm);
  if (rc != MPI_SUCCESS)
    return rc;
  if (all[2] && !all[0])
    return mpiio_error_with_message(MPI_ERR_NO_MEM, "aggio: a rank had no memory for the "
                                                    "file handle");
  if (all[0] && all[1])
    return mpiio_error_with_message(
        MPI_ERR_NOT_SAME, "aggio: the hint aggio_passthrough differs between ranks");
  *wanted = all[0];
  return MPI_SUCCESS;
}
