/*
 * gen_program.c - runs a random legal MPI-IO program (issue 22, "Trust"):
 * every rank builds the same program from --seed (gen_build.c), checks
 * that it is legal (gen_check.c), runs its own part (gen_exec.c) and
 * writes its outcome log; at the end rank 0 compares every file with the
 * content the program must leave.  Built twice: gen_mpiio (plain
 * MPI_File_*: the MPI library's own MPI-IO, or aggio's under aggio-run)
 * and gen_aggio (libaggio's API).  genrun.py runs and compares them.
 *
 *   mpiexec -n 4 gen_mpiio --seed 17 [--ops 30] [--files 3] [--dir DIR]
 *           [--log PREFIX] [--threads single|funneled|multiple|seed]
 *           [--quirks none|LIST] (LIST: names from GEN_QUIRKS, gen_model.h)
 *   gen_mpiio --dump --np 4 --seed 17     prints the program, no MPI
 *
 * Exit status: 0 every outcome right; 1 a wrong outcome (the log and
 * stderr say which); 2 a usage or setup error; 3 the generated program
 * broke a legality rule (a generator bug: nothing was run).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen_exec.h"
#include "gen_model.h"
#ifndef GEN_AGGIO
#include "mpiio_common.h" /* mpiio_under_aggio() */
#endif
#include "subfile_read.h" /* files aggio stored as subfiles (aggio_subfiles) */

struct options {
  uint64_t seed;
  int steps, files, dump, np;
  unsigned quirks;
  const char *dir, *log, *threads;
  long long who; /* --dump: tell who wrote this byte last (-1: none asked) */
};

static int usage(const char *why) {
  fprintf(stderr,
          "gen: %s\nusage: gen_mpiio|gen_aggio --seed S [--ops N] [--files F] "
          "[--dir DIR] [--log PREFIX] [--threads single|funneled|multiple|seed] "
          "[--quirks none|LIST (gen_model.h)] "
          "[--dump --np N [--who BYTE]]\n",
          why);
  return 2;
}

static int parse(int argc, char **argv, struct options *o) {
  *o = (struct options){
      .steps = 30, .files = 3, .np = 1, .dir = ".", .threads = "seed", .who = -1};
  int have_seed = 0;
  for (int i = 1; i < argc; i++) {
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(k, "--dump")) {
      o->dump = 1;
      continue;
    }
    if (!v)
      return usage("an option without its value");
    i++;
    if (!strcmp(k, "--seed"))
      o->seed = strtoull(v, NULL, 0), have_seed = 1;
    else if (!strcmp(k, "--ops"))
      o->steps = atoi(v);
    else if (!strcmp(k, "--files"))
      o->files = atoi(v);
    else if (!strcmp(k, "--np"))
      o->np = atoi(v);
    else if (!strcmp(k, "--who"))
      o->who = strtoll(v, NULL, 0);
    else if (!strcmp(k, "--dir"))
      o->dir = v;
    else if (!strcmp(k, "--log"))
      o->log = v;
    else if (!strcmp(k, "--threads"))
      o->threads = v;
    else if (!strcmp(k, "--quirks")) {
      if (gen_quirks_parse(v, &o->quirks))
        return usage("--quirks: an unknown name");
    } else
      return usage(k);
  }
  if (!have_seed)
    return usage("--seed is required");
  if (o->steps < 0 || o->files < 1 || o->files > GEN_MAX_FILES)
    return usage("--ops must be >= 0 and --files 1..3");
  return 0;
}

/* The thread level to ask for: named, or drawn from the seed. */
static int thread_level(const struct options *o) {
  static const int levels[] = {MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED,
                               MPI_THREAD_MULTIPLE};
  if (!strcmp(o->threads, "single"))
    return MPI_THREAD_SINGLE;
  if (!strcmp(o->threads, "funneled"))
    return MPI_THREAD_FUNNELED;
  if (!strcmp(o->threads, "multiple"))
    return MPI_THREAD_MULTIPLE;
  return levels[gen_byte(o->seed, -1, -1, 0) % 3];
}

static const char *level_name(int level) {
  return level == MPI_THREAD_SINGLE       ? "single"
         : level == MPI_THREAD_FUNNELED   ? "funneled"
         : level == MPI_THREAD_SERIALIZED ? "serialized"
                                          : "multiple";
}

static struct gen_program *build(const struct options *o, int np, int me) {
  struct gen_options go = {.seed = o->seed,
                           .nprocs = np,
                           .steps = o->steps,
                           .max_files = o->files,
                           .me = me,
                           .quirks = o->quirks};
  return gen_build(&go);
}

/* --dump: the program of every rank, as the actions' descriptions. */
static int dump(const struct options *o) {
  struct gen_program *p = build(o, o->np, -1);
  char line[512], err[512];
  if (!p)
    return usage("cannot build that program (--np 1..16)");
  for (int r = 0; r < o->np; r++) {
    printf("rank %d\n", r);
    for (int i = 0; i < p->ranks[r].n; i++) {
      gen_describe(p, r, &p->ranks[r].acts[i], line, sizeof line);
      printf("  %4d %s\n", i, line);
    }
  }
  int rc = gen_check(p, err, sizeof err);
  printf("legality check: %s\n", rc ? err : "ok");
  for (int f = 0; o->who >= 0 && f < p->nfiles; f++) { /* who wrote byte o->who last */
    const struct gen_file_info *fi = &p->files[f];
    if (o->who < fi->size && fi->wop[o->who] >= 0)
      printf("f%d byte %lld: op%d of rank %d\n", f, (long long)o->who, fi->wop[o->who],
             fi->wrank[o->who]);
    else
      printf("f%d byte %lld: never written (undefined or zero)\n", f, (long long)o->who);
  }
  gen_free(p);
  return rc ? 3 : 0;
}

/* The communicators files are opened on (gen_model.h, enum gen_comm). */
static void make_comms(MPI_Comm *comm, int me, int np) {
  MPI_Comm half;
  int low = gen_comm_member(GEN_COMM_LOW, me, np);
  comm[GEN_COMM_WORLD] = MPI_COMM_WORLD;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm[GEN_COMM_DUP]);
  MPI_Comm_split(MPI_COMM_WORLD, low ? 0 : 1, me, &half);
  comm[GEN_COMM_LOW] = low ? half : MPI_COMM_NULL;
  comm[GEN_COMM_HIGH] = low ? MPI_COMM_NULL : half;
}

static void free_comms(MPI_Comm *comm) {
  for (int c = GEN_COMM_DUP; c < GEN_NCOMMS; c++)
    if (comm[c] != MPI_COMM_NULL)
      MPI_Comm_free(&comm[c]);
}

/* Writes the file's holes (bytes never written: MPI leaves them
 * undefined) to PATH.holes, "offset length" a line, for genrun.py's
 * byte-for-byte comparison of the files. */
static void write_holes(const struct gen_file_info *fi, const char *path) {
  char hpath[4200];
  snprintf(hpath, sizeof hpath, "%s.holes", path);
  FILE *out = fopen(hpath, "w");
  for (int64_t b = 0; out && b < fi->size;) {
    int64_t e = b;
    while (e < fi->size && fi->wop[e] < 0)
      e++;
    if (e > b)
      fprintf(out, "%" PRId64 " %" PRId64 "\n", b, e - b);
    b = e + 1;
  }
  if (out)
    fclose(out);
}

/* A file aggio stored as subfiles (a layout at the name, hint
 * aggio_subfiles) becomes the single file it stands for, made here from
 * the subfiles with plain POSIX and the format's own arithmetic
 * (docs/subfiling.md), so that the checks below and genrun.py's
 * comparisons read the program's logical bytes.  0, or -1 when the layout
 * or a subfile cannot be read. */
static int join_subfiles(const char *path) {
  struct subfile_read sf;
  if (subfile_read_open(&sf, path) != 0)
    return -1;
  int64_t size = sf.layout ? subfile_read_size(&sf) : 0;
  char tmp[4200], part[8300];
  unsigned char *b = size > 0 ? malloc((size_t)size) : NULL;
  int rc = !sf.layout ? 0 : size < 0 || (size > 0 && !b) ? -1 : 0;
  if (sf.layout && rc == 0 && subfile_read_pread(&sf, b, size, 0) != size)
    rc = -1;
  snprintf(tmp, sizeof tmp, "%s.joined", path);
  FILE *out = sf.layout && rc == 0 ? fopen(tmp, "wb") : NULL;
  if (sf.layout && rc == 0 && (!out || fwrite(b, 1, (size_t)size, out) != (size_t)size))
    rc = -1;
  if (out && fclose(out) != 0)
    rc = -1;
  for (int k = 0; sf.layout && k < sf.map.count; k++) {
    subfile_read_part(&sf, k, part, sizeof part);
    unlink(part);
  }
  int layout = sf.layout;
  subfile_read_close(&sf);
  free(b);
  return !layout || rc != 0 ? rc : rename(tmp, path);
}

/* After the last close: each file against the content the program must
 * leave, read with POSIX (neither MPI-IO nor aggio): its size and every
 * byte written (the holes are undefined).  One log line per file, with a
 * checksum of the written bytes; returns the number of wrong files. */
static int check_files(const struct gen_program *p, const char *dir, FILE *log) {
  int bad = 0;
  for (int f = 0; f < p->nfiles; f++) {
    const struct gen_file_info *fi = &p->files[f];
    char path[4096], what[160] = "ok";
    gen_file_path(dir, f, path, sizeof path);
    if (join_subfiles(path) != 0)
      snprintf(what, sizeof what, "BAD:subfiles-unreadable");
    write_holes(fi, path);
    FILE *in = fopen(path, "rb");
    int64_t size = 0;
    uint64_t sum = 0xcbf29ce484222325ull;
    int c;
    while (in && (c = getc(in)) != EOF) {
      int written = size < fi->size && fi->wop[size] >= 0;
      uint8_t want =
          written ? gen_byte(p->opt.seed, fi->wop[size], fi->wrank[size], size) : 0;
      if (written && (uint8_t)c != want && !strcmp(what, "ok"))
        snprintf(what, sizeof what, "BAD:byte-%" PRId64 "-got-%d-want-%u", size, c, want);
      if (written)
        sum = (sum ^ (uint8_t)c) * 0x100000001b3ull;
      size++;
    }
    if (!in)
      snprintf(what, sizeof what, "BAD:cannot-open:%s", strerror(errno));
    else if (size != fi->size && !strcmp(what, "ok"))
      snprintf(what, sizeof what, "BAD:size-%" PRId64 "-want-%" PRId64, size, fi->size);
    if (in)
      fclose(in);
    if (strcmp(what, "ok")) {
      fprintf(stderr, "gen: file %d (%s): %s\n", f, path, what);
      bad++;
    }
    fprintf(log, "final f%d size=%" PRId64 " sum=%016" PRIx64 " content=%s\n", f, size,
            sum, what);
  }
  return bad;
}

/* The files of this program, removed by rank 0 before anyone opens them. */
static void remove_files(const struct gen_program *p, const char *dir, int me) {
  for (int f = 0; me == 0 && f < p->nfiles; f++) {
    char path[4096];
    gen_file_path(dir, f, path, sizeof path);
    unlink(path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* aggio-run must have put aggio under MPI_File_* (GEN_EXPECT_AGGIO=1),
 * and the native run must not have: a run that is not what the runner
 * meant cannot pass as one that is. */
static int check_mode(int me) {
#ifdef GEN_AGGIO
  (void)me;
  return 0;
#else
  const char *want = getenv("GEN_EXPECT_AGGIO");
  if (!want)
    return 0;
  int aggio = mpiio_under_aggio(), expect = !strcmp(want, "1");
  if (aggio != expect && me == 0)
    fprintf(stderr, "gen: MPI_File_open is %s's, GEN_EXPECT_AGGIO=%s\n",
            aggio ? "aggio" : "MPI", want);
  return aggio != expect;
#endif
}

static FILE *open_log(const struct options *o, int me) {
  char path[4096];
  if (!o->log)
    return fopen("/dev/null", "w");
  snprintf(path, sizeof path, "%s.%d", o->log, me);
  return fopen(path, "w");
}

static int run(const struct options *o, int me, int np, int provided) {
  char err[512];
  struct gen_program *p = build(o, np, me);
  if (!p) {
    fprintf(stderr, "gen: cannot build the program for %d ranks (at most %d)\n", np,
            GEN_MAX_RANKS);
    return 2;
  }
  if (gen_check(p, err, sizeof err)) {
    if (me == 0)
      fprintf(stderr, "gen: seed %" PRIu64 ": the generated program is not legal: %s\n",
              o->seed, err);
    gen_free(p);
    return 3;
  }
  FILE *log = open_log(o, me);
  if (!log) {
    fprintf(stderr, "gen: rank %d: cannot write the log %s.%d\n", me, o->log, me);
    gen_free(p);
    return 2;
  }
  fprintf(
      log, "# gen seed=%" PRIu64 " np=%d ops=%d files=%d quirks=%u api=%s threads=%s\n",
      o->seed, np, o->steps, p->nfiles, o->quirks, gen_io_api(), level_name(provided));
  struct gen_exec_env env = {.p = p, .me = me, .log = log, .dir = o->dir};
  make_comms(env.comm, me, np);
  remove_files(p, o->dir, me);
  int wrong = gen_execute(&env);
  MPI_Barrier(MPI_COMM_WORLD); /* every file closed everywhere */
  if (me == 0)
    wrong += check_files(p, o->dir, log);
  fprintf(log, "end wrong=%d\n", wrong);
  fclose(log);
  free_comms(env.comm);
  gen_free(p);
  return wrong ? 1 : 0;
}

int main(int argc, char **argv) {
  struct options o;
  int rc = parse(argc, argv, &o), me, np, provided;
  if (rc)
    return rc;
  if (o.dump)
    return dump(&o);
  MPI_Init_thread(&argc, &argv, thread_level(&o), &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  rc = check_mode(me) ? 2 : run(&o, me, np, provided);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
