/*
 * test_fault_sweep.c - fault sweeps (issue 22): in each scenario every
 * allocation site and every storage call fails in turn (AGGIO_FAULTS,
 * src/base/fault.h), on the last rank and on every rank, and the library must
 * keep three promises:
 *   - agreement: a collective call returns the same code on every rank;
 *   - liveness: no call hangs (an alarm per run names scenario, op and n);
 *   - no false success: the bytes of a write that returned success are in
 *     the file after close when every later call returned success too (a
 *     deferred failure reported by a later call is write-behind's
 *     contract, docs/strategies.md "When write-behind reports errors").
 * A sweep of (scenario, op, ranks) runs the scenario once under a rule
 * that never fires, to learn from aggio__fault_calls how many calls of op
 * it makes (N, the maximum over the ranks), then fails the nth call for
 * n = 1..N (the first and last 20 and a seeded sample between them when N
 * is large; AGGIO_SWEEP_FULL=1 for all) and, once, every call ("#1+").
 * Knobs and reproducers: docs/testing.md, "Fault sweeps".
 *
 * aggio-test-ranks: 2 4
 * aggio-test-parts: open first flush merge placement close finalize stage
 */
#include <aggio.h>

#include "harness.h"
#include "internal.h"
#include "subfile_read.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* fault.c's names, in the order of enum aggio__fault_op */
static const char *const op_name[] = {"open",   "pwrite",     "pread", "fsync",
                                      "size",   "truncate",   "alloc", "preallocate",
                                      "window", "rma_window", "shm"};
_Static_assert(sizeof op_name / sizeof op_name[0] == AGGIO_FAULT_NOPS,
               "op_name lists every fault op");

enum { MAXCALLS = 64, MAXEXP = 64, TEXT = 320 };
enum { EDGE = 20, SAMPLE = 10 };      /* a large N: first and last EDGE, SAMPLE between */
enum { REC = 512, NREC = 16 };        /* a strided write: NREC records a rank */
enum { SMALL = 512 };                 /* one rank's bytes in a small write */
enum { HEAVY = 65536, LIGHT = 1024 }; /* per-call volumes of the placement scenario */

static int rank, nprocs;
static const char *exe, *part;
static char prefix[512];      /* <test dir>/sweep.<pid>: every file of the test */
static char topo_path[600];   /* the placement scenario's topology */
static unsigned alarm_s = 30; /* AGGIO_SWEEP_ALARM: seconds one run may take */
static int full;              /* AGGIO_SWEEP_FULL=1: every n */
static int target;            /* AGGIO_SWEEP_RANK: the one failing rank (the last) */
static uint64_t seed = 1;     /* AGGIO_SWEEP_SEED: the sample between the edges */
static char only[4][64];      /* AGGIO_SWEEP_ONLY=scenario:op:mode:n ("" = any) */
static int run_id;

/* ---- one run of a scenario ------------------------------------------------- */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *f) {
  (void)sb, (void)flag, (void)f;
  remove(path);
  return 0;
}

/* rm -r of path (a stage directory), when it exists. */
static void remove_tree(const char *path) {
  nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Bytes a write put in the file: `count` pieces of `len` bytes, `stride`
 * apart from `off`, each byte pat(seed, its offset).  They must be there
 * after the run when the call `call` and every later call succeeded (call
 * -1: whatever happened). */
struct expect {
  int call, file, seed, count;
  int64_t off, len, stride;
};

struct run {
  char label[160]; /* "first.two_phase alloc@3 n=7" */
  char spec[96];   /* AGGIO_FAULTS of the file under test */
  char repro[128]; /* the AGGIO_SWEEP_ONLY that repeats this run */
  char path[2][600], trace[600], stage[600]; /* stage: the run's aggio_stage_dir */
  int ncalls;
  int rc[MAXCALLS];
  const char *what[MAXCALLS];
  int nexp;
  struct expect exp[MAXEXP];
  int64_t start[AGGIO_FAULT_NOPS], mark[AGGIO_FAULT_NOPS];
  int split;  /* the ranks disagreed on the last call */
  int failed; /* checks of the run that failed (the same on every rank) */
};

static unsigned char pat(int s, int64_t off) {
  return (unsigned char)(s * 89 + off * 7 + (off >> 8) + 1);
}

static uint64_t mix(uint64_t x) { /* splitmix64's finaliser */
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

static uint64_t hash(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
  return h;
}

static void counts(int64_t c[AGGIO_FAULT_NOPS]) {
  for (int op = 0; op < AGGIO_FAULT_NOPS; op++)
    c[op] = aggio__fault_calls((enum aggio__fault_op)op);
}

/* ---- liveness: the alarm ------------------------------------------------- */

static char hang_text[900]; /* what the alarm says about the run */
static char gdb_cmd[160];   /* AGGIO_SWEEP_STACKS=1: this rank's stacks */
static const char *volatile last_call = "nothing";
static volatile sig_atomic_t in_call; /* inside last_call, not after it */

static void say(const char *s) {
  ssize_t n = write(2, s, strlen(s));
  (void)n;
}

static void on_alarm(int sig) {
  (void)sig;
  say(hang_text);
  say(in_call ? " inside " : " in the test, after ");
  say(last_call);
  say("\n");
  if (gdb_cmd[0]) {
    int rc = system(gdb_cmd);
    (void)rc;
    sleep(10); /* the other ranks print their stacks before mpiexec ends them */
  }
  _exit(1);
}

static void arm(struct run *r) {
  snprintf(hang_text, sizeof hang_text,
           "FAIL hang: %s (AGGIO_FAULTS=%s): not done in %u s (AGGIO_SWEEP_ALARM); "
           "reproduce: AGGIO_SWEEP_ONLY=%s mpiexec -n %d %s %s\n  rank %d is",
           r->label, r->spec, alarm_s, r->repro, nprocs, exe, part, rank);
  last_call = "nothing";
  in_call = 0;
  alarm(alarm_s);
}

/* ---- reports --------------------------------------------------------------- */

/* One check over all ranks: each rank's text, printed by rank 0 in one
 * block when any rank is not ok.  Collective. */
static int judge(struct run *r, int ok, const char *kind, const char *what,
                 const char *mine) {
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  test_checks++;
  if (all)
    return 1;
  r->failed++;
  char text[TEXT] = {0};
  snprintf(text, sizeof text, "%s", mine);
  char *texts = rank == 0 ? malloc((size_t)TEXT * nprocs) : NULL;
  MPI_Gather(text, TEXT, MPI_CHAR, texts, TEXT, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    test_failures++;
    fprintf(stderr, "FAIL %s: %s (AGGIO_FAULTS=%s): %s\n", kind, r->label, r->spec, what);
    for (int q = 0; q < nprocs; q++)
      fprintf(stderr, "  rank %d: %s\n", q, texts + (size_t)q * TEXT);
    fprintf(stderr, "  the run's calls on rank 0 (call result):");
    for (int k = 0; k < r->ncalls; k++)
      fprintf(stderr, "%s %d %s %d", k ? "," : "", k, r->what[k], r->rc[k]);
    fprintf(stderr, "\n");
    fprintf(stderr, "  reproduce: AGGIO_SWEEP_ONLY=%s mpiexec -n %d %s %s\n", r->repro,
            nprocs, exe, part);
    fflush(stderr);
  }
  free(texts);
  return 0;
}

static void record(struct run *r, const char *what, int rc) {
  in_call = 0;
  last_call = what;
  if (r->ncalls < MAXCALLS) {
    r->what[r->ncalls] = what;
    r->rc[r->ncalls] = rc;
    r->ncalls++;
  }
}

static void result_text(char *s, size_t n, int rc) {
  snprintf(s, n, "%d %s", rc, rc ? aggio_error_message() : "(success)");
}

/* A collective call's result, the same on every rank (agreement): the
 * code and, for a failure, the text (the failing rank's message reaches
 * every rank, docs/engine.md). */
static int coll(struct run *r, const char *what, int rc) {
  record(r, what, rc);
  char mine[TEXT], call[96];
  result_text(mine, sizeof mine, rc);
  snprintf(call, sizeof call, "call %d %s", r->ncalls - 1, what);
  int64_t h = (int64_t)(hash(0xcbf29ce484222325ULL, mine) >> 1);
  int64_t v[4] = {rc, -rc, h, -h}, m[4];
  MPI_Allreduce(v, m, 4, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  r->split = m[0] != -m[1];
  judge(r, !r->split, "agreement", call, mine);
  if (!r->split)
    judge(r, m[2] == -m[3], "agreement (message)", call, mine);
  return rc;
}

/* A call that is not collective: only this rank's result matters. */
static int local(struct run *r, const char *what, int rc) {
  record(r, what, rc);
  return rc;
}

static void entering(const char *what) {
  last_call = what;
  in_call = 1;
}

/* Names the call for the alarm, makes it, records and agrees its result. */
#define COLL(r, what, call) (entering(what), coll((r), (what), (call)))
#define LOCAL(r, what, call) (entering(what), local((r), (what), (call)))

/* The ranks disagree on whether the file is open: a collective call on it
 * would hang by the test's fault, not the library's.  Reported; the part
 * ends here. */
static void stop(struct run *r) {
  MPI_Barrier(MPI_COMM_WORLD); /* every rank's report is out */
  if (rank == 0) {
    fprintf(stderr,
            "FAIL: the ranks disagree on whether %s is open: part %s stops here\n",
            r->path[0], part);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD); /* until the abort ends this process */
}

/* ---- no false success ------------------------------------------------------ */

/* Bytes one piece of `len` at `off` (count 1) of the write with `seed`. */
static struct expect piece(int file, int seed, int64_t off, int64_t len) {
  return (struct expect){
      .call = -1, .file = file, .seed = seed, .count = 1, .off = off, .len = len};
}

/* The bytes `e` names are those of call `call` (-1: of the set-up). */
static void expect(struct run *r, int call, struct expect e) {
  e.call = call;
  if (r->nexp < MAXEXP)
    r->exp[r->nexp++] = e;
}

/* Did `call` and every later call succeed? */
static int acknowledged(const struct run *r, int call) {
  for (int k = call < 0 ? r->ncalls : call; k < r->ncalls; k++)
    if (r->rc[k] != 0)
      return 0;
  return 1;
}

/* pread of the logical file: through the subfiles when the file at the
 * name is a subfiled layout (tests/subfile_read.h: POSIX and the format's
 * arithmetic, not aggio). */
static ssize_t logical_pread(const char *path, unsigned char *buf, int64_t len, int64_t off) {
  struct subfile_read sf;
  int64_t got = subfile_read_open(&sf, path) == 0 ? subfile_read_pread(&sf, buf, len, off) : -1;
  subfile_read_close(&sf);
  return (ssize_t)got;
}

/* 1 when the expected bytes are in the file; else says where not. */
static int in_file(const struct run *r, const struct expect *e, char *why, size_t n) {
  int fd = open(r->path[e->file], O_RDONLY);
  const char *by = e->call < 0 ? "the set-up" : r->what[e->call];
  if (fd < 0) {
    snprintf(why, n, "%s (call %d) returned success, but %s cannot be opened", by,
             e->call, r->path[e->file]);
    return 0;
  }
  unsigned char *got = malloc((size_t)e->len);
  int ok = 1;
  for (int i = 0; i < e->count && ok; i++) {
    int64_t off = e->off + i * e->stride;
    ssize_t k = logical_pread(r->path[e->file], got, e->len, off);
    for (int64_t j = 0; j < e->len && ok; j++) {
      if (j < k && got[j] == pat(e->seed, off + j))
        continue;
      struct stat st;
      fstat(fd, &st);
      if (j < k)
        snprintf(why, n,
                 "%s (call %d) returned success, but byte %lld is 0x%02x, not 0x%02x "
                 "(file size %lld)",
                 by, e->call, (long long)(off + j), got[j], pat(e->seed, off + j),
                 (long long)st.st_size);
      else
        snprintf(why, n,
                 "%s (call %d) returned success, but the file ends at %lld, before "
                 "its byte %lld",
                 by, e->call, (long long)st.st_size, (long long)(off + j));
      ok = 0;
    }
  }
  free(got);
  close(fd);
  return ok;
}

/* After the run (every file closed): the acknowledged bytes are there. */
static void verify(struct run *r) {
  MPI_Barrier(MPI_COMM_WORLD);
  char mine[TEXT] = "ok";
  int ok = 1;
  for (int i = 0; i < r->nexp && ok; i++)
    if (acknowledged(r, r->exp[i].call))
      ok = in_file(r, &r->exp[i], mine, sizeof mine);
  judge(r, ok, "false success", "the files after the run", mine);
}

/* A collective read that returned success gave the bytes `e` names
 * (packed in buf), when their write and every call since succeeded. */
static void check_read(struct run *r, const struct expect *e, const unsigned char *buf,
                       const MPI_Status *st) {
  char mine[TEXT] = "ok";
  int ok = 1, got = -1;
  if (r->rc[r->ncalls - 1] == 0 && acknowledged(r, e->call)) {
    MPI_Get_count(st, MPI_BYTE, &got);
    for (int i = 0; i < e->count && ok; i++)
      for (int64_t j = 0; j < e->len && ok; j++)
        ok = buf[i * e->len + j] == pat(e->seed, e->off + i * e->stride + j);
    if (!ok || got != e->len * e->count)
      snprintf(mine, sizeof mine,
               "success, but of the bytes call %d wrote from %lld: count %d "
               "of %lld, bytes %s",
               e->call, (long long)e->off, got, (long long)(e->len * e->count),
               ok ? "right" : "wrong");
    ok = ok && got == e->len * e->count;
  }
  judge(r, ok, "false success", "the bytes read", mine);
}

/* A write that returned success counted every byte. */
static void check_count(struct run *r, const MPI_Status *st, int64_t len) {
  char mine[TEXT] = "ok";
  int got = (int)len;
  if (r->rc[r->ncalls - 1] == 0)
    MPI_Get_count(st, MPI_BYTE, &got);
  if (got != len)
    snprintf(mine, sizeof mine, "success with count %lld of %lld", (long long)got,
             (long long)len);
  judge(r, got == len, "false success", "the count of the write's status", mine);
}

/* ---- what scenarios share ------------------------------------------------- */

/* An info from key, value pairs ending with NULL. */
static MPI_Info info_of(const char *key, ...) __attribute__((sentinel));
static MPI_Info info_of(const char *key, ...) {
  MPI_Info info;
  MPI_Info_create(&info);
  va_list ap;
  va_start(ap, key);
  for (const char *k = key; k; k = va_arg(ap, const char *))
    MPI_Info_set(info, k, va_arg(ap, const char *));
  va_end(ap);
  return info;
}

/* Opens the run's file `file` (under the run's fault rules when `faulted`:
 * AGGIO_FAULTS is read at open, so only this file counts and fails). */
static aggio_file open_file(struct run *r, int file, int amode, MPI_Info info,
                            int faulted) {
  aggio_file fh = AGGIO_FILE_NULL;
  if (faulted)
    setenv("AGGIO_FAULTS", r->spec, 1);
  int rc =
      COLL(r, "open", aggio_file_open(MPI_COMM_WORLD, r->path[file], amode, info, &fh));
  unsetenv("AGGIO_FAULTS");
  MPI_Info_free(&info);
  if (r->split)
    stop(r);
  return rc == 0 ? fh : AGGIO_FILE_NULL;
}

/* The calls of every op so far in this run, for a sweep of only what
 * follows (close, finalize). */
static void mark(struct run *r) { counts(r->mark); }

/* `n` small collective writes, rank after rank from byte `base` (each a
 * call with its own pattern). */
static void small_writes(struct run *r, aggio_file fh, int file, int n, int64_t base) {
  unsigned char buf[SMALL];
  for (int k = 0; k < n; k++) {
    int64_t off = base + ((int64_t)k * nprocs + rank) * SMALL;
    for (int j = 0; j < SMALL; j++)
      buf[j] = pat(k + 1, off + j);
    MPI_Status st;
    COLL(r, "write_at_all (small)",
         aggio_file_write_at_all(fh, off, buf, SMALL, MPI_BYTE, &st));
    expect(r, r->ncalls - 1, piece(file, k + 1, off, SMALL));
    check_count(r, &st, SMALL);
  }
}

/* ---- the scenarios --------------------------------------------------------- */

/* open and close with every observability hint on (their allocations
 * count too; statistics print at close, to the test's /dev/null). */
static void sc_open(struct run *r, const void *arg) {
  (void)arg;
  MPI_Info info = info_of("aggio_stats", "true", "aggio_timers", "true", "aggio_trace",
                          r->trace, "aggio_aggregator_placement_display", "true",
                          "aggio_emulate_nodes", "2", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (fh)
    COLL(r, "close", aggio_file_close(&fh));
}

/* MPI_MODE_APPEND on an existing file: the individual pointer starts at
 * its end (an fstat that failed on one rank must not leave it at 0), and
 * the file's bytes stay, whatever fails. */
static void sc_append(struct run *r, const void *arg) {
  (void)arg;
  enum { OLD = 3 * SMALL + 17 };
  if (rank == 0) {
    unsigned char buf[OLD];
    for (int j = 0; j < OLD; j++)
      buf[j] = pat(99, j);
    int fd = open(r->path[0], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    CHECK(fd >= 0 && write(fd, buf, OLD) == OLD, "set-up of %s", r->path[0]);
    close(fd);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  expect(r, -1, piece(0, 99, 0, OLD));
  MPI_Info info = info_of("aggio_emulate_nodes", "2", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_WRONLY | MPI_MODE_APPEND, info, 1);
  if (!fh)
    return;
  MPI_Offset pos = -1;
  LOCAL(r, "get_position", aggio_file_get_position(fh, &pos));
  char mine[TEXT];
  snprintf(mine, sizeof mine, "position %lld, the file has %d bytes", (long long)pos,
           OLD);
  judge(r, pos == OLD, "false success", "the position after open with MPI_MODE_APPEND",
        mine);
  COLL(r, "close", aggio_file_close(&fh));
}

/* The first collective writes of a strategy on a file: its per-file
 * set-up (node memory, the RMA window at open, the node cache) and several
 * rounds of a strided view (records of REC bytes, the ranks interleaved)
 * through cb_buffer_size 4096; a second write (a set-up that failed must
 * not leave the file claiming success for nothing) and a read of the
 * first. */
struct first {
  const char *strategy, *exchange;
  int nonblocking;
  const char *subfiles; /* aggio_subfiles, or NULL */
};

/* The bytes of this rank in the view's instance `c` (written with seed
 * c + 1): NREC records of REC bytes, nprocs records apart. */
static struct expect instance(int c) {
  return (struct expect){.file = 0,
                         .seed = c + 1,
                         .count = NREC,
                         .off = ((int64_t)c * NREC * nprocs + rank) * REC,
                         .len = REC,
                         .stride = (int64_t)REC * nprocs};
}

/* Instance `c` of the view, written (or, when `back`, read) by one call,
 * blocking or started and waited for; its status in *st. */
static void strided(struct run *r, aggio_file fh, const struct first *v, int c,
                    unsigned char *back, MPI_Status *st) {
  static unsigned char buf[REC * NREC];
  struct expect e = instance(c);
  for (int i = 0; i < NREC; i++)
    for (int j = 0; j < REC; j++)
      buf[i * REC + j] = pat(e.seed, e.off + i * e.stride + j);
  MPI_Offset at = (MPI_Offset)c * REC * NREC;
  aggio_request q = AGGIO_REQUEST_NULL;
  if (v->nonblocking && back) {
    LOCAL(r, "iread_at_all",
          aggio_file_iread_at_all(fh, at, back, REC * NREC, MPI_BYTE, &q));
    COLL(r, "wait (read)", aggio_wait(&q, st));
  } else if (v->nonblocking) {
    LOCAL(r, "iwrite_at_all",
          aggio_file_iwrite_at_all(fh, at, buf, REC * NREC, MPI_BYTE, &q));
    COLL(r, "wait (write)", aggio_wait(&q, st));
  } else if (back) {
    COLL(r, "read_at_all",
         aggio_file_read_at_all(fh, at, back, REC * NREC, MPI_BYTE, st));
  } else {
    COLL(r, "write_at_all",
         aggio_file_write_at_all(fh, at, buf, REC * NREC, MPI_BYTE, st));
  }
  if (back)
    return;
  expect(r, r->ncalls - 1, e);
  check_count(r, st, REC * NREC);
}

static void sc_first(struct run *r, const void *arg) {
  const struct first *v = arg;
  MPI_Info info = info_of("aggio_strategy", v->strategy, "aggio_exchange", v->exchange,
                          "cb_buffer_size", "4096", "aggio_emulate_nodes", "2",
                          "aggio_subfiles", v->subfiles ? v->subfiles : "0",
                          "aggio_subfile_stripe", "4096", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (!fh)
    return;
  MPI_Datatype vec, ft;
  MPI_Type_vector(NREC, REC, REC * nprocs, MPI_BYTE, &vec);
  MPI_Type_create_resized(vec, 0, (MPI_Aint)REC * nprocs * NREC, &ft);
  MPI_Type_commit(&ft);
  MPI_Type_free(&vec);
  int rc = COLL(r, "set_view",
                aggio_file_set_view(fh, (MPI_Offset)rank * REC, MPI_BYTE, ft, "native",
                                    MPI_INFO_NULL));
  MPI_Type_free(&ft);
  if (rc == 0) { /* else the writes would go through the default view */
    MPI_Status st;
    strided(r, fh, v, 0, NULL, &st);
    struct expect e = instance(0);
    e.call = r->ncalls - 1;
    strided(r, fh, v, 1, NULL, &st);
    static unsigned char back[REC * NREC];
    memset(back, 0, sizeof back);
    strided(r, fh, v, 0, back, &st);
    check_read(r, &e, back, &st);
  }
  COLL(r, "close", aggio_file_close(&fh));
}

/* File 0 through write-behind with a node cache of four 4 KiB blocks, on
 * two emulated nodes. */
static aggio_file open_small_cache(struct run *r) {
  MPI_Info info =
      info_of("aggio_strategy", "write_behind", "striping_unit", "4096",
              "aggio_write_behind_size", "16384", "aggio_emulate_nodes", "2", NULL);
  return open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
}

/* 16 small collective writes evict blocks of that cache to its I/O
 * threads while the calls go on, then sync and close write the rest. */
static void sc_flush(struct run *r, const void *arg) {
  (void)arg;
  aggio_file fh = open_small_cache(r);
  if (!fh)
    return;
  small_writes(r, fh, 0, 16, 0);
  COLL(r, "sync", aggio_file_sync(fh));
  COLL(r, "close", aggio_file_close(&fh));
}

/* Small independent writes between collective ones, as PnetCDF's record
 * count and HDF5's metadata: with write-behind's cache made, they join
 * it (src/core/independent_io.c, held_by_strategy) and their failures are
 * deferred like the collective writes'.  Each rank reads its own back
 * (MPI: a process sees its own writes), and the file must hold every
 * acknowledged byte after close. */
static void sc_absorb(struct run *r, const void *arg) {
  (void)arg;
  aggio_file fh = open_small_cache(r);
  if (!fh)
    return;
  enum { ROUNDS = 4 };
  int64_t area = (int64_t)ROUNDS * nprocs * SMALL; /* the collective writes' bytes */
  for (int k = 0; k < ROUNDS; k++) {
    small_writes(r, fh, 0, 1, (int64_t)k * nprocs * SMALL);
    unsigned char buf[64], back[64];
    int64_t off = area + ((int64_t)k * nprocs + rank) * (int64_t)sizeof buf;
    for (size_t j = 0; j < sizeof buf; j++)
      buf[j] = pat(100 + k, off + (int64_t)j);
    MPI_Status st;
    LOCAL(r, "write_at (small)",
          aggio_file_write_at(fh, off, buf, (int)sizeof buf, MPI_BYTE, &st));
    int wrote = r->ncalls - 1;
    expect(r, wrote, piece(0, 100 + k, off, sizeof buf));
    LOCAL(r, "read_at (own)",
          aggio_file_read_at(fh, off, back, (int)sizeof back, MPI_BYTE, &st));
    if (r->rc[wrote] == 0)
      check_read(r, &r->exp[r->nexp - 1], back, &st);
  }
  COLL(r, "close", aggio_file_close(&fh));
}

/* 8 small non-blocking collective writes started back to back, completed
 * by one waitall: they merge (src/core/merge.c).  Each request's outcome is
 * agreed too, and counts as a call in start order: a later request may
 * report an earlier one's deferred failure. */
static void sc_merge(struct run *r, const void *arg) {
  enum { NQ = 8 };
  MPI_Info info = info_of("aggio_strategy", (const char *)arg, "cb_buffer_size", "4096",
                          "aggio_emulate_nodes", "2", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (!fh)
    return;
  static unsigned char buf[NQ][SMALL];
  aggio_request q[NQ];
  MPI_Status st[NQ];
  for (int k = 0; k < NQ; k++) {
    int64_t off = ((int64_t)k * nprocs + rank) * SMALL;
    for (int j = 0; j < SMALL; j++)
      buf[k][j] = pat(k + 1, off + j);
    LOCAL(r, "iwrite_at_all",
          aggio_file_iwrite_at_all(fh, off, buf[k], SMALL, MPI_BYTE, &q[k]));
  }
  COLL(r, "waitall", aggio_waitall(NQ, q, st));
  static const char *const outcome[NQ] = {"request 0's outcome", "request 1's outcome",
                                          "request 2's outcome", "request 3's outcome",
                                          "request 4's outcome", "request 5's outcome",
                                          "request 6's outcome", "request 7's outcome"};
  for (int k = 0; k < NQ; k++) {
    coll(r, outcome[k], st[k].MPI_ERROR);
    expect(r, r->ncalls - 1,
           piece(0, k + 1, ((int64_t)k * nprocs + rank) * SMALL, SMALL));
    check_count(r, &st[k], SMALL);
  }
  COLL(r, "close", aggio_file_close(&fh));
}

/* A line of nprocs nodes and an I/O node at its end (test_placement.c):
 * with per-call placement the one aggregator goes to the rank with the
 * most bytes. */
static void write_topology(void) {
  if (rank == 0) {
    FILE *f = fopen(topo_path, "w");
    if (f) {
      fprintf(f, "shape mesh %d\nlatency 1\nbandwidth 1\nio_bandwidth 1\n", nprocs + 1);
      for (int i = 0; i < nprocs; i++)
        fprintf(f, "node n%d %d\n", i, i);
      fprintf(f, "io bridge %d\n", nprocs);
      fclose(f);
    }
    CHECK(f != NULL, "cannot write %s", topo_path);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* Call `c` of the placement scenario: rank `heavy` writes HEAVY bytes,
 * the others LIGHT, packed in rank order from `base`; returns the end. */
static int64_t heavy_write(struct run *r, aggio_file fh, int c, int heavy, int64_t base,
                           unsigned char *buf, int64_t *mine) {
  int64_t off = base;
  for (int q = 0; q < rank; q++)
    off += q == heavy ? HEAVY : LIGHT;
  int n = rank == heavy ? HEAVY : LIGHT;
  for (int j = 0; j < n; j++)
    buf[j] = pat(c, off + j);
  MPI_Status st;
  COLL(r, "write_at_all (placement)",
       aggio_file_write_at_all(fh, off, buf, n, MPI_BYTE, &st));
  expect(r, r->ncalls - 1, piece(0, c, off, n));
  check_count(r, &st, n);
  *mine = off;
  return base + HEAVY + (int64_t)(nprocs - 1) * LIGHT;
}

/* Two-phase with the topology placement made at every call: the heavy
 * rank moves (0, last, 0), so does the aggregator, and the per-file state
 * is made again at each move; then a read of the first call's bytes. */
static void sc_placement(struct run *r, const void *arg) {
  (void)arg;
  char emu[16];
  snprintf(emu, sizeof emu, "%d", nprocs);
  MPI_Info info =
      info_of("aggio_strategy", "two_phase", "romio_cb_write", "enable", "romio_cb_read",
              "enable", "cb_nodes", "1", "cb_buffer_size", "16384", "aggio_emulate_nodes",
              emu, "aggio_placement", "topology", "aggio_placement_scope", "call",
              "aggio_topology_file", topo_path, NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (!fh)
    return;
  unsigned char *buf = malloc(HEAVY), *back = malloc(HEAVY);
  int64_t base = 0, first_off = 0, off;
  static const int heavy[3] = {0, -1, 0};
  int first_call = -1;
  for (int c = 0; c < 3; c++) {
    base =
        heavy_write(r, fh, c + 1, heavy[c] < 0 ? nprocs - 1 : heavy[c], base, buf, &off);
    if (c == 0) {
      first_call = r->ncalls - 1;
      first_off = off;
    }
  }
  int n = rank == 0 ? HEAVY : LIGHT;
  MPI_Status st;
  memset(back, 0, HEAVY);
  COLL(r, "read_at_all (placement)",
       aggio_file_read_at_all(fh, first_off, back, n, MPI_BYTE, &st));
  struct expect e = piece(0, 1, first_off, n);
  e.call = first_call;
  check_read(r, &e, back, &st);
  COLL(r, "close", aggio_file_close(&fh));
  free(buf);
  free(back);
}

/* Close with write-behind data still on the nodes and a trace to write:
 * swept from the mark, so only what fails inside close. */
static void sc_close(struct run *r, const void *arg) {
  (void)arg;
  MPI_Info info = info_of("aggio_strategy", "write_behind", "striping_unit", "4096",
                          "aggio_write_behind_size", "65536", "aggio_trace", r->trace,
                          "aggio_stats", "true", "aggio_emulate_nodes", "2", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (!fh)
    return;
  small_writes(r, fh, 0, 8, 0);
  mark(r);
  COLL(r, "close", aggio_file_close(&fh));
}

/* Files left open: one under faults with write-behind data, one two-phase
 * file without; aggio_finalize closes both (swept from the mark), and its
 * result is agreed. */
static void sc_finalize(struct run *r, const void *arg) {
  (void)arg;
  MPI_Info info =
      info_of("aggio_strategy", "write_behind", "striping_unit", "4096",
              "aggio_write_behind_size", "65536", "aggio_emulate_nodes", "2", NULL);
  aggio_file a = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (a)
    small_writes(r, a, 0, 8, 0);
  info = info_of("aggio_strategy", "two_phase", "aggio_emulate_nodes", "2", NULL);
  aggio_file b = open_file(r, 1, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 0);
  if (b)
    small_writes(r, b, 1, 1, 0);
  mark(r);
  COLL(r, "aggio_finalize", aggio_finalize());
}

/* Staged writes (aggio_stage_dir, docs/staging.md): small collective
 * writes land in the run's stage directory, and movers copy them to the
 * file behind the calls (background) or at sync and close (at_close); a
 * mover's failure must be a later call's outcome on every rank. */
static void sc_stage(struct run *r, const void *arg) {
  MPI_Info info = info_of("aggio_stage_dir", r->stage, "aggio_stage_drain", (const char *)arg,
                          "aggio_emulate_nodes", "2", NULL);
  aggio_file fh = open_file(r, 0, MPI_MODE_CREATE | MPI_MODE_RDWR, info, 1);
  if (!fh)
    return;
  small_writes(r, fh, 0, 8, 0);
  COLL(r, "sync", aggio_file_sync(fh));
  small_writes(r, fh, 0, 8, (int64_t)8 * nprocs * SMALL);
  COLL(r, "close", aggio_file_close(&fh));
}

/* ---- the sweep ------------------------------------------------------------- */

struct scenario {
  const char *part, *name;
  void (*fn)(struct run *r, const void *arg);
  const void *arg;
  int from_mark; /* sweep only the calls after the run's mark */
};

static const struct first tp2 = {"two_phase", "two_sided", 0, NULL},
                          tp2nb = {"two_phase", "two_sided", 1, NULL},
                          rma = {"two_phase", "rma", 0, NULL},
                          rmanb = {"two_phase", "rma", 1, NULL},
                          wb = {"write_behind", "automatic", 0, NULL},
                          wbnb = {"write_behind", "automatic", 1, NULL},
                          nl = {"node_local", "automatic", 0, NULL},
                          nlnb = {"node_local", "automatic", 1, NULL},
                          au = {"auto", "automatic", 0, NULL},
                          aunb = {"auto", "automatic", 1, NULL},
                          tpsub = {"two_phase", "two_sided", 0, "3"},
                          wbsub = {"write_behind", "automatic", 0, "3"};

static const struct scenario scenarios[] = {
    {"open", "open", sc_open, NULL, 0},
    {"open", "open_append", sc_append, NULL, 0},
    {"first", "first.two_phase", sc_first, &tp2, 0},
    {"first", "first.two_phase.nb", sc_first, &tp2nb, 0},
    {"first", "first.rma", sc_first, &rma, 0},
    {"first", "first.rma.nb", sc_first, &rmanb, 0},
    {"first", "first.write_behind", sc_first, &wb, 0},
    {"first", "first.write_behind.nb", sc_first, &wbnb, 0},
    {"first", "first.node_local", sc_first, &nl, 0},
    {"first", "first.node_local.nb", sc_first, &nlnb, 0},
    {"first", "first.auto", sc_first, &au, 0},
    {"first", "first.auto.nb", sc_first, &aunb, 0},
    {"first", "first.two_phase.subfile", sc_first, &tpsub, 0},
    {"first", "first.write_behind.subfile", sc_first, &wbsub, 0},
    {"flush", "flush", sc_flush, NULL, 0},
    {"flush", "absorb", sc_absorb, NULL, 0},
    {"merge", "merge.auto", sc_merge, "auto", 0},
    {"merge", "merge.two_phase", sc_merge, "two_phase", 0},
    {"placement", "placement", sc_placement, NULL, 0},
    {"close", "close", sc_close, NULL, 1},
    {"finalize", "finalize", sc_finalize, NULL, 1},
    {"stage", "stage.background", sc_stage, "background", 0},
    {"stage", "stage.at_close", sc_stage, "at_close", 0},
};

/* stdout to /dev/null while a scenario runs (statistics blocks at close);
 * the test's own reports go to stderr, or to stdout between runs. */
static void quiet(int on) {
  static int saved = -1;
  fflush(stdout);
  if (on) {
    int null = open("/dev/null", O_WRONLY);
    saved = dup(1);
    dup2(null, 1);
    close(null);
  } else if (saved >= 0) {
    dup2(saved, 1);
    close(saved);
    saved = -1;
  }
}

/* One run: fresh file names, the calls, the checks, the files removed.
 * `calls` gets this rank's calls of each op in the run. */
static void run_once(const struct scenario *sc, struct run *r,
                     int64_t calls[AGGIO_FAULT_NOPS]) {
  int id = run_id++;
  snprintf(r->path[0], sizeof r->path[0], "%s.%d.a", prefix, id);
  snprintf(r->path[1], sizeof r->path[1], "%s.%d.b", prefix, id);
  snprintf(r->trace, sizeof r->trace, "%s.%d.trc", prefix, id);
  snprintf(r->stage, sizeof r->stage, "%s.%d.stage", prefix, id);
  r->ncalls = r->nexp = r->split = r->failed = 0;
  counts(r->start);
  arm(r);
  quiet(1);
  sc->fn(r, sc->arg);
  quiet(0);
  last_call = "the test's check of the files";
  verify(r);
  alarm(0);
  int64_t now[AGGIO_FAULT_NOPS];
  counts(now);
  for (int op = 0; op < AGGIO_FAULT_NOPS; op++)
    calls[op] = now[op] - r->start[op];
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) { /* aggio_file_delete: a subfiled layout's subfiles too */
    aggio_file_delete(r->path[0], MPI_INFO_NULL);
    aggio_file_delete(r->path[1], MPI_INFO_NULL);
    unlink(r->trace);
    remove_tree(r->stage); /* what a failed mover left staged */
  }
}

/* The n to sweep in lo+1..hi: all of them when few or AGGIO_SWEEP_FULL,
 * else the first and last EDGE and SAMPLE drawn between (seeded by
 * AGGIO_SWEEP_SEED and the sweep's names, the same on every rank).  Marks
 * them in pick[1..hi]; returns how many, and says what in `what`. */
static int choose(int64_t lo, int64_t hi, char *pick, uint64_t key, char *what,
                  size_t n) {
  int64_t count = hi - lo;
  if (full || count <= 2 * EDGE + SAMPLE) {
    memset(pick + lo + 1, 1, (size_t)count);
    snprintf(what, n, "n=%lld..%lld (all)", (long long)lo + 1, (long long)hi);
    return (int)count;
  }
  memset(pick + lo + 1, 1, EDGE);
  memset(pick + hi - EDGE + 1, 1, EDGE);
  uint64_t x = key;
  for (int k = 0; k < SAMPLE;) {
    x = mix(x);
    int64_t m = lo + EDGE + 1 + (int64_t)(x % (uint64_t)(count - 2 * EDGE));
    if (!pick[m]) {
      pick[m] = 1;
      k++;
    }
  }
  snprintf(what, n, "n=%lld..%lld and %lld..%lld, and %d of the %lld between (seed %llu)",
           (long long)lo + 1, (long long)lo + EDGE, (long long)hi - EDGE + 1,
           (long long)hi, SAMPLE, (long long)(count - 2 * EDGE),
           (unsigned long long)seed);
  return 2 * EDGE + SAMPLE;
}

static int wanted(int field, const char *value) {
  return !only[field][0] || strcmp(only[field], value) == 0;
}

/* One run with the rule op@who#nstr ("7": the 7th call of op fails; "7+":
 * every call from the 7th); counts whether the rule fired and whether a
 * call failed. */
static void fault_run(const struct scenario *sc, int op, int all_ranks, const char *nstr,
                      int counts_of[2]) {
  char who[16] = "*";
  if (!all_ranks)
    snprintf(who, sizeof who, "%d", target);
  struct run r;
  snprintf(r.spec, sizeof r.spec, "%s@%s#%s", op_name[op], who, nstr);
  snprintf(r.label, sizeof r.label, "%s %s@%s n=%s", sc->name, op_name[op], who, nstr);
  snprintf(r.repro, sizeof r.repro, "%s:%s:%s:%s", sc->name, op_name[op],
           all_ranks ? "all" : "one", nstr);
  int64_t calls[AGGIO_FAULT_NOPS];
  run_once(sc, &r, calls);
  /* the calls vary a little with the I/O threads' timing: did it fire? */
  int seen[2] = {(all_ranks || rank == target) && calls[op] >= atoll(nstr), 0}, any[2];
  for (int k = 0; k < r.ncalls; k++)
    seen[1] |= r.rc[k] != 0;
  MPI_Allreduce(seen, any, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  counts_of[0] += any[0];
  counts_of[1] += any[1];
}

/* The runs of one (scenario, op, rank mode) after the count: the nth call
 * failing for each chosen n in lo+1..hi, then every call from lo+1 on. */
static void sweep_op(const struct scenario *sc, int op, int all_ranks, int64_t lo,
                     int64_t hi) {
  char what[160], nstr[32];
  int runs = 0, hits[2] = {0, 0};
  double t0 = MPI_Wtime();
  if (only[3][0]) { /* AGGIO_SWEEP_ONLY names the run */
    snprintf(what, sizeof what, "n=%s only", only[3]);
    fault_run(sc, op, all_ranks, only[3], hits);
    runs++;
  } else {
    char *pick = calloc((size_t)hi + 1, 1);
    uint64_t key =
        hash(hash(hash(mix(seed), sc->name), op_name[op]), all_ranks ? "all" : "one");
    choose(lo, hi, pick, key, what, sizeof what);
    for (int64_t n = lo + 1; n <= hi; n++)
      if (pick[n]) {
        snprintf(nstr, sizeof nstr, "%lld", (long long)n);
        fault_run(sc, op, all_ranks, nstr, hits);
        runs++;
      }
    free(pick);
    snprintf(nstr, sizeof nstr, "%lld+", (long long)lo + 1);
    fault_run(sc, op, all_ranks, nstr, hits);
    runs++;
    snprintf(what + strlen(what), sizeof what - strlen(what), ", and #%s", nstr);
  }
  if (rank == 0 && all_ranks)
    printf("  %s@*: ", op_name[op]);
  else if (rank == 0)
    printf("  %s@%d: ", op_name[op], target);
  if (rank == 0)
    printf("%s: %d runs, the fault fired in %d, a call failed in %d, %.1f s\n", what,
           runs, hits[0], hits[1], MPI_Wtime() - t0);
  fflush(stdout);
}

/* Counts the scenario's calls of each op, then sweeps every op it makes. */
static void sweep(const struct scenario *sc) {
  struct run r;
  snprintf(r.spec, sizeof r.spec, "alloc@*#100000000"); /* never fires: counts */
  snprintf(r.label, sizeof r.label, "%s counting run", sc->name);
  snprintf(r.repro, sizeof r.repro, "%s:count", sc->name);
  int64_t calls[AGGIO_FAULT_NOPS], hi[2][AGGIO_FAULT_NOPS], lo[2][AGGIO_FAULT_NOPS];
  run_once(sc, &r, calls);
  int clean = 1;
  for (int k = 0; k < r.ncalls; k++)
    clean &= r.rc[k] == 0;
  char mine[TEXT];
  snprintf(mine, sizeof mine, "%s", clean ? "ok" : "a call failed");
  if (!clean)
    for (int k = 0; k < r.ncalls; k++)
      if (r.rc[k] != 0) {
        snprintf(mine, sizeof mine, "call %d %s returned %d", k, r.what[k], r.rc[k]);
        break;
      }
  judge(&r, clean, "counting run", "a call failed without faults", mine);
  if (r.failed)
    return; /* the scenario fails without faults: nothing to sweep */
  /* the range of n to sweep: after the mark (or from the start) up to the
   * last call, on the last rank for "one", over the ranks for "all" */
  int64_t before[AGGIO_FAULT_NOPS], first[AGGIO_FAULT_NOPS];
  for (int op = 0; op < AGGIO_FAULT_NOPS; op++) {
    before[op] = sc->from_mark ? r.mark[op] - r.start[op] : 0;
    first[op] = calls[op] > before[op] ? before[op] : INT64_MAX;
  }
  MPI_Allreduce(calls, hi[1], AGGIO_FAULT_NOPS, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
  MPI_Allreduce(first, lo[1], AGGIO_FAULT_NOPS, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
  memcpy(hi[0], calls, sizeof calls);
  memcpy(lo[0], before, sizeof before);
  MPI_Bcast(hi[0], AGGIO_FAULT_NOPS, MPI_INT64_T, target, MPI_COMM_WORLD);
  MPI_Bcast(lo[0], AGGIO_FAULT_NOPS, MPI_INT64_T, target, MPI_COMM_WORLD);
  if (rank == 0) {
    printf("%s: calls of each op (the most on a rank%s):", sc->name,
           sc->from_mark ? "; swept: those after the mark" : "");
    for (int op = 0; op < AGGIO_FAULT_NOPS; op++)
      if (hi[1][op] > 0)
        printf(" %s %lld", op_name[op], (long long)hi[1][op]);
    printf("\n");
  }
  fflush(stdout);
  for (int op = 0; op < AGGIO_FAULT_NOPS; op++)
    for (int m = 0; m < 2; m++)
      if (hi[m][op] > lo[m][op] && wanted(1, op_name[op]) && wanted(2, m ? "all" : "one"))
        sweep_op(sc, op, m, lo[m][op], hi[m][op]);
}

static void options(void) {
  const char *s = getenv("AGGIO_SWEEP_ALARM");
  if (s && atoi(s) > 0)
    alarm_s = (unsigned)atoi(s);
  s = getenv("AGGIO_SWEEP_RANK");
  target = s && *s && atoi(s) >= 0 && atoi(s) < nprocs ? atoi(s) : nprocs - 1;
  s = getenv("AGGIO_SWEEP_FULL");
  full = s && atoi(s) > 0;
  s = getenv("AGGIO_SWEEP_SEED");
  if (s && *s)
    seed = strtoull(s, NULL, 0);
  s = getenv("AGGIO_SWEEP_ONLY"); /* scenario:op:mode:n */
  for (int f = 0; s && f < 4; f++) {
    const char *end = strchr(s, ':');
    size_t len = end ? (size_t)(end - s) : strlen(s);
    snprintf(only[f], sizeof only[f], "%.*s", (int)len, s);
    s = end ? end + 1 : NULL;
  }
  s = getenv("AGGIO_SWEEP_STACKS");
  if (s && atoi(s) > 0)
    snprintf(gdb_cmd, sizeof gdb_cmd,
             "gdb -p %d -batch -ex 'thread apply all bt' 1>&2 2>/dev/null",
             (int)getpid());
}

int main(int argc, char **argv) {
  /* AGGIO_SWEEP_THREADS=multiple: the progress thread runs the operations */
  const char *threads = getenv("AGGIO_SWEEP_THREADS");
  int level;
  MPI_Init_thread(&argc, &argv,
                  threads && strcmp(threads, "multiple") == 0 ? MPI_THREAD_MULTIPLE
                                                              : MPI_THREAD_SINGLE,
                  &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  exe = argv[0];
  part = argc > 1 ? argv[1] : "";
  options();
  unsetenv("AGGIO_FAULTS"); /* only the sweep's own rules, only at its opens */
  signal(SIGALRM, on_alarm);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(prefix, sizeof prefix, "%s/sweep.%d", test_dir(), id);
  snprintf(topo_path, sizeof topo_path, "%s.topo", prefix);
  int known = 0;
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    known |= strcmp(scenarios[i].part, part) == 0;
  if (!known) {
    if (rank == 0)
      fprintf(stderr,
              "usage: %s PART (open first flush merge placement close finalize)\n", exe);
    MPI_Finalize();
    return 2;
  }
  if (strcmp(part, "placement") == 0)
    write_topology();
  for (size_t i = 0; i < sizeof scenarios / sizeof scenarios[0]; i++)
    if (strcmp(scenarios[i].part, part) == 0 && wanted(0, scenarios[i].name))
      sweep(&scenarios[i]);
  return test_finish_mpi(topo_path);
}
