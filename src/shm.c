/*
 * shm.c - same-node shared memory for aggregator buffers.
 *
 * Each aggregator's two collective buffers live in an MPI-3 shared window of
 * its node (MPI_Win_allocate_shared), so a rank on the same node copies its
 * data straight into the aggregator's buffer: one memcpy, where a message
 * costs a copy in and a copy out of the MPI library's shared segment plus a
 * rendezvous.  The same idea as MPICH/Cray's node-level aggregation and
 * ADIOS2's MPIShmChain; the synchronisation follows the MPI-3 unified
 * memory model (lock_all once, MPI_Win_sync around each node barrier).
 */
#include <stdint.h>
#include <stdlib.h>

#include "internal.h"

#define AGGIO_PAGE 4096

static char *page_align(char *p) {
  uintptr_t u = (uintptr_t)p;
  return (char *)((u + AGGIO_PAGE - 1) / AGGIO_PAGE * AGGIO_PAGE);
}

/* Node ranks of the aggregators that share this rank's node. */
static int map_aggregators(aggio_file fh) {
  MPI_Group world, node;
  fh->shm_aggr = calloc((size_t)fh->naggr, sizeof *fh->shm_aggr);
  int *node_rank = malloc((size_t)fh->naggr * sizeof *node_rank);
  if (!fh->shm_aggr || !node_rank) {
    free(node_rank);
    return -1;
  }
  MPI_Comm_group(fh->comm, &world);
  MPI_Comm_group(fh->shm_comm, &node);
  MPI_Group_translate_ranks(world, fh->naggr, fh->aggr, node, node_rank);
  for (int i = 0; i < fh->naggr; i++) {
    if (node_rank[i] == MPI_UNDEFINED)
      continue;
    MPI_Aint size;
    int disp;
    char *base = NULL;
    MPI_Win_shared_query(fh->shm_win, node_rank[i], &size, &disp, &base);
    fh->shm_aggr[i] = size > 0 ? page_align(base) : NULL;
  }
  MPI_Group_free(&world);
  MPI_Group_free(&node);
  free(node_rank);
  return 0;
}

static int64_t mailbox_bytes(aggio_file fh) {
  return aggio__round_up((int64_t)fh->nprocs * (1 + 2 * AGGIO_MAILBOX_CAP) *
                             (int64_t)sizeof(int64_t), AGGIO_PAGE);
}

int aggio__shm_ensure(aggio_file fh, int64_t slot) {
  slot = aggio__round_up(slot, AGGIO_PAGE);
  if (fh->shm_win != MPI_WIN_NULL && fh->shm_slot == slot)
    return 1;
  aggio__shm_free(fh);
  if (fh->hints.node_shm.num == AGGIO_DISABLE || fh->shm_comm == MPI_COMM_NULL)
    return 0;
  MPI_Info info;
  MPI_Info_create(&info);
  /* Each aggregator's buffers on its own pages (and NUMA domain). */
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  /* Per aggregator: two buffers, then a mailbox per rank for the offsets it
   * sends (used when every rank is on one node). */
  MPI_Aint bytes = fh->my_aggr_index >= 0
                       ? (MPI_Aint)(2 * slot + mailbox_bytes(fh) + AGGIO_PAGE) : 0;
  char *base = NULL;
  int ok = MPI_Win_allocate_shared(bytes, 1, info, fh->shm_comm, &base,
                                   &fh->shm_win) == MPI_SUCCESS;
  MPI_Info_free(&info);
  if (!ok)
    fh->shm_win = MPI_WIN_NULL;
  int all_ok = 0;
  MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, fh->shm_comm);
  if (all_ok) {
    fh->shm_slot = slot;
    MPI_Win_lock_all(MPI_MODE_NOCHECK, fh->shm_win);
    all_ok = map_aggregators(fh) == 0;
    MPI_Allreduce(MPI_IN_PLACE, &all_ok, 1, MPI_INT, MPI_MIN, fh->shm_comm);
    if (!all_ok)
      aggio__shm_free(fh);
  } else if (ok) {
    MPI_Win_free(&fh->shm_win);
  }
  fh->shm_win = all_ok ? fh->shm_win : MPI_WIN_NULL;
  return all_ok;
}

char *aggio__shm_buffer(aggio_file fh, int i, int s) {
  if (fh->shm_win == MPI_WIN_NULL || !fh->shm_aggr || !fh->shm_aggr[i])
    return NULL;
  return fh->shm_aggr[i] + (int64_t)s * fh->shm_slot;
}

int64_t *aggio__shm_mailbox(aggio_file fh, int i, int sender) {
  char *b = aggio__shm_buffer(fh, i, 2); /* just past the two buffers */
  if (!b)
    return NULL;
  return (int64_t *)b + (int64_t)sender * (1 + 2 * AGGIO_MAILBOX_CAP);
}

void aggio__shm_barrier(aggio_file fh) {
  MPI_Win_sync(fh->shm_win);
  MPI_Barrier(fh->shm_comm);
  MPI_Win_sync(fh->shm_win);
}

void aggio__shm_free(aggio_file fh) {
  if (fh->shm_win != MPI_WIN_NULL) {
    if (fh->shm_slot > 0)
      MPI_Win_unlock_all(fh->shm_win);
    MPI_Win_free(&fh->shm_win);
  }
  fh->shm_win = MPI_WIN_NULL;
  fh->shm_slot = 0;
  free(fh->shm_aggr);
  fh->shm_aggr = NULL;
}
