/*
 * stats_report.c - what a user asks to see about a file: the statistics block
 * (AGGIO_STATS, in the spirit of Cray's MPICH_MPIIO_STATS), the phase
 * timers with raw and net bandwidths (AGGIO_TIMERS, after MPICH_MPIIO_TIMERS)
 * and the aggregator placement (AGGIO_AGGREGATOR_PLACEMENT_DISPLAY).
 * Counters are reduced over the file's communicator at close; rank 0 prints
 * each block with one write to stdout.  Formats: docs/observability.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "report.h"
#include "staging.h"

#define MIB (1024.0 * 1024.0)

void aggio__count_moved(struct aggio_file_s *fh, int peer, int64_t bytes) {
  if (!fh->obs.stats || bytes <= 0 || !fh->topo.node_of_rank || peer < 0 ||
      peer >= fh->nprocs)
    return;
  int local = fh->topo.node_of_rank[peer] == fh->topo.node_of_rank[fh->rank];
  __atomic_fetch_add(
      &fh->obs.stats->c[local ? AGGIO_C_NODE_LOCAL_BYTES : AGGIO_C_CROSS_NODE_BYTES],
      bytes, __ATOMIC_RELAXED);
}

/* ---- output helpers --------------------------------------------------------- */

/* A block is composed in memory and written at once, so that it is never
 * interleaved with the application's own output mid-block. */
struct block {
  char *text;
  size_t len;
  FILE *f;
};

static FILE *block_begin(struct block *b) {
  b->text = NULL;
  b->len = 0;
  b->f = open_memstream(&b->text, &b->len);
  return b->f ? b->f : stdout;
}

static void block_end(struct block *b) {
  if (b->f) {
    fclose(b->f);
    fwrite(b->text, 1, b->len, stdout);
    free(b->text);
  }
  fflush(stdout);
}

/* Prints the sorted ranks v[0..n) as compact ranges: "0-3,8,10-11". */
static void print_ranges(FILE *f, const int *v, int n) {
  for (int i = 0; i < n;) {
    int j = i;
    while (j + 1 < n && v[j + 1] == v[j] + 1)
      j++;
    fprintf(f, "%s%d", i ? "," : "", v[i]);
    if (j > i)
      fprintf(f, "-%d", v[j]);
    i = j + 1;
  }
  if (n == 0)
    fprintf(f, "none");
}

static const char *node_name(const struct aggio_file_s *fh, int node) {
  if (!fh->topo.node_names || node < 0 || node >= fh->topo.nnodes ||
      !fh->topo.node_names[node])
    return "?";
  return fh->topo.node_names[node];
}

static int node_of(const struct aggio_file_s *fh, int rank) {
  return fh->topo.node_of_rank ? fh->topo.node_of_rank[rank] : 0;
}

/* ---- placement -------------------------------------------------------------- */

/* The table Cray's MPICH_MPIIO_AGGREGATOR_PLACEMENT_DISPLAY prints: one
 * row per aggregator with its rank and node ("nid"; emulated nodes are
 * host#i). */
static void placement_table(FILE *f, const struct aggio_file_s *fh) {
  fprintf(f, "   AGG    Rank  nid\n   ---  ------  ----------------\n");
  for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++)
    fprintf(f, "  %4d  %6d  %s\n", i, fh->topo.aggr[i],
            node_name(fh, node_of(fh, fh->topo.aggr[i])));
}

static void placement_print(struct aggio_file_s *fh, const char *when) {
  struct block b;
  FILE *f = block_begin(&b);
  int *list = malloc(sizeof *list * (size_t)(fh->nprocs > 0 ? fh->nprocs : 1));
  fprintf(f, "aggio aggregator placement for file \"%s\" (at %s)\n", fh->path, when);
  fprintf(f, "  ranks: %d\n  nodes: %d\n  aggregators: %d\n", fh->nprocs,
          fh->topo.nnodes, fh->topo.naggr);
  fprintf(f, "  placement: %s%s%s\n", fh->topo.placement_used,
          fh->topo.error[0] ? " - " : "", fh->topo.error);
  fprintf(f, "  strategy: %s\n", fh->strategy && fh->strategy->name
                                     ? fh->strategy->name
                                     : fh->hints.strategy.str);
  if (fh->exchange_used[0]) /* once the two-phase strategy has run */
    fprintf(f, "  exchange: %s%s%s\n", fh->exchange_used, fh->exchange_why[0] ? " - " : "",
            fh->exchange_why);
  for (int nd = 0; list && nd < (fh->topo.nnodes > 0 ? fh->topo.nnodes : 1); nd++) {
    int n = 0, na = 0;
    for (int r = 0; r < fh->nprocs; r++)
      if (node_of(fh, r) == nd)
        list[n++] = r;
    fprintf(f, "  node %d: host %s ranks ", nd, node_name(fh, nd));
    print_ranges(f, list, n);
    for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++)
      if (node_of(fh, fh->topo.aggr[i]) == nd)
        list[na++] = fh->topo.aggr[i];
    fprintf(f, " aggregators ");
    print_ranges(f, list, na);
    fprintf(f, "\n");
  }
  placement_table(f, fh);
  const struct aggio__stats *s = fh->obs.stats;
  int nfd = s ? s->nfd : 0;
  for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++) {
    int r = fh->topo.aggr[i];
    fprintf(f, "  aggregator %d: rank %d node %d host %s domain ", i, r,
            node_of(fh, r), node_name(fh, node_of(fh, r)));
    if (i < nfd && s->fd_unit > 0)
      fprintf(f, "stripes %d mod %d of %lld bytes, %lld bytes\n", i, s->fd_groups,
              (long long)s->fd_unit, (long long)(s->fd_end[i] - s->fd_start[i]));
    else if (i < nfd)
      fprintf(f, "[%lld, %lld) %lld bytes\n", (long long)s->fd_start[i],
              (long long)s->fd_end[i], (long long)(s->fd_end[i] - s->fd_start[i]));
    else
      fprintf(f, "none%s\n", nfd == 0 && strcmp(when, "open") == 0 ? " yet" : "");
  }
  fprintf(f, "aggio aggregator placement end\n");
  free(list);
  block_end(&b);
}

void aggio__placement_display(struct aggio_file_s *fh) {
  if (fh->rank == 0 && fh->hints.placement_display.num)
    placement_print(fh, "open");
}

/* ---- the reduction ---------------------------------------------------------- */

/* Timer slots: the phases, then their sum ("total"), the time the
 * application spent in aggio ("elapsed": open + data-access calls + sync +
 * close), the time inside data-access calls ("calls") and the share of it
 * the phases account for ("accounted"), then the system calls' time on any
 * thread and the part of it I/O threads spent after the calls returned. */
enum {
  T_TOTAL = AGGIO_P_COUNT,
  T_ELAPSED,
  T_CALLS,
  T_ACCOUNTED,
  T_SYS_WRITE,
  T_SYS_READ,
  T_BEHIND,
  T_SLOTS
};
static const char *const slot_key[T_SLOTS - AGGIO_P_COUNT] = {
    "total", "elapsed", "calls", "accounted", "system write", "system read", "behind"};

struct reduced {
  int64_t sum[AGGIO_C_COUNT], max[AGGIO_C_COUNT], ranks[AGGIO_C_COUNT];
  double tmin[T_SLOTS], tmax[T_SLOTS], tsum[T_SLOTS];
  int64_t *per_rank; /* rank 0: [2 * nprocs] aggregator write bytes, writes;
                        NULL when some rank had no memory for it */
};

/* The phases of data-access calls (not open, sync, close). */
static int call_phase(int p) {
  return p != AGGIO_P_OPEN && p != AGGIO_P_SYNC && p != AGGIO_P_CLOSE;
}

static void timer_slots(struct aggio_file_s *fh, double *t) {
  struct aggio__stats *s = fh->obs.stats;
  double in_calls = 0;
  t[T_TOTAL] = 0;
  for (int p = 0; p < AGGIO_P_COUNT; p++) {
    t[p] = s->t[p];
    if (p == AGGIO_P_OPEN && t[p] == 0)
      t[p] = fh->obs.open_time; /* open measured before the stats existed */
    t[T_TOTAL] += t[p];
    if (call_phase(p))
      in_calls += t[p];
  }
  t[T_ELAPSED] = t[AGGIO_P_OPEN] + s->api_time + t[AGGIO_P_SYNC] + t[AGGIO_P_CLOSE];
  t[T_CALLS] = s->api_time;
  t[T_ACCOUNTED] = s->api_time > 0 ? in_calls / s->api_time : 1.0;
  t[T_SYS_WRITE] = s->sys_write_time;
  t[T_SYS_READ] = s->sys_read_time;
  t[T_BEHIND] = s->behind_time;
}

/* Each rank's system writes as an aggregator (bytes, count) on rank 0,
 * for the per-aggregator lines.  Rank 0's allocation is agreed first so
 * that no rank waits in a gather another skipped; without it the lines
 * are left out. */
static int gather_per_rank(struct aggio_file_s *fh, struct reduced *out) {
  const struct aggio__stats *s = fh->obs.stats;
  int64_t mine[2] = {s->c[AGGIO_C_AGGR_WRITE_BYTES], s->c[AGGIO_C_AGGR_WRITES]};
  int ok = 1;
  if (fh->rank == 0) {
    out->per_rank = malloc(2 * sizeof *out->per_rank * (size_t)fh->nprocs);
    ok = out->per_rank != NULL;
  }
  int rc = MPI_Bcast(&ok, 1, MPI_INT, 0, fh->comm);
  if (rc == MPI_SUCCESS && ok)
    rc = MPI_Gather(mine, 2, MPI_INT64_T, out->per_rank, 2, MPI_INT64_T, 0, fh->comm);
  if (rc != MPI_SUCCESS) {
    free(out->per_rank);
    out->per_rank = NULL;
  }
  return rc;
}

/* Reduces to rank 0.  0, or -1 when an MPI call failed (nothing printed). */
static int reduce(struct aggio_file_s *fh, struct reduced *out) {
  struct aggio__stats *s = fh->obs.stats;
  int64_t mine[2 * AGGIO_C_COUNT], sums[2 * AGGIO_C_COUNT];
  for (int i = 0; i < AGGIO_C_COUNT; i++) {
    mine[i] = s->c[i];
    mine[AGGIO_C_COUNT + i] = s->c[i] != 0; /* ranks with a non-zero count */
  }
  double t[T_SLOTS];
  timer_slots(fh, t);
  int rc = 0;
  MPI_Comm c = fh->comm;
  rc |= MPI_Reduce(mine, sums, 2 * AGGIO_C_COUNT, MPI_INT64_T, MPI_SUM, 0, c);
  rc |= MPI_Reduce(s->c, out->max, AGGIO_C_COUNT, MPI_INT64_T, MPI_MAX, 0, c);
  rc |= MPI_Reduce(t, out->tmin, T_SLOTS, MPI_DOUBLE, MPI_MIN, 0, c);
  rc |= MPI_Reduce(t, out->tmax, T_SLOTS, MPI_DOUBLE, MPI_MAX, 0, c);
  rc |= MPI_Reduce(t, out->tsum, T_SLOTS, MPI_DOUBLE, MPI_SUM, 0, c);
  memcpy(out->sum, sums, sizeof out->sum);
  memcpy(out->ranks, sums + AGGIO_C_COUNT, sizeof out->ranks);
  if (rc == MPI_SUCCESS)
    rc = gather_per_rank(fh, out);
  return rc == MPI_SUCCESS ? 0 : -1;
}

/* ---- the statistics block --------------------------------------------------- */

static void print_avg(FILE *f, const char *key, int64_t bytes, int64_t n) {
  if (n > 0)
    fprintf(f, "  %s: %lld\n", key, (long long)((bytes + n / 2) / n));
  else
    fprintf(f, "  %s: n/a\n", key);
}

static void print_size_hint(FILE *f, const char *key, const struct aggio__hint_value *v) {
  if (v->num > 0 && !v->ignored[0])
    fprintf(f, "  %s: %lld\n", key, (long long)v->num);
  else
    fprintf(f, "  %s: unknown\n", key);
}

/* Index of rank r among the aggregators, or -1. */
static int aggr_index(const struct aggio_file_s *fh, int r) {
  for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++)
    if (fh->topo.aggr[i] == r)
      return i;
  return -1;
}

/* One row per aggregator, and per other rank that wrote as one (the node
 * cache's writers), with its bytes and system writes. */
static void per_aggregator(FILE *f, const struct aggio_file_s *fh, const struct reduced *r) {
  if (!r->per_rank) {
    fprintf(f, "  per aggregator: n/a\n");
    return;
  }
  fprintf(f, "  per aggregator:\n"
             "     AGG    Rank  nid                 bytes written  system writes\n");
  for (int rank = 0; rank < fh->nprocs; rank++) {
    int i = aggr_index(fh, rank);
    const int64_t *v = r->per_rank + 2 * rank;
    if (i < 0 && v[1] == 0)
      continue;
    char agg[16] = "-";
    if (i >= 0)
      snprintf(agg, sizeof agg, "%d", i);
    fprintf(f, "    %4s  %6d  %-16s  %14lld  %13lld\n", agg, rank,
            node_name(fh, node_of(fh, rank)), (long long)v[0], (long long)v[1]);
  }
}

#define S(name) (r->sum[AGGIO_C_##name])
#define MAXC(name) (r->max[AGGIO_C_##name])

static void stats_print(struct aggio_file_s *fh, const struct reduced *r) {
  struct block b;
  FILE *f = block_begin(&b);
  const struct aggio__stats *s = fh->obs.stats;
  int64_t su = fh->hints.striping_unit.num;
  int64_t calls = MAXC(COLL_WRITES) + MAXC(COLL_READS);
  fprintf(f, "aggio stats for file \"%s\"\n", fh->path);
  fprintf(f, "  ranks: %d\n  nodes: %d\n", fh->nprocs, fh->topo.nnodes);
  fprintf(f, "  file system: %s\n", fh->fstype[0] ? fh->fstype : "unknown");
  fprintf(f, "  strategy: %s\n", fh->hints.strategy.str);
  fprintf(f, "  auto choice: %s\n", s->auto_choice[0] ? s->auto_choice : "n/a");
  print_size_hint(f, "stripe size", &fh->hints.striping_unit);
  print_size_hint(f, "stripe count", &fh->hints.striping_factor);
  fprintf(f, "  alignment unit: %lld\n", (long long)(su > 0 ? su : fh->st.block));
  fprintf(f, "  direct io: %s\n", fh->st.dio == AGGIO_DIO_ON ? "on" : "off");
  if (fh->st.subfiles > 0) { /* writers = subfiles: none was shared */
    fprintf(f, "  subfiles: %d\n", fh->st.subfiles);
    fprintf(f, "  subfile stripe: %lld\n", (long long)fh->st.subfile_stripe);
    fprintf(f, "  subfile writers: %lld\n", (long long)S(SUBFILE_WRITERS));
  }
  aggio__staging_stats(fh, f);
  fprintf(f, "  independent writes: %lld\n", (long long)S(IND_WRITES));
  fprintf(f, "  independent writers: %lld\n", (long long)r->ranks[AGGIO_C_IND_WRITES]);
  fprintf(f, "  independent reads: %lld\n", (long long)S(IND_READS));
  fprintf(f, "  independent readers: %lld\n", (long long)r->ranks[AGGIO_C_IND_READS]);
  fprintf(f, "  collective writes: %lld\n", (long long)MAXC(COLL_WRITES));
  fprintf(f, "  collective reads: %lld\n", (long long)MAXC(COLL_READS));
  fprintf(f, "  bytes written: %lld\n", (long long)S(API_BYTES_WRITTEN));
  fprintf(f, "  bytes read: %lld\n", (long long)S(API_BYTES_READ));
  fprintf(f, "  aggregators: %d\n", fh->topo.naggr);
  fprintf(f, "  aggregator-calls active: %lld\n", (long long)S(AGGR_ACTIVE));
  if (calls > 0)
    fprintf(f, "  aggregators active per call: %.2f\n", (double)S(AGGR_ACTIVE) / (double)calls);
  else
    fprintf(f, "  aggregators active per call: n/a\n");
  fprintf(f, "  two-phase rounds: %lld\n", (long long)MAXC(COLL_ROUNDS));
  fprintf(f, "  aggregators active = %lld,%lld,%lld,%lld (1, <= 4, > 4, %d)\n",
          (long long)MAXC(ACTIVE_ONE), (long long)MAXC(ACTIVE_FEW),
          (long long)MAXC(ACTIVE_MANY), (long long)MAXC(ACTIVE_ALL), fh->topo.naggr);
  fprintf(f, "  bytes crossing nodes: %lld\n", (long long)S(CROSS_NODE_BYTES));
  fprintf(f, "  bytes copied within nodes: %lld\n", (long long)S(NODE_LOCAL_BYTES));
  fprintf(f, "  node-local fragmented node-calls: %lld%s\n", (long long)S(NODE_LOCAL_FRAGMENTED),
          S(NODE_LOCAL_FRAGMENTED) ? " (a node's data interleaves with other nodes': "
                                     "two_phase fits better)" : "");
  fprintf(f, "  aggregator system writes: %lld\n", (long long)S(AGGR_WRITES));
  fprintf(f, "  aggregator system write bytes: %lld\n", (long long)S(AGGR_WRITE_BYTES));
  per_aggregator(f, fh, r);
  fprintf(f, "  system writes: %lld\n", (long long)S(SYS_WRITES));
  fprintf(f, "  system write bytes: %lld\n", (long long)S(SYS_WRITE_BYTES));
  print_avg(f, "average system write size", S(SYS_WRITE_BYTES), S(SYS_WRITES));
  fprintf(f, "  system writes aligned: %lld\n", (long long)S(SYS_WRITES_ALIGNED));
  fprintf(f, "  system reads: %lld\n", (long long)S(SYS_READS));
  fprintf(f, "  system read bytes: %lld\n", (long long)S(SYS_READ_BYTES));
  print_avg(f, "average system read size", S(SYS_READ_BYTES), S(SYS_READS));
  fprintf(f, "  system reads aligned: %lld\n", (long long)S(SYS_READS_ALIGNED));
  fprintf(f, "  direct writes: %lld\n", (long long)S(DIRECT_WRITES));
  fprintf(f, "  direct write bytes: %lld\n", (long long)S(DIRECT_WRITE_BYTES));
  fprintf(f, "  direct reads: %lld\n", (long long)S(DIRECT_READS));
  fprintf(f, "  direct read bytes: %lld\n", (long long)S(DIRECT_READ_BYTES));
  fprintf(f, "  writes behind the calls: %lld\n", (long long)S(BEHIND_WRITES));
  fprintf(f, "  reads ahead of the calls: %lld\n", (long long)S(BEHIND_READS));
  fprintf(f, "  node-cache blocks written whole: %lld\n", (long long)S(CACHE_FULL_BLOCKS));
  fprintf(f, "  node-cache blocks written in part: %lld\n", (long long)S(CACHE_PARTIAL_BLOCKS));
  fprintf(f, "  node-cache waits: %lld\n", (long long)S(CACHE_WAITS));
  fprintf(f, "  node-cache hits: %lld\n", (long long)S(CACHE_HITS));
  fprintf(f, "  read-modify-writes: %lld\n", (long long)S(RMW_COUNT));
  fprintf(f, "  read-modify-write bytes: %lld\n", (long long)S(RMW_BYTES));
  fprintf(f, "  write gaps: %lld\n", (long long)S(WRITE_GAPS));
  print_avg(f, "average write gap size", S(WRITE_GAP_BYTES), S(WRITE_GAPS));
  fprintf(f, "  syncs: %lld\n", (long long)S(SYNCS));
  fprintf(f, "  early write-backs: %lld\n", (long long)S(WRITEBACK_STARTS));
  fprintf(f, "  early write-back bytes: %lld\n", (long long)S(WRITEBACK_BYTES));
  fprintf(f, "  non-blocking operations: %lld\n", (long long)S(NB_STARTED));
  fprintf(f, "  non-blocking operations merged: %lld\n", (long long)S(NB_MERGED));
  fprintf(f, "  collective calls with their I/O first: %lld\n", (long long)S(IO_FIRST));
  fprintf(f, "  collective calls agreed once: %lld\n", (long long)S(ONE_ROUND));
  fprintf(f, "  collective calls whose first I/O ran again: %lld\n",
          (long long)S(ONE_ROUND_REDONE));
  fprintf(f, "  two-phase calls set up without an agreement: %lld\n", (long long)S(TP_KEPT));
  fprintf(f, "aggio stats end\n");
  block_end(&b);
}

/* ---- the timers block ------------------------------------------------------- */

static const char *const phase_key[] = {
#define AGGIO__PH_KEY(name, doc) #name,
    AGGIO_PHASE_LIST(AGGIO__PH_KEY)
#undef AGGIO__PH_KEY
};

static void print_rate(FILE *f, const char *key, int64_t bytes, double secs) {
  if (bytes > 0 && secs > 0)
    fprintf(f, "  %s: %.2f MiB/s\n", key, (double)bytes / MIB / secs);
  else
    fprintf(f, "  %s: n/a\n", key);
}

static void print_slot(FILE *f, const char *name, const struct reduced *r, int p, int nprocs) {
  char key[32];
  size_t i = 0;
  for (; name[i] && i + 1 < sizeof key; i++)
    key[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
  key[i] = 0;
  if (p == T_ACCOUNTED)
    fprintf(f, "  %s: min %.1f%% max %.1f%% avg %.1f%% of calls\n", key, 100 * r->tmin[p],
            100 * r->tmax[p], 100 * r->tsum[p] / nprocs);
  else
    fprintf(f, "  %s: min %.6f max %.6f avg %.6f s\n", key, r->tmin[p], r->tmax[p],
            r->tsum[p] / nprocs);
}

static void timers_print(struct aggio_file_s *fh, const struct reduced *r) {
  struct block b;
  FILE *f = block_begin(&b);
  int n = fh->nprocs > 0 ? fh->nprocs : 1;
  fprintf(f, "aggio timers for file \"%s\"\n", fh->path);
  fprintf(f, "  ranks: %d\n", fh->nprocs);
  for (int p = 0; p < T_SLOTS; p++)
    print_slot(f, p < AGGIO_P_COUNT ? phase_key[p] : slot_key[p - AGGIO_P_COUNT], r, p, n);
  double total = r->tmax[T_ELAPSED];
  fprintf(f, "  bytes written: %lld\n", (long long)S(API_BYTES_WRITTEN));
  print_rate(f, "raw write rate", S(SYS_WRITE_BYTES), r->tmax[T_SYS_WRITE]);
  print_rate(f, "net write rate", S(API_BYTES_WRITTEN), total);
  fprintf(f, "  bytes read: %lld\n", (long long)S(API_BYTES_READ));
  print_rate(f, "raw read rate", S(SYS_READ_BYTES), r->tmax[T_SYS_READ]);
  print_rate(f, "net read rate", S(API_BYTES_READ), total);
  fprintf(f, "aggio timers end\n");
  block_end(&b);
}

#undef S
#undef MAXC

void aggio__stats_close(struct aggio_file_s *fh) {
  struct aggio__stats *s = fh->obs.stats;
  if (!s)
    return;
  struct reduced r; /* under 1 KiB */
  memset(&r, 0, sizeof r);
  int ok = reduce(fh, &r) == 0;
  if (fh->rank == 0) {
    if (fh->hints.placement_display.num)
      placement_print(fh, "close");
    if (ok && fh->hints.stats.num)
      stats_print(fh, &r);
    if (ok && (s->timers || fh->hints.timers.num))
      timers_print(fh, &r);
  }
  free(r.per_rank);
  aggio__stats_free(s);
  fh->obs.stats = NULL;
}
