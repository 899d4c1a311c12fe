/*
 * next.h - the profiling interface: aggio's MPI_* and PMPI_* names, and
 * the next definition of each (the MPI library's own) that aggio calls.
 *
 * An MPI-IO implementation sits below the profiling interface, so aggio
 * defines both names of every call it serves: PMPI_File_write is an alias
 * of MPI_File_write.  Then a Fortran binding that calls the C PMPI_* names
 * (Open MPI's mpif.h, use mpi and use mpi_f08; MPICH's use mpi_f08), and a
 * tool that wraps MPI_File_* and forwards to PMPI_File_* (Darshan), reach
 * aggio like the program's own calls.
 *
 * What aggio does not serve (another library's file, the program's
 * point-to-point requests, MPI_Init's own work) goes to the definition
 * that comes after libaggio-mpiio in the dynamic linker's search order,
 * found once with dlsym(RTLD_NEXT, "PMPI_..."): the MPI library's, or a
 * tool's loaded after aggio.  A direct call to PMPI_File_write from this
 * library would bind to aggio's own alias (or to a tool's in front of
 * it), and loop: every such call goes through MPIIO_NEXT.
 */
#ifndef AGGIO_MPIIO_NEXT_H
#define AGGIO_MPIIO_NEXT_H

#include <mpi.h>

#include "calls.h"

/* The calls aggio defines besides the generated ones of calls.h. */
#define MPIIO_OWN_CALLS(X)                                                        \
  X(File_open) X(File_close) X(File_delete) X(File_set_view) X(File_sync)        \
  X(Register_datarep) X(Init) X(Init_thread) X(Finalize) X(Abort)                \
  X(Error_string) X(File_create_errhandler) X(Errhandler_free)                   \
  X(File_set_errhandler) X(File_get_errhandler) X(File_call_errhandler)          \
  X(File_c2f) X(File_f2c) X(Wait) X(Test) X(Waitall) X(Testall) X(Waitany)       \
  X(Testany) X(Waitsome) X(Testsome) X(Request_get_status) X(Request_free)

/*
 * The MPI 4.0 large-count calls, where the MPI library has them (the build
 * defines AGGIO_MPIIO_LARGE_COUNT when mpi.h declares them: MPICH 4, not
 * Open MPI 4.1): MPI_File_<name>_c of every data call of calls.h
 * (large_count.c), given here as X(own name) and XC(calls.h's X arguments).
 */
#ifdef AGGIO_MPIIO_LARGE_COUNT
#define MPIIO_LARGE_COUNT_CALLS(X, XC)                                  \
  X(File_get_type_extent_c) X(Register_datarep_c) MPIIO_DATA_CALLS(XC) \
  MPIIO_NONBLOCKING_CALLS(XC)
#else
#define MPIIO_LARGE_COUNT_CALLS(X, XC)
#endif

#define MPIIO_NEXT_FIELD(name) __typeof__(&PMPI_##name) name;
/* calls.h's lists give X(name, params, args) for MPI_File_<name> */
#define MPIIO_NEXT_FILE_FIELD(name, params, args) MPIIO_NEXT_FIELD(File_##name)
#define MPIIO_NEXT_FILE_C_FIELD(name, params, args) MPIIO_NEXT_FIELD(File_##name##_c)

struct mpiio_next {
  MPIIO_OWN_CALLS(MPIIO_NEXT_FIELD)
  MPIIO_DATA_CALLS(MPIIO_NEXT_FILE_FIELD)
  MPIIO_FORWARD_CALLS(MPIIO_NEXT_FILE_FIELD)
  MPIIO_NONBLOCKING_CALLS(MPIIO_NEXT_FILE_FIELD)
  MPIIO_LARGE_COUNT_CALLS(MPIIO_NEXT_FIELD, MPIIO_NEXT_FILE_C_FIELD)
};

/* The next definitions, found on the first call (any thread). */
const struct mpiio_next *mpiio_next(void);
#define MPIIO_NEXT(name) (mpiio_next()->name)

/* After the definition of MPI_<name>: PMPI_<name> is the same function. */
#define MPIIO_PROFILED(name) \
  extern __typeof__(MPI_##name) PMPI_##name __attribute__((alias("MPI_" #name)));

#endif
