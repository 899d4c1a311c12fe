/*
 * open_scaling.c - what aggio_file_open costs as ranks grow (a benchmark for
 * scripts/bench-open, not a test: it checks nothing and times everything).
 *
 *   mpiexec -n P open_scaling [--opens N] [--emulate] [--dir D]
 *       the median over N opens (default 20) of the slowest rank's open
 *       time; --emulate makes every rank a node of its own
 *       (aggio_emulate_nodes = P), the most nodes P ranks can have
 *   open_scaling --simulate
 *       one process: aggio__number_nodes for 1 Ki .. 1 Mi simulated ranks,
 *       beside the O(P^2) search it replaced (up to 64 Ki ranks)
 */
#include <aggio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "node_ids.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The search numbering nodes before node_ids.c: for each rank, the earlier
 * ranks until one with the same key. */
static int quadratic(int n, const int *keys, int *node_of_rank) {
  int count = 0;
  for (int r = 0; r < n; r++) {
    int id = -1;
    for (int q = 0; q < r && id < 0; q++)
      if (keys[2 * q] == keys[2 * r] && keys[2 * q + 1] == keys[2 * r + 1])
        id = node_of_rank[q];
    node_of_rank[r] = id >= 0 ? id : count++;
  }
  return count;
}

/* Seconds for one numbering of n ranks, 64 per node. */
static double time_numbering(int n, int (*number)(int, const int *, int *)) {
  int *keys = malloc(sizeof(int) * 2 * (size_t)n), *ids = malloc(sizeof(int) * (size_t)n);
  for (int r = 0; r < n; r++) {
    keys[2 * r] = r / 64 * 64;
    keys[2 * r + 1] = 0;
  }
  double t0 = now();
  number(n, keys, ids);
  double t = now() - t0;
  free(keys);
  free(ids);
  return t;
}

static void simulate(void) {
  printf("| simulated ranks | aggio__number_nodes (ms) | O(P^2) search (ms) |\n");
  printf("|---:|---:|---:|\n");
  for (int n = 1024; n <= (1 << 20); n *= 4) {
    double fast = time_numbering(n, aggio__number_nodes);
    if (n <= 65536)
      printf("| %d | %.2f | %.1f |\n", n, 1e3 * fast, 1e3 * time_numbering(n, quadratic));
    else
      printf("| %d | %.2f | (not run) |\n", n, 1e3 * fast);
  }
}

static void opens(int nopens, int emulate, const char *dir) {
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  char path[600], nodes[16];
  snprintf(path, sizeof path, "%s/aggio-open-scaling.%d", dir, np);
  snprintf(nodes, sizeof nodes, "%d", np);
  MPI_Info info;
  MPI_Info_create(&info);
  if (emulate)
    MPI_Info_set(info, "aggio_emulate_nodes", nodes);
  double *t = malloc(sizeof(double) * (size_t)nopens);
  for (int i = 0; i < nopens; i++) {
    aggio_file fh;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
    double mine = now() - t0;
    if (rc != AGGIO_SUCCESS) {
      fprintf(stderr, "open: %s\n", aggio_error_message());
      MPI_Abort(MPI_COMM_WORLD, 1); /* a benchmark's main, not the library */
    }
    MPI_Reduce(&mine, &t[i], 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    aggio_file_close(&fh);
  }
  if (rank == 0) {
    qsort(t, (size_t)nopens, sizeof *t, cmp_double);
    printf("ranks %d nodes %d open_ms_median %.3f open_ms_min %.3f\n", np, emulate ? np : 1,
           1e3 * t[nopens / 2], 1e3 * t[0]);
    unlink(path);
  }
  free(t);
  MPI_Info_free(&info);
}

int main(int argc, char **argv) {
  int nopens = 20, emulate = 0, sim = 0;
  const char *dir = "/tmp";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--opens") && i + 1 < argc)
      nopens = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--emulate"))
      emulate = 1;
    else if (!strcmp(argv[i], "--simulate"))
      sim = 1;
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
  }
  if (sim) {
    simulate();
    return 0;
  }
  MPI_Init(&argc, &argv);
  opens(nopens > 0 ? nopens : 1, emulate, dir);
  MPI_Finalize();
  return 0;
}
