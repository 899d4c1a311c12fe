/*
 * tp_place.c - two-phase's per-call placement (aggio_placement_scope=call,
 * docs/topology.md): before a call's set-up, the ranks share what each
 * accesses in the call (MPI_Allgather of one int64), every rank runs the
 * topology placement on those volumes (placement.c, the same result
 * everywhere), and when it chooses other aggregators than the file has,
 * the strategy's per-file state (buffers, windows, the offset exchange's
 * maps) is made again for them.
 *
 * A rank that cannot compute the placement (out of memory) says so in a
 * reduction, and then every rank keeps the aggregators it had: placement
 * is an optimisation, never a reason for a call to fail.
 */
#include <stdlib.h>

#include "two_phase.h"

static int agree_on_placement(struct aggio__op *op);
static int apply_placement(struct aggio__op *op);

int aggio__tp_place_call(struct aggio__op *op) {
  aggio_file fh = op->fh;
  int64_t mine = aggio__extents_bytes(&op->acc.file);
  aggio__then(op, agree_on_placement, AGGIO_P_PLAN);
  return aggio__op_allgather(op, &mine, aggio__call_volume(fh), 1, MPI_INT64_T, fh->comm,
                             AGGIO_P_PLAN);
}

/* flags[0]: a rank could not place; flags[1]: the aggregators change. */
static int agree_on_placement(struct aggio__op *op) {
  int rc = aggio__place_call(op->fh, aggio__call_volume(op->fh));
  op->agreed[0] = rc < 0;
  op->agreed[1] = rc > 0;
  aggio__then(op, apply_placement, AGGIO_P_PLAN);
  return aggio__op_allreduce(op, MPI_IN_PLACE, op->agreed, 2, MPI_INT64_T, MPI_MAX,
                             op->fh->comm, AGGIO_P_PLAN);
}

/* When the aggregators change, the per-file state goes and is made again
 * for the new ones, by the strategy's own set-up steps (non-blocking, and
 * agreed: a failure fails this call on every rank and the state is gone,
 * so that the next call sets it up again rather than run without it).  The
 * set-up then starts the call anew, whose placement finds the aggregators
 * in place.  An RMA window can be freed and made only in a blocking call:
 * a non-blocking one keeps the aggregators it has. */
static int apply_placement(struct aggio__op *op) {
  aggio_file fh = op->fh;
  const struct aggio__strategy_ops *s = aggio__strategy_at(fh, AGGIO_STRAT_TWO_PHASE);
  struct tp_file *f = aggio__tp_file(fh);
  int move = op->agreed[0] == 0 && op->agreed[1] != 0 &&
             (op->blocking || !f->x->blocking_setup);
  if (!move)
    return aggio__then(op, f->begin, AGGIO_P_PLAN);
  s->fini(fh, f);
  fh->strategy_state[s->id] = NULL;
  aggio__set_ready(fh, s->id, 0);
  aggio__place_call_commit(fh);
  op->setting_up = s;
  return aggio__then(op, s->setup, AGGIO_P_PLAN);
}
