/*
 * cyclic.h - stripe-cyclic file domains for two-phase I/O, and the domain
 * space they are worked in.  Pure arithmetic: no MPI, no file.
 *
 * Contiguous domains (plan.c) give each aggregator one range of the file.
 * On a file striped over servers or subfiles, that range crosses every
 * stripe target, so every aggregator writes to every target.  Stripe-cyclic
 * domains (as ROMIO's Lustre driver and HDF5's subfiling I/O concentrators
 * do) give aggregator g the stripes i with i mod G == g: with G a divisor
 * of the subfile count M, each subfile is written by one aggregator alone;
 * with G a multiple of M, each aggregator writes one subfile.
 *
 * Two-phase's rounds, windows and buffers want each domain contiguous, so
 * the call's range is renumbered: in the domain space, group g's stripes
 * follow one another in file order, group after group.  Offsets within a
 * stripe are kept (so alignment is too); only the I/O maps back to the
 * file, one stripe piece at a time.
 */
#ifndef AGGIO_CYCLIC_H
#define AGGIO_CYCLIC_H

#include <stdint.h>

struct aggio__cyclic {
  int64_t unit;  /* stripe bytes; 0: the identity map (contiguous domains) */
  int groups;    /* G: aggregators that take the stripes in turn */
  int64_t row0;  /* the call's first row (G consecutive stripes) */
  int64_t rows;  /* rows its range [lo, hi) touches */
};

/* The map of a call whose bytes lie in [lo, hi); unit 0 or groups < 1 give
 * the identity. */
void aggio__cyclic_init(struct aggio__cyclic *c, int64_t unit, int groups, int64_t lo,
                        int64_t hi);
/* The domain-space offset of file offset off in [lo, hi), and its group. */
int64_t aggio__cyclic_to_domain(const struct aggio__cyclic *c, int64_t off, int *group);
/* The file offset of domain-space offset v (the inverse). */
int64_t aggio__cyclic_to_file(const struct aggio__cyclic *c, int64_t v);
/* Bytes from off to the end of its stripe, at most len (either space: a
 * stripe is contiguous in both). */
int64_t aggio__cyclic_run(const struct aggio__cyclic *c, int64_t off, int64_t len);
/* The domain-space range [start, end) of each of naggr aggregators for the
 * bytes of [lo, hi): group g's stripes clipped to [lo, hi); aggregators
 * from G on, and groups without a stripe there, get empty ranges. */
void aggio__cyclic_domains(const struct aggio__cyclic *c, int64_t lo, int64_t hi, int naggr,
                           int64_t *start, int64_t *end);
/* G for naggr aggregators over a file of m subfiles (0: not subfiled),
 * so that each aggregator's stripes stay in few subfiles and no two
 * aggregators share one where it can be helped: with at least m
 * aggregators, the largest multiple of m up to naggr (each aggregator
 * writes one subfile, each subfile G / m aggregators: on mira-512, 16
 * aggregators over 4 subfiles wrote 2452 MB/s as 4 groups and 5017 as 16,
 * SIMULATION.md); with fewer, the largest divisor of m up to naggr (one
 * writer per subfile, m / G subfiles each, as HDF5's subfiling has one
 * I/O concentrator per subfile).  Aggregators past G stay idle. */
int aggio__cyclic_groups(int naggr, int m);

/* aggio_cb_domains: whether h is one of its values. */
int aggio__cb_domains_known(const char *h);
/* The stripe of a call's cyclic domains (0: contiguous ones) from
 * aggio_cb_domains h: automatic (or an unknown value) takes a subfiled
 * file's stripe; stripe_cyclic that, or striping_unit, or 1 MiB;
 * contiguous none.  None in atomic mode either, whose locks cover one
 * span of the file per window. */
int64_t aggio__cyclic_unit(const char *h, int atomic, int subfiles, int64_t subfile_stripe,
                           int64_t striping_unit);

#endif
