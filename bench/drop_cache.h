/*
 * drop_cache.h - the page cache dropped before a timed read, shared by
 * aggio-bench and the HDF5/PnetCDF programs of bench/clients, so that both
 * measure reads from storage the same way.  Needs sync() (_DEFAULT_SOURCE).
 */
#ifndef AGGIO_BENCH_DROP_CACHE_H
#define AGGIO_BENCH_DROP_CACHE_H

#include <fcntl.h>
#include <mpi.h>
#include <unistd.h>

/* Collective over comm: the first rank of each node writes back dirty
 * pages and drops the node's page cache (root only).  1 on every rank when
 * every node did, else 0. */
static inline int bench_drop_page_cache(MPI_Comm comm) {
  MPI_Comm node;
  int lrank, ok = 1, all;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  if (lrank == 0) {
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    ok = fd >= 0 && write(fd, "3\n", 2) == 2;
    if (fd >= 0)
      close(fd);
  }
  MPI_Comm_free(&node);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, comm);
  return all;
}

#endif
