/*
 * calls.h - the MPI_File_* calls that forward one to one: the single list
 * from which forward.c defines them (and large_count.c the large-count
 * twins of the data calls, next.c the table of the next definitions).
 *
 * X(name, parameters, arguments after the handle)
 * defines MPI_File_<name>(parameters): on an aggio file it calls
 * aggio_file_<name>(the aggio file, arguments) and maps the outcome to an
 * MPI error code (errors.c); on any other handle it calls
 * PMPI_File_<name>(fh, arguments).  The parameters are MPI 3.1's, with the
 * const qualifiers of both MPI libraries' mpi.h.
 */
#ifndef AGGIO_MPIIO_CALLS_H
#define AGGIO_MPIIO_CALLS_H

/* clang-format reads the pointer parameters below as products: */
/* clang-format off */
#define MPIIO_FH MPI_File fh
#define MPIIO_DATA_IN const void *buf, int count, MPI_Datatype datatype
#define MPIIO_DATA_OUT void *buf, int count, MPI_Datatype datatype

/*
 * The calls that take data have MPI 4.0 large-count twins, MPI_File_<name>_c,
 * whose count is an MPI_Count (large_count.c).  So that both come from one
 * list, the data lists are written once, with the handle and the (buffer,
 * count, datatype) parameters as arguments: MPIIO_DATA_CALLS_OF(X, FH, IN,
 * OUT) gives the parameters as FH, ..., IN or OUT, ...; the arguments are
 * always the same names.
 */
#define MPIIO_DATA_CALLS(X) \
  MPIIO_DATA_CALLS_OF(X, MPIIO_FH, MPIIO_DATA_IN, MPIIO_DATA_OUT)
#define MPIIO_NONBLOCKING_CALLS(X) \
  MPIIO_NONBLOCKING_CALLS_OF(X, MPIIO_FH, MPIIO_DATA_IN, MPIIO_DATA_OUT)

/* The data calls (they take a count: a negative one is MPI_ERR_COUNT). */
#define MPIIO_DATA_CALLS_OF(X, FH, IN, OUT)                                    \
  X(write_at, (FH, MPI_Offset offset, IN, MPI_Status *status),                 \
    (offset, buf, count, datatype, status))                                    \
  X(read_at, (FH, MPI_Offset offset, OUT, MPI_Status *status),                 \
    (offset, buf, count, datatype, status))                                    \
  X(write_at_all, (FH, MPI_Offset offset, IN, MPI_Status *status),             \
    (offset, buf, count, datatype, status))                                    \
  X(read_at_all, (FH, MPI_Offset offset, OUT, MPI_Status *status),             \
    (offset, buf, count, datatype, status))                                    \
  X(write, (FH, IN, MPI_Status *status),                                       \
    (buf, count, datatype, status))                                            \
  X(read, (FH, OUT, MPI_Status *status),                                       \
    (buf, count, datatype, status))                                            \
  X(write_all, (FH, IN, MPI_Status *status),                                   \
    (buf, count, datatype, status))                                            \
  X(read_all, (FH, OUT, MPI_Status *status),                                   \
    (buf, count, datatype, status))                                            \
  X(write_shared, (FH, IN, MPI_Status *status),                                \
    (buf, count, datatype, status))                                            \
  X(read_shared, (FH, OUT, MPI_Status *status),                                \
    (buf, count, datatype, status))                                            \
  X(write_ordered, (FH, IN, MPI_Status *status),                               \
    (buf, count, datatype, status))                                            \
  X(read_ordered, (FH, OUT, MPI_Status *status),                               \
    (buf, count, datatype, status))                                            \
  X(write_at_all_begin, (FH, MPI_Offset offset, IN),                           \
    (offset, buf, count, datatype))                                            \
  X(read_at_all_begin, (FH, MPI_Offset offset, OUT),                           \
    (offset, buf, count, datatype))                                            \
  X(write_all_begin, (FH, IN), (buf, count, datatype))                         \
  X(read_all_begin, (FH, OUT), (buf, count, datatype))                         \
  X(write_ordered_begin, (FH, IN), (buf, count, datatype))                     \
  X(read_ordered_begin, (FH, OUT), (buf, count, datatype))

/* The others. */
#define MPIIO_FORWARD_CALLS(X)                                                         \
  X(seek, (MPIIO_FH, MPI_Offset offset, int whence), (offset, whence))                 \
  X(get_position, (MPIIO_FH, MPI_Offset *offset), (offset))                           \
  X(get_byte_offset, (MPIIO_FH, MPI_Offset offset, MPI_Offset *disp), (offset, disp)) \
  X(seek_shared, (MPIIO_FH, MPI_Offset offset, int whence), (offset, whence))          \
  X(get_position_shared, (MPIIO_FH, MPI_Offset *offset), (offset))                    \
  X(write_at_all_end, (MPIIO_FH, const void *buf, MPI_Status *status), (buf, status))  \
  X(read_at_all_end, (MPIIO_FH, void *buf, MPI_Status *status), (buf, status))         \
  X(write_all_end, (MPIIO_FH, const void *buf, MPI_Status *status), (buf, status))     \
  X(read_all_end, (MPIIO_FH, void *buf, MPI_Status *status), (buf, status))            \
  X(write_ordered_end, (MPIIO_FH, const void *buf, MPI_Status *status), (buf, status)) \
  X(read_ordered_end, (MPIIO_FH, void *buf, MPI_Status *status), (buf, status))        \
  X(get_size, (MPIIO_FH, MPI_Offset *size), (size))                                   \
  X(set_size, (MPIIO_FH, MPI_Offset size), (size))                                     \
  X(preallocate, (MPIIO_FH, MPI_Offset size), (size))                                  \
  X(get_amode, (MPIIO_FH, int *amode), (amode))                                        \
  X(get_group, (MPIIO_FH, MPI_Group *group), (group))                                 \
  X(set_atomicity, (MPIIO_FH, int flag), (flag))                                       \
  X(get_atomicity, (MPIIO_FH, int *flag), (flag))                                      \
  X(get_type_extent, (MPIIO_FH, MPI_Datatype datatype, MPI_Aint *extent),             \
    (datatype, extent))                                                                \
  X(set_info, (MPIIO_FH, MPI_Info info), (info))                                       \
  X(get_info, (MPIIO_FH, MPI_Info *info_used), (info_used))                           \
  X(get_view,                                                                          \
    (MPIIO_FH, MPI_Offset *disp, MPI_Datatype *etype, MPI_Datatype *filetype,       \
     char *datarep),                                                                   \
    (disp, etype, filetype, datarep))

/*
 * The non-blocking calls: X(name, parameters, arguments before the request).
 * On an aggio file MPI_File_<name> starts aggio_file_<name> and returns a
 * generalized request that completes with the operation (requests.c); the
 * individual and shared pointers move when the call starts, as MPI says.
 */
#define MPIIO_NONBLOCKING_CALLS_OF(X, FH, IN, OUT)                             \
  X(iwrite_at, (FH, MPI_Offset offset, IN, MPI_Request *request),              \
    (offset, buf, count, datatype))                                            \
  X(iread_at, (FH, MPI_Offset offset, OUT, MPI_Request *request),              \
    (offset, buf, count, datatype))                                            \
  X(iwrite_at_all, (FH, MPI_Offset offset, IN, MPI_Request *request),          \
    (offset, buf, count, datatype))                                            \
  X(iread_at_all, (FH, MPI_Offset offset, OUT, MPI_Request *request),          \
    (offset, buf, count, datatype))                                            \
  X(iwrite, (FH, IN, MPI_Request *request), (buf, count, datatype))            \
  X(iread, (FH, OUT, MPI_Request *request), (buf, count, datatype))            \
  X(iwrite_all, (FH, IN, MPI_Request *request),                                \
    (buf, count, datatype))                                                    \
  X(iread_all, (FH, OUT, MPI_Request *request),                                \
    (buf, count, datatype))                                                    \
  X(iwrite_shared, (FH, IN, MPI_Request *request),                             \
    (buf, count, datatype))                                                    \
  X(iread_shared, (FH, OUT, MPI_Request *request),                             \
    (buf, count, datatype))

/* clang-format on */

#endif
