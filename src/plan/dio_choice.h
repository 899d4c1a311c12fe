/*
 * dio_choice.h - whether an independent write of 1 to 4 MiB goes through
 * the page cache or to the device (direct I/O), chosen by measuring both.
 *
 * No constant held across the machines this was measured on (docs/
 * strategies.md, "Requests of 1 to 4 MiB"): the same VM shape, on
 * different days, wrote 1 MiB requests of one shared file durably at
 * 1.1-2.0 GB/s through the page cache against 1.0-1.2 GB/s direct, or,
 * in runs of 1-2 GiB, at 0.3-0.5 GB/s through the page cache (each
 * buffered request then took 13-30 ms instead of 0.5: the kernel held the
 * writers) against 1.0-1.4 GB/s direct.  What tells the two apart is the
 * time a request takes, so the file times its requests each way and sends
 * the next one the way that was faster per byte, trying the other way now
 * and then (less often each time it loses) so that a change is seen.
 *
 * A buffered request's time leaves out its write-back, which the sync
 * pays, and once the device is busy writing back earlier buffered
 * requests, direct ones wait behind it too: the measurement then sees
 * both ways slow and recovers only part of what direct requests alone
 * reach (BENCHMARKS.md, issue 25).  The writer's own time is still the
 * comparison that chose right in both regimes measured.  Pure: the caller
 * keeps one per file and serialises the calls (core/independent_io.c).
 */
#ifndef AGGIO_DIO_CHOICE_H
#define AGGIO_DIO_CHOICE_H

#include <stdint.h>

/* Requests of at least AGGIO_DIO_CHOICE_MIN and under AGGIO_DIO_CHOICE_MAX
 * are chosen by measurement; larger ones always go direct (64 MiB
 * requests: direct 1123-1770 MiB/s against 480-1540 buffered), smaller
 * ones through the page cache (a direct write under 1 MiB does not reach
 * the device's speed: dd, 128 KiB 572 MB/s against 1 MiB 1.4 GB/s). */
#define AGGIO_DIO_CHOICE_MIN (1 << 20)
#define AGGIO_DIO_CHOICE_MAX (4 << 20)
/* Requests between two tries of the slower way: at first, and at most
 * (doubled each time the try loses again; at once the most when it lost
 * by far).  A request of the faster way that was much slower than its
 * running time brings the next try forward. */
#define AGGIO_DIO_PROBE_FIRST 8
#define AGGIO_DIO_PROBE_MOST 256

enum aggio__dio_way { AGGIO_WAY_CACHE = 0, AGGIO_WAY_DIRECT = 1 };

/* One file's measurements (zeroed: nothing measured yet). */
struct aggio__dio_choice {
  double ns_per_byte[2]; /* each way's recent time per byte; 0: not yet */
  int since_probe;       /* requests sent since the slower way was last tried */
  int interval;          /* requests between two tries (0: AGGIO_DIO_PROBE_FIRST) */
};

/* Whether requests of `len` bytes are chosen by measurement (only those
 * need timing). */
int aggio__dio_measured(int64_t len);
/* The way for the next request of `len` bytes; *probe says that it tries
 * the slower way (hand it back to aggio__dio_learn).  Outside the measured
 * range the fixed rule answers, and nothing changes. */
int aggio__dio_pick(struct aggio__dio_choice *c, int64_t len, int *probe);
/* Learns from a request sent `way` (a try of the slower way when `probe`)
 * that took `ns` nanoseconds for `len` bytes; requests outside the
 * measured range are ignored. */
void aggio__dio_learn(struct aggio__dio_choice *c, int way, int probe, int64_t len,
                      int64_t ns);

#endif
