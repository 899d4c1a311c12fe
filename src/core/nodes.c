/*
 * nodes.c - which ranks share a node, and which ranks aggregate.
 *
 * A node is an MPI_COMM_TYPE_SHARED group.  Because a laptop or a CI box is
 * one node and Open MPI has no way to pretend otherwise (MPICH's
 * MPIR_CVAR_NUM_CLIQUES is MPICH-only and ROMIO ignores it), the hint
 * aggio_emulate_nodes=N splits each real node's ranks into N emulated nodes
 * of consecutive ranks, named "<host>#<i>".  The choice of aggregators is
 * pure planning code (plan.c); this file only gathers its inputs.
 *
 * Cost at open, P ranks on N nodes: one allgather of 8 bytes per rank, a
 * sort to number the nodes (node_ids.c, O(P log P)), and one allgather of
 * the N node names from each node's first rank (as ROMIO gathers names to
 * one rank rather than every name to every rank).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "node_ids.h"
#include "plan.h"

struct node_key {
  int leader; /* rank (in fh->comm) of the real node's first rank */
  int emu;    /* emulated node index within the real node */
};

/* Node keys of all ranks: real node leader and emulated index. */
static int gather_keys(aggio_file fh, struct node_key *keys,
                       struct aggio__err *e) {
  MPI_Comm node_comm;
  if (MPI_Comm_split_type(fh->comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                          &node_comm) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Comm_split_type failed",
                       fh->rank);
  int lr, ls;
  MPI_Comm_rank(node_comm, &lr);
  MPI_Comm_size(node_comm, &ls);
  struct node_key mine = {fh->rank, 0};
  MPI_Bcast(&mine.leader, 1, MPI_INT, 0, node_comm);
  int k = (int)fh->hints.emulate_nodes.num;
  if (k > 0)
    mine.emu = aggio__emulated_node(lr, ls, k);
  /* The (emulated) node's communicator stays with the file: strategies
   * share memory on it, so emulated nodes use messages between them as
   * real nodes do. */
  int rc = MPI_Comm_split(node_comm, mine.emu, lr, &fh->topo.node_comm);
  MPI_Comm_free(&node_comm);
  if (rc != MPI_SUCCESS) {
    fh->topo.node_comm = MPI_COMM_NULL;
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Comm_split failed", fh->rank);
  }
  if (MPI_Allgather(&mine, 2, MPI_INT, keys, 2, MPI_INT, fh->comm) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allgather failed", fh->rank);
  return 0;
}

/* Every rank's memory, or none goes on: the collectives that follow
 * cannot be left on one rank alone (the agreement is the same on every
 * rank, so all return together). */
static int agree_memory(aggio_file fh, int ok, struct aggio__err *e) {
  if (!ok)
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory finding the nodes", fh->rank);
  return aggio__agree(fh->comm, e);
}

/* The first rank of each node (in fh->comm order) sends its host name; every
 * rank receives the nnodes names, at the place of their node's number. */
static int gather_node_hosts(aggio_file fh, char *hosts, struct aggio__err *e) {
  int *counts = aggio__calloc(fh, (size_t)fh->nprocs, sizeof *counts);
  int *displs = aggio__calloc(fh, (size_t)fh->nprocs, sizeof *displs);
  unsigned char *seen = aggio__calloc(fh, (size_t)fh->topo.nnodes, 1);
  int rc = agree_memory(fh, counts && displs && seen, e);
  for (int r = 0; rc == 0 && r < fh->nprocs; r++) {
    int id = fh->topo.node_of_rank[r];
    if (!seen[id]) {
      seen[id] = 1;
      counts[r] = MPI_MAX_PROCESSOR_NAME;
      displs[r] = id * MPI_MAX_PROCESSOR_NAME;
    }
  }
  char mine[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  if (rc == 0 &&
      MPI_Allgatherv(mine, counts[fh->rank], MPI_CHAR, hosts, counts, displs, MPI_CHAR,
                     fh->comm) != MPI_SUCCESS)
    rc = aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allgatherv failed", fh->rank);
  free(counts);
  free(displs);
  free(seen);
  return rc;
}

/* One name per node: its host, and "#<i>" for emulated node i.  A name
 * this rank cannot allocate fails the open later, by its agreement: the
 * collectives here are done by then. */
static int name_nodes(aggio_file fh, const struct node_key *keys, struct aggio__err *e) {
  char *hosts = aggio__calloc(fh, (size_t)fh->topo.nnodes, MPI_MAX_PROCESSOR_NAME);
  fh->topo.node_names =
      aggio__calloc(fh, (size_t)fh->topo.nnodes, sizeof *fh->topo.node_names);
  int rc = agree_memory(fh, hosts && fh->topo.node_names, e);
  if (rc == 0)
    rc = gather_node_hosts(fh, hosts, e);
  int emulated = fh->hints.emulate_nodes.num > 0;
  for (int r = 0; rc == 0 && r < fh->nprocs; r++) {
    int id = fh->topo.node_of_rank[r];
    if (fh->topo.node_names[id])
      continue;
    const char *host = hosts + (size_t)id * MPI_MAX_PROCESSOR_NAME;
    size_t n = strnlen(host, MPI_MAX_PROCESSOR_NAME) + 16;
    fh->topo.node_names[id] = aggio__malloc(fh, n);
    if (!fh->topo.node_names[id])
      rc = aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
    else if (emulated)
      snprintf(fh->topo.node_names[id], n, "%.*s#%d", MPI_MAX_PROCESSOR_NAME, host,
               keys[r].emu);
    else
      snprintf(fh->topo.node_names[id], n, "%.*s", MPI_MAX_PROCESSOR_NAME, host);
  }
  free(hosts);
  return rc;
}

/* Collective, and every failure agreed before the next collective: a rank
 * that ran out of memory must not leave the others waiting in one (item 7
 * of issue 22: open used to return early on one rank only). */
int aggio__topology(aggio_file fh, struct aggio__err *e) {
  struct node_key *keys = aggio__malloc(fh, (size_t)fh->nprocs * sizeof *keys);
  fh->topo.node_of_rank =
      aggio__malloc(fh, (size_t)fh->nprocs * sizeof *fh->topo.node_of_rank);
  fh->topo.aggr = aggio__malloc(fh, (size_t)fh->nprocs * sizeof *fh->topo.aggr);
  int rc = agree_memory(fh, keys && fh->topo.node_of_rank && fh->topo.aggr, e);
  if (rc == 0)
    rc = gather_keys(fh, keys, e);
  if (rc == 0) {
    _Static_assert(sizeof(struct node_key) == 2 * sizeof(int), "keys are int pairs");
    fh->topo.nnodes =
        aggio__number_nodes(fh->nprocs, (const int *)keys, fh->topo.node_of_rank);
    rc = agree_memory(fh, fh->topo.nnodes >= 0, e);
  }
  if (rc == 0)
    rc = name_nodes(fh, keys, e);
  free(keys);
  if (rc != 0) {
    aggio__place_aggregators(fh, 0, e); /* its collectives, so that no rank waits */
    return rc;
  }
  /* Cray's rule: an explicit cb_nodes without a cb_config_list means that
   * many aggregators, spread over the nodes, not one per node. */
  const char *config = fh->hints.cb_config_list.str;
  if (fh->hints.cb_nodes.num > 0 && fh->hints.cb_config_list.set == AGGIO_HS_DEFAULT)
    config = "*:*";
  char msg[256], multiplied[AGGIO_HINT_STRLEN];
  int cb_nodes = (int)fh->hints.cb_nodes.num;
  /* cray_cb_nodes_multiplier: that many times the aggregators per node
   * and under the cb_nodes cap (Cray's aggregators per stripe). */
  if (aggio__cb_multiply(config, cb_nodes, (int)fh->hints.cray_cb_nodes_multiplier.num,
                         fh->nprocs, multiplied, sizeof multiplied, &cb_nodes, msg,
                         sizeof msg) != 0) {
    aggio__place_aggregators(fh, 0, e); /* its collectives, so that no rank waits */
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: %s", fh->rank, msg);
  }
  if (aggio__select_aggregators(fh->nprocs, fh->topo.node_of_rank, fh->topo.nnodes,
                                (const char *const *)fh->topo.node_names, multiplied,
                                cb_nodes, fh->topo.aggr, &fh->topo.naggr, msg,
                                sizeof msg) != 0) {
    aggio__place_aggregators(fh, 0, e);
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: %s", fh->rank, msg);
  }
  /* cb_config_list and cb_nodes say how many aggregators; aggio_placement
   * may move them (topology_load.c). */
  int prc = aggio__place_aggregators(fh, 1, e);
  if (prc != 0)
    return prc;
  aggio__find_my_aggr(fh);
  return 0;
}

void aggio__topology_free(aggio_file fh) {
  aggio__call_placement_free(fh);
  if (fh->topo.node_comm != MPI_COMM_NULL)
    MPI_Comm_free(&fh->topo.node_comm);
  if (fh->topo.node_names)
    for (int i = 0; i < fh->topo.nnodes; i++)
      free(fh->topo.node_names[i]);
  free(fh->topo.node_names);
  free(fh->topo.node_of_rank);
  free(fh->topo.aggr);
  fh->topo.node_names = NULL;
  fh->topo.node_of_rank = NULL;
  fh->topo.aggr = NULL;
}
