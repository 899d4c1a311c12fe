/*
 * nodes.h - the nodes and aggregators of a file (nodes.c, topology_load.c):
 * the file handle's part (fh->topo), found collectively at open, and what
 * moves the aggregators (per file at open, or per call).
 */
#ifndef AGGIO_NODES_H
#define AGGIO_NODES_H

#include <mpi.h>
#include <stdint.h>

#include "aggio.h"

struct aggio__err;
struct aggio__call_placement;

/* The file handle's part (fh->topo). */
struct aggio__topo_state {
  int nnodes;
  int *node_of_rank;      /* nprocs entries: (emulated) node of each rank */
  char **node_names;      /* nnodes entries */
  int *aggr;              /* aggregator ranks, sorted */
  int naggr;
  int my_aggr_index;      /* index into aggr, or -1 */
  MPI_Comm node_comm;     /* ranks of this rank's (emulated) node */
  char placement_used[64];  /* the placement applied (aggio_placement_selected) */
  char error[256];          /* why a topology or placement was not used, or "" */
  /* aggio_placement_scope=call (topology_load.c): what the topology
   * placement needs again at every two-phase call, or NULL */
  struct aggio__call_placement *call_place;
  char io_node[64];         /* the topology's I/O node nearest to this rank's
                             * node, or "": where the SimGrid build's null back
                             * end forwards writes (storage_null.c) */
};

/* ---- topology (nodes.c) ---------------------------------------------------- */

/* Collective at open: finds nodes (MPI_COMM_TYPE_SHARED groups, split into
 * emulated nodes by the aggio_emulate_nodes hint), names them, and chooses
 * the aggregators from cb_config_list / cb_nodes.  Fills nnodes,
 * node_of_rank, node_names, aggr, naggr, my_aggr_index, node_comm. */
int aggio__topology(aggio_file fh, struct aggio__err *e);
void aggio__topology_free(aggio_file fh);
/* ---- per-call placement (topology_load.c) ------------------------------------- */

/* With aggio_placement_scope=call: the topology placement of one call from
 * its volumes (volume[r]: the bytes rank r accesses), into a scratch
 * list of the file's.  Returns 1 when it differs from fh->topo.aggr, 0
 * when not, -1 out of memory (this rank only: the caller agrees). */
int aggio__place_call(aggio_file fh, const int64_t *volume);
int64_t *aggio__call_volume(aggio_file fh);   /* [nprocs] */
/* Makes the scratch list the file's aggregators. */
void aggio__place_call_commit(aggio_file fh);
void aggio__call_placement_free(aggio_file fh);

/* ---- aggregator placement (topology_load.c) --------------------------------- */

/* Collective at open, after the aggregators are chosen (ready: this rank
 * chose them; 0 still takes part in the collectives, and places nothing):
 * moves them as aggio_placement says, on the topology of
 * aggio_topology_file or aggio_topology_slurm.  Fills placement_used and
 * topo_error.  Fails only when out of memory. */
int aggio__place_aggregators(aggio_file fh, int ready, struct aggio__err *e);

#endif
