/*
 * nodes.c - which ranks share a node, and which ranks aggregate.
 *
 * A node is an MPI_COMM_TYPE_SHARED group.  Because a laptop or a CI box is
 * one node and Open MPI has no way to pretend otherwise (MPICH's
 * MPIR_CVAR_NUM_CLIQUES is MPICH-only and ROMIO ignores it), the hint
 * aggio_emulate_nodes=N splits each real node's ranks into N emulated nodes
 * of consecutive ranks, named "<host>#<i>".  The choice of aggregators is
 * pure planning code (plan.c); this file only gathers its inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plan.h"

struct node_key {
  int leader; /* rank (in fh->comm) of the real node's first rank */
  int emu;    /* emulated node index within the real node */
};

/* Numbers nodes by first appearance in rank order. */
static int number_nodes(aggio_file fh, const struct node_key *keys) {
  int n = 0;
  for (int r = 0; r < fh->nprocs; r++) {
    int id = -1;
    for (int q = 0; q < r && id < 0; q++)
      if (keys[q].leader == keys[r].leader && keys[q].emu == keys[r].emu)
        id = fh->node_of_rank[q];
    fh->node_of_rank[r] = id >= 0 ? id : n++;
  }
  return n;
}

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
  int rc = MPI_Comm_split(node_comm, mine.emu, lr, &fh->node_comm);
  MPI_Comm_free(&node_comm);
  if (rc != MPI_SUCCESS) {
    fh->node_comm = MPI_COMM_NULL;
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Comm_split failed", fh->rank);
  }
  if (MPI_Allgather(&mine, 2, MPI_INT, keys, 2, MPI_INT, fh->comm) != MPI_SUCCESS)
    return aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allgather failed", fh->rank);
  return 0;
}

/* Host names of all ranks, then one name per node. */
static int name_nodes(aggio_file fh, const struct node_key *keys,
                      struct aggio__err *e) {
  char mine[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  char *all = malloc((size_t)fh->nprocs * MPI_MAX_PROCESSOR_NAME);
  fh->node_names = calloc((size_t)fh->nnodes, sizeof *fh->node_names);
  if (!all || !fh->node_names) {
    free(all);
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  }
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all,
                MPI_MAX_PROCESSOR_NAME, MPI_CHAR, fh->comm);
  int emulated = fh->hints.emulate_nodes.num > 0;
  for (int r = 0; r < fh->nprocs; r++) {
    int id = fh->node_of_rank[r];
    if (fh->node_names[id])
      continue;
    const char *host = all + (size_t)r * MPI_MAX_PROCESSOR_NAME;
    size_t n = strnlen(host, MPI_MAX_PROCESSOR_NAME) + 16;
    fh->node_names[id] = malloc(n);
    if (!fh->node_names[id])
      break;
    if (emulated)
      snprintf(fh->node_names[id], n, "%s#%d", host, keys[r].emu);
    else
      snprintf(fh->node_names[id], n, "%s", host);
  }
  free(all);
  for (int i = 0; i < fh->nnodes; i++)
    if (!fh->node_names[i])
      return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  return 0;
}

int aggio__topology(aggio_file fh, struct aggio__err *e) {
  struct node_key *keys = malloc((size_t)fh->nprocs * sizeof *keys);
  fh->node_of_rank = malloc((size_t)fh->nprocs * sizeof *fh->node_of_rank);
  fh->aggr = malloc((size_t)fh->nprocs * sizeof *fh->aggr);
  if (!keys || !fh->node_of_rank || !fh->aggr) {
    free(keys);
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  }
  int rc = gather_keys(fh, keys, e);
  if (rc == 0) {
    fh->nnodes = number_nodes(fh, keys);
    rc = name_nodes(fh, keys, e);
  }
  free(keys);
  if (rc != 0)
    return rc;
  /* Cray's rule: an explicit cb_nodes without a cb_config_list means that
   * many aggregators, spread over the nodes, not one per node. */
  const char *config = fh->hints.cb_config_list.str;
  if (fh->hints.cb_nodes.num > 0 && fh->hints.cb_config_list.set == AGGIO_HS_DEFAULT)
    config = "*:*";
  char msg[256];
  if (aggio__select_aggregators(fh->nprocs, fh->node_of_rank, fh->nnodes,
                                (const char *const *)fh->node_names, config,
                                (int)fh->hints.cb_nodes.num, fh->aggr,
                                &fh->naggr, msg, sizeof msg) != 0)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: %s", fh->rank, msg);
  fh->my_aggr_index = -1;
  for (int i = 0; i < fh->naggr; i++)
    if (fh->aggr[i] == fh->rank)
      fh->my_aggr_index = i;
  return 0;
}

void aggio__topology_free(aggio_file fh) {
  if (fh->node_comm != MPI_COMM_NULL)
    MPI_Comm_free(&fh->node_comm);
  if (fh->node_names)
    for (int i = 0; i < fh->nnodes; i++)
      free(fh->node_names[i]);
  free(fh->node_names);
  free(fh->node_of_rank);
  free(fh->aggr);
  fh->node_names = NULL;
  fh->node_of_rank = NULL;
  fh->aggr = NULL;
}
