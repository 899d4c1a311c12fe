/*
 * aggio-bench.c - the driver: parses the command line, builds each rank's
 * layout, runs -i repetitions of write (and its -W check) then read (and its
 * -R check) through the chosen back end, and reports a table and a JSON
 * record.  Exit status: 0, 1 when verification found a bad byte, 2 on a
 * usage error; an I/O error aborts the job.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "drop_cache.h"
#include "engine.h"

struct bench_state {
  struct bench_params p;
  const struct bench_backend *be;
  const struct bench_pattern *pat;
  int rank, nranks, read_as;
  struct bench_layout lw, lr;
  MPI_Datatype tw, tr;
  enum bench_mode mode_w, mode_r;
  int64_t ncalls_w, ncalls_r;
  unsigned char *wbuf, *rbuf;
  MPI_Info info;
  char path_w[BENCH_PATH_MAX + 16], path_r[BENCH_PATH_MAX + 16];
};

static void fail0(int rank, const char *msg) {
  if (rank == 0) fprintf(stderr, "aggio-bench: %s\n", msg);
  MPI_Finalize();
  exit(2);
}

/* Checks the combination of options; makes -B a hint for AGGIO. */
static void check_params(struct bench_state *s) {
  struct bench_params *p = &s->p;
  if (!(s->be = bench_backend_find(p->api))) fail0(s->rank, "-a must be AGGIO, MPIIO or POSIX");
  snprintf(p->api, sizeof p->api, "%s", s->be->name);
  if (!(s->pat = bench_pattern_find(p->pattern))) fail0(s->rank, "unknown --pattern (see -h)");
  snprintf(p->pattern, sizeof p->pattern, "%s", s->pat->name);
  if (p->collective && !s->be->set_view) fail0(s->rank, "-c needs -a MPIIO or -a AGGIO");
  if (p->file_view && !p->collective) fail0(s->rank, "-V needs -c");
  if (p->odirect && s->be == &bench_backend_aggio) {
    int set = 0;
    for (int i = 0; i < p->nhints; i++) set |= !strcmp(p->hints[i].key, "aggio_direct_io");
    if (!set && p->nhints < BENCH_MAX_HINTS) {
      snprintf(p->hints[p->nhints].key, sizeof p->hints[0].key, "aggio_direct_io");
      snprintf(p->hints[p->nhints++].value, sizeof p->hints[0].value, "enable");
    }
  } else if (p->odirect && s->be == &bench_backend_mpiio) {
    if (s->rank == 0) fprintf(stderr, "aggio-bench: -B is ignored by -a MPIIO\n");
    p->odirect = 0;
  }
  if (p->reorder) p->shift = ((p->shift % s->nranks) + s->nranks) % s->nranks;
  s->read_as = p->reorder ? (s->rank + p->shift) % s->nranks : s->rank;
}

/* IOR's choice for -c: collective calls at explicit file offsets, unless a
 * call spans several pieces of the file, the pattern has a view of its own
 * (subarray) or -V asks for a view. */
static enum bench_mode choose_mode(const struct bench_params *p, const struct bench_pattern *pat,
                                   int contiguous) {
  if (p->fpp) return BENCH_MODE_FPP;
  if (!p->collective) return BENCH_MODE_EXTENTS;
  if (p->file_view || pat->filetype || !contiguous) return BENCH_MODE_VIEW;
  return BENCH_MODE_EXPLICIT;
}

/* Layout, calls, mode and view of the access of rank `as`. */
static void make_layout(struct bench_state *s, int as, struct bench_layout *l,
                        MPI_Datatype *type, int64_t *ncalls, enum bench_mode *mode) {
  memset(l, 0, sizeof *l);
  if (s->pat->layout(&s->p, as, s->nranks, l)) {
    if (s->rank == 0) fprintf(stderr, "aggio-bench: %s: -b must be a multiple of -t "
                                      "(subarray: --grid must multiply to the ranks)\n", s->p.pattern);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  bench_layout_cap_calls(l, s->p.call_size);
  *type = MPI_DATATYPE_NULL;
  int64_t mine = (int64_t)l->ncalls;
  MPI_Allreduce(&mine, ncalls, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  int contiguous = bench_layout_map_calls(l), all = 0;
  MPI_Allreduce(&contiguous, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  *mode = choose_mode(&s->p, s->pat, all);
  if (*mode != BENCH_MODE_VIEW) return;
  int rc = s->pat->filetype ? s->pat->filetype(&s->p, as, s->nranks, l, type)
                            : bench_layout_filetype(l, type);
  if (rc) {
    fprintf(stderr, "aggio-bench: cannot build the file view of %s\n", s->p.pattern);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static unsigned char *alloc_buf(int64_t bytes) {
#ifdef AGGIO_SIMGRID
  /* Every simulated rank lives in one process: its buffers share pages
   * (SMPI_SHARED_MALLOC), as nothing is stored or checked there. */
  return SMPI_SHARED_MALLOC((size_t)(bytes ? bytes : 1));
#else
  void *b = NULL;
  if (posix_memalign(&b, BENCH_DIRECT_ALIGN, (size_t)(bytes ? bytes : 1))) {
    fprintf(stderr, "aggio-bench: cannot allocate %lld bytes\n", (long long)bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return b;
#endif
}

static void setup(struct bench_state *s) {
  struct bench_params *p = &s->p;
  s->pat->defaults(p, s->nranks);
  make_layout(s, s->rank, &s->lw, &s->tw, &s->ncalls_w, &s->mode_w);
  make_layout(s, s->read_as, &s->lr, &s->tr, &s->ncalls_r, &s->mode_r);
  s->wbuf = alloc_buf(s->lw.bytes);
  s->rbuf = alloc_buf(s->lr.bytes);
  MPI_Info_create(&s->info);
  for (int i = 0; i < p->nhints; i++) MPI_Info_set(s->info, p->hints[i].key, p->hints[i].value);
  if (p->fpp) {
    snprintf(s->path_w, sizeof s->path_w, "%s.%08d", p->path, s->rank);
    snprintf(s->path_r, sizeof s->path_r, "%s.%08d", p->path, s->read_as);
  } else {
    snprintf(s->path_w, sizeof s->path_w, "%s", p->path);
    snprintf(s->path_r, sizeof s->path_r, "%s", p->path);
  }
}

static struct bench_access make_access(const struct bench_state *s, enum bench_dir dir) {
  int w = dir == BENCH_WRITE;
  return (struct bench_access){
      .be = s->be,
      .layout = w ? &s->lw : &s->lr,
      .dir = dir,
      .mode = w ? s->mode_w : s->mode_r,
      .path = w ? s->path_w : s->path_r,
      .fpp = s->p.fpp,
      .collective = s->p.collective,
      .fsync = s->p.fsync,
      .odirect = s->p.odirect,
      .info = s->info,
      .filetype = w ? s->tw : s->tr,
      .ncalls = w ? s->ncalls_w : s->ncalls_r,
      .buf = w ? s->wbuf : s->rbuf,
      .seed = bench_file_seed(s->p.seed, s->p.fpp, w ? s->rank : s->read_as)};
}

/* The string value of `key` in JSON object text from bench_info_json(),
 * or "" when absent. */
static void json_value(const char *json, const char *key, char *out, size_t len) {
  char pat[160];
  out[0] = '\0';
  if (!json) return;
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *at = strstr(json, pat);
  if (!at) return;
  at += strlen(pat);
  size_t n = strcspn(at, "\"");
  if (n >= len) n = len - 1;
  memcpy(out, at, n);
  out[n] = '\0';
}

/* What was asked for: the layout for POSIX; for aggio the aggio_strategy
 * hint in effect ("auto" when unset); for MPIIO the I/O component and
 * fcoll forced through MCA and the cb_write hint. */
static void describe_requested(const struct bench_state *s, const struct bench_sysinfo *sys,
                               const char *hints_json, char *out, size_t len) {
  const struct bench_params *p = &s->p;
  char hint[128] = "";
  if (s->be == &bench_backend_posix) {
    snprintf(out, len, "%s%s", p->fpp ? "file-per-process" : "shared-file",
             p->odirect ? "+odirect" : "");
  } else if (!p->collective) {
    snprintf(out, len, "independent-calls");
  } else if (s->be == &bench_backend_aggio) {
    json_value(hints_json, "aggio_strategy", hint, sizeof hint);
    snprintf(out, len, "%s", hint[0] ? hint : "auto");
  } else {
    const char *io = getenv("OMPI_MCA_io"), *fcoll = getenv("OMPI_MCA_fcoll");
    for (int i = 0; i < p->nhints; i++)
      if (!strcmp(p->hints[i].key, "romio_cb_write"))
        snprintf(hint, sizeof hint, "+cb_write=%s", p->hints[i].value);
    if (!strcmp(sys->mpi_flavor, "openmpi"))
      snprintf(out, len, "%s%s%s%s", io ? io : "default", fcoll ? "/fcoll=" : "",
               fcoll ? fcoll : "", hint);
    else
      snprintf(out, len, "romio%s", hint);
  }
}

/* What ran: for aggio's collective calls the strategy it chose (the
 * aggio_strategy_selected it reports after the transfer; "unreported" if it
 * does not); otherwise what was asked for. */
static void describe_chosen(const struct bench_state *s, const char *requested,
                            const char *hints_json, char *out, size_t len) {
  char chosen[128];
  if (s->be != &bench_backend_aggio || !s->p.collective) {
    snprintf(out, len, "%s", requested);
    return;
  }
  json_value(hints_json, "aggio_strategy_selected", chosen, sizeof chosen);
  snprintf(out, len, "%s", chosen[0] ? chosen : "unreported");
}

static void remove_files(const struct bench_state *s) {
  if (s->p.fpp || s->rank == 0) s->be->remove(s->path_w);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Counts the bad bytes of the last read, on every rank (collective). */
static int64_t check_read(const struct bench_state *s, const struct bench_access *a) {
  int64_t first = -1, bad = bench_access_check(a, &first), all = 0;
  if (bad)
    fprintf(stderr, "aggio-bench: rank %d: %lld bad bytes read from %s, first at offset %lld\n",
            s->rank, (long long)bad, a->path, (long long)first);
  MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
}

/* Reads the file back (timed into t) after filling the buffer with a byte
 * no data has, so that a short read cannot pass a check. */
static void read_back(struct bench_state *s, struct bench_times *t, char **hints_json) {
  struct bench_access a = make_access(s, BENCH_READ);
  memset(s->rbuf, 0xA5, (size_t)s->lr.bytes);
  bench_access_run(&a, t, hints_json);
}

static void now_iso(char *out, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(out, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void write_json(const struct bench_result *res, const char *path) {
  FILE *out = strcmp(path, "-") ? fopen(path, "a") : stdout;
  if (!out || bench_report_json(res, out)) perror(path);
  if (out && out != stdout) fclose(out);
}

/* This process's peak resident memory so far, KiB (Linux's ru_maxrss). */
static int64_t maxrss_kib(void) {
  struct rusage ru;
  return getrusage(RUSAGE_SELF, &ru) ? 0 : (int64_t)ru.ru_maxrss;
}

/* Every rank's peak, baseline and buffer bytes, gathered on rank 0. */
static void gather_memory(const struct bench_state *s, int64_t baseline, struct bench_memory *m) {
  int64_t mine[3] = {maxrss_kib(), baseline, s->lw.bytes + s->lr.bytes};
  int64_t *all = s->rank == 0 ? malloc(3 * (size_t)s->nranks * sizeof *all) : NULL;
  MPI_Gather(mine, 3, MPI_INT64_T, all, 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
  if (s->rank != 0 || !all) return;
  m->peak_kib = malloc((size_t)s->nranks * sizeof *m->peak_kib);
  m->baseline_kib = malloc((size_t)s->nranks * sizeof *m->baseline_kib);
  m->data_bytes = malloc((size_t)s->nranks * sizeof *m->data_bytes);
  for (int r = 0; r < s->nranks && m->peak_kib && m->baseline_kib && m->data_bytes; r++) {
    m->peak_kib[r] = all[3 * r];
    m->baseline_kib[r] = all[3 * r + 1];
    m->data_bytes[r] = all[3 * r + 2];
  }
  free(all);
}

static void free_memory(struct bench_memory *m) {
  free(m->peak_kib);
  free(m->baseline_kib);
  free(m->data_bytes);
}

/* The result's fixed part: byte and call counts over the ranks. */
static void init_result(struct bench_state *s, struct bench_result *res) {
  int64_t bw = s->lw.bytes, br = s->lr.bytes;
  struct bench_access wa = make_access(s, BENCH_WRITE), ra = make_access(s, BENCH_READ);
  int64_t calls[2] = {bench_access_calls(&wa), bench_access_calls(&ra)}, most[2];
  MPI_Allreduce(&bw, &res->bytes_write, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&br, &res->bytes_read, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(calls, most, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  res->calls_write = s->p.do_write ? most[0] : 0;
  res->calls_read = s->p.do_read ? most[1] : 0;
  if (!s->p.do_write) res->bytes_write = 0;
  if (!s->p.do_read) res->bytes_read = 0;
  res->file_bytes = s->lw.file_bytes;
  res->call_mode = bench_mode_name(s->p.do_write ? s->mode_w : s->mode_r);
  res->w = calloc((size_t)s->p.reps, sizeof *res->w);
  res->r = calloc((size_t)s->p.reps, sizeof *res->r);
  now_iso(res->start_time, sizeof res->start_time);
}

/* After an access: what was asked for and chosen; the header once. */
static void note_strategy(const struct bench_state *s, struct bench_result *res,
                          const char *hints_json, char *chosen, size_t len) {
  int first = !res->strategy_requested[0];
  if (first) {
    describe_requested(s, res->sys, hints_json, res->strategy_requested,
                       sizeof res->strategy_requested);
    res->hints_json = hints_json ? strdup(hints_json) : NULL;
  }
  describe_chosen(s, res->strategy_requested, hints_json, chosen, len);
  if (first) {
    snprintf(res->strategy, sizeof res->strategy, "%s", chosen);
    if (s->rank == 0) bench_report_header(res);
  }
}

static void run_write(struct bench_state *s, struct bench_result *res, int rep, char **hints) {
  struct bench_access wa = make_access(s, BENCH_WRITE);
  /* --overwrite keeps what an earlier -k run left: a rewrite reaches
   * allocated blocks, as the program's second write did (aggio replay). */
  if (!s->p.overwrite) remove_files(s);
  bench_access_run(&wa, &res->w[res->nrep_w], hints);
  note_strategy(s, res, *hints, res->strategy_w, sizeof res->strategy_w);
  if (s->rank == 0) bench_report_row("write", rep, &res->w[res->nrep_w], res->bytes_write, s->p.fsync);
  res->nrep_w++;
  if (!s->p.check_write) return;
  struct bench_times untimed;
  read_back(s, &untimed, NULL);
  struct bench_access ra = make_access(s, BENCH_READ);
  res->write_errors += check_read(s, &ra);
}

static void run_read(struct bench_state *s, struct bench_result *res, int rep, char **hints) {
  if (s->p.drop_caches) res->drop_caches_ok = bench_drop_page_cache(MPI_COMM_WORLD);
  read_back(s, &res->r[res->nrep_r], hints);
  note_strategy(s, res, *hints, res->strategy_r, sizeof res->strategy_r);
  if (s->p.check_read) {
    struct bench_access ra = make_access(s, BENCH_READ);
    res->read_errors += check_read(s, &ra);
  }
  if (s->rank == 0) bench_report_row("read", rep, &res->r[res->nrep_r], res->bytes_read, 0);
  res->nrep_r++;
}

static void cleanup(struct bench_state *s, struct bench_result *res) {
  free(res->hints_json);
  free(res->w);
  free(res->r);
  free_memory(&res->mem);
#ifdef AGGIO_SIMGRID
  SMPI_SHARED_FREE(s->wbuf);
  SMPI_SHARED_FREE(s->rbuf);
#else
  free(s->wbuf);
  free(s->rbuf);
#endif
  bench_layout_free(&s->lw);
  bench_layout_free(&s->lr);
  if (s->tw != MPI_DATATYPE_NULL && s->tw != MPI_BYTE) MPI_Type_free(&s->tw);
  if (s->tr != MPI_DATATYPE_NULL && s->tr != MPI_BYTE) MPI_Type_free(&s->tr);
  MPI_Info_free(&s->info);
}

/* The overlap and small-requests modes (overlap.c): write only, their own
 * report; returns the exit status. */
static int run_nb_modes(struct bench_state *s, const struct bench_sysinfo *sys, int provided) {
  struct bench_access wa = make_access(s, BENCH_WRITE), ra = make_access(s, BENCH_READ);
  return bench_nb_main(&wa, &ra, &s->p, sys, provided);
}

int main(int argc, char **argv) {
  struct bench_state s = {0};
  /* Parsed first: --thread-level decides how MPI starts. */
  bench_parse_args(argc, argv, &s.p);
  int provided = MPI_THREAD_SINGLE;
  if (s.p.thread_level[0])
    MPI_Init_thread(&argc, &argv, bench_thread_level(s.p.thread_level), &provided);
  else
    MPI_Init(&argc, &argv);
  MPI_Query_thread(&provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.nranks);
  check_params(&s);
  setup(&s);
  int64_t baseline = maxrss_kib(); /* the data buffers are not touched yet */
  bench_clock_sync(MPI_COMM_WORLD);

  struct bench_sysinfo sys;
  bench_sysinfo_get(s.p.path, &sys);
  if (s.p.compute >= 0 || s.p.compute_auto || s.p.small_requests) {
    int rc = run_nb_modes(&s, &sys, provided);
    struct bench_result none = {0};
    cleanup(&s, &none);
    MPI_Finalize();
    return rc;
  }
  struct bench_result res = {.p = &s.p, .sys = &sys, .nranks = s.nranks};
  init_result(&s, &res);
  if (s.p.do_write) {
    struct bench_access wa = make_access(&s, BENCH_WRITE);
    bench_access_fill(&wa); /* untimed, once */
  }
  char *hints_w = NULL, *hints_r = NULL;
  for (int i = 0; i < s.p.reps; i++) {
    if (s.p.do_write) run_write(&s, &res, i, &hints_w);
    if (s.p.do_read) run_read(&s, &res, i, &hints_r);
  }
  gather_memory(&s, baseline, &res.mem);
  if (s.rank == 0) {
    bench_report_summary(&res);
    if (s.p.json_path[0]) write_json(&res, s.p.json_path);
  }
  if (s.p.do_write && !s.p.keep) remove_files(&s);

  int failed = res.write_errors || res.read_errors;
  free(hints_w);
  free(hints_r);
  cleanup(&s, &res);
  MPI_Finalize();
  return failed ? 1 : 0;
}
