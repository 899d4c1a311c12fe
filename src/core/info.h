/*
 * info.h - hints in effect: gathering from all sources, cross-rank checks,
 * MPI_Info conversion and display (info.c).
 */
#ifndef AGGIO_INFO_H
#define AGGIO_INFO_H

#include <stdio.h>

#include "internal.h"

/* Applies the hint sources in precedence order onto h.  with_defaults: start
 * from defaults and the hints file (open); otherwise layer info and the
 * environment on h as it is (set_info, set_view). */
void aggio__hints_gather(struct aggio__hints *h, MPI_Info info, const char *path,
                         int rank, int with_defaults);

/* Collective: AGGIO_ERR_HINT_MISMATCH on every rank when a must-match hint
 * differs between ranks; the message names the first such hint. */
int aggio__hints_check_same(MPI_Comm comm, const struct aggio__hints *h, int rank,
                            struct aggio__err *e);
/* Its two halves, for a call that reduces the hash with other values in
 * one agreement (set_view): the hash of the must-match hints, and, once
 * every rank knows they differ, the collective message naming the first
 * such hint (AGGIO_ERR_HINT_MISMATCH in e). */
uint64_t aggio__hints_match_hash(const struct aggio__hints *h);
int aggio__hints_mismatch(MPI_Comm comm, const struct aggio__hints *h, int rank,
                          struct aggio__err *e);

/* 1 when every must-match hint has the same value in a and b. */
int aggio__hints_match_equal(const struct aggio__hints *a, const struct aggio__hints *b);

/* A new MPI_Info with every hint's value in effect (numbers for numeric
 * hints; cb_nodes is naggr, the aggregators the file uses, when positive),
 * the hints not honoured and why under aggio_hints_ignored, the source of
 * each hint and the warnings (docs/hints.md). */
int aggio__hints_to_info(const struct aggio__hints *h, int naggr, MPI_Info *out);

void aggio__hints_display(const struct aggio__hints *h, const char *path, FILE *out);

#endif
