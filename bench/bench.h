/*
 * bench.h - the types aggio-bench's files share: the run parameters, the
 * access layout a pattern produces for one rank, the pattern and back end
 * function tables (after IOR's aiori: one table per back end, filled with
 * designated initialisers, a NULL slot meaning "not supported"), and timings.
 */
#ifndef AGGIO_BENCH_H
#define AGGIO_BENCH_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define BENCH_PATH_MAX 4096
#define BENCH_MAX_HINTS 64
#define BENCH_KIB ((int64_t)1 << 10)
#define BENCH_MIB ((int64_t)1 << 20)
#define BENCH_GIB ((int64_t)1 << 30)
/* Alignment of buffers, offsets and lengths for O_DIRECT. */
#define BENCH_DIRECT_ALIGN 4096

enum bench_dir { BENCH_WRITE = 0, BENCH_READ = 1 };

struct bench_hint {
  char key[128];
  char value[256];
};

/* Everything the command line sets.  Sizes are bytes; 0 means "the
 * pattern's default" where noted. */
struct bench_params {
  char api[16];          /* -a: AGGIO, MPIIO, POSIX */
  char pattern[16];      /* --pattern */
  int64_t block;         /* -b: bytes per rank per segment (0: default) */
  int64_t transfer;      /* -t: transfer / record size (0: default) */
  int64_t segments;      /* -s */
  int64_t particles;     /* --particles: HACC particles per rank (0: from -b) */
  int sub[3];            /* --subarray: local block in elements (0: from -b) */
  int grid[3];           /* process grid of the subarray pattern */
  int64_t call_size;     /* --call-size: cap on bytes per rank per call */
  int fpp;               /* -F */
  int collective;        /* -c */
  int file_view;         /* -V: collective calls through a file view even
                            where IOR would use explicit offsets */
  int fsync;             /* -e */
  int odirect;           /* -B / --posix.odirect */
  int do_write, do_read; /* -w, -r */
  int check_write;       /* -W */
  int check_read;        /* -R */
  int keep;              /* -k */
  int overwrite;         /* --overwrite: the write goes over the file as it is */
  int reps;              /* -i */
  int reorder;           /* -C */
  int shift;             /* -Q: rank shift of -C (default 1) */
  int drop_caches;       /* --drop-caches */
  char thread_level[16]; /* --thread-level: MPI_Init_thread's request ("": MPI_Init) */
  double compute;        /* --compute: seconds per iteration (overlap mode; -1: off) */
  int compute_auto;      /* --compute auto: as long as a blocking write */
  int small_requests;    /* --small-requests: one collective call per extent */
  int verbose;           /* -v */
  uint64_t seed;         /* -G */
  char path[BENCH_PATH_MAX];       /* -o */
  char hints_file[BENCH_PATH_MAX]; /* -U */
  char json_path[BENCH_PATH_MAX];  /* --json ("-": stdout) */
  char label[256];                 /* --label */
  struct bench_hint hints[BENCH_MAX_HINTS]; /* --hint, -U, IOR_HINT__MPI__* */
  int nhints;
};

/* One contiguous piece of a rank's access: `len` bytes at file offset
 * `off`.  A layout lists them in the order they sit in the rank's memory
 * buffer (its "stream"). */
struct bench_extent {
  int64_t off;
  int64_t len;
};

/* The stream bytes [pos, pos + len) moved by one I/O call; `off` is the
 * file offset of its first byte when those bytes are one contiguous piece
 * of the file, else -1 (bench_layout_map_calls). */
struct bench_call {
  int64_t pos;
  int64_t len;
  int64_t off;
};

struct bench_layout {
  struct bench_extent *ext;
  size_t next, ext_cap;
  struct bench_call *calls; /* the pattern's natural calls */
  size_t ncalls, call_cap;
  int64_t bytes;      /* this rank's bytes (sum of the extents) */
  int64_t file_bytes; /* size of the whole shared file */
};

/* Parses the command line (options.c); exits on a usage error. */
void bench_parse_args(int argc, char **argv, struct bench_params *p);
/* The MPI thread level a --thread-level name asks for; -1: none given. */
int bench_thread_level(const char *name);
const char *bench_thread_level_name(int level);

/* ---- patterns (patterns.c) ------------------------------------------------ */

struct bench_pattern {
  const char *name;
  const char *doc;
  /* Fills in the pattern's default sizes where the user gave none. */
  void (*defaults)(struct bench_params *p, int nranks);
  /* The layout of rank `rank` of `nranks`: extents and natural calls. */
  int (*layout)(const struct bench_params *p, int rank, int nranks,
                struct bench_layout *l);
  /* The file view of that rank (displacement 0, etype MPI_BYTE); NULL: an
   * hindexed type built from the layout's extents. */
  int (*filetype)(const struct bench_params *p, int rank, int nranks,
                  const struct bench_layout *l, MPI_Datatype *type);
};

const struct bench_pattern *bench_pattern_find(const char *name);
void bench_pattern_list(FILE *out);
void bench_layout_free(struct bench_layout *l);
/* Splits calls longer than `cap` bytes. */
void bench_layout_cap_calls(struct bench_layout *l, int64_t cap);
/* Sets each call's file offset; returns 1 when every call is one
 * contiguous piece of the file (IOR's transfers), else 0. */
int bench_layout_map_calls(struct bench_layout *l);
/* The generic file view: hindexed over the (coalesced) extents. */
int bench_layout_filetype(const struct bench_layout *l, MPI_Datatype *type);

/* ---- back ends (backend_*.c) ---------------------------------------------- */

struct bench_open_args {
  const char *path;
  MPI_Comm comm;           /* MPI_COMM_WORLD, or MPI_COMM_SELF for -F */
  enum bench_dir dir;
  int collective;          /* use the *_all calls */
  int odirect;             /* -B */
  MPI_Info info;           /* the hints */
};

struct bench_backend {
  const char *name;
  /* Opens (collective over args->comm); *state is the back end's handle. */
  int (*open)(const struct bench_open_args *args, void **state);
  /* Sets a byte file view; NULL: the back end has none (no -c on a shared
   * file). */
  int (*set_view)(void *state, MPI_Datatype filetype);
  /* One call: moves up to len bytes at offset (bytes in the view, or in
   * the file) and says in *moved how many it did.  The caller's loop
   * (engine.c) splits longer transfers and rejects short ones. */
  int (*xfer)(void *state, enum bench_dir dir, int64_t offset, void *buf, int len,
              int64_t *moved);
  int (*sync)(void *state);
  int (*close)(void *state);
  /* Removes a file; called by one rank. */
  int (*remove)(const char *path);
  /* The hints in effect, as a new MPI_Info; NULL: none. */
  int (*info)(void *state, MPI_Info *info);
  /* Text of the last error. */
  const char *(*error)(int code);
  /* Starts a non-blocking collective call (*_iwrite_at_all / *_iread_at_all
   * at an offset in the view or the file); the file keeps the request.
   * NULL: the back end has none (POSIX). */
  int (*istart)(void *state, enum bench_dir dir, int64_t offset, void *buf, int len);
  /* Completes every request started on the file (one waitall); *moved gets
   * the bytes they moved together. */
  int (*complete)(void *state, int64_t *moved);
};

extern const struct bench_backend bench_backend_posix;
extern const struct bench_backend bench_backend_mpiio;
extern const struct bench_backend bench_backend_aggio;
const struct bench_backend *bench_backend_find(const char *name);

/* ---- data and verification (verify.c) ------------------------------------- */

/* The seed of the data in a file: the run's seed for the shared file, a mix
 * of it and the writer's rank for file-per-process. */
uint64_t bench_file_seed(uint64_t seed, int fpp, int file_rank);
/* Fills buf with the data that belongs at file offset off. */
void bench_fill(unsigned char *buf, int64_t off, int64_t len, uint64_t seed);
/* Counts the bytes of buf that differ from the data at file offset off; the
 * first bad offset goes to *first_bad (unchanged if none). */
int64_t bench_check(const unsigned char *buf, int64_t off, int64_t len,
                    uint64_t seed, int64_t *first_bad);

/* ---- timings and reports (report.c, sysinfo.c) ---------------------------- */

enum bench_phase { PH_OPEN, PH_XFER, PH_SYNC, PH_CLOSE, PH_COUNT };

struct bench_times {
  double phase[PH_COUNT]; /* latest end - earliest start over the ranks */
  double total;           /* latest close end - earliest open start */
};

struct bench_sysinfo {
  char mpi_library[512]; /* MPI_Get_library_version, first line */
  char mpi_flavor[16];   /* openmpi | mpich | other */
  int mpi_version[2];
  char host[256];
  char fs_type[32];
  char mca[512];         /* OMPI_MCA_{io,fcoll,fs,fbtl,sharedfp} in effect */
};

void bench_sysinfo_get(const char *path, struct bench_sysinfo *s);

/* Peak resident memory (getrusage ru_maxrss), per rank, gathered on rank 0. */
struct bench_memory {
  int64_t *peak_kib;     /* at the end of the run */
  int64_t *baseline_kib; /* after set-up, before the data buffers are touched */
  int64_t *data_bytes;   /* the rank's write and read buffers */
};

struct bench_result {
  const struct bench_params *p;
  const struct bench_sysinfo *sys;
  int nranks;
  int64_t bytes_write, bytes_read; /* over all ranks, per repetition */
  int64_t file_bytes;
  int64_t calls_write, calls_read; /* I/O calls per rank per repetition */
  const char *call_mode;           /* how calls were made (bench_mode_name) */
  int nrep_w, nrep_r;
  struct bench_times *w, *r;   /* per repetition */
  char strategy[256];          /* what ran (aggio: the strategy it chose) */
  char strategy_requested[256];/* what was asked for (aggio: the hint) */
  char strategy_w[256], strategy_r[256]; /* chosen, per access */
  char *hints_json;            /* JSON object text of the hints in effect */
  struct bench_memory mem;     /* rank 0 only */
  int64_t write_errors, read_errors; /* bytes that failed verification */
  int drop_caches_ok;
  char start_time[64];
};

double bench_bw_mib(int64_t bytes, double seconds);
void bench_report_header(const struct bench_result *res);
void bench_report_row(const char *access, int rep, const struct bench_times *t,
                      int64_t bytes, int durable);
void bench_report_summary(const struct bench_result *res);
int bench_report_json(const struct bench_result *res, FILE *out);
/* A JSON string literal of s. */
void bench_json_str(FILE *out, const char *s);
/* JSON object text of an MPI_Info (malloc'd). */
char *bench_info_json(MPI_Info info);

#endif
