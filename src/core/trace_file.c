/*
 * trace_file.c - the trace's life with the file (trace.h records into it):
 * clocks aligned at open with Cristian's algorithm (the minimum-round-trip
 * sample of a few ping-pongs with rank 0), and one trace file per job
 * written in parallel at close: rank 0 writes header, rank table and
 * metadata, every rank pwrite()s its own records at an offset found with
 * MPI_Exscan.  docs/trace-format.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TRACE_TAG 0x5a17 /* clock ping-pong on fh->comm */
#define TRACE_SYNC_ROUNDS 8

/* ---- open: path and clocks ------------------------------------------------- */

/* What identifies this rank's CLOCK_MONOTONIC: ranks with the same kernel
 * boot id share it exactly and need no correction. */
static void clock_identity(char *id, size_t len) {
  memset(id, 0, len);
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (fgets(id, (int)len, f))
      id[strcspn(id, "\n")] = 0;
    fclose(f);
  }
  if (!id[0] && gethostname(id, len - 1) != 0)
    id[0] = 0;
}

/* Cristian's algorithm against rank 0, for the ranks whose clock differs.
 * Sets tr->delta and, on rank 0, tr->clock_base and tr->offset_max.  Rank 0
 * uses tr->aux (nprocs ints at least) for the list of ranks to serve. */
static int clock_sync(MPI_Comm comm, int rank, int nprocs,
                      struct aggio__trace *tr) {
  struct {
    double base;
    char id[64];
  } ref;
  char myid[64];
  clock_identity(myid, sizeof myid);
  memset(&ref, 0, sizeof ref);
  if (rank == 0) {
    ref.base = aggio__now();
    memcpy(ref.id, myid, sizeof ref.id);
  }
  if (MPI_Bcast(&ref, (int)sizeof ref, MPI_BYTE, 0, comm) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  int need = rank != 0 && (!myid[0] || strcmp(myid, ref.id) != 0);
  int *needs = (int *)tr->aux;
  if (MPI_Gather(&need, 1, MPI_INT, needs, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  double offset = 0;
  if (rank == 0) {
    for (int r = 1; r < nprocs; r++) {
      for (int k = 0; needs[r] && k < TRACE_SYNC_ROUNDS; k++) {
        double ping, pong;
        MPI_Recv(&ping, 1, MPI_DOUBLE, r, TRACE_TAG, comm, MPI_STATUS_IGNORE);
        pong = aggio__now();
        MPI_Send(&pong, 1, MPI_DOUBLE, r, TRACE_TAG, comm);
      }
    }
  } else if (need) {
    double best = INFINITY;
    for (int k = 0; k < TRACE_SYNC_ROUNDS; k++) {
      double t0 = aggio__now(), server;
      MPI_Send(&t0, 1, MPI_DOUBLE, 0, TRACE_TAG, comm);
      MPI_Recv(&server, 1, MPI_DOUBLE, 0, TRACE_TAG, comm, MPI_STATUS_IGNORE);
      double t1 = aggio__now();
      if (t1 - t0 < best) {
        best = t1 - t0;
        offset = server - 0.5 * (t0 + t1); /* server time at our midpoint */
      }
    }
  }
  double absoff = fabs(offset);
  if (MPI_Reduce(&absoff, &tr->offset_max, 1, MPI_DOUBLE, MPI_MAX, 0, comm) !=
      MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  tr->clock_base = ref.base;
  tr->delta = offset - ref.base;
  return 0;
}

/* Expands %f (basename of the traced file), %p (rank 0's pid), %t (rank 0's
 * wall-clock time at open, microseconds) and %% in the trace path, so that
 * one AGGIO_TRACE setting serves a job that opens several files. */
static char *expand_path(const char *pat, const char *file) {
  const char *base = file ? strrchr(file, '/') : NULL;
  base = base ? base + 1 : (file ? file : "");
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  char pid[32], now[48];
  snprintf(pid, sizeof pid, "%ld", (long)getpid());
  snprintf(now, sizeof now, "%lld%06ld", (long long)ts.tv_sec, ts.tv_nsec / 1000);
  size_t cap = strlen(pat) + 1, n = 0;
  for (const char *p = pat; *p; p++)
    if (*p == '%')
      cap += strlen(base) + sizeof now;
  char *out = malloc(cap);
  if (!out)
    return NULL;
  for (const char *p = pat; *p; p++) {
    const char *ins = NULL;
    if (*p == '%' && p[1]) {
      switch (p[1]) {
      case 'f': ins = base; break;
      case 'p': ins = pid; break;
      case 't': ins = now; break;
      case '%': ins = "%"; break;
      default: break;
      }
    }
    if (ins) {
      size_t l = strlen(ins);
      memcpy(out + n, ins, l);
      n += l;
      p++;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = 0;
  return out;
}

/* MPI_Allreduce(MIN) of a code: the agreed outcome of a step. */
static int agree_code(MPI_Comm comm, int code) {
  int worst = code;
  if (MPI_Allreduce(&code, &worst, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    return code ? code : AGGIO_ERR_MPI;
  return worst;
}

/* Allocates this rank's part; rank 0 also expands the path and takes the
 * scratch it needs later (so that close never allocates per rank). */
static int trace_setup(struct aggio_file_s *fh, const char *pat,
                       int64_t memory_bytes, struct aggio__trace *tr) {
  tr->rank = fh->rank;
  tr->memory = memory_bytes < 0 ? 0 : memory_bytes;
  tr->max = (uint64_t)tr->memory / sizeof(struct aggio__trace_rec);
  if (tr->max > 0 && aggio__trace_grow(tr) != 0)
    return AGGIO_ERR_NOMEM;
  if (fh->rank != 0)
    return 0;
  tr->aux = malloc(2 * sizeof(uint64_t) * (size_t)fh->nprocs);
  tr->path = expand_path(pat, fh->path);
  return tr->aux && tr->path ? 0 : AGGIO_ERR_NOMEM;
}

/* Gives every rank the path as rank 0 expanded it (%p, %t are rank 0's). */
static int share_path(MPI_Comm comm, int rank, struct aggio__trace *tr) {
  int len = rank == 0 ? (int)strlen(tr->path) + 1 : 0;
  if (MPI_Bcast(&len, 1, MPI_INT, 0, comm) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  int code = 0;
  if (rank != 0 && !(tr->path = malloc((size_t)len)))
    code = AGGIO_ERR_NOMEM;
  code = agree_code(comm, code);
  if (code == 0 && MPI_Bcast(tr->path, len, MPI_CHAR, 0, comm) != MPI_SUCCESS)
    code = AGGIO_ERR_MPI;
  return code;
}

int aggio__trace_open(struct aggio_file_s *fh, const char *path,
                      int64_t memory_bytes, struct aggio__trace **out) {
  *out = NULL;
  if (!path || !*path)
    return 0;
  struct aggio__trace *tr = calloc(1, sizeof *tr);
  int code = agree_code(fh->comm, tr ? trace_setup(fh, path, memory_bytes, tr)
                                     : AGGIO_ERR_NOMEM);
  if (code == 0)
    code = share_path(fh->comm, fh->rank, tr);
  if (code == 0)
    code = clock_sync(fh->comm, fh->rank, fh->nprocs, tr);
  if (code != 0) {
    aggio__trace_free(tr);
    return code;
  }
  *out = tr;
  return 0;
}

/* ---- close: the file -------------------------------------------------------- */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
static void put_u16(unsigned char *p, uint16_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}
#endif
static void put_u32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}
static void put_f64(unsigned char *p, double d) {
  uint64_t v;
  memcpy(&v, &d, sizeof v);
  put_u64(p, v);
}

/* A growable text buffer for the JSON metadata. */
struct sbuf {
  char *s;
  size_t n, cap;
  int oom;
};

static void sb_add(struct sbuf *b, const char *s, size_t len) {
  if (b->oom)
    return;
  if (b->n + len + 1 > b->cap) {
    size_t nc = b->cap ? b->cap : 1024;
    while (nc < b->n + len + 1)
      nc *= 2;
    char *p = realloc(b->s, nc);
    if (!p) {
      b->oom = 1;
      return;
    }
    b->s = p;
    b->cap = nc;
  }
  memcpy(b->s + b->n, s, len);
  b->n += len;
  b->s[b->n] = 0;
}

static void sb_printf(struct sbuf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...) {
  char tmp[256];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0)
    sb_add(b, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Appends s as a JSON string literal. */
static void sb_json_str(struct sbuf *b, const char *s) {
  sb_add(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
    if (*p == '"' || *p == '\\') {
      char esc[2] = {'\\', (char)*p};
      sb_add(b, esc, 2);
    } else if (*p < 0x20) {
      sb_printf(b, "\\u%04x", *p);
    } else {
      sb_add(b, (const char *)p, 1);
    }
  }
  sb_add(b, "\"", 1);
}

static void build_metadata(struct aggio_file_s *fh, struct aggio__trace *tr,
                           struct sbuf *b) {
  sb_add(b, "{\"path\": ", 9);
  sb_json_str(b, fh->path);
  sb_add(b, ", \"nodes\": [", 12);
  for (int i = 0; fh->topo.node_names && i < fh->topo.nnodes; i++) {
    if (i)
      sb_add(b, ", ", 2);
    sb_json_str(b, fh->topo.node_names[i]);
  }
  sb_add(b, "], \"aggregators\": [", 19);
  for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++)
    sb_printf(b, "%s%d", i ? ", " : "", fh->topo.aggr[i]);
  sb_add(b, "], \"strategy\": ", 15);
  sb_json_str(b, fh->hints.strategy.str);
  sb_add(b, ", \"hints\": {", 12);
  for (size_t i = 0; i < aggio__hint_count; i++) {
    const struct aggio__hint_desc *d = &aggio__hint_table[i];
    if (i)
      sb_add(b, ", ", 2);
    sb_json_str(b, d->key);
    sb_add(b, ": ", 2);
    sb_json_str(b, aggio__hint_slot(&fh->hints, d)->str);
  }
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int len = 0;
  if (MPI_Get_library_version(lib, &len) != MPI_SUCCESS)
    len = 0;
  lib[len < (int)sizeof lib ? (len > 0 ? len : 0) : (int)sizeof lib - 1] = 0;
  while (len > 0 && (lib[len - 1] == '\n' || lib[len - 1] == ' '))
    lib[--len] = 0;
  sb_add(b, "}, \"mpi_library\": ", 18);
  sb_json_str(b, lib);
  sb_printf(b, ", \"clock_offset_max\": %.9g", tr->offset_max);
  /* Additions to the documented keys (readers ignore unknown keys). */
  sb_printf(b, ", \"aggio_version\": \"%d.%d.%d\"", AGGIO_VERSION_MAJOR,
            AGGIO_VERSION_MINOR, AGGIO_VERSION_PATCH);
  sb_add(b, ", \"fstype\": ", 12);
  sb_json_str(b, fh->fstype);
  sb_printf(b, ", \"trace_memory\": %lld}", (long long)tr->memory);
}

static int is_aggregator(const struct aggio_file_s *fh, int r) {
  for (int i = 0; fh->topo.aggr && i < fh->topo.naggr; i++)
    if (fh->topo.aggr[i] == r)
      return 1;
  return 0;
}

/* Rank 0: header, rank table and metadata in one buffer of *len bytes (a
 * multiple of 8: records start right after). */
static unsigned char *build_head(struct aggio_file_s *fh, struct aggio__trace *tr,
                                 const uint64_t *cd, size_t *len) {
  struct sbuf meta = {0};
  build_metadata(fh, tr, &meta);
  if (meta.oom) {
    free(meta.s);
    return NULL;
  }
  int n = fh->nprocs;
  size_t tab = AGGIO_TRACE_HEADER_SIZE + (size_t)AGGIO_TRACE_RANK_ENTRY_SIZE * (size_t)n;
  size_t total = (tab + meta.n + 7) & ~(size_t)7;
  unsigned char *h = calloc(1, total);
  if (!h) {
    free(meta.s);
    return NULL;
  }
  uint64_t nrec = 0, ndrop = 0;
  for (int r = 0; r < n; r++) {
    unsigned char *e =
        h + AGGIO_TRACE_HEADER_SIZE + (size_t)AGGIO_TRACE_RANK_ENTRY_SIZE * (size_t)r;
    put_u64(e + AGGIO_TRACE_RANK_first, nrec);
    put_u64(e + AGGIO_TRACE_RANK_count, cd[2 * r]);
    put_u64(e + AGGIO_TRACE_RANK_dropped, cd[2 * r + 1]);
    put_u32(e + AGGIO_TRACE_RANK_node,
            (uint32_t)(fh->topo.node_of_rank ? fh->topo.node_of_rank[r] : -1));
    put_u32(e + AGGIO_TRACE_RANK_aggregator, (uint32_t)is_aggregator(fh, r));
    nrec += cd[2 * r];
    ndrop += cd[2 * r + 1];
  }
  memcpy(h + AGGIO_TRACE_HDR_magic, AGGIO_TRACE_MAGIC, 8);
  put_u32(h + AGGIO_TRACE_HDR_version, AGGIO_TRACE_VERSION);
  put_u32(h + AGGIO_TRACE_HDR_nranks, (uint32_t)n);
  put_u32(h + AGGIO_TRACE_HDR_record_size, AGGIO_TRACE_RECORD_SIZE);
  put_u32(h + AGGIO_TRACE_HDR_flags, 0);
  put_u64(h + AGGIO_TRACE_HDR_total_records, nrec);
  put_u64(h + AGGIO_TRACE_HDR_total_dropped, ndrop);
  put_u64(h + AGGIO_TRACE_HDR_meta_len, meta.n);
  put_u64(h + AGGIO_TRACE_HDR_records_offset, total);
  put_f64(h + AGGIO_TRACE_HDR_clock_base, tr->clock_base);
  memcpy(h + tab, meta.s, meta.n);
  free(meta.s);
  *len = total;
  return h;
}

/* pwrite() all of it, over short writes and EINTR; 0 or an AGGIO_ERR_*. */
static int write_all(int fd, const void *buf, size_t len, off_t off) {
  const char *p = buf;
  while (len > 0) {
    ssize_t w = pwrite(fd, p, len, off);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return aggio__errno_code(w < 0 ? errno : ENOSPC);
    p += w;
    len -= (size_t)w;
    off += w;
  }
  return 0;
}

static void records_to_le(struct aggio__trace_rec *r, uint64_t n) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  for (uint64_t i = 0; i < n; i++) {
    struct aggio__trace_rec x = r[i];
    unsigned char *p = (unsigned char *)&r[i];
    put_f64(p + offsetof(struct aggio__trace_rec, t_start), x.t_start);
    put_f64(p + offsetof(struct aggio__trace_rec, t_end), x.t_end);
    put_u64(p + offsetof(struct aggio__trace_rec, offset), (uint64_t)x.offset);
    put_u64(p + offsetof(struct aggio__trace_rec, length), (uint64_t)x.length);
    put_u64(p + offsetof(struct aggio__trace_rec, type_size), (uint64_t)x.type_size);
    put_u16(p + offsetof(struct aggio__trace_rec, op), x.op);
    put_u16(p + offsetof(struct aggio__trace_rec, flags), x.flags);
    put_u32(p + offsetof(struct aggio__trace_rec, rank), (uint32_t)x.rank);
  }
#else
  (void)r;
  (void)n;
#endif
}

int aggio__trace_close(struct aggio_file_s *fh, struct aggio__trace *tr) {
  if (!tr)
    return 0;
  MPI_Comm comm = fh->comm;
  uint64_t mine[2] = {tr->n, tr->dropped}, first = 0;
  uint64_t *cd = fh->rank == 0 ? tr->aux : NULL;
  int rc = MPI_Exscan(&tr->n, &first, 1, MPI_UINT64_T, MPI_SUM, comm);
  if (fh->rank == 0)
    first = 0; /* MPI_Exscan leaves rank 0's result undefined */
  int grc = MPI_Gather(mine, 2, MPI_UINT64_T, cd, 2, MPI_UINT64_T, 0, comm);
  /* Rank 0 creates (and truncates) the file before anyone writes into it. */
  int64_t plan[2] = {0, 0}; /* {error code, records_offset} */
  unsigned char *head = NULL;
  size_t head_len = 0;
  int fd = -1;
  if (fh->rank == 0) {
    if (rc != MPI_SUCCESS || grc != MPI_SUCCESS)
      plan[0] = AGGIO_ERR_MPI;
    else if (!(head = build_head(fh, tr, cd, &head_len)))
      plan[0] = AGGIO_ERR_NOMEM;
    else if ((fd = open(tr->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) < 0)
      plan[0] = aggio__errno_code(errno);
    plan[1] = (int64_t)head_len;
  }
  if (MPI_Bcast(plan, 2, MPI_INT64_T, 0, comm) != MPI_SUCCESS && plan[0] == 0)
    plan[0] = AGGIO_ERR_MPI;
  int code = (int)plan[0];
  if (code == 0 && fh->rank == 0)
    code = write_all(fd, head, head_len, 0);
  if (code == 0 && tr->n > 0) {
    if (fd < 0 && (fd = open(tr->path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0)
      code = aggio__errno_code(errno);
    if (code == 0) {
      records_to_le(tr->rec, tr->n);
      code = write_all(fd, tr->rec, (size_t)tr->n * sizeof *tr->rec,
                       (off_t)plan[1] + (off_t)(first * sizeof *tr->rec));
    }
  }
  if (fd >= 0 && close(fd) != 0 && code == 0)
    code = aggio__errno_code(errno);
  free(head);
  aggio__trace_free(tr);
  int agreed = code;
  if (MPI_Allreduce(&code, &agreed, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    agreed = code ? code : AGGIO_ERR_MPI;
  return agreed;
}

