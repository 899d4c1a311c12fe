/*
 * mpiio_common.h - what the MPI-IO client tests share.  These programs use
 * plain MPI_File_* calls and link only the MPI library: ctest runs each
 * once as it is (the MPI library's own MPI-IO) and once under aggio-run.
 * AGGIO_TEST_EXPECT_AGGIO=1 (the aggio-run runs) makes a test check that
 * its MPI_File_open really is libaggio-mpiio's, so that a preload that did
 * not happen cannot pass as aggio.  Results are checked against the MPI
 * library itself, through its own definitions of PMPI_File_* (MPI_OWN):
 * aggio defines the PMPI_ names too, as an MPI-IO implementation under
 * the profiling interface must.
 */
#ifndef AGGIO_MPIIO_COMMON_H
#define AGGIO_MPIIO_COMMON_H

#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

/* The MPI library's own definition of a symbol: looked up in the object
 * that defines PMPI_Comm_rank (which aggio never defines), so that neither
 * aggio nor a tool in front of it answers.  NULL if it has none. */
static inline void *mpiio_mpi_own(const char *name) {
  Dl_info info;
  if (!dladdr((void *)&PMPI_Comm_rank, &info) || !info.dli_fname)
    return NULL;
  void *lib = dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
  return lib ? dlsym(lib, name) : NULL;
}
/* MPI_OWN(File_open)(...) calls the MPI library's PMPI_File_open. */
#define MPI_OWN(name) ((__typeof__(&PMPI_##name))mpiio_mpi_own("PMPI_" #name))

/* 1 when MPI_File_open is libaggio-mpiio's. */
static inline int mpiio_under_aggio(void) {
  Dl_info info;
  void *sym = dlsym(RTLD_DEFAULT, "MPI_File_open");
  if (!sym || !dladdr(sym, &info) || !info.dli_fname)
    return 0;
  return strstr(info.dli_fname, "libaggio-mpiio") != NULL;
}

/* Checks that the run is what ctest meant it to be; returns whether aggio
 * serves MPI_File_*. */
static inline int mpiio_check_mode(void) {
  int aggio = mpiio_under_aggio();
  const char *want = getenv("AGGIO_TEST_EXPECT_AGGIO");
  int expect = want && strcmp(want, "1") == 0;
  CHECK(aggio == expect, "MPI_File_open is %s's, expected %s", aggio ? "aggio" : "MPI",
        expect ? "aggio" : "MPI");
  return aggio;
}

/* A path under the test directory, the same on every rank. */
static inline void mpiio_path(char *out, size_t cap, const char *name) {
  snprintf(out, cap, "%s/mpiio_%s_%s.dat", test_dir(), name,
           getenv("AGGIO_TEST_TAG") ? getenv("AGGIO_TEST_TAG") : "x");
}

/* mpiio_path for a file the test creates: any file left there by an
 * earlier run is removed (through the MPI library, by rank 0) before any
 * rank opens it.  Collective over MPI_COMM_WORLD. */
static inline void mpiio_fresh_path(char *out, size_t cap, const char *name) {
  int me;
  mpiio_path(out, cap, name);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  if (me == 0)
    MPI_OWN(File_delete)(out, MPI_INFO_NULL);
  MPI_Barrier(MPI_COMM_WORLD);
}

static inline int error_class(int code) {
  int cls = -1;
  MPI_Error_class(code, &cls);
  return cls;
}

/* The whole file as the MPI library's MPI-IO reads it (not aggio);
 * *len its size.  Every rank of comm gets it. */
static inline char *mpiio_read_reference(MPI_Comm comm, const char *path,
                                         MPI_Offset *len) {
  MPI_File fh;
  *len = -1;
  if (MPI_OWN(File_open)(comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) != MPI_SUCCESS)
    return NULL;
  MPI_OWN(File_get_size)(fh, len);
  char *buf = malloc((size_t)*len + 1);
  if (buf && *len > 0)
    MPI_OWN(File_read_at_all)(fh, 0, buf, (int)*len, MPI_BYTE, MPI_STATUS_IGNORE);
  MPI_OWN(File_close)(&fh);
  return buf;
}

/* Checks, through the MPI library's MPI-IO, that the file holds `blocks`
 * blocks of `block` bytes, block k all (char)(base + k): the layout these
 * tests write (rank r's k-th block at (k * nranks + r) * block). */
static inline void mpiio_check_blocks(const char *path, char base, MPI_Offset block,
                                      MPI_Offset blocks) {
  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file && len == block * blocks, "%s: length %lld", path, (long long)len);
  int bad = 0;
  for (MPI_Offset i = 0; file && i < len; i++)
    bad += file[i] != (char)(base + i / block);
  CHECK(bad == 0, "%s: %d wrong bytes", path, bad);
  free(file);
}

#endif
