/*
 * flatten.h - MPI datatype -> struct aggio__flat, cached on the datatype.
 */
#ifndef AGGIO_FLATTEN_H
#define AGGIO_FLATTEN_H

#include <mpi.h>

#include "flat.h"

/* Returns the flattened form of `type` with one reference held by the caller
 * (release it with aggio__flat_release).  Derived types are decoded once and
 * cached as an attribute of the type, so the cache entry dies with the type.
 * Every combiner is handled: named, dup, contiguous, vector, hvector,
 * indexed, hindexed, indexed_block, hindexed_block, struct, subarray,
 * darray, resized, and nestings of them.
 * Returns 0, AGGIO_ERR_TYPE (invalid/uncommitted/unsupported type, with a
 * message in err) or AGGIO_ERR_NOMEM. */
int aggio__flatten(MPI_Datatype type, struct aggio__flat **out, char *err,
                   size_t errlen);
void aggio__flat_release(struct aggio__flat *f);
/* Makes the datatype cache and its MPI_COMM_SELF clean-up now (at the
 * first flatten otherwise): aggio_init calls it right after MPI_Init, so
 * that the clean-up, set before any other library's, runs after theirs at
 * MPI_Finalize (HDF5 closes its files from its own, through MPI-IO). */
void aggio__flatten_init(void);

#endif
