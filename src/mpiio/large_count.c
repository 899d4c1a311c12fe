/*
 * large_count.c - MPI 4.0's large-count calls: MPI_File_write_at_all_c and
 * the other data calls whose count is an MPI_Count, generated from
 * calls.h's lists, with their PMPI_ names (next.h).  Built only where mpi.h
 * declares them (AGGIO_MPIIO_LARGE_COUNT: MPICH 4; Open MPI 4.1 has none).
 *
 * libaggio's API takes an int count.  On an aggio file a count that fits
 * goes to it as it is; a larger one goes as count 1 of one derived
 * datatype that lays out the same elements (describe), freed when the call
 * returns: libaggio flattens the datatype when the call starts and keeps
 * no reference to the handle (an external32 read keeps its own copy), so
 * a non-blocking or split operation goes on without it.  The status says
 * bytes (MPI_Status_set_elements_x with MPI_BYTE, in libaggio and
 * requests.c), so MPI_Get_count_c and MPI_Get_elements_c with the
 * program's own datatype give its elements.  Any other handle goes to the
 * MPI library's _c call.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "calls.h"
#include "mpiio.h"
#include "next.h"

#define MPIIO_ARGS(...) __VA_ARGS__

/* clang-format off */
/* The buffer, count and datatype parameters of the _c calls (MPI 4.0)... */
#define MPIIO_DATA_IN_C const void *buf, MPI_Count count, MPI_Datatype datatype
#define MPIIO_DATA_OUT_C void *buf, MPI_Count count, MPI_Datatype datatype
/* ... and of the functions that serve them on aggio files: the program's
 * count and datatype by other names, so that the arguments' `count` and
 * `datatype` (calls.h) can be the ones libaggio is given. */
#define MPIIO_FILE struct mpiio_file *f
#define MPIIO_WIDE_IN const void *buf, MPI_Count wide_count, MPI_Datatype wide_type
#define MPIIO_WIDE_OUT void *buf, MPI_Count wide_count, MPI_Datatype wide_type
/* clang-format on */

/* A _c call's data as libaggio's int API takes it. */
struct wide {
  int count;           /* the count libaggio is given */
  MPI_Datatype type;   /* and the datatype */
  MPI_Datatype made;   /* the derived datatype made for it, or MPI_DATATYPE_NULL */
  MPI_Count err_count; /* the count that maps libaggio's outcome (mpiio_data_error) */
};

/* Elements per block of the derived datatype: 2^30. */
#define CHUNK ((MPI_Count)1 << 30)

/* 1 when q x CHUNK elements of this extent end within MPI_Aint, so that
 * the remainder's displacement can be said. */
static int displacement_fits(MPI_Count q, MPI_Aint extent) {
  return extent >= 0 && (extent == 0 || q * CHUNK <= (MPI_Count)INTPTR_MAX / extent);
}

/* count (> INT_MAX) elements of type as one committed datatype: q blocks
 * of 2^30 elements (a contiguous type), then the r left over, each element
 * where the count-element call would put it (the i-th at i x extent).
 * -1 when that cannot be said: more than INT_MAX blocks (2^61 elements),
 * displacements past MPI_Aint, or the MPI library would not build it. */
static int describe(MPI_Count count, MPI_Datatype type, MPI_Datatype *out) {
  MPI_Count q = count / CHUNK, r = count % CHUNK;
  MPI_Aint lb = 0, extent = 0;
  if (q > INT_MAX || MPI_Type_get_extent(type, &lb, &extent) != MPI_SUCCESS ||
      !displacement_fits(q, extent))
    return -1;
  MPI_Datatype chunk;
  if (MPI_Type_contiguous((int)CHUNK, type, &chunk) != MPI_SUCCESS)
    return -1;
  int lengths[2] = {(int)q, (int)r};
  MPI_Aint displacements[2] = {0, (MPI_Aint)(q * CHUNK * extent)};
  MPI_Datatype types[2] = {chunk, type};
  int rc = MPI_Type_create_struct(2, lengths, displacements, types, out);
  MPI_Type_free(&chunk); /* the struct holds what it needs of it */
  if (rc == MPI_SUCCESS && (rc = MPI_Type_commit(out)) != MPI_SUCCESS)
    MPI_Type_free(out);
  return rc == MPI_SUCCESS ? 0 : -1;
}

/* What libaggio is given for (count, type).  A negative count, or one no
 * datatype describes, becomes -1: libaggio then fails the call on every
 * rank of a collective one (none waits for this rank), and err_count,
 * the program's count, makes it MPI_ERR_COUNT here and says why. */
static struct wide wide_of(MPI_Count count, MPI_Datatype type) {
  struct wide w = {-1, type, MPI_DATATYPE_NULL, count};
  if (count >= 0 && count <= INT_MAX)
    w.count = (int)count;
  else if (count > INT_MAX && type == MPI_DATATYPE_NULL)
    w.count = 1; /* libaggio says what is wrong with the datatype */
  else if (count > INT_MAX && describe(count, type, &w.made) == 0)
    w.count = 1, w.type = w.made;
  if (w.count >= 0)
    w.err_count = w.count;
  return w;
}

static void wide_free(struct wide *w) {
  if (w->made != MPI_DATATYPE_NULL)
    MPI_Type_free(&w->made);
}

/* ---- the blocking and split-collective data calls ------------------------------- */

#define MPIIO_DEFINE_WIDE_DATA(name, params, args)      \
  static int wide_##name params {                       \
    struct wide w = wide_of(wide_count, wide_type);     \
    int count = w.count;                                \
    MPI_Datatype datatype = w.type;                     \
    int rc = aggio_file_##name(f->af, MPIIO_ARGS args); \
    rc = mpiio_finish_data(f, rc, w.err_count);         \
    wide_free(&w);                                      \
    return rc;                                          \
  }
MPIIO_DATA_CALLS_OF(MPIIO_DEFINE_WIDE_DATA, MPIIO_FILE, MPIIO_WIDE_IN, MPIIO_WIDE_OUT)

#define MPIIO_DEFINE_DATA_C(name, params, args)                \
  int MPI_File_##name##_c params {                             \
    struct mpiio_file *f = mpiio_lookup(fh);                   \
    if (!f)                                                    \
      return MPIIO_NEXT(File_##name##_c)(fh, MPIIO_ARGS args); \
    return wide_##name(f, MPIIO_ARGS args);                    \
  }                                                            \
  MPIIO_PROFILED(File_##name##_c)
MPIIO_DATA_CALLS_OF(MPIIO_DEFINE_DATA_C, MPIIO_FH, MPIIO_DATA_IN_C, MPIIO_DATA_OUT_C)

/* ---- the non-blocking calls: the int calls' requests (requests.c) --------------- */

#define MPIIO_DEFINE_WIDE_NONBLOCKING(name, params, args)                \
  static int wide_##name params {                                        \
    struct wide w = wide_of(wide_count, wide_type);                      \
    int count = w.count;                                                 \
    MPI_Datatype datatype = w.type;                                      \
    struct mpiio_request *q = mpiio_request_new(f, w.err_count);         \
    aggio_request ar = AGGIO_REQUEST_NULL;                               \
    int rc = aggio_file_##name(f->af, MPIIO_ARGS args, &ar);             \
    rc = mpiio_request_started(f, q, w.err_count, rc, ar, request);      \
    wide_free(&w);                                                       \
    return rc;                                                           \
  }
MPIIO_NONBLOCKING_CALLS_OF(MPIIO_DEFINE_WIDE_NONBLOCKING, MPIIO_FILE, MPIIO_WIDE_IN,
                           MPIIO_WIDE_OUT)

#define MPIIO_DEFINE_NONBLOCKING_C(name, params, args)                  \
  int MPI_File_##name##_c params {                                      \
    struct mpiio_file *f = mpiio_lookup(fh);                            \
    if (!f)                                                             \
      return MPIIO_NEXT(File_##name##_c)(fh, MPIIO_ARGS args, request); \
    if (!request)                                                       \
      return mpiio_null_request(f);                                     \
    return wide_##name(f, MPIIO_ARGS args, request);                    \
  }                                                                     \
  MPIIO_PROFILED(File_##name##_c)
MPIIO_NONBLOCKING_CALLS_OF(MPIIO_DEFINE_NONBLOCKING_C, MPIIO_FH, MPIIO_DATA_IN_C,
                           MPIIO_DATA_OUT_C)

/* ---- the two others ------------------------------------------------------------- */

int MPI_File_get_type_extent_c(MPI_File fh, MPI_Datatype datatype, MPI_Count *extent) {
  struct mpiio_file *f = mpiio_lookup(fh);
  if (!f)
    return MPIIO_NEXT(File_get_type_extent_c)(fh, datatype, extent);
  MPI_Aint e = 0; /* libaggio's is an MPI_Aint; a NULL extent is its error */
  int rc = aggio_file_get_type_extent(f->af, datatype, extent ? &e : NULL);
  if (rc == AGGIO_SUCCESS)
    *extent = e;
  return mpiio_finish(f, rc);
}
MPIIO_PROFILED(File_get_type_extent_c)

/* Refused as MPI_Register_datarep is (files.c). */
int MPI_Register_datarep_c(const char *datarep,
                           MPI_Datarep_conversion_function_c *read_conversion_fn,
                           MPI_Datarep_conversion_function_c *write_conversion_fn,
                           MPI_Datarep_extent_function *dtype_file_extent_fn,
                           void *extra_state) {
  (void)read_conversion_fn, (void)write_conversion_fn, (void)dtype_file_extent_fn;
  (void)extra_state;
  return mpiio_refuse_datarep("MPI_Register_datarep_c", datarep);
}
MPIIO_PROFILED(Register_datarep_c)
