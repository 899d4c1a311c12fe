/*
 * tp_keep.h - what a two-phase call may keep for the calls after it, so
 * that a call like an earlier one needs no set-up agreement.
 *
 * A two-phase call's set-up (strategies/two_phase) makes per-call lists:
 * each rank's pieces per file domain, each aggregator's list of every
 * rank's pieces in its domain, the round's clipped lists and covered runs,
 * scratch arrays and request slots.  Made afresh, any of them can fail to
 * allocate on one rank, so every rank agrees on the set-up before data
 * moves: a third agreement per call, after the summary and before the
 * outcome.  Everything those lists can hold is bounded by agreed values
 * (the summary): with contiguous file domains a rank's list for one
 * domain holds at most one piece per file range of that rank, so at most
 * the summary's `most_pieces`, and an aggregator's pieces of all ranks
 * together at most the summary's `pieces`.  So a call that reserves to
 * these bounds, and whose set-up agreement succeeds, leaves every rank
 * holding memory that every later call within the same bounds provably
 * fits: those calls allocate nothing in their set-up, and every rank,
 * knowing the same bounds and the same history, skips the agreement alike.
 * The bounds are reserved only while they stay small (the kept memory
 * lives as long as the file): beyond that a call reserves what it needs
 * and agrees, as before.
 */
#ifndef AGGIO_TP_KEEP_H
#define AGGIO_TP_KEEP_H

#include <stddef.h>
#include <stdint.h>

/* Most bytes a file keeps for two-phase calls' lists, per rank. */
#define AGGIO_TP_KEEP_BYTES ((int64_t)4 << 20)

/* The bounds of one call, from agreed values only (the same on every rank). */
struct aggio__tp_bound {
  int64_t most;  /* pieces in one list: one rank's in one domain */
  int64_t total; /* pieces in one domain, all ranks together */
};

/* The sizes of the lists' elements, as the strategy has them. */
struct aggio__tp_sizes {
  size_t piece;   /* a rank's own piece (offset, length, stream position) */
  size_t extent;  /* an aggregator's (offset, length) */
  size_t scratch; /* one entry of the derived types' scratch arrays */
};

/* The bounds of a call whose agreed summary counts `pieces` file ranges
 * over all ranks, at most `most` of one rank, with `nprocs` ranks and
 * `naggr` contiguous domains: 1 when an aggregator's memory for them is
 * within AGGIO_TP_KEEP_BYTES (*b set), 0 when the call should not keep. */
int aggio__tp_keep_bound(int64_t pieces, int64_t most, int nprocs, int naggr,
                         const struct aggio__tp_sizes *sz, struct aggio__tp_bound *b);

/* 1 when a call with bounds `b` fits what every rank holds (`held`, the
 * largest bounds of a kept call whose set-up every rank agreed on;
 * most < 0: none yet). */
int aggio__tp_keep_fits(const struct aggio__tp_bound *held,
                        const struct aggio__tp_bound *b);

/* After a kept call's set-up agreement succeeded: what every rank now holds. */
void aggio__tp_keep_hold(struct aggio__tp_bound *held, const struct aggio__tp_bound *b);

#endif
