/*
 * overlap.c - aggio-bench's two modes for non-blocking collective writes
 * (issue 9).  The overlap mode (--compute): every iteration computes for a
 * calibrated time (a CPU loop, not a sleep) and then writes its checkpoint
 * (one segment of the pattern), blocking, or non-blocking and completed at
 * the next iteration (the data of every iteration is produced before the
 * timed runs, so no buffer in flight is touched); against a compute-only
 * run it tells how much of the I/O the non-blocking calls hide.  The small-requests mode (--small-requests): K
 * small collective writes per iteration, one by one (blocking, and
 * non-blocking each completed before the next starts) against K
 * non-blocking ones and one waitall (PnetCDF's put_vara_all of many
 * variables), which a library may merge.  After
 * every run each rank reads its extents back with POSIX pread and checks
 * every byte (verify.c's data).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"

#ifdef AGGIO_SIMGRID
/* Simulated (SIMULATION.md): the compute is a simulated computation on
 * the rank's host (a unit a microsecond of one core), not a CPU loop the
 * machine would run for every rank.  smpi_execute would drop it: the
 * simulation runs with smpi/simulate-computation:no, whose threshold
 * discards every measured or declared duration; flops are not. */
#include <simgrid/host.h>
#include <smpi/smpi.h>
#define SIM_UNITS_PER_S 1e6
#endif

/* NB_EACH (small requests): each non-blocking call completed before the
 * next one starts, so that nothing can be merged. */
enum nb_kind { NB_COMPUTE, NB_BLOCKING, NB_NONBLOCKING, NB_EACH, NB_KINDS };

/* One collective call of an iteration: `len` stream bytes from `pos`, at
 * `off` (a file offset, or an offset in the view). */
struct nb_call {
  int64_t off, pos, len;
};

/* Where one run's time went, over the ranks: total from the earliest start
 * to the latest end (the final sync included), the final sync, and the
 * longest time a rank spent inside the write, start and wait calls. */
struct nb_time {
  double total, sync, visible;
};

struct nb_rep {
  struct nb_time t[NB_KINDS]; /* by enum nb_kind */
};

struct nb {
  const struct bench_access *wa, *ra;
  const struct bench_params *p;
  const struct bench_sysinfo *sys;
  int rank, nranks, provided, overlap; /* overlap: --compute, else --small-requests */
  int64_t iters, per_iter;             /* iterations; calls per iteration per rank */
  struct nb_call *calls;               /* iters * per_iter */
  int64_t *seg_pos;                    /* stream position of each iteration (iters + 1) */
  size_t *seg_ext;                     /* its first extent (iters + 1) */
  int64_t bytes_iter;                  /* all ranks' bytes per iteration */
  double rate[2];                      /* compute units per second: min, max over ranks */
  double units_per_s;                  /* this rank's */
  double compute_s, warmup_io_s;       /* per iteration: the loop, auto's write */
  char *hints_json;
  int64_t errors;
};

/* ---- the compute loop --------------------------------------------------------- */

static volatile uint64_t compute_sink = 0x9e3779b97f4a7c15ull;

/* A dependent chain of multiply-xorshift steps: busy, deterministic, no
 * memory traffic, nothing the compiler can fold. */
static void compute(uint64_t units) {
#ifdef AGGIO_SIMGRID
  smpi_execute_flops((double)units / SIM_UNITS_PER_S * sg_host_get_speed(sg_host_self()));
#else
  uint64_t x = compute_sink;
  for (uint64_t u = 0; u < units; u++)
    for (int k = 0; k < 1024; k++) x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + 1;
  compute_sink = x;
#endif
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Units per second on this rank, every rank computing at once (as in the
 * runs): the median of three 50 ms trials after a doubling search. */
static double calibrate(void) {
#ifdef AGGIO_SIMGRID
  return SIM_UNITS_PER_S;
#endif
  uint64_t n = 8;
  double el;
  MPI_Barrier(MPI_COMM_WORLD);
  for (;;) {
    double a = bench_now();
    compute(n);
    el = bench_now() - a;
    if (el >= 0.02) break;
    n *= 2;
  }
  uint64_t m = (uint64_t)((double)n * 0.05 / el) + 1;
  double r[3];
  for (int k = 0; k < 3; k++) {
    double a = bench_now();
    compute(m);
    r[k] = (double)m / (bench_now() - a);
  }
  qsort(r, 3, sizeof r[0], cmp_double);
  return r[1];
}

/* ---- the iterations' calls ------------------------------------------------------ */

static void fail(const struct nb *o, const char *msg) {
  if (o->rank == 0) fprintf(stderr, "aggio-bench: %s\n", msg);
  MPI_Finalize();
  exit(2);
}

/* Iteration i = segment i.  Overlap mode: the segment's natural calls
 * (one per segment for checkpoint and strided, -b/-t for segmented), through
 * the access's mode (explicit offsets or the view).  Small requests: every
 * extent of the segment its own call at its file offset. */
static void plan_calls(struct nb *o) {
  const struct bench_layout *l = o->wa->layout;
  int64_t n = o->overlap ? (int64_t)l->ncalls : (int64_t)l->next, lo, hi;
  o->iters = o->p->segments;
  MPI_Allreduce(&n, &lo, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&n, &hi, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  if (lo != hi || n % o->iters || !n)
    fail(o, "--compute and --small-requests need the same number of calls (extents) "
            "in every segment on every rank (checkpoint, segmented, strided, hacc-aos)");
  o->per_iter = n / o->iters;
  o->calls = malloc((size_t)n * sizeof *o->calls);
  o->seg_pos = malloc((size_t)(o->iters + 1) * sizeof *o->seg_pos);
  o->seg_ext = malloc((size_t)(o->iters + 1) * sizeof *o->seg_ext);
  if (!o->calls || !o->seg_pos || !o->seg_ext) fail(o, "out of memory");
  int64_t pos = 0;
  for (int64_t i = 0; i < n; i++) {
    if (o->overlap) {
      const struct bench_call *c = &l->calls[i];
      int64_t off = o->wa->mode == BENCH_MODE_EXPLICIT ? c->off : c->pos;
      o->calls[i] = (struct nb_call){.off = off, .pos = c->pos, .len = c->len};
    } else {
      o->calls[i] = (struct nb_call){.off = l->ext[i].off, .pos = pos, .len = l->ext[i].len};
      pos += l->ext[i].len;
    }
  }
  /* Each iteration's first stream byte and first extent. */
  size_t e = 0;
  int64_t epos = 0;
  for (int64_t i = 0; i <= o->iters; i++) {
    o->seg_pos[i] = i < o->iters ? o->calls[i * o->per_iter].pos : l->bytes;
    while (e < l->next && epos < o->seg_pos[i]) epos += l->ext[e++].len;
    o->seg_ext[i] = e;
  }
  int64_t mine = l->bytes / o->iters;
  MPI_Allreduce(&mine, &o->bytes_iter, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
}

/* The data of a call: the whole stream is produced once, before the timed
 * runs, so that the compute of an iteration is the CPU loop alone and can
 * be calibrated to take as long as the write (producing the data ran
 * slower than this machine's writes, and made compute-only longer than
 * the I/O it was meant to match). */
static unsigned char *call_buf(const struct nb *o, int64_t i, const struct nb_call *c) {
  (void)i;
  return o->wa->buf + c->pos;
}

/* ---- one run ---------------------------------------------------------------------- */

static int report_rc(const struct nb *o, const char *what, int rc) {
  if (rc) fprintf(stderr, "aggio-bench: rank %d: %s %s %s: %s\n", o->rank, o->wa->be->name, what,
                  o->wa->path, o->wa->be->error(rc));
  return rc != 0;
}

static int report_short(const struct nb *o, const char *what, int64_t moved, int64_t want) {
  if (moved == want) return 0;
  fprintf(stderr, "aggio-bench: rank %d: %s %s %s: short transfer: %lld of %lld bytes\n",
          o->rank, o->wa->be->name, what, o->wa->path, (long long)moved, (long long)want);
  return 1;
}

static int64_t iteration_bytes(const struct nb *o, int64_t i) {
  return o->seg_pos[i + 1] - o->seg_pos[i];
}

/* Iteration i's calls, each a blocking *_write_at_all. */
static int write_blocking(const struct nb *o, void *fh, int64_t i) {
  int failed = 0;
  for (int64_t k = 0; k < o->per_iter; k++) {
    const struct nb_call *c = &o->calls[i * o->per_iter + k];
    int64_t moved = 0;
    int rc = o->wa->be->xfer(fh, BENCH_WRITE, c->off, call_buf(o, i, c), (int)c->len, &moved);
    failed |= report_rc(o, "write", rc) || (!rc && report_short(o, "write", moved, c->len));
  }
  return failed;
}

static int start_iteration(const struct nb *o, void *fh, int64_t i) {
  int failed = 0;
  for (int64_t k = 0; k < o->per_iter; k++) {
    const struct nb_call *c = &o->calls[i * o->per_iter + k];
    failed |= report_rc(o, "iwrite", o->wa->be->istart(fh, BENCH_WRITE, c->off,
                                                       call_buf(o, i, c), (int)c->len));
  }
  return failed;
}

static int write_each(const struct nb *o, void *fh, int64_t i) {
  int failed = 0;
  for (int64_t k = 0; k < o->per_iter; k++) {
    const struct nb_call *c = &o->calls[i * o->per_iter + k];
    int64_t moved = 0;
    int rc = o->wa->be->istart(fh, BENCH_WRITE, c->off, call_buf(o, i, c), (int)c->len);
    failed |= report_rc(o, "iwrite", rc);
    rc = o->wa->be->complete(fh, &moved);
    failed |= report_rc(o, "wait", rc) || (!rc && report_short(o, "wait", moved, c->len));
  }
  return failed;
}

static int complete_iteration(const struct nb *o, void *fh, int64_t i) {
  int64_t moved = 0;
  int rc = o->wa->be->complete(fh, &moved);
  return report_rc(o, "wait", rc) || (!rc && report_short(o, "wait", moved, iteration_bytes(o, i)));
}

/* The hints in effect, once, after the first write run. */
static void read_hints(struct nb *o, void *fh) {
  MPI_Info used = MPI_INFO_NULL;
  if (o->hints_json || !o->wa->be->info || o->wa->be->info(fh, &used)) return;
  o->hints_json = bench_info_json(used);
  MPI_Info_free(&used);
}

static void *open_file(struct nb *o) {
  struct bench_open_args args = {.path = o->wa->path, .comm = MPI_COMM_WORLD,
                                 .dir = BENCH_WRITE, .collective = 1,
                                 .odirect = o->wa->odirect, .info = o->wa->info};
  void *fh = NULL;
  int rc = o->wa->be->open(&args, &fh);
  if (!rc && o->overlap && o->wa->mode == BENCH_MODE_VIEW)
    rc = o->wa->be->set_view(fh, o->wa->filetype);
  if (report_rc(o, "open", rc)) MPI_Abort(MPI_COMM_WORLD, 1);
  return fh;
}

/* Every rank learns whether any failed; then all leave with status 1. */
static void end_if_failed(int failed) {
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (!failed) return;
  MPI_Finalize();
  exit(1);
}

/* One run of every iteration: compute (`units` of the loop) and, unless
 * compute-only, the write; -e: the file's sync at the end, inside the
 * timing.  Open and close are outside it. */
static void run(struct nb *o, enum nb_kind kind, uint64_t units, struct nb_time *t) {
  void *fh = kind == NB_COMPUTE ? NULL : open_file(o);
  int failed = 0;
  double visible = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = bench_now();
  for (int64_t i = 0; i < o->iters; i++) {
    if (units) compute(units);
    if (kind == NB_COMPUTE) continue;
    double a = bench_now();
    if (kind == NB_BLOCKING) {
      failed |= write_blocking(o, fh, i);
    } else if (kind == NB_EACH) {
      failed |= write_each(o, fh, i);
    } else {
      /* Overlap: iteration i - 1's write waited for here, after the
       * compute it overlapped; small requests: K started, then one wait. */
      if (o->overlap && i) failed |= complete_iteration(o, fh, i - 1);
      failed |= start_iteration(o, fh, i);
      if (!o->overlap) failed |= complete_iteration(o, fh, i);
    }
    visible += bench_now() - a;
  }
  double a = bench_now();
  if (kind == NB_NONBLOCKING && o->overlap) failed |= complete_iteration(o, fh, o->iters - 1);
  visible += bench_now() - a;
  double ts = bench_now();
  if (kind != NB_COMPUTE && o->p->fsync) failed |= report_rc(o, "sync", o->wa->be->sync(fh));
  double t1 = bench_now(), sync = t1 - ts, lo, hi;
  if (kind != NB_COMPUTE) read_hints(o, fh);
  MPI_Allreduce(&t0, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&t1, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&sync, &t->sync, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(&visible, &t->visible, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  t->total = hi - lo;
  if (fh) failed |= report_rc(o, "close", o->wa->be->close(fh));
  end_if_failed(failed);
}

/* ---- verification and the settle step ---------------------------------------------- */

/* Reads this rank's extents of the read layout (-C: another rank's) back
 * with pread and counts the bad bytes; missing bytes count as bad. */
static int64_t check_file(const struct nb *o) {
#ifdef AGGIO_SIMGRID
  (void)o;
  return 0; /* simulated: the null back end stores nothing to read back */
#endif
  const struct bench_layout *l = o->ra->layout;
  enum { CHUNK = 16 << 20 };
  unsigned char *b = malloc(CHUNK);
  int fd = open(o->ra->path, O_RDONLY);
  int64_t bad = 0, first = -1;
  for (size_t e = 0; e < l->next; e++)
    for (int64_t done = 0; done < l->ext[e].len;) {
      int64_t n = l->ext[e].len - done < CHUNK ? l->ext[e].len - done : CHUNK;
      ssize_t got = fd >= 0 && b ? pread(fd, b, (size_t)n, l->ext[e].off + done) : -1;
      if (got <= 0) {
        if (first < 0) first = l->ext[e].off + done;
        bad += l->ext[e].len - done;
        break;
      }
      bad += bench_check(b, l->ext[e].off + done, got, o->ra->seed, &first);
      done += got;
    }
  if (fd >= 0) close(fd);
  free(b);
  if (bad)
    fprintf(stderr, "aggio-bench: rank %d: %lld bad bytes in %s, first at offset %lld\n",
            o->rank, (long long)bad, o->ra->path, (long long)first);
  return bad;
}

/* Between runs: the file removed, dirty pages written back (one rank per
 * node), every rank in step. */
static void settle(const struct nb *o) {
  MPI_Comm node;
  int lrank;
  if (o->rank == 0) o->wa->be->remove(o->wa->path);
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  if (lrank == 0) sync();
  MPI_Comm_free(&node);
  MPI_Barrier(MPI_COMM_WORLD);
}

static void run_checked(struct nb *o, enum nb_kind kind, uint64_t units, struct nb_time *t) {
  run(o, kind, units, t);
  if (kind != NB_COMPUTE) {
    int64_t bad = check_file(o), all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    o->errors += all;
    settle(o);
  }
}

/* ---- reports ------------------------------------------------------------------------ */

static double ratio(const struct nb_rep *r) {
  return r->t[NB_BLOCKING].total > 0 ? r->t[NB_NONBLOCKING].total / r->t[NB_BLOCKING].total
                                     : NAN;
}

/* Small requests: merged (K started, one wait) against one by one. */
static double each_ratio(const struct nb_rep *r) {
  return r->t[NB_EACH].total > 0 ? r->t[NB_NONBLOCKING].total / r->t[NB_EACH].total : NAN;
}

/* (T_blocking - T_nonblocking) / (T_blocking - T_compute_only). */
static double hidden(const struct nb_rep *r) {
  double io = r->t[NB_BLOCKING].total - r->t[NB_COMPUTE].total;
  return io > 0 ? (r->t[NB_BLOCKING].total - r->t[NB_NONBLOCKING].total) / io : NAN;
}

/* min, median, max of n values (NaN ones left out; all NaN: NaN). */
static void stats(const double *v, int n, double out[3]) {
  double *s = malloc((size_t)n * sizeof *s);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (!isnan(v[i])) s[m++] = v[i];
  if (!m) {
    out[0] = out[1] = out[2] = NAN;
  } else {
    qsort(s, (size_t)m, sizeof *s, cmp_double);
    out[0] = s[0];
    out[1] = m % 2 ? s[m / 2] : (s[m / 2 - 1] + s[m / 2]) / 2;
    out[2] = s[m - 1];
  }
  free(s);
}

/* The value of "key" in JSON object text of bench_info_json, or "". */
static void hint_value(const char *json, const char *key, char *out, size_t len) {
  char pat[160];
  const char *at;
  out[0] = '\0';
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  if (!json || !(at = strstr(json, pat))) return;
  at += strlen(pat);
  snprintf(out, len, "%.*s", (int)strcspn(at, "\""), at);
}

static const char *progress_thread(const struct nb *o) {
  const char *env = getenv("AGGIO_PROGRESS_THREAD");
  if (o->wa->be != &bench_backend_aggio) return "n/a";
  return o->provided == MPI_THREAD_MULTIPLE && !(env && !strcmp(env, "0")) ? "on" : "off";
}

static const char *requested_level(const struct nb *o) {
  return o->p->thread_level[0] ? o->p->thread_level : "MPI_Init";
}

static void print_header(const struct nb *o) {
  char sel[128];
  hint_value(o->hints_json, "aggio_strategy_selected", sel, sizeof sel);
  printf("aggio-bench %s: pattern=%s api=%s collective (%s) ranks=%d%s%s\n",
         o->overlap ? "overlap" : "small-requests", o->p->pattern, o->p->api,
         o->overlap ? bench_mode_name(o->wa->mode) : "explicit", o->nranks,
         sel[0] ? " strategy=" : "", sel);
  printf("  mpi: %s | fs: %s (%s) | host: %s\n", o->sys->mpi_library, o->sys->fs_type,
         o->p->path, o->sys->host);
  printf("  thread level: %s requested, %s provided | aggio progress thread: %s\n",
         requested_level(o), bench_thread_level_name(o->provided), progress_thread(o));
  printf("  per iteration: %.2f MiB over all ranks, %lld call(s) per rank | iterations: %lld | "
         "fsync: %s | O_DIRECT: %s | reps: %d\n",
         (double)o->bytes_iter / BENCH_MIB, (long long)o->per_iter, (long long)o->iters,
         o->p->fsync ? "yes (in the timing)" : "no", o->p->odirect ? "yes" : "no", o->p->reps);
  if (o->overlap) {
    printf("  compute: %.4f s of the loop per iteration", o->compute_s);
    if (o->p->compute_auto)
      printf(" (auto: a blocking iteration's write took %.4f s in the warm-up)", o->warmup_io_s);
    printf("; loop calibrated at %.3g..%.3g units/s over the ranks\n", o->rate[0], o->rate[1]);
    printf("%4s %11s %11s %11s %7s %7s %9s %9s\n", "rep", "compute(s)", "blocking(s)",
           "nonblock(s)", "nb/b", "hidden", "sync_b(s)", "sync_nb(s)");
  } else {
    printf("%4s %11s %11s %11s %11s %11s %11s %7s %11s %7s\n", "rep", "blocking(s)",
           "nonblock(s)", "b ms/iter", "nb ms/iter", "b MiB/s", "nb MiB/s", "nb/b", "each(s)",
           "nb/each");
  }
  fflush(stdout);
}

static void print_row(const struct nb *o, int i, const struct nb_rep *r) {
  const struct nb_time *t = r->t;
  double it = (double)o->iters;
  int64_t bytes = o->bytes_iter * o->iters;
  if (o->overlap)
    printf("%4d %11.4f %11.4f %11.4f %7.3f %7.3f %9.4f %9.4f\n", i, t[NB_COMPUTE].total,
           t[NB_BLOCKING].total, t[NB_NONBLOCKING].total, ratio(r), hidden(r),
           t[NB_BLOCKING].sync, t[NB_NONBLOCKING].sync);
  else
    printf("%4d %11.4f %11.4f %11.3f %11.3f %11.2f %11.2f %7.3f %11.4f %7.3f\n", i,
           t[NB_BLOCKING].total, t[NB_NONBLOCKING].total, 1e3 * t[NB_BLOCKING].total / it,
           1e3 * t[NB_NONBLOCKING].total / it, bench_bw_mib(bytes, t[NB_BLOCKING].total),
           bench_bw_mib(bytes, t[NB_NONBLOCKING].total), ratio(r), t[NB_EACH].total,
           each_ratio(r));
  fflush(stdout);
}

/* The figures of the summary and the record, per repetition. */
enum { F_COMPUTE, F_BLOCKING, F_NONBLOCKING, F_RATIO, F_HIDDEN, F_EACH, F_EACH_RATIO, F_COUNT };
static const char *const fig_name[F_COUNT] = {"compute_only_s", "blocking_s", "nonblocking_s",
                                              "ratio", "hidden", "each_s", "each_ratio"};

/* The figures each mode has. */
static int has_figure(const struct nb *o, int f) {
  if (o->overlap)
    return f != F_EACH && f != F_EACH_RATIO;
  return f != F_COMPUTE && f != F_HIDDEN;
}

static void figures(const struct nb_rep *reps, int n, double (*out)[3]) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int f = 0; f < F_COUNT; f++) {
    for (int i = 0; i < n; i++)
      v[i] = f == F_RATIO        ? ratio(&reps[i])
             : f == F_HIDDEN     ? hidden(&reps[i])
             : f == F_EACH_RATIO ? each_ratio(&reps[i])
             : f == F_EACH       ? reps[i].t[NB_EACH].total
                                 : reps[i].t[f].total;
    stats(v, n, out[f]);
  }
  free(v);
}

static void print_summary(const struct nb *o, const struct nb_rep *reps) {
  static const char *const label[F_COUNT] = {
      "compute-only (s)", "blocking (s)", "non-blocking (s)", "non-blocking/blocking",
      "I/O time hidden", "one by one nb (s)", "non-blocking/one by one"};
  double f[F_COUNT][3];
  figures(reps, o->p->reps, f);
  printf("summary %17s %10s %10s %10s\n", "", "min", "median", "max");
  for (int k = 0; k < F_COUNT; k++) {
    if (!has_figure(o, k)) continue;
    printf("%-25s %10.4f %10.4f %10.4f\n", label[k], f[k][0], f[k][1], f[k][2]);
  }
  if (!o->overlap) {
    double it = (double)o->iters;
    printf("%-25s %10.3f %10.3f %10.3f\n", "blocking ms/iteration", 1e3 * f[F_BLOCKING][0] / it,
           1e3 * f[F_BLOCKING][1] / it, 1e3 * f[F_BLOCKING][2] / it);
    printf("%-25s %10.3f %10.3f %10.3f\n", "non-blocking ms/iter.", 1e3 * f[F_NONBLOCKING][0] / it,
           1e3 * f[F_NONBLOCKING][1] / it, 1e3 * f[F_NONBLOCKING][2] / it);
    printf("%-25s %10.3f %10.3f %10.3f\n", "one by one nb ms/iter.", 1e3 * f[F_EACH][0] / it,
           1e3 * f[F_EACH][1] / it, 1e3 * f[F_EACH][2] / it);
  }
  printf("verification: %s (%lld bad bytes)\n", o->errors ? "FAILED" : "passed",
         (long long)o->errors);
  fflush(stdout);
}

static void json_num(FILE *out, double v) {
  if (isnan(v)) fputs("null", out);
  else fprintf(out, "%.6f", v);
}

/* A run's times; null where not measured (the SimGrid build's
 * non-blocking loop). */
static void json_time(FILE *out, const char *key, const struct nb_time *t) {
  const char *const name[3] = {"total", "sync", "visible"};
  const double v[3] = {t->total, t->sync, t->visible};
  fprintf(out, "\"%s\":{", key);
  for (int k = 0; k < 3; k++) {
    fprintf(out, "%s\"%s\":", k ? "," : "", name[k]);
    json_num(out, v[k]);
  }
  fputc('}', out);
}

static void json_hints(FILE *out, const struct bench_params *p) {
  fputc('{', out);
  for (int i = 0; i < p->nhints; i++) {
    fputs(i ? "," : "", out);
    bench_json_str(out, p->hints[i].key);
    fputc(':', out);
    bench_json_str(out, p->hints[i].value);
  }
  fputc('}', out);
}

static void write_json(const struct nb *o, const struct nb_rep *reps, FILE *out) {
  const struct bench_params *p = o->p;
  char when[64];
  time_t now = time(NULL);
  struct tm tm;
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  fprintf(out, "{\"tool\":\"aggio-bench\",\"schema\":2,\"mode\":\"%s\",\"label\":",
          o->overlap ? "overlap" : "small-requests");
  bench_json_str(out, p->label);
  fputs(",\"start_time\":", out);
  bench_json_str(out, when);
  fputs(",\"host\":", out);
  bench_json_str(out, o->sys->host);
  fputs(",\"api\":", out);
  bench_json_str(out, p->api);
  fputs(",\"pattern\":", out);
  bench_json_str(out, p->pattern);
  fprintf(out, ",\"calls\":{\"mode\":\"%s\",\"per_iteration\":%lld},\"iterations\":%lld,",
          o->overlap ? bench_mode_name(o->wa->mode) : "explicit", (long long)o->per_iter,
          (long long)o->iters);
  fprintf(out, "\"params\":{\"block\":%lld,\"transfer\":%lld,\"segments\":%lld,\"fsync\":%s,"
               "\"odirect\":%s,\"reps\":%d,\"hints\":",
          (long long)p->block, (long long)p->transfer, (long long)p->segments,
          p->fsync ? "true" : "false", p->odirect ? "true" : "false", p->reps);
  json_hints(out, p);
  fprintf(out, "},\"hints\":%s,\"thread_level\":{\"requested\":",
          o->hints_json ? o->hints_json : "{}");
  bench_json_str(out, requested_level(o));
  fprintf(out, ",\"provided\":\"%s\"},\"progress_thread\":\"%s\",\"mpi\":{\"library\":",
          bench_thread_level_name(o->provided), progress_thread(o));
  bench_json_str(out, o->sys->mpi_library);
  fputs(",\"flavor\":", out);
  bench_json_str(out, o->sys->mpi_flavor);
  fprintf(out, "},\"nranks\":%d,\"fs\":{\"type\":", o->nranks);
  bench_json_str(out, o->sys->fs_type);
  fprintf(out, "},\"bytes\":{\"per_iteration\":%lld,\"per_run\":%lld},",
          (long long)o->bytes_iter, (long long)(o->bytes_iter * o->iters));
  if (o->overlap)
    fprintf(out, "\"compute\":{\"seconds_per_iteration\":%.6f,\"auto\":%s,"
                 "\"warmup_io_seconds_per_iteration\":%.6f,\"units_per_s\":[%.1f,%.1f]},",
            o->compute_s, p->compute_auto ? "true" : "false", o->warmup_io_s, o->rate[0],
            o->rate[1]);
  fputs("\"reps\":[", out);
  for (int i = 0; i < p->reps; i++) {
    fputs(i ? ",{" : "{", out);
    if (o->overlap) {
      json_time(out, "compute_only", &reps[i].t[NB_COMPUTE]);
      fputc(',', out);
    }
    json_time(out, "blocking", &reps[i].t[NB_BLOCKING]);
    fputc(',', out);
    json_time(out, "nonblocking", &reps[i].t[NB_NONBLOCKING]);
    if (!o->overlap) {
      fputc(',', out);
      json_time(out, "each", &reps[i].t[NB_EACH]);
      fputs(",\"each_ratio\":", out);
      json_num(out, each_ratio(&reps[i]));
    }
    fputs(",\"ratio\":", out);
    json_num(out, ratio(&reps[i]));
    if (o->overlap) {
      fputs(",\"hidden\":", out);
      json_num(out, hidden(&reps[i]));
    }
    fputc('}', out);
  }
  fputs("]", out);
  double f[F_COUNT][3];
  figures(reps, p->reps, f);
  for (int k = 0; k < F_COUNT; k++) {
    if (!has_figure(o, k)) continue;
    fprintf(out, ",\"%s\":{\"min\":", fig_name[k]);
    json_num(out, f[k][0]);
    fputs(",\"median\":", out);
    json_num(out, f[k][1]);
    fputs(",\"max\":", out);
    json_num(out, f[k][2]);
    fputc('}', out);
  }
#ifdef AGGIO_SIMGRID
  const char *checked = "false"; /* simulated: nothing stored (check_file) */
#else
  const char *checked = "true";
#endif
  fprintf(out, ",\"verify\":{\"errors\":%lld,\"checked\":%s},\"ok\":%s}\n",
          (long long)o->errors, checked, o->errors ? "false" : "true");
}

/* ---- the mode ------------------------------------------------------------------------ */

/* --compute: calibrate; with auto, a blocking warm-up without compute sets
 * the compute time to its write time per iteration. */
static uint64_t setup_compute(struct nb *o) {
  o->units_per_s = calibrate();
  MPI_Allreduce(&o->units_per_s, &o->rate[0], 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&o->units_per_s, &o->rate[1], 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  o->compute_s = o->p->compute;
  if (o->p->compute_auto) {
    /* compute-only takes as long as the writes of a blocking warm-up */
    struct nb_time warm;
    settle(o);
    run(o, NB_BLOCKING, 0, &warm);
    o->warmup_io_s = warm.visible / (double)o->iters;
    o->compute_s = o->warmup_io_s;
  }
  return (uint64_t)(o->compute_s * o->units_per_s + 0.5);
}

int bench_nb_main(const struct bench_access *wa, const struct bench_access *ra,
                  const struct bench_params *p, const struct bench_sysinfo *sys, int provided) {
  struct nb o = {.wa = wa, .ra = ra, .p = p, .sys = sys, .provided = provided,
                 .overlap = !p->small_requests};
  MPI_Comm_rank(MPI_COMM_WORLD, &o.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &o.nranks);
  if (!wa->be->istart || !p->collective || p->fpp)
    fail(&o, "--compute and --small-requests need -a AGGIO or -a MPIIO with -c (no -F)");
  plan_calls(&o);
  bench_access_fill(wa); /* untimed: the whole stream, once */
  uint64_t units = o.overlap ? setup_compute(&o) : 0;
  struct nb_rep *reps = calloc((size_t)p->reps, sizeof *reps);
  settle(&o);
  for (int i = 0; i < p->reps; i++) {
    if (o.overlap) run_checked(&o, NB_COMPUTE, units, &reps[i].t[NB_COMPUTE]);
    /* Rotate which goes first, so that drift falls on all alike. */
    enum nb_kind order[3] = {NB_BLOCKING, NB_NONBLOCKING, NB_EACH};
    int nk = o.overlap ? 2 : 3;
#ifdef AGGIO_SIMGRID
    /* Simulated: the blocking loop only.  Non-blocking calls need the
     * engine's posted agreements, which the SimGrid build makes blocking
     * (SIMULATION.md): not measured there, reported as null. */
    nk = 1;
    reps[i].t[NB_NONBLOCKING] = (struct nb_time){NAN, NAN, NAN};
    reps[i].t[NB_EACH] = (struct nb_time){NAN, NAN, NAN};
#endif
    for (int k = 0; k < nk; k++) {
      enum nb_kind kind = order[(k + i) % nk];
      run_checked(&o, kind, units, &reps[i].t[kind]);
    }
    if (o.rank == 0 && i == 0) print_header(&o);
    if (o.rank == 0) print_row(&o, i, &reps[i]);
  }
  if (o.rank == 0) {
    print_summary(&o, reps);
    if (p->json_path[0]) {
      FILE *out = strcmp(p->json_path, "-") ? fopen(p->json_path, "a") : stdout;
      if (out) write_json(&o, reps, out);
      else perror(p->json_path);
      if (out && out != stdout) fclose(out);
    }
  }
  free(reps);
  free(o.calls);
  free(o.seg_pos);
  free(o.seg_ext);
  free(o.hints_json);
  return o.errors ? 1 : 0;
}
