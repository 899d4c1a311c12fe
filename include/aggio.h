/*
 * aggio.h - the public interface of libaggio, a collective parallel I/O
 * library for MPI applications writing one shared file from many ranks.
 *
 * The API mirrors MPI-IO: every aggio_file_* function takes the same
 * parameters in the same order as the MPI_File_* function it is named after,
 * so porting an application is a rename.  Functions return AGGIO_SUCCESS (0)
 * or a negative AGGIO_ERR_* code instead of an MPI error class.
 *
 * Collective functions agree on their outcome: if any rank fails, every rank
 * returns an error code (the failing rank's code) and aggio_error_message()
 * on each rank says what happened and where.
 */
#ifndef AGGIO_H
#define AGGIO_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "aggio_version.h" /* AGGIO_VERSION_MAJOR, _MINOR, _PATCH, _STRING */

#if defined(_WIN32) || !defined(__GNUC__)
#define AGGIO_API
#else
#define AGGIO_API __attribute__((visibility("default")))
#endif

#include "aggio_errno.h"

/* Opaque file handle. */
typedef struct aggio_file_s *aggio_file;
#define AGGIO_FILE_NULL ((aggio_file)0)

/* ---- files ---------------------------------------------------------------- */

/* Collective over comm.  amode takes MPI_MODE_* flags. */
AGGIO_API int aggio_file_open(MPI_Comm comm, const char *filename, int amode,
                              MPI_Info info, aggio_file *fh);
/* Collective; sets *fh to AGGIO_FILE_NULL.  Writes the trace and prints the
 * statistics/timers when those are enabled. */
AGGIO_API int aggio_file_close(aggio_file *fh);
/* Not collective (like MPI_File_delete): the calling rank removes filename;
 * info is accepted for MPI-IO compatibility and not used. */
AGGIO_API int aggio_file_delete(const char *filename, MPI_Info info);

/* Optional, right after MPI_Init: registers aggio's MPI_Finalize hook now
 * (otherwise at the first open), so that at MPI_Finalize it runs after the
 * hooks of libraries initialised later, which may still close their files
 * through aggio (HDF5 does).  aggio-run calls it. */
AGGIO_API int aggio_init(void);
/* Closes every file this process still has open, oldest first (collective
 * over each file's communicator, as aggio_file_close: every rank of a
 * file's communicator calls it).  Acknowledged data that write-behind
 * could not write is said on stderr, with the file and the byte count.
 * Returns the first failure, else AGGIO_SUCCESS; after MPI_Finalize it
 * closes nothing and returns the outcome of the closes MPI_Finalize made.
 * MPI_Finalize calls it (the hook of aggio_init), so that no file is left
 * half-written without a word; a program that wants the result calls it
 * before MPI_Finalize, or after it. */
AGGIO_API int aggio_finalize(void);
/* Not collective: writes what write-behind holds on this rank's node, for
 * every open file, and says on stderr what could not be written.  For a
 * process about to end without closing its files: aggio-run's MPI_Abort
 * calls it.  Returns AGGIO_SUCCESS, or an error when bytes were lost. */
AGGIO_API int aggio_drain(void);

/* Collective.  datarep: "native", "internal" (aggio's is the native one) or
 * "external32" (MPI's portable representation: big-endian, IEEE; aggio
 * keeps the native layout, so the view's and the memory's types must have
 * their native sizes in external32 as MPI_Pack_external_size gives them:
 * AGGIO_ERR_UNSUPPORTED otherwise, e.g. MPI_LONG with MPICH). */
AGGIO_API int aggio_file_set_view(aggio_file fh, MPI_Offset disp,
                                  MPI_Datatype etype, MPI_Datatype filetype,
                                  const char *datarep, MPI_Info info);
AGGIO_API int aggio_file_get_view(aggio_file fh, MPI_Offset *disp,
                                  MPI_Datatype *etype, MPI_Datatype *filetype,
                                  char *datarep);

/* ---- data access: explicit offsets (in etypes of the view) ------------------ */

AGGIO_API int aggio_file_write_at(aggio_file fh, MPI_Offset offset,
                                  const void *buf, int count,
                                  MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_read_at(aggio_file fh, MPI_Offset offset, void *buf,
                                 int count, MPI_Datatype datatype,
                                 MPI_Status *status);
AGGIO_API int aggio_file_write_at_all(aggio_file fh, MPI_Offset offset,
                                      const void *buf, int count,
                                      MPI_Datatype datatype,
                                      MPI_Status *status);
AGGIO_API int aggio_file_read_at_all(aggio_file fh, MPI_Offset offset,
                                     void *buf, int count,
                                     MPI_Datatype datatype, MPI_Status *status);

/* ---- data access: individual file pointer --------------------------------- */

AGGIO_API int aggio_file_write(aggio_file fh, const void *buf, int count,
                               MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_read(aggio_file fh, void *buf, int count,
                              MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_write_all(aggio_file fh, const void *buf, int count,
                                   MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_read_all(aggio_file fh, void *buf, int count,
                                  MPI_Datatype datatype, MPI_Status *status);
/* whence: MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END; offset in etypes. */
AGGIO_API int aggio_file_seek(aggio_file fh, MPI_Offset offset, int whence);
AGGIO_API int aggio_file_get_position(aggio_file fh, MPI_Offset *offset);
/* Byte displacement in the file of a view-relative offset (in etypes). */
AGGIO_API int aggio_file_get_byte_offset(aggio_file fh, MPI_Offset offset,
                                         MPI_Offset *disp);

/* ---- file manipulation ---------------------------------------------------- */

AGGIO_API int aggio_file_get_size(aggio_file fh, MPI_Offset *size);
/* Collective; size must be the same on all ranks. */
AGGIO_API int aggio_file_set_size(aggio_file fh, MPI_Offset size);
/* Collective; data that write-behind still holds reaches the file, then the
 * file reaches the storage device.  Returns, on every rank, the failure of
 * any such deferred write. */
AGGIO_API int aggio_file_sync(aggio_file fh);
/* Collective; flag must be the same on all ranks.  In atomic mode every
 * access reaches the file within its call (write-behind holds nothing) and
 * takes byte-range locks, as MPI_File_set_atomicity. */
AGGIO_API int aggio_file_set_atomicity(aggio_file fh, int flag);
AGGIO_API int aggio_file_get_atomicity(aggio_file fh, int *flag);
AGGIO_API int aggio_file_get_amode(aggio_file fh, int *amode);
AGGIO_API int aggio_file_get_group(aggio_file fh, MPI_Group *group);

/* ---- non-blocking and split collective data access ------------------------ */

/* A started operation, completed by aggio_wait/test and friends (like
 * MPI_Request for MPI_File_i* calls).  Opaque; AGGIO_REQUEST_NULL once
 * completed. */
typedef struct aggio_request_s *aggio_request;
#define AGGIO_REQUEST_NULL ((aggio_request)0)

/*
 * Each call starts the operation and returns at once: the user's buffer
 * belongs to aggio until the request completes.  As in MPI-IO:
 *   - several operations may be outstanding on a file and complete in any
 *     order; collective ones (the _all calls) must be started in the same
 *     order on every rank, across files too, and they take effect in that
 *     order;
 *   - the individual file pointer (aggio_file_iwrite/iread/iwrite_all/
 *     iread_all) advances by the whole request when the call starts;
 *   - an argument error or a failure is agreed (collective calls) and
 *     returned by the call that completes the request, on every rank; the
 *     starting call fails only for a NULL file handle or request pointer.
 * Progress: with MPI_THREAD_MULTIPLE a progress thread advances every
 * outstanding operation (exchanges and file I/O) while the application
 * computes; set AGGIO_PROGRESS_THREAD=0 to turn it off.  At lower thread
 * levels the exchanges advance inside aggio calls (the starting call, the
 * completion calls, and any call on a file with operations outstanding),
 * and the file I/O on aggio's I/O threads, which never call MPI.
 * docs/nonblocking.md tells exactly what runs where.
 * aggio_file_sync, aggio_file_close and the other collective calls on the
 * file complete the file's outstanding operations first (their requests
 * still report the outcome).
 */
AGGIO_API int aggio_file_iwrite_at(aggio_file fh, MPI_Offset offset, const void *buf,
                                   int count, MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_iread_at(aggio_file fh, MPI_Offset offset, void *buf, int count,
                                  MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_iwrite_at_all(aggio_file fh, MPI_Offset offset, const void *buf,
                                       int count, MPI_Datatype datatype,
                                       aggio_request *request);
AGGIO_API int aggio_file_iread_at_all(aggio_file fh, MPI_Offset offset, void *buf,
                                      int count, MPI_Datatype datatype,
                                      aggio_request *request);
AGGIO_API int aggio_file_iwrite(aggio_file fh, const void *buf, int count,
                                MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_iread(aggio_file fh, void *buf, int count, MPI_Datatype datatype,
                               aggio_request *request);
AGGIO_API int aggio_file_iwrite_all(aggio_file fh, const void *buf, int count,
                                    MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_iread_all(aggio_file fh, void *buf, int count,
                                   MPI_Datatype datatype, aggio_request *request);

/* Completion.  Each completed request is freed and set to
 * AGGIO_REQUEST_NULL; its status gets the byte count (MPI_Get_count) and,
 * in MPI_ERROR, its AGGIO_* outcome.  The return value is the request's
 * outcome (aggio_error_message() tells the details); for the calls on
 * several requests, the first failed one's.  status/statuses may be
 * MPI_STATUS_IGNORE/MPI_STATUSES_IGNORE.  AGGIO_REQUEST_NULL entries are
 * skipped (an empty status, like MPI). */
AGGIO_API int aggio_wait(aggio_request *request, MPI_Status *status);
AGGIO_API int aggio_test(aggio_request *request, int *flag, MPI_Status *status);
AGGIO_API int aggio_waitall(int count, aggio_request requests[], MPI_Status statuses[]);
/* *flag is 1 (and every request completed and freed) only when all have
 * completed; otherwise none is freed. */
AGGIO_API int aggio_testall(int count, aggio_request requests[], int *flag,
                            MPI_Status statuses[]);
/* *index is MPI_UNDEFINED when every entry is AGGIO_REQUEST_NULL. */
AGGIO_API int aggio_waitany(int count, aggio_request requests[], int *index,
                            MPI_Status *status);

/* Split collectives (MPI_File_*_begin/_end): begin starts the operation,
 * end completes it and returns its agreed outcome.  At most one split
 * collective may be active per file handle (AGGIO_ERR_REQUEST otherwise);
 * end takes the same buffer as begin. */
AGGIO_API int aggio_file_write_at_all_begin(aggio_file fh, MPI_Offset offset, const void *buf,
                                            int count, MPI_Datatype datatype);
AGGIO_API int aggio_file_write_at_all_end(aggio_file fh, const void *buf, MPI_Status *status);
AGGIO_API int aggio_file_read_at_all_begin(aggio_file fh, MPI_Offset offset, void *buf,
                                           int count, MPI_Datatype datatype);
AGGIO_API int aggio_file_read_at_all_end(aggio_file fh, void *buf, MPI_Status *status);
AGGIO_API int aggio_file_write_all_begin(aggio_file fh, const void *buf, int count,
                                         MPI_Datatype datatype);
AGGIO_API int aggio_file_write_all_end(aggio_file fh, const void *buf, MPI_Status *status);
AGGIO_API int aggio_file_read_all_begin(aggio_file fh, void *buf, int count,
                                        MPI_Datatype datatype);
AGGIO_API int aggio_file_read_all_end(aggio_file fh, void *buf, MPI_Status *status);

/* ---- data access: shared file pointer ----------------------------------- */

/*
 * One file pointer shared by every rank of the file's communicator, in
 * etypes of the current view (MPI 3.1 section 13.4.4).  The view must be the
 * same on every rank for these calls to mean anything (MPI says so too);
 * aggio_file_set_view sets the shared pointer back to 0.  docs/shared-fp.md
 * tells how the pointer is kept (shared memory on one node, an RMA window
 * on rank 0 otherwise) and what it costs.
 *
 * write_shared/read_shared: independent; each call takes the next `count`
 * elements' worth of the pointer atomically, in whatever order ranks come.
 * The non-blocking forms take the pointer when they start.
 * write_ordered/read_ordered: collective; the ranks' data lie in rank order
 * from the shared pointer, which then moves past all of it; collective
 * buffering applies.  The _begin/_end forms are split collectives (one per
 * file at a time, as for the other split collectives).
 */
AGGIO_API int aggio_file_write_shared(aggio_file fh, const void *buf, int count,
                                      MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_read_shared(aggio_file fh, void *buf, int count,
                                     MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_iwrite_shared(aggio_file fh, const void *buf, int count,
                                       MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_iread_shared(aggio_file fh, void *buf, int count,
                                      MPI_Datatype datatype, aggio_request *request);
AGGIO_API int aggio_file_write_ordered(aggio_file fh, const void *buf, int count,
                                       MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_read_ordered(aggio_file fh, void *buf, int count,
                                      MPI_Datatype datatype, MPI_Status *status);
AGGIO_API int aggio_file_write_ordered_begin(aggio_file fh, const void *buf, int count,
                                             MPI_Datatype datatype);
AGGIO_API int aggio_file_write_ordered_end(aggio_file fh, const void *buf,
                                           MPI_Status *status);
AGGIO_API int aggio_file_read_ordered_begin(aggio_file fh, void *buf, int count,
                                            MPI_Datatype datatype);
AGGIO_API int aggio_file_read_ordered_end(aggio_file fh, void *buf, MPI_Status *status);
/* Collective: every rank passes the same offset and whence (in etypes of
 * the view; MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END). */
AGGIO_API int aggio_file_seek_shared(aggio_file fh, MPI_Offset offset, int whence);
/* The shared pointer, in etypes of the view. */
AGGIO_API int aggio_file_get_position_shared(aggio_file fh, MPI_Offset *offset);

/* Collective; size must be the same on all ranks.  Reserves storage for the
 * first size bytes (posix_fallocate where the file system can; otherwise
 * the file is only extended to size).  Never shrinks the file. */
AGGIO_API int aggio_file_preallocate(aggio_file fh, MPI_Offset size);
/* Extent of datatype in the file: the native representation's extent. */
AGGIO_API int aggio_file_get_type_extent(aggio_file fh, MPI_Datatype datatype,
                                         MPI_Aint *extent);

/* ---- hints ---------------------------------------------------------------- */

/* Collective. */
AGGIO_API int aggio_file_set_info(aggio_file fh, MPI_Info info);
/* Returns a new MPI_Info (free it with MPI_Info_free) holding every hint in
 * effect (numeric hints as plain numbers; cb_nodes is the number of
 * aggregators in use); hints the file system could not honour, and why,
 * under aggio_hints_ignored (docs/hints.md). */
AGGIO_API int aggio_file_get_info(aggio_file fh, MPI_Info *info_used);

/* Runs one progress pass over this process's outstanding non-blocking
 * operations (every file), without waiting: at thread levels below
 * MPI_THREAD_MULTIPLE their exchanges advance only inside aggio calls, so
 * a program computing for long, or a layer that waits in MPI on behalf of
 * aggio's operations, calls this now and then.  Returns 1 when some step
 * ran, else 0. */
AGGIO_API int aggio_progress(void);

/* ---- errors --------------------------------------------------------------- */

/* Short, static text for an AGGIO_* code. */
AGGIO_API const char *aggio_strerror(int code);
/* The detailed message of the calling thread's last failed aggio call
 * ("" if none), e.g. "rank 3: open(/x/y): Permission denied".  Valid until
 * the next aggio call on this thread. */
AGGIO_API const char *aggio_error_message(void);

#ifdef __cplusplus
}
#endif

#endif /* AGGIO_H */
