/*
 * report.c - what aggio-bench prints: a table per run on stdout (one row per
 * repetition, then min/median/max) and one JSON record per run (JSONL).
 * Bandwidths are MiB/s over the whole open..close span: "durable" includes
 * the fsync (data handed to the device) and is the headline; "buffered"
 * leaves the fsync out.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "bench.h"

static const char *phase_name[PH_COUNT] = {"open", "xfer", "sync", "close"};

double bench_bw_mib(int64_t bytes, double seconds) {
  return seconds > 0 ? (double)bytes / (double)BENCH_MIB / seconds : 0.0;
}

static double durable_time(const struct bench_times *t) {
  return t->phase[PH_OPEN] + t->phase[PH_XFER] + t->phase[PH_SYNC] + t->phase[PH_CLOSE];
}

static double buffered_time(const struct bench_times *t) {
  return t->phase[PH_OPEN] + t->phase[PH_XFER] + t->phase[PH_CLOSE];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* min, median, max of the bandwidths of n repetitions. */
static void stats3(const struct bench_times *t, int n, int64_t bytes, int durable,
                   double out[3]) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int i = 0; i < n; i++)
    v[i] = bench_bw_mib(bytes, durable ? durable_time(&t[i]) : buffered_time(&t[i]));
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  out[0] = v[0];
  out[1] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  out[2] = v[n - 1];
  free(v);
}

static void human(int64_t bytes, char *out, size_t len) {
  if (bytes >= BENCH_GIB) snprintf(out, len, "%.2f GiB", (double)bytes / BENCH_GIB);
  else if (bytes >= BENCH_MIB) snprintf(out, len, "%.2f MiB", (double)bytes / BENCH_MIB);
  else snprintf(out, len, "%.2f KiB", (double)bytes / BENCH_KIB);
}

void bench_report_header(const struct bench_result *r) {
  const struct bench_params *p = r->p;
  char w[32], f[32];
  human(r->bytes_write ? r->bytes_write : r->bytes_read, w, sizeof w);
  human(r->file_bytes, f, sizeof f);
  printf("aggio-bench: pattern=%s api=%s%s%s strategy=%s (requested %s) ranks=%d\n",
         p->pattern, p->api, p->fpp ? " file-per-process" : "",
         p->collective ? " collective" : "", r->strategy, r->strategy_requested, r->nranks);
  printf("  mpi: %s | fs: %s (%s) | host: %s\n", r->sys->mpi_library, r->sys->fs_type,
         p->path, r->sys->host);
  printf("  bytes per repetition: %s (%s per %s) | fsync: %s | O_DIRECT: %s | reps: %d\n", w,
         f, p->fpp ? "file set" : "file", p->fsync ? "yes" : "no", p->odirect ? "yes" : "no",
         p->reps);
  printf("  calls per rank: %lld write, %lld read (%s)\n", (long long)r->calls_write,
         (long long)r->calls_read, r->call_mode);
  printf("%-6s %4s %9s %9s %9s %9s %9s %13s %13s\n", "access", "rep", "open(s)", "xfer(s)",
         "sync(s)", "close(s)", "total(s)", "durable MiB/s", "buffered MiB/s");
  fflush(stdout);
}

void bench_report_row(const char *access, int rep, const struct bench_times *t,
                      int64_t bytes, int durable) {
  char d[32] = "-";
  if (durable) snprintf(d, sizeof d, "%.2f", bench_bw_mib(bytes, durable_time(t)));
  printf("%-6s %4d %9.4f %9.4f %9.4f %9.4f %9.4f %13s %13.2f\n", access, rep,
         t->phase[PH_OPEN], t->phase[PH_XFER], t->phase[PH_SYNC], t->phase[PH_CLOSE],
         t->total, d, bench_bw_mib(bytes, buffered_time(t)));
  fflush(stdout);
}

static void summary_line(const char *access, const char *metric,
                         const struct bench_times *t, int n, int64_t bytes, int durable) {
  double s[3];
  stats3(t, n, bytes, durable, s);
  printf("%-6s %-9s %12.2f %12.2f %12.2f\n", access, metric, s[0], s[1], s[2]);
}

/* min and max of n values. */
static void min_max(const int64_t *v, int n, int64_t *lo, int64_t *hi) {
  *lo = *hi = n ? v[0] : 0;
  for (int i = 1; i < n; i++) {
    if (v[i] < *lo) *lo = v[i];
    if (v[i] > *hi) *hi = v[i];
  }
}

static void memory_line(const struct bench_result *r) {
  const struct bench_memory *m = &r->mem;
  int64_t lo, hi, base_lo, base_hi, data_lo, data_hi;
  if (!m->peak_kib) return;
  min_max(m->peak_kib, r->nranks, &lo, &hi);
  min_max(m->baseline_kib, r->nranks, &base_lo, &base_hi);
  min_max(m->data_bytes, r->nranks, &data_lo, &data_hi);
  printf("peak RSS per rank (MiB): min %.1f, max %.1f (after set-up: max %.1f; data buffers: "
         "max %.1f)\n", lo / 1024.0, hi / 1024.0, base_hi / 1024.0, (double)data_hi / BENCH_MIB);
}

void bench_report_summary(const struct bench_result *r) {
  printf("summary (MiB/s)   %12s %12s %12s\n", "min", "median", "max");
  if (r->nrep_w) {
    if (r->p->fsync) summary_line("write", "durable", r->w, r->nrep_w, r->bytes_write, 1);
    summary_line("write", "buffered", r->w, r->nrep_w, r->bytes_write, 0);
  }
  if (r->nrep_r) summary_line("read", "bw", r->r, r->nrep_r, r->bytes_read, 0);
  memory_line(r);
  if (r->p->check_write || r->p->check_read)
    printf("verification: %s (write: %lld bad bytes, read: %lld bad bytes)\n",
           r->write_errors || r->read_errors ? "FAILED" : "passed",
           (long long)r->write_errors, (long long)r->read_errors);
  fflush(stdout);
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_str(FILE *out, const char *s) {
  fputc('"', out);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(out, "\\%c", c);
    else if (c == '\n') fputs("\\n", out);
    else if (c == '\t') fputs("\\t", out);
    else if (c < 0x20) fprintf(out, "\\u%04x", c);
    else fputc(c, out);
  }
  fputc('"', out);
}

void bench_json_str(FILE *out, const char *s) { json_str(out, s); }

static const char *jbool(int v) { return v ? "true" : "false"; }

static void json_stats(FILE *out, const char *key, const struct bench_times *t, int n,
                       int64_t bytes, int durable) {
  double s[3];
  stats3(t, n, bytes, durable, s);
  fprintf(out, "\"%s\":{\"min\":%.3f,\"median\":%.3f,\"max\":%.3f}", key, s[0], s[1], s[2]);
}

static void json_access(FILE *out, const char *access, const struct bench_times *t, int n,
                        int64_t bytes, int fsync, const char *strategy) {
  int w = !strcmp(access, "write");
  fprintf(out, "\"%s\":{\"bytes\":%lld,\"strategy\":", access, (long long)bytes);
  json_str(out, strategy);
  fputs(",\"reps\":[", out);
  for (int i = 0; i < n; i++) {
    fprintf(out, "%s{", i ? "," : "");
    for (int ph = 0; ph < PH_COUNT; ph++)
      fprintf(out, "\"%s\":%.6f,", ph == PH_XFER ? access : phase_name[ph], t[i].phase[ph]);
    fprintf(out, "\"total\":%.6f", t[i].total);
    if (w && fsync)
      fprintf(out, ",\"bw_durable_MiBps\":%.3f", bench_bw_mib(bytes, durable_time(&t[i])));
    fprintf(out, ",\"%s\":%.3f}", w ? "bw_buffered_MiBps" : "bw_MiBps",
            bench_bw_mib(bytes, buffered_time(&t[i])));
  }
  fputs("],", out);
  if (w) {
    if (fsync) json_stats(out, "bw_durable_MiBps", t, n, bytes, 1);
    else fputs("\"bw_durable_MiBps\":null", out);
    fputc(',', out);
    json_stats(out, "bw_buffered_MiBps", t, n, bytes, 0);
  } else {
    json_stats(out, "bw_MiBps", t, n, bytes, 0);
  }
  fputc('}', out);
}

static void json_mca(FILE *out, const char *mca) {
  fputc('{', out);
  char buf[512];
  snprintf(buf, sizeof buf, "%s", mca);
  int first = 1;
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) continue;
    *eq = '\0';
    fputs(first ? "" : ",", out);
    json_str(out, kv);
    fputc(':', out);
    json_str(out, eq + 1);
    first = 0;
  }
  fputc('}', out);
}

static void json_params(FILE *out, const struct bench_params *p) {
  fprintf(out, "\"params\":{\"pattern\":");
  json_str(out, p->pattern);
  fprintf(out, ",\"api\":");
  json_str(out, p->api);
  fprintf(out,
          ",\"block\":%lld,\"transfer\":%lld,\"segments\":%lld,\"particles\":%lld,"
          "\"subarray\":[%d,%d,%d],\"grid\":[%d,%d,%d],\"call_size\":%lld,"
          "\"file_per_process\":%s,\"collective\":%s,\"file_view\":%s,\"fsync\":%s,\"odirect\":%s,"
          "\"write\":%s,\"read\":%s,\"check_write\":%s,\"check_read\":%s,\"keep\":%s,"
          "\"reps\":%d,\"reorder\":%s,\"shift\":%d,\"seed\":%llu,\"drop_caches\":%s,\"path\":",
          (long long)p->block, (long long)p->transfer, (long long)p->segments,
          (long long)p->particles, p->sub[0], p->sub[1], p->sub[2], p->grid[0], p->grid[1],
          p->grid[2], (long long)p->call_size, jbool(p->fpp), jbool(p->collective), jbool(p->file_view),
          jbool(p->fsync), jbool(p->odirect), jbool(p->do_write), jbool(p->do_read),
          jbool(p->check_write), jbool(p->check_read), jbool(p->keep), p->reps,
          jbool(p->reorder), p->shift, (unsigned long long)p->seed, jbool(p->drop_caches));
  json_str(out, p->path);
  fputc('}', out);
}

static void json_int_array(FILE *out, const int64_t *v, int n) {
  fputc('[', out);
  for (int i = 0; i < n; i++) fprintf(out, "%s%lld", i ? "," : "", (long long)v[i]);
  fputc(']', out);
}

/* Peak resident memory per rank (getrusage ru_maxrss, KiB), its extremes,
 * the same after set-up, and each rank's data buffers in bytes. */
static void json_memory(FILE *out, const struct bench_result *r) {
  const struct bench_memory *m = &r->mem;
  int64_t lo, hi;
  if (!m->peak_kib) {
    fputs("null", out);
    return;
  }
  min_max(m->peak_kib, r->nranks, &lo, &hi);
  fprintf(out, "{\"peak_kib_min\":%lld,\"peak_kib_max\":%lld,\"peak_kib\":", (long long)lo,
          (long long)hi);
  json_int_array(out, m->peak_kib, r->nranks);
  fputs(",\"baseline_kib\":", out);
  json_int_array(out, m->baseline_kib, r->nranks);
  fputs(",\"data_bytes\":", out);
  json_int_array(out, m->data_bytes, r->nranks);
  fputc('}', out);
}

int bench_report_json(const struct bench_result *r, FILE *out) {
  const struct bench_params *p = r->p;
  fputs("{\"tool\":\"aggio-bench\",\"schema\":2,\"label\":", out);
  json_str(out, p->label);
  fputs(",\"start_time\":", out);
  json_str(out, r->start_time);
  fputs(",\"host\":", out);
  json_str(out, r->sys->host);
  fputs(",\"api\":", out);
  json_str(out, p->api);
  fputs(",\"pattern\":", out);
  json_str(out, p->pattern);
  fputs(",\"strategy\":", out);
  json_str(out, r->strategy);
  fputs(",\"strategy_requested\":", out);
  json_str(out, r->strategy_requested);
  fprintf(out, ",\"calls\":{\"write\":%lld,\"read\":%lld,\"mode\":", (long long)r->calls_write,
          (long long)r->calls_read);
  json_str(out, r->call_mode);
  fputs("},", out);
  json_params(out, p);
  fprintf(out, ",\"hints\":%s,\"mpi\":{\"library\":", r->hints_json ? r->hints_json : "{}");
  json_str(out, r->sys->mpi_library);
  fputs(",\"flavor\":", out);
  json_str(out, r->sys->mpi_flavor);
  fprintf(out, ",\"standard\":\"%d.%d\",\"mca\":", r->sys->mpi_version[0],
          r->sys->mpi_version[1]);
  json_mca(out, r->sys->mca);
  fprintf(out, "},\"nranks\":%d,\"fs\":{\"type\":", r->nranks);
  json_str(out, r->sys->fs_type);
  fputs(",\"path\":", out);
  json_str(out, p->path);
  fprintf(out, "},\"bytes\":{\"write\":%lld,\"read\":%lld,\"file\":%lld},",
          (long long)r->bytes_write, (long long)r->bytes_read, (long long)r->file_bytes);
  if (r->nrep_w)
    json_access(out, "write", r->w, r->nrep_w, r->bytes_write, p->fsync, r->strategy_w);
  else fputs("\"write\":null", out);
  fputc(',', out);
  if (r->nrep_r) json_access(out, "read", r->r, r->nrep_r, r->bytes_read, 0, r->strategy_r);
  else fputs("\"read\":null", out);
  fputs(",\"memory\":", out);
  json_memory(out, r);
  fprintf(out,
          ",\"verify\":{\"write_checked\":%s,\"read_checked\":%s,\"write_errors\":%lld,"
          "\"read_errors\":%lld},\"drop_caches_ok\":%s,\"ok\":%s}\n",
          jbool(p->check_write), jbool(p->check_read), (long long)r->write_errors,
          (long long)r->read_errors, jbool(r->drop_caches_ok),
          jbool(!r->write_errors && !r->read_errors));
  return ferror(out) ? -1 : 0;
}

char *bench_info_json(MPI_Info info) {
  size_t cap = 4096, len = 0;
  char *s = malloc(cap);
  int n = 0;
  if (!s) return NULL;
  s[len++] = '{';
  if (info != MPI_INFO_NULL) MPI_Info_get_nkeys(info, &n);
  for (int i = 0; i < n; i++) {
    char key[MPI_MAX_INFO_KEY + 1], value[1024];
    int vlen = 0, flag = 0;
    MPI_Info_get_nthkey(info, i, key);
    MPI_Info_get_valuelen(info, key, &vlen, &flag);
    if (!flag || vlen >= (int)sizeof value) continue;
    MPI_Info_get(info, key, sizeof value - 1, value, &flag);
    /* Worst case every character escaped as \u00XX. */
    size_t need = len + 6 * (strlen(key) + strlen(value)) + 16;
    if (need > cap) {
      cap = need * 2;
      char *t = realloc(s, cap);
      if (!t) break;
      s = t;
    }
    FILE *mem = fmemopen(s + len, cap - len, "w");
    if (!mem) break;
    if (len > 1) fputc(',', mem);
    json_str(mem, key);
    fputc(':', mem);
    json_str(mem, value);
    len += (size_t)ftell(mem);
    fclose(mem);
  }
  s[len++] = '}';
  s[len] = '\0';
  return s;
}
