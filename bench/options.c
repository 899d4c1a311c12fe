/*
 * options.c - aggio-bench's command line: IOR's option letters where the
 * meaning is the same (-a -b -t -s -F -c -V -e -w -r -W -R -k -o -i -C -Q -U
 * -G -B -v), long options for what IOR lacks, and the hints from a hints file
 * (-U), from IOR_HINT__MPI__<key>=<value> variables and from --hint.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bench.h"

extern char **environ;

static void usage(FILE *out) {
  fprintf(out,
"usage: aggio-bench [options]\n"
"  -a API       AGGIO, MPIIO or POSIX (default POSIX)\n"
"  --pattern P  access pattern (default segmented):\n");
  bench_pattern_list(out);
  fprintf(out,
"  -b SIZE      bytes per rank per segment (k/m/g suffixes)\n"
"  -t SIZE      transfer size (segmented) / record size (strided)\n"
"  -s N         segments: the layout repeated N times in the file\n"
"  --particles N     HACC particles per rank (default b/38)\n"
"  --subarray X,Y,Z  subarray local block in 8-byte elements (default cube of b)\n"
"  --grid X,Y,Z      subarray process grid (default MPI_Dims_create)\n"
"  --call-size SIZE  cap on bytes per rank per I/O call (default 64m)\n"
"  -F           file per process        -c  collective calls (MPIIO, AGGIO)\n"
"  -V           with -c: through a file view even where every call is one\n"
"               contiguous piece (IOR's useFileView; default: explicit offsets)\n"
"  -e           fsync before close      -B, --posix.odirect  O_DIRECT\n"
"  -w / -r      write / read (default both)\n"
"  -W / -R      verify every byte after write / read (non-zero exit on error)\n"
"  -k           keep the file           -o PATH  file (default ./testFile)\n"
"  --overwrite  write over the file as it is (not removed first): a rewrite,\n"
"               or the write of a read-modify-write after a -k run\n"
"  -i N         repetitions             -G SEED  data seed\n"
"  -C           read what rank+Q wrote  -Q N     shift for -C (default 1)\n"
"  -U FILE      hints file ('key value', 'key=value' or IOR_HINT__MPI__key=value)\n"
"  --hint K=V   one hint (repeatable); env IOR_HINT__MPI__K=V too;\n"
"               AGGIO also reads AGGIO_HINTS, ROMIO reads ROMIO_HINTS\n"
"  --json PATH  append one JSON record per run ('-': stdout)\n"
"  --label TEXT label stored in the JSON record\n"
"  --drop-caches  drop the page cache before reads (needs root)\n"
"  --thread-level L  MPI_Init_thread with single|funneled|serialized|multiple\n"
"               (default: MPI_Init); the level provided is reported\n"
"  -v           verbose                 -h  this help\n"
"overlap mode (write only; -a AGGIO or MPIIO, -c; iteration i = segment i):\n"
"  --compute S|auto  each iteration computes S seconds (a CPU loop calibrated\n"
"               on each rank; auto: as long as one iteration's blocking write\n"
"               in a warm-up), then writes its segment: compute only, blocking\n"
"               *_write_at_all, and non-blocking *_iwrite_at_all completed at\n"
"               the next iteration (two buffers); -e: a sync ends each run,\n"
"               inside the timing.  E.g. --pattern checkpoint -b 16m -s 8 -e\n"
"small-requests mode (write only; -a AGGIO or MPIIO, -c):\n"
"  --small-requests  each extent of a segment is its own collective call: K\n"
"               blocking *_write_at_all in turn against K *_iwrite_at_all and\n"
"               one waitall.  E.g. --pattern strided -t 4k -b 256k -s 200 (K=64)\n");
}

static int64_t parse_size(const char *s, const char *what) {
  char *end;
  double v = strtod(s, &end);
  int64_t mult = 1;
  switch (tolower((unsigned char)*end)) {
  case 'k': mult = BENCH_KIB; end++; break;
  case 'm': mult = BENCH_MIB; end++; break;
  case 'g': mult = BENCH_GIB; end++; break;
  case 't': mult = BENCH_GIB * 1024; end++; break;
  }
  if (*end == 'i' || *end == 'b' || *end == 'B') end++;
  if (*end || v < 0 || end == s) {
    fprintf(stderr, "aggio-bench: bad size for %s: '%s'\n", what, s);
    exit(2);
  }
  return (int64_t)(v * (double)mult);
}

static void parse_triple(const char *s, int out[3], const char *what) {
  if (sscanf(s, "%d,%d,%d", &out[0], &out[1], &out[2]) != 3) {
    fprintf(stderr, "aggio-bench: %s wants X,Y,Z, got '%s'\n", what, s);
    exit(2);
  }
}

static void add_hint(struct bench_params *p, const char *key, const char *value) {
  for (int i = 0; i < p->nhints; i++) /* later sources override earlier ones */
    if (!strcmp(p->hints[i].key, key)) {
      snprintf(p->hints[i].value, sizeof p->hints[i].value, "%s", value);
      return;
    }
  if (p->nhints == BENCH_MAX_HINTS) {
    fprintf(stderr, "aggio-bench: too many hints\n");
    exit(2);
  }
  snprintf(p->hints[p->nhints].key, sizeof p->hints[0].key, "%s", key);
  snprintf(p->hints[p->nhints].value, sizeof p->hints[0].value, "%s", value);
  p->nhints++;
}

/* "key=value", "key value" or "IOR_HINT__MPI__key=value". */
static int add_hint_text(struct bench_params *p, char *line) {
  while (isspace((unsigned char)*line)) line++;
  line[strcspn(line, "#\r\n")] = '\0';
  if (!*line) return 0;
  if (!strncmp(line, "IOR_HINT__", 10)) {
    if (strncmp(line, "IOR_HINT__MPI__", 15)) return 0; /* GPFS hints: not ours */
    line += 15;
  }
  size_t k = strcspn(line, "= \t");
  if (!line[k]) return -1;
  char *value = line + k + 1;
  line[k] = '\0';
  while (isspace((unsigned char)*value) || *value == '=') value++;
  size_t n = strlen(value);
  while (n && isspace((unsigned char)value[n - 1])) value[--n] = '\0';
  add_hint(p, line, value);
  return 0;
}

static void read_hints_file(struct bench_params *p, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) {
    perror(path);
    exit(2);
  }
  char line[1024];
  for (int no = 1; fgets(line, sizeof line, f); no++)
    if (add_hint_text(p, line)) {
      fprintf(stderr, "aggio-bench: %s:%d: expected 'key value'\n", path, no);
      exit(2);
    }
  fclose(f);
}

static void env_hints(struct bench_params *p) {
  for (char **e = environ; *e; e++)
    if (!strncmp(*e, "IOR_HINT__MPI__", 15)) {
      char buf[512];
      snprintf(buf, sizeof buf, "%s", *e);
      add_hint_text(p, buf);
    }
}

enum {
  OPT_PATTERN = 256, OPT_PARTICLES, OPT_SUBARRAY, OPT_GRID, OPT_CALL_SIZE,
  OPT_HINT, OPT_JSON, OPT_LABEL, OPT_DROP, OPT_ODIRECT, OPT_THREAD, OPT_COMPUTE,
  OPT_SMALL, OPT_OVERWRITE
};

static const struct option long_opts[] = {
    {"pattern", required_argument, 0, OPT_PATTERN},
    {"particles", required_argument, 0, OPT_PARTICLES},
    {"subarray", required_argument, 0, OPT_SUBARRAY},
    {"grid", required_argument, 0, OPT_GRID},
    {"call-size", required_argument, 0, OPT_CALL_SIZE},
    {"hint", required_argument, 0, OPT_HINT},
    {"json", required_argument, 0, OPT_JSON},
    {"label", required_argument, 0, OPT_LABEL},
    {"drop-caches", no_argument, 0, OPT_DROP},
    {"posix.odirect", no_argument, 0, OPT_ODIRECT},
    {"odirect", no_argument, 0, OPT_ODIRECT},
    {"thread-level", required_argument, 0, OPT_THREAD},
    {"compute", required_argument, 0, OPT_COMPUTE},
    {"small-requests", no_argument, 0, OPT_SMALL},
    {"overwrite", no_argument, 0, OPT_OVERWRITE},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};

static const struct {
  const char *name;
  int level;
} thread_levels[] = {{"single", MPI_THREAD_SINGLE},
                     {"funneled", MPI_THREAD_FUNNELED},
                     {"serialized", MPI_THREAD_SERIALIZED},
                     {"multiple", MPI_THREAD_MULTIPLE}};

int bench_thread_level(const char *name) {
  for (size_t i = 0; i < sizeof thread_levels / sizeof thread_levels[0]; i++)
    if (!strcasecmp(name, thread_levels[i].name)) return thread_levels[i].level;
  return -1;
}

const char *bench_thread_level_name(int level) {
  for (size_t i = 0; i < sizeof thread_levels / sizeof thread_levels[0]; i++)
    if (level == thread_levels[i].level) return thread_levels[i].name;
  return "unknown";
}

/* Parses argv into *p; exits on a usage error (every rank parses the same
 * command line, so every rank exits). */
void bench_parse_args(int argc, char **argv, struct bench_params *p) {
  memset(p, 0, sizeof *p);
  snprintf(p->api, sizeof p->api, "POSIX");
  snprintf(p->pattern, sizeof p->pattern, "segmented");
  snprintf(p->path, sizeof p->path, "testFile");
  p->segments = 1;
  p->reps = 1;
  p->shift = 1;
  p->call_size = 64 * BENCH_MIB;
  p->seed = 0x5eed;
  p->compute = -1; /* not the overlap mode */
  char *cli_hints[BENCH_MAX_HINTS];
  int ncli = 0, c;
  while ((c = getopt_long(argc, argv, "a:b:t:s:FcVewrWRko:i:CQ:U:G:Bvh", long_opts, NULL)) != -1) {
    switch (c) {
    case 'a': snprintf(p->api, sizeof p->api, "%s", optarg); break;
    case 'b': p->block = parse_size(optarg, "-b"); break;
    case 't': p->transfer = parse_size(optarg, "-t"); break;
    case 's': p->segments = atoll(optarg); break;
    case 'F': p->fpp = 1; break;
    case 'c': p->collective = 1; break;
    case 'V': p->file_view = 1; break;
    case 'e': p->fsync = 1; break;
    case 'w': p->do_write = 1; break;
    case 'r': p->do_read = 1; break;
    case 'W': p->check_write = 1; break;
    case 'R': p->check_read = 1; break;
    case 'k': p->keep = 1; break;
    case 'o': snprintf(p->path, sizeof p->path, "%s", optarg); break;
    case 'i': p->reps = atoi(optarg); break;
    case 'C': p->reorder = 1; break;
    case 'Q': p->shift = atoi(optarg); break;
    case 'U': snprintf(p->hints_file, sizeof p->hints_file, "%s", optarg); break;
    case 'G': p->seed = strtoull(optarg, NULL, 0); break;
    case 'B': case OPT_ODIRECT: p->odirect = 1; break;
    case 'v': p->verbose++; break;
    case OPT_PATTERN: snprintf(p->pattern, sizeof p->pattern, "%s", optarg); break;
    case OPT_PARTICLES: p->particles = atoll(optarg); break;
    case OPT_SUBARRAY: parse_triple(optarg, p->sub, "--subarray"); break;
    case OPT_GRID: parse_triple(optarg, p->grid, "--grid"); break;
    case OPT_CALL_SIZE: p->call_size = parse_size(optarg, "--call-size"); break;
    case OPT_HINT:
      if (ncli < BENCH_MAX_HINTS) cli_hints[ncli++] = optarg;
      break;
    case OPT_JSON: snprintf(p->json_path, sizeof p->json_path, "%s", optarg); break;
    case OPT_LABEL: snprintf(p->label, sizeof p->label, "%s", optarg); break;
    case OPT_DROP: p->drop_caches = 1; break;
    case OPT_OVERWRITE: p->overwrite = 1; break;
    case OPT_THREAD:
      snprintf(p->thread_level, sizeof p->thread_level, "%s", optarg);
      if (bench_thread_level(optarg) < 0) {
        fprintf(stderr, "aggio-bench: --thread-level wants single, funneled, serialized "
                        "or multiple, got '%s'\n", optarg);
        exit(2);
      }
      break;
    case OPT_COMPUTE:
      if (!strcmp(optarg, "auto")) {
        p->compute_auto = 1;
        break;
      }
      char *end;
      p->compute = strtod(optarg, &end);
      if (*end || end == optarg || p->compute < 0) {
        fprintf(stderr, "aggio-bench: --compute wants seconds or 'auto', got '%s'\n", optarg);
        exit(2);
      }
      break;
    case OPT_SMALL: p->small_requests = 1; break;
    case 'h': usage(stdout); exit(0);
    default: usage(stderr); exit(2);
    }
  }
  if (optind < argc) {
    fprintf(stderr, "aggio-bench: unexpected argument '%s'\n", argv[optind]);
    exit(2);
  }
  if (!p->do_write && !p->do_read) p->do_write = p->do_read = 1; /* as IOR */
  if ((p->compute >= 0 || p->compute_auto) && p->small_requests) {
    fprintf(stderr, "aggio-bench: --compute and --small-requests are separate modes\n");
    exit(2);
  }
  if (p->reps < 1 || p->segments < 1 || p->call_size < 1 || p->call_size > BENCH_GIB) {
    fprintf(stderr, "aggio-bench: -i, -s must be >= 1 and --call-size in [1, 1g]\n");
    exit(2);
  }
  /* Hint sources, lowest precedence first. */
  if (p->hints_file[0]) read_hints_file(p, p->hints_file);
  env_hints(p);
  for (int i = 0; i < ncli; i++) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s", cli_hints[i]);
    if (add_hint_text(p, buf)) {
      fprintf(stderr, "aggio-bench: --hint wants KEY=VALUE, got '%s'\n", cli_hints[i]);
      exit(2);
    }
  }
}
