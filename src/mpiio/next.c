/*
 * next.c - finds the next definition of every call aggio defines
 * (next.h): dlsym(RTLD_NEXT, "PMPI_<name>") from this library, so that a
 * tool loaded after aggio stays in the chain; where that finds nothing
 * (the MPI library loaded in a way RTLD_NEXT does not search), the MPI
 * library's own definition, through the object that defines
 * PMPI_Comm_rank, which aggio never defines.
 */
#define _GNU_SOURCE /* RTLD_NEXT, dladdr */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "next.h"

static struct mpiio_next next;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* The MPI library's handle, for the fallback; NULL if not found. */
static void *mpi_library(void) {
  Dl_info info;
  if (!dladdr((void *)&PMPI_Comm_rank, &info) || !info.dli_fname)
    return NULL;
  return dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD);
}

static void *find(const char *name) {
  void *sym = dlsym(RTLD_NEXT, name);
  if (sym)
    return sym;
  void *lib = mpi_library();
  return lib ? dlsym(lib, name) : NULL;
}

/* A name nothing defines stays NULL, and calling it would crash later,
 * far from the cause: say which at once.  It cannot happen while this
 * library links the MPI library it was built against. */
static void *find_or_say(const char *name) {
  void *sym = find(name);
  if (!sym)
    fprintf(stderr, "aggio: the MPI library defines no %s\n", name);
  return sym;
}

#define FIND(name) *(void **)&next.name = find_or_say("PMPI_" #name);
#define FIND_FILE(name, params, args) FIND(File_##name)
#define FIND_FILE_C(name, params, args) FIND(File_##name##_c)

static void resolve(void) {
  MPIIO_OWN_CALLS(FIND)
  MPIIO_DATA_CALLS(FIND_FILE)
  MPIIO_FORWARD_CALLS(FIND_FILE)
  MPIIO_NONBLOCKING_CALLS(FIND_FILE)
  MPIIO_LARGE_COUNT_CALLS(FIND, FIND_FILE_C)
}

const struct mpiio_next *mpiio_next(void) {
  pthread_once(&once, resolve);
  return &next;
}
