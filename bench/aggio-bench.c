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
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "engine.h"

struct bench_state {
  struct bench_params p;
  const struct bench_backend *be;
  const struct bench_pattern *pat;
  int rank, nranks, read_as;
  struct bench_layout lw, lr;
  MPI_Datatype tw, tr;
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

/* Layout, calls and view of the access of rank `as`. */
static void make_layout(struct bench_state *s, int as, struct bench_layout *l,
                        MPI_Datatype *type, int64_t *ncalls) {
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
  if (!s->p.collective || s->p.fpp) return;
  int rc = s->pat->filetype ? s->pat->filetype(&s->p, as, s->nranks, l, type)
                            : bench_layout_filetype(l, type);
  if (rc) {
    fprintf(stderr, "aggio-bench: cannot build the file view of %s\n", s->p.pattern);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
}

static unsigned char *alloc_buf(int64_t bytes) {
  void *b = NULL;
  if (posix_memalign(&b, BENCH_DIRECT_ALIGN, (size_t)(bytes ? bytes : 1))) {
    fprintf(stderr, "aggio-bench: cannot allocate %lld bytes\n", (long long)bytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return b;
}

static void setup(struct bench_state *s) {
  struct bench_params *p = &s->p;
  s->pat->defaults(p, s->nranks);
  make_layout(s, s->rank, &s->lw, &s->tw, &s->ncalls_w);
  make_layout(s, s->read_as, &s->lr, &s->tr, &s->ncalls_r);
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

/* The strategy in words, from the hints in effect and the MCA settings. */
static void describe_strategy(const struct bench_state *s, const struct bench_sysinfo *sys,
                              const char *hints_json, char *out, size_t len) {
  const struct bench_params *p = &s->p;
  char hint[128] = "";
  const char *keys[] = {"aggio_strategy_selected", "aggio_strategy"};
  if (s->be == &bench_backend_posix) {
    snprintf(out, len, "%s%s", p->fpp ? "file-per-process" : "shared-file",
             p->odirect ? "+odirect" : "");
    return;
  }
  if (!p->collective) {
    snprintf(out, len, "independent-calls");
    return;
  }
  if (s->be == &bench_backend_aggio) {
    for (int k = 0; k < 2 && hints_json && !hint[0]; k++) {
      char pat[64];
      snprintf(pat, sizeof pat, "\"%s\":\"", keys[k]);
      const char *at = strstr(hints_json, pat);
      if (at) sscanf(at + strlen(pat), "%127[^\"]", hint);
    }
    snprintf(out, len, "%s", hint[0] ? hint : "auto");
    return;
  }
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

/* Drops the page cache once per node (root only); returns 1 when it did. */
static int drop_caches(void) {
  MPI_Comm node;
  int lrank, ok = 1, all;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  MPI_Comm_rank(node, &lrank);
  if (lrank == 0) {
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    ok = fd >= 0 && write(fd, "3\n", 2) == 2;
    if (fd >= 0) close(fd);
  }
  MPI_Comm_free(&node);
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

static void remove_files(const struct bench_state *s) {
  if (s->p.fpp || s->rank == 0) s->be->remove(s->path_w);
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Reads back (untimed unless t is given) and counts bad bytes everywhere. */
static int64_t read_and_check(struct bench_state *s, struct bench_times *t, int check,
                              char **hints_json) {
  struct bench_access a = make_access(s, BENCH_READ);
  struct bench_times scratch;
  memset(s->rbuf, 0xA5, (size_t)s->lr.bytes); /* no stale data can pass */
  bench_access_run(&a, t ? t : &scratch, hints_json);
  if (!check) return 0;
  int64_t first = -1, bad = bench_access_check(&a, &first), all = 0;
  if (bad)
    fprintf(stderr, "aggio-bench: rank %d: %lld bad bytes in %s, first at offset %lld\n",
            s->rank, (long long)bad, a.path, (long long)first);
  MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  return all;
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

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct bench_state s = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &s.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s.nranks);
  bench_parse_args(argc, argv, &s.p);
  check_params(&s);
  setup(&s);
  bench_clock_sync(MPI_COMM_WORLD);

  struct bench_sysinfo sys;
  bench_sysinfo_get(s.p.path, &sys);
  struct bench_result res = {.p = &s.p, .sys = &sys, .nranks = s.nranks};
  int64_t bw = s.lw.bytes, br = s.lr.bytes;
  MPI_Allreduce(&bw, &res.bytes_write, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&br, &res.bytes_read, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  if (!s.p.do_write) res.bytes_write = 0;
  if (!s.p.do_read) res.bytes_read = 0;
  res.file_bytes = s.lw.file_bytes;
  res.w = calloc((size_t)s.p.reps, sizeof *res.w);
  res.r = calloc((size_t)s.p.reps, sizeof *res.r);
  res.drop_caches_ok = 0;
  now_iso(res.start_time, sizeof res.start_time);

  struct bench_access wa = make_access(&s, BENCH_WRITE);
  if (s.p.do_write) bench_access_fill(&wa);
  int header = 0;
  for (int i = 0; i < s.p.reps; i++) {
    if (s.p.do_write) {
      remove_files(&s);
      bench_access_run(&wa, &res.w[res.nrep_w], &res.hints_json);
      if (!header++ && s.rank == 0) {
        describe_strategy(&s, &sys, res.hints_json, res.strategy, sizeof res.strategy);
        bench_report_header(&res);
      }
      if (s.rank == 0) bench_report_row("write", i, &res.w[res.nrep_w], res.bytes_write, s.p.fsync);
      res.nrep_w++;
      if (s.p.check_write) res.write_errors += read_and_check(&s, NULL, 1, NULL);
    }
    if (s.p.do_read) {
      if (s.p.drop_caches) res.drop_caches_ok = drop_caches();
      read_and_check(&s, &res.r[res.nrep_r], 0, &res.hints_json);
      if (!header++ && s.rank == 0) {
        describe_strategy(&s, &sys, res.hints_json, res.strategy, sizeof res.strategy);
        bench_report_header(&res);
      }
      if (s.p.check_read) {
        int64_t first = -1, bad = bench_access_check(&(struct bench_access){
            .layout = &s.lr, .buf = s.rbuf, .fpp = s.p.fpp,
            .seed = bench_file_seed(s.p.seed, s.p.fpp, s.read_as)}, &first), all = 0;
        if (bad)
          fprintf(stderr, "aggio-bench: rank %d: %lld bad bytes read from %s, first at offset %lld\n",
                  s.rank, (long long)bad, s.path_r, (long long)first);
        MPI_Allreduce(&bad, &all, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        res.read_errors += all;
      }
      if (s.rank == 0) bench_report_row("read", i, &res.r[res.nrep_r], res.bytes_read, 0);
      res.nrep_r++;
    }
  }
  if (s.rank == 0) {
    bench_report_summary(&res);
    if (s.p.json_path[0]) write_json(&res, s.p.json_path);
  }
  if (s.p.do_write && !s.p.keep) remove_files(&s);

  int failed = res.write_errors || res.read_errors;
  free(res.hints_json);
  free(res.w);
  free(res.r);
  free(s.wbuf);
  free(s.rbuf);
  bench_layout_free(&s.lw);
  bench_layout_free(&s.lr);
  if (s.tw != MPI_DATATYPE_NULL && s.tw != MPI_BYTE) MPI_Type_free(&s.tw);
  if (s.tr != MPI_DATATYPE_NULL && s.tr != MPI_BYTE) MPI_Type_free(&s.tr);
  MPI_Info_free(&s.info);
  MPI_Finalize();
  return failed ? 1 : 0;
}
