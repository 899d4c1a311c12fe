/*
 * report.h - the observability layer's records (observe.h) at the file's
 * open and close, where the file's communicator, topology and hints are
 * known: the trace's clocks and file (trace_file.c), the statistics,
 * timers and placement blocks (stats_report.c).
 */
#ifndef AGGIO_REPORT_H
#define AGGIO_REPORT_H

#include <stdint.h>

#include "observe.h"

struct aggio_file_s;

/* Counts `bytes` of file data this rank exchanged with rank `peer` (either
 * direction) as crossing nodes or staying within one, by the (emulated)
 * node layout.  No-op without statistics.  Every strategy that moves file
 * data between ranks calls it where the data moves. */
void aggio__count_moved(struct aggio_file_s *fh, int peer, int64_t bytes);

/* Collective at open, after the aggregators are chosen: prints the
 * aggregator placement on rank 0 when the placement display is on. */
void aggio__placement_display(struct aggio_file_s *fh);

/* Collective at close: reduces counters and timers over the file's
 * communicator and prints, on rank 0, the placement again (now with the
 * file domains of the last collective call), the statistics block and the
 * timers block, each when on (rank 0's hints decide); frees fh->obs.stats.
 * Never fails the close.  Every rank must have fh->obs.stats, or none: the
 * decision to allocate it is agreed at open.  Formats: docs/observability.md. */
void aggio__stats_close(struct aggio_file_s *fh);

/* Collective over the file's communicator, at open: allocates the buffer and
 * agrees clock offsets so that every rank's timestamps are on rank 0's clock.
 * Sets *out (NULL when path is empty).  0 or an AGGIO_ERR_* code. */
int aggio__trace_open(struct aggio_file_s *fh, const char *path,
                      int64_t memory_bytes, struct aggio__trace **out);

/* Collective at close: writes the whole job's trace into one file, each rank
 * its own part in parallel; frees the buffer.  0 or an AGGIO_ERR_* code. */
int aggio__trace_close(struct aggio_file_s *fh, struct aggio__trace *tr);

#endif
