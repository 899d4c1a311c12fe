/*
 * backends.c - the back end registry: every back end is in every binary, so
 * one run can put them side by side.
 */
#include <strings.h>

#include "bench.h"

static const struct bench_backend *const backends[] = {
    &bench_backend_aggio,
    &bench_backend_mpiio,
    &bench_backend_posix,
};

const struct bench_backend *bench_backend_find(const char *name) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (!strcasecmp(backends[i]->name, name)) return backends[i];
  return NULL;
}
