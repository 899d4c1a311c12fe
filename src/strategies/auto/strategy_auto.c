/*
 * strategy_auto.c - the default strategy: a pure chooser.  From the summary
 * every rank agreed on at the start of the call, it picks independent,
 * two-phase, write-behind or node-local I/O (the rule is aggio__auto_decide
 * in plan.c, unit-tested, documented with its measurements in
 * docs/strategies.md), and the engine runs the chosen strategy.
 */
#include <stdio.h>
#include <string.h>

#include "engine.h"

/* Striped: over servers (striping_unit, or a file system that stripes),
 * or over subfiles (a subfiled file, docs/subfiling.md): the same rules
 * keep one writer per stripe target, and per subfile one node's
 * aggregator (two-phase's stripe-cyclic domains), not every node's cache. */
static int striped(aggio_file fh) {
  return fh->hints.striping_unit.num > 0 || fh->st.subfiles > 1 ||
         strcmp(fh->fstype, "lustre") == 0 ||
         strcmp(fh->fstype, "gpfs") == 0 || strcmp(fh->fstype, "beegfs") == 0;
}

/* The node cache can run: not in atomic mode (MPI's atomic semantics need
 * every access to reach the file at once), every rank has the file open,
 * and its shared memory was not refused earlier. */
static int cache_usable(aggio_file fh, const struct aggio__op *op) {
  return !fh->atomic && !(op->sum.flags & AGGIO_SF_NOT_OPENED) &&
         !(fh->strategy_refused & (1u << AGGIO_STRAT_WRITE_BEHIND));
}

/* The node cache's size per aggregator: the same rule as its set-up. */
static int64_t cache_bytes(aggio_file fh) {
  return fh->hints.write_behind_size.num > 0 ? fh->hints.write_behind_size.num
                                             : 2 * fh->hints.cb_buffer_size.num;
}

/* node_local can run: its ranks hand data over through shared memory
 * (not with aggio_node_shm=disable, nor once its set-up was refused). */
static int node_local_runs(aggio_file fh) {
  return fh->hints.node_shm.num != AGGIO_DISABLE &&
         !(fh->strategy_refused & (1u << AGGIO_STRAT_NODE_LOCAL));
}

/* ... and auto's rule may pick it: not in atomic mode either (where it
 * would run independent I/O). */
static int node_local_usable(aggio_file fh) { return !fh->atomic && node_local_runs(fh); }

/* Writes whose hints select node-local writing (aggio__select_write_path:
 * collective buffering off, only aggregators touching the file) go to the
 * node_local strategy when this build has it; else to two-phase, the one
 * path where only aggregators touch the file, saying so.  NULL: the hints
 * select nothing of the kind. */
static const struct aggio__strategy_ops *node_local_by_hints(aggio_file fh, char *why,
                                                            size_t whylen) {
  char because[160];
  if (aggio__select_write_path(&fh->hints, because, sizeof because) != AGGIO_PATH_NODE_LOCAL)
    return NULL;
  const struct aggio__strategy_ops *nl = aggio__strategy_at(fh, AGGIO_STRAT_NODE_LOCAL);
  int refused = nl && !node_local_runs(fh);
  snprintf(why, whylen, "%s%s", because,
           !nl ? "; this build has no node_local strategy: two-phase"
           : refused ? "; node_local has no shared memory here (aggio_node_shm=disable, or "
                       "its set-up failed): two-phase" : "");
  return nl && !refused ? nl : aggio__strategy_at(fh, AGGIO_STRAT_TWO_PHASE);
}


/* Every node holds consecutive ranks: ranks whose ranges lie apart in rank
 * order then make node regions that lie apart too (the usual block
 * placement; round-robin placement interleaves the nodes). */
static int nodes_blocked(aggio_file fh) {
  for (int r = 1; r < fh->nprocs; r++)
    if (fh->topo.node_of_rank[r] < fh->topo.node_of_rank[r - 1])
      return 0;
  return 1;
}

static const struct aggio__strategy_ops *auto_choose(aggio_file fh, const struct aggio__op *op,
                                                     char *why, size_t whylen) {
  int is_write = op->acc.is_write;
  const struct aggio__strategy_ops *nl = is_write ? node_local_by_hints(fh, why, whylen) : NULL;
  if (nl)
    return nl;
  struct aggio__auto_in in = {
      .is_write = is_write,
      .cb = (int)(is_write ? fh->hints.cb_write.num : fh->hints.cb_read.num),
      .wb = (int)fh->hints.write_behind.num,
      .wb_usable = cache_usable(fh, op),
      .no_indep_rw = (int)fh->hints.no_indep_rw.num,
      .striped = striped(fh),
      .nnodes = fh->topo.nnodes,
      .nl_usable = node_local_usable(fh),
      .nodes_blocked = nodes_blocked(fh),
      .subfiled = fh->st.subfiles > 1,
      .cache_bytes = cache_bytes(fh),
      .previous = fh->auto_previous,
      .mixed_reads = (op->sum.flags & AGGIO_SF_READ_ALONE) != 0,
  };
  /* Every rank holds the same previous choice: it came from the same
   * agreed summaries. */
  fh->auto_previous = aggio__auto_decide(&op->sum, &in, why, whylen);
  /* the rule returns the id of a strategy auto may choose */
  const struct aggio__strategy_ops *s = aggio__strategy_at(fh, fh->auto_previous);
  return s && aggio__strategy_auto_may(s->id)
             ? s
             : aggio__strategy_at(fh, AGGIO_STRAT_INDEPENDENT);
}

const struct aggio__strategy_ops aggio__strategy_auto = {
    .name = "auto",
    .id = AGGIO_STRAT_AUTO,
    .choose = auto_choose,
};
