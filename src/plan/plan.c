/*
 * plan.c - MPI-free planning for two-phase collective buffering.
 *
 * Follows the scheme of ROMIO's two-phase I/O (Thakur, Gropp, Lusk 1999):
 * the accessed range is split into one contiguous file domain per
 * aggregator (ADIOI_Calc_file_domains), boundaries aligned to the stripe so
 * that no two aggregators contend for one stripe lock (Liao & Choudhary
 * 2008), and each domain is processed in windows of cb_buffer_size bytes.
 */
#include "plan.h"

#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggio_errno.h"
#include "hints.h"
#include <stdint.h>

/* ---- aggregators ---------------------------------------------------------- */

struct config_entry {
  char host[256];
  int count; /* -1: every rank of the node ("*") */
};

/* Parses one "host:count" entry; 0 or -1. */
static int parse_entry(const char *s, size_t len, struct config_entry *ce) {
  const char *colon = memchr(s, ':', len);
  size_t hlen = colon ? (size_t)(colon - s) : len;
  while (hlen > 0 && (s[0] == ' ' || s[0] == '\t')) {
    s++;
    hlen--;
    len--;
    colon = colon ? colon : NULL;
  }
  while (hlen > 0 && (s[hlen - 1] == ' ' || s[hlen - 1] == '\t'))
    hlen--;
  if (hlen == 0 || hlen >= sizeof ce->host)
    return -1;
  memcpy(ce->host, s, hlen);
  ce->host[hlen] = '\0';
  ce->count = 1; /* ROMIO: a host without a count means one aggregator */
  if (!colon)
    return 0;
  const char *c = colon + 1;
  size_t clen = len - (size_t)(c - s);
  while (clen > 0 && (*c == ' ' || *c == '\t')) {
    c++;
    clen--;
  }
  while (clen > 0 && (c[clen - 1] == ' ' || c[clen - 1] == '\t'))
    clen--;
  if (clen == 1 && *c == '*') {
    ce->count = -1;
    return 0;
  }
  if (clen == 0 || clen > 9)
    return -1;
  int v = 0;
  for (size_t i = 0; i < clen; i++) {
    if (c[i] < '0' || c[i] > '9')
      return -1;
    v = v * 10 + (c[i] - '0');
  }
  ce->count = v;
  return 0;
}

/* Fills quota[node] from the config list: the first entry whose host
 * pattern matches a node decides that node's count. */
static int config_quotas(const char *config, int nnodes,
                         const char *const *names, int *quota, char *err,
                         size_t errlen) {
  for (int i = 0; i < nnodes; i++)
    quota[i] = -2; /* not matched yet */
  const char *p = config;
  int entries = 0;
  while (*p) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    struct config_entry ce;
    if (parse_entry(p, len, &ce) != 0) {
      snprintf(err, errlen, "cb_config_list \"%s\": bad entry \"%.*s\"",
               config, (int)len, p);
      return -1;
    }
    entries++;
    for (int i = 0; i < nnodes; i++)
      if (quota[i] == -2 &&
          (strcmp(ce.host, "*") == 0 || fnmatch(ce.host, names[i], 0) == 0))
        quota[i] = ce.count;
    p += len;
    if (*p == ',')
      p++;
  }
  if (entries == 0) {
    snprintf(err, errlen, "cb_config_list is empty");
    return -1;
  }
  for (int i = 0; i < nnodes; i++)
    if (quota[i] == -2)
      quota[i] = 0;
  return 0;
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int aggio__select_aggregators(int nprocs, const int *node_of_rank, int nnodes,
                              const char *const *node_names, const char *config,
                              int cb_nodes, int *aggr, int *naggr, char *err,
                              size_t errlen) {
  int *quota = calloc((size_t)nnodes, sizeof *quota);
  int *local = calloc((size_t)nnodes, sizeof *local);   /* ranks per node */
  int *start = calloc((size_t)nnodes + 1, sizeof *start); /* CSR of ranks */
  int *members = malloc((size_t)nprocs * sizeof *members);
  int *fill = calloc((size_t)nnodes, sizeof *fill);
  int rc = -1;
  *naggr = 0;
  if (!quota || !local || !start || !members || !fill) {
    snprintf(err, errlen, "out of memory");
    goto out;
  }
  if (config_quotas(config, nnodes, node_names, quota, err, errlen) != 0)
    goto out;
  for (int r = 0; r < nprocs; r++)
    local[node_of_rank[r]]++;
  for (int i = 0; i < nnodes; i++)
    start[i + 1] = start[i] + local[i];
  for (int r = 0; r < nprocs; r++) { /* ascending ranks per node */
    int nd = node_of_rank[r];
    members[start[nd] + fill[nd]++] = r;
  }
  int most = 0;
  for (int i = 0; i < nnodes; i++) {
    if (quota[i] < 0 || quota[i] > local[i])
      quota[i] = local[i];
    if (quota[i] > most)
      most = quota[i];
  }
  /* Under a cb_nodes cap, nodes take turns for the allowed aggregators so
   * they spread over as many nodes as possible; then each node spreads its
   * share evenly over its ranks. */
  int *share = fill; /* reuse: per-node count actually taken */
  memset(share, 0, (size_t)nnodes * sizeof *share);
  int n = 0;
  for (int j = 0; j < most; j++)
    for (int i = 0; i < nnodes; i++)
      if (j < quota[i] && (cb_nodes <= 0 || n < cb_nodes)) {
        share[i]++;
        n++;
      }
  n = 0;
  for (int i = 0; i < nnodes; i++)
    for (int j = 0; j < share[i]; j++)
      aggr[n++] = members[start[i] + (int)(((int64_t)j * local[i]) / share[i])];
  if (n == 0) {
    snprintf(err, errlen, "cb_config_list \"%s\" selects no aggregator", config);
    goto out;
  }
  qsort(aggr, (size_t)n, sizeof *aggr, cmp_int);
  *naggr = n;
  rc = 0;
out:
  free(quota);
  free(local);
  free(start);
  free(members);
  free(fill);
  return rc;
}

int aggio__emulated_node(int i, int n, int k) {
  if (k <= 0 || k > n)
    k = k <= 0 ? 1 : n;
  /* Block distribution: the first n % k groups get one extra rank. */
  int base = n / k, extra = n % k;
  int cut = extra * (base + 1);
  if (i < cut)
    return i / (base + 1);
  return extra + (i - cut) / base;
}

/* ---- file domains --------------------------------------------------------- */

static int64_t round_nearest(int64_t x, int64_t a) {
  if (a <= 0)
    return x;
  int64_t down = x - (x % a);
  /* up only when there is room: near INT64_MAX the rounding goes down */
  return (x - down) >= a - (x - down) && down <= INT64_MAX - a ? down + a : down;
}

void aggio__file_domains(int64_t gmin, int64_t gmax, int naggr, int64_t align,
                         int64_t *start, int64_t *end) {
  if (gmax < gmin)
    gmax = gmin;
  int64_t len = gmax - gmin;
  int64_t prev = gmin;
  for (int i = 0; i < naggr; i++) {
    int64_t b;
    if (i == naggr - 1) {
      b = gmax;
    } else {
      /* 128-bit product: len * i can exceed 2^63 for huge files. */
      b = gmin + (int64_t)(((__int128)len * (i + 1)) / naggr);
      b = round_nearest(b, align);
      if (b < prev)
        b = prev;
      if (b > gmax)
        b = gmax;
    }
    start[i] = prev;
    end[i] = b;
    prev = b;
  }
}

int aggio__domain_of(int64_t off, int naggr, const int64_t *start,
                     const int64_t *end) {
  int lo = 0, hi = naggr - 1;
  if (naggr <= 0 || off < start[0] || off >= end[naggr - 1])
    return -1;
  while (lo < hi) { /* last domain with start <= off and non-empty */
    int mid = (lo + hi + 1) / 2;
    if (start[mid] <= off)
      lo = mid;
    else
      hi = mid - 1;
  }
  while (lo > 0 && start[lo] == end[lo]) /* skip empty domains */
    lo--;
  return off < end[lo] ? lo : -1;
}

/* ---- rounds --------------------------------------------------------------- */

int64_t aggio__round_size(int64_t largest, int64_t cb, int64_t align, int pipeline) {
  int64_t r = cb;
  if (pipeline) {
    int64_t want = (largest + AGGIO_ROUNDS_TARGET - 1) / AGGIO_ROUNDS_TARGET;
    if (want < AGGIO_ROUND_MIN)
      want = AGGIO_ROUND_MIN;
    if (want < r)
      r = want;
  }
  if (align > 0 && r > align)
    r -= r % align;
  return r > 0 ? r : cb;
}

int64_t aggio__round_count(int naggr, const int64_t *start, const int64_t *end,
                           int64_t cb) {
  int64_t most = 0;
  for (int i = 0; i < naggr; i++) {
    if (end[i] <= start[i])
      continue;
    int64_t base = start[i] - (start[i] % cb);
    int64_t k = (end[i] - base + cb - 1) / cb;
    if (k > most)
      most = k;
  }
  return most;
}

void aggio__round_window(int64_t start, int64_t end, int64_t cb, int64_t k,
                         int64_t *lo, int64_t *hi) {
  int64_t base = start - (start % cb);
  int64_t a = base + k * cb, b = a + cb;
  *lo = a < start ? start : a;
  *hi = b > end ? end : b;
  if (*hi < *lo)
    *hi = *lo;
}

int aggio__clip(const struct aggio__extents *src, size_t *cursor, int64_t lo,
                int64_t hi, struct aggio__extents *out) {
  size_t i = *cursor;
  while (i < src->n && src->v[i].off + src->v[i].len <= lo)
    i++;
  *cursor = i;
  for (; i < src->n && src->v[i].off < hi; i++) {
    int64_t a = src->v[i].off, b = a + src->v[i].len;
    if (a < lo)
      a = lo;
    if (b > hi)
      b = hi;
    if (aggio__extents_push(out, a, b - a))
      return AGGIO_ERR_NOMEM;
    if (src->v[i].off + src->v[i].len <= hi)
      *cursor = i + 1;
  }
  return 0;
}

/* ---- coverage and read-modify-write --------------------------------------- */

static int cmp_extent(const void *a, const void *b) {
  const struct aggio__extent *x = a, *y = b;
  return (x->off > y->off) - (x->off < y->off);
}

int aggio__coverage(const struct aggio__extents *lists, int k,
                    struct aggio__extents *runs) {
  size_t total = 0;
  for (int i = 0; i < k; i++)
    total += lists[i].n;
  struct aggio__extent *all = malloc((total ? total : 1) * sizeof *all);
  if (!all)
    return AGGIO_ERR_NOMEM;
  size_t n = 0;
  for (int i = 0; i < k; i++)
    for (size_t j = 0; j < lists[i].n; j++)
      all[n++] = lists[i].v[j];
  qsort(all, n, sizeof *all, cmp_extent);
  aggio__extents_clear(runs);
  int rc = 0;
  for (size_t j = 0; j < n && rc == 0; j++) {
    if (runs->n > 0) {
      struct aggio__extent *last = &runs->v[runs->n - 1];
      int64_t last_end = last->off + last->len;
      if (all[j].off <= last_end) {
        int64_t e = all[j].off + all[j].len;
        if (e > last_end)
          last->len = e - last->off;
        continue;
      }
    }
    rc = aggio__extents_push(runs, all[j].off, all[j].len);
  }
  free(all);
  return rc;
}

/* Runs shorter than this on average make separate writes cost more in
 * per-call overhead than rewriting the holes between them. */
#define AGGIO_RMW_SMALL_RUN (64 * 1024)

int aggio__rmw_decide(const struct aggio__extents *runs, int64_t lo, int64_t hi,
                      int ds) {
  (void)lo;
  (void)hi;
  if (runs->n < 2 || ds == 0)
    return 0;
  if (ds == 1)
    return 1;
  int64_t covered = aggio__extents_bytes(runs);
  int64_t span = runs->v[runs->n - 1].off + runs->v[runs->n - 1].len - runs->v[0].off;
  int64_t holes = span - covered;
  int64_t avg_run = covered / (int64_t)runs->n;
  return avg_run < AGGIO_RMW_SMALL_RUN && holes <= covered;
}

/* ---- the call summary ------------------------------------------------------ */

void aggio__summary_mine(struct aggio__call_summary *s, const struct aggio__extents *file,
                         int64_t bytes, int64_t err, int64_t flags) {
  memset(s, 0, sizeof *s);
  s->err = err;
  s->lo = INT64_MAX;
  s->held_lo = INT64_MAX;
  s->flags = flags;
  s->mergeable = s->offered_max = 1;
  s->eof = INT64_MAX;
  if (err || bytes <= 0 || file->n == 0)
    return;
  const struct aggio__extent *last = &file->v[file->n - 1];
  s->lo = file->v[0].off;
  s->hi = last->off + last->len;
  s->bytes = bytes;
  s->pieces = s->most_pieces = (int64_t)file->n;
  s->span = s->hi - s->lo;
  s->ranks = 1;
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

void aggio__summary_merge(const struct aggio__call_summary *in,
                          struct aggio__call_summary *io) {
  io->err = min64(in->err, io->err);
  io->lo = min64(in->lo, io->lo);
  io->hi = max64(in->hi, io->hi);
  io->bytes += in->bytes;
  io->pieces += in->pieces;
  io->most_pieces = max64(in->most_pieces, io->most_pieces);
  io->span += in->span;
  io->ranks += in->ranks;
  io->flags |= in->flags;
  io->held_lo = min64(in->held_lo, io->held_lo);
  io->held_hi = max64(in->held_hi, io->held_hi);
  io->mergeable = min64(in->mergeable, io->mergeable);
  io->offered_max = max64(in->offered_max, io->offered_max);
  io->eof = min64(in->eof, io->eof);
}

int aggio__summary_interleaved(const struct aggio__call_summary *s) {
  return s->ranks > 1 && s->span > s->hi - s->lo;
}

/* ---- the auto rule -------------------------------------------------------- */

/* A size threshold given the file's previous choice: twice as high to stay
 * with `choice` once it was made, half as high to switch to it from
 * another, so that requests straddling it do not switch on every call. */
static int64_t threshold(int64_t base, int previous, int choice) {
  if (previous < 0)
    return base;
  return previous == choice ? 2 * base : base / 2;
}

static int64_t max64_1(int64_t a) { return a > 0 ? a : 1; }

/* Rules 2 to 4 of aggio__auto_decide: where the node cache does not take
 * the call. */
static int decide_large(const struct aggio__call_summary *s, const struct aggio__auto_in *in,
                        int64_t avg, int interleaved, char *why, size_t whylen) {
  /* 2. Small pieces (several per rank, or sharing stripes) on several
   *    nodes whose ranks' ranges lie apart, each node holding consecutive
   *    ranks: each node's data is then one region of the file, so the
   *    node's own aggregators merge its pieces into large writes, and
   *    moving them to aggregators of other nodes would only add a network
   *    copy (the HPE seed's local aggregation).  Not on a subfiled file:
   *    a node's region spans every subfile, and each subfile is to have
   *    one writer (two-phase's stripe-cyclic domains, below). */
  int64_t nl_small = threshold(AGGIO_AUTO_SMALL, in->previous, AGGIO_AUTO_NODE_LOCAL);
  if (in->nl_usable && !in->subfiled && in->nnodes > 1 && in->nodes_blocked && !interleaved &&
      s->pieces > 0 &&
      avg < nl_small && (s->most_pieces > 1 || in->striped)) {
    snprintf(why, whylen, "small requests (avg %lld bytes < %lld) in %d nodes' own regions; "
             "each node's aggregators merge them, nothing crosses nodes", (long long)avg,
             (long long)nl_small, in->nnodes);
    return AGGIO_AUTO_NODE_LOCAL;
  }
  /* 3. Small pieces that interleave (or share stripes): an aggregator
   *    merges them into large writes within the call.  On one node of an
   *    unstriped file system only the smallest: there each rank's own
   *    buffered pieces of 256 KiB and more were as fast or faster. */
  int64_t small_base = in->nnodes == 1 && !in->striped ? AGGIO_AUTO_SMALL_ONE_NODE
                                                       : AGGIO_AUTO_SMALL;
  int64_t small = threshold(small_base, in->previous, AGGIO_AUTO_TWO_PHASE);
  if (s->pieces > 0 && avg < small && (interleaved || s->most_pieces > 1 || in->striped)) {
    snprintf(why, whylen, "small requests (avg %lld bytes < %lld) that %s", (long long)avg,
             (long long)small, in->striped && !interleaved && s->most_pieces <= 1
                                   ? "share stripes" : "interleave");
    return AGGIO_AUTO_TWO_PHASE;
  }
  /* 4. Large requests: on a striped file system interleaved ranks still
   *    fight over stripe locks (ROMIO's reason for collective buffering);
   *    elsewhere each rank writing its own pieces is file-per-process I/O
   *    into one file and skips a copy. */
  if (in->striped && interleaved) {
    snprintf(why, whylen, "ranks interleave on a striped file system (avg request %lld bytes)",
             (long long)avg);
    return AGGIO_AUTO_TWO_PHASE;
  }
  if (interleaved) /* not striped: that returned above */
    snprintf(why, whylen, "requests of avg %lld bytes (>= %lld) interleave on %s; each rank "
             "does its own I/O", (long long)avg, (long long)small,
             in->nnodes == 1 ? "one node of an unstriped file system" : "an unstriped file system");
  else
    snprintf(why, whylen, "%s requests (avg %lld bytes)%s", avg < small ? "contiguous" : "large",
             (long long)avg, in->striped ? ", ranks do not interleave" : "");
  return AGGIO_AUTO_INDEPENDENT;
}

int aggio__auto_decide(const struct aggio__call_summary *s, const struct aggio__auto_in *in,
                       char *why, size_t whylen) {
  if (in->wb == 1 && in->wb_usable && !in->no_indep_rw) {
    snprintf(why, whylen, "write-behind forced by hints");
    return AGGIO_AUTO_WRITE_BEHIND;
  }
  if (in->cb == 1 || in->no_indep_rw) {
    snprintf(why, whylen, "collective buffering forced by hints");
    return AGGIO_AUTO_TWO_PHASE;
  }
  if (in->cb == 0) {
    snprintf(why, whylen, "collective buffering disabled by hints");
    return AGGIO_AUTO_INDEPENDENT;
  }
  int64_t avg = s->pieces ? s->bytes / s->pieces : 0;
  int64_t per_node = s->bytes / max64_1(in->nnodes);
  int interleaved = aggio__summary_interleaved(s);
  /* 1. Small requests in small calls: accumulating consecutive calls'
   *    data into whole blocks beats handling each call alone (ior-hard,
   *    4 KiB calls).  Not where a node's cache would hold parts of
   *    stripes other nodes write too. */
  int cache_ok = in->wb != 0 && in->wb_usable && !(in->striped && in->nnodes > 1);
  int64_t wb_small = threshold(AGGIO_AUTO_WB_SMALL, in->previous, AGGIO_AUTO_WRITE_BEHIND);
  /* Reads: not when the program also reads the file independently (HDF5's
   * object headers, PnetCDF's header).  Such reads send the cache's loads
   * through the page cache (cache.c), where one I/O thread loads what
   * every rank's own buffered reads fetch in parallel: through HDF5 and
   * PnetCDF the ranks' own reads of ior-hard's records were 1.3-1.9x
   * faster (docs/strategies.md). */
  int cache_fits = cache_ok && s->pieces > 0 && avg < wb_small && per_node <= in->cache_bytes / 4;
  if (cache_fits && !in->is_write && in->mixed_reads) {
    int choice = decide_large(s, in, avg, interleaved, why, whylen);
    size_t used = strlen(why);
    snprintf(why + used, whylen - used, "; small reads of a file also read independently: "
             "not through the node cache");
    return choice;
  }
  if (cache_fits) {
    snprintf(why, whylen, "small requests in small calls (avg %lld bytes < %lld, %lld bytes "
             "per node); the node cache accumulates them", (long long)avg, (long long)wb_small,
             (long long)per_node);
    return AGGIO_AUTO_WRITE_BEHIND;
  }
  return decide_large(s, in, avg, interleaved, why, whylen);
}

/* ---- the write path the hints ask for --------------------------------------- */

static int path_says(char *why, size_t whylen, int path, const char *text) {
  if (why && whylen)
    snprintf(why, whylen, "%s", text);
  return path;
}

int aggio__select_write_path(const struct aggio__hints *h, char *why, size_t whylen) {
  int64_t strat = h->strategy.num, cb = h->cb_write.num;
  int no_indep = h->no_indep_rw.num != 0;
  if (strat != AGGIO_STRAT_AUTO) {
    if (why && whylen)
      snprintf(why, whylen, "aggio_strategy=%s", h->strategy.str);
    return (int)strat; /* the strategy hint's values are the path's */
  }
  if (cb == AGGIO_DISABLE && no_indep)
    return path_says(why, whylen, AGGIO_PATH_NODE_LOCAL,
                     "romio_cb_write=disable with romio_no_indep_rw=true: only aggregators "
                     "touch the file, each writing its own node's data (local aggregation)");
  if (cb == AGGIO_ENABLE || no_indep)
    return path_says(why, whylen, AGGIO_PATH_TWO_PHASE,
                     cb == AGGIO_ENABLE ? "romio_cb_write=enable"
                                        : "romio_no_indep_rw=true: only aggregators write");
  if (cb == AGGIO_DISABLE)
    return path_says(why, whylen, AGGIO_PATH_INDEPENDENT, "romio_cb_write=disable");
  if (h->write_behind.num == AGGIO_ENABLE)
    return path_says(why, whylen, AGGIO_PATH_WRITE_BEHIND, "aggio_write_behind=enable");
  return path_says(why, whylen, AGGIO_PATH_AUTO, "no hint decides: auto's rules per call");
}

/* Appends ",host:count" (no comma first) to out (cap bytes, n used);
 * count < 0 is "*".  -1 when it does not fit. */
static int put_entry(char *out, size_t cap, size_t *n, const char *host, long long count) {
  char num[24];
  if (count < 0)
    snprintf(num, sizeof num, "*");
  else
    snprintf(num, sizeof num, "%lld", count);
  int w = snprintf(out + *n, cap - *n, "%s%s:%s", *n ? "," : "", host, num);
  if (w < 0 || (size_t)w >= cap - *n)
    return -1;
  *n += (size_t)w;
  return 0;
}

int aggio__cb_multiply(const char *config, int cb_nodes, int mult, int nprocs, char *out,
                       size_t cap, int *cb_nodes_out, char *err, size_t errlen) {
  size_t n = 0;
  if (!out || cap == 0 || !config)
    return -1;
  out[0] = '\0';
  if (mult < 1)
    mult = 1;
  for (const char *p = config; *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    struct config_entry ce;
    if (parse_entry(p, len, &ce) != 0) {
      snprintf(err, errlen, "cb_config_list \"%s\": bad entry \"%.*s\"", config, (int)len, p);
      return -1;
    }
    long long k = ce.count < 0 ? -1 : (long long)ce.count * mult;
    if (k > nprocs)
      k = nprocs; /* a node never has more ranks than the file */
    if (put_entry(out, cap, &n, ce.host, k) != 0) {
      snprintf(err, errlen, "cb_config_list \"%s\" is too long once multiplied", config);
      return -1;
    }
    p += len;
    if (*p == ',')
      p++;
  }
  long long c = (long long)cb_nodes * mult;
  *cb_nodes_out = cb_nodes <= 0 ? cb_nodes : (int)(c < nprocs ? c : nprocs);
  return 0;
}

/* ---- merging non-blocking operations ---------------------------------------- */

static int merge_clash(int64_t lo, int64_t hi, int64_t lj, int64_t hj) {
  return lo < hi && lj < hj && lo < hj && lj < hi;
}

int aggio__merge_prefix(const int64_t *ranges, int n, int *order) {
  int m = 0;
  for (; m < n; m++) {
    int clash = 0;
    for (int j = 0; j < m && !clash; j++)
      clash = merge_clash(ranges[2 * m], -ranges[2 * m + 1], ranges[2 * j], -ranges[2 * j + 1]);
    if (clash)
      break;
  }
  for (int i = 0; i < m; i++) { /* insertion sort by lo: m is small */
    int j = i;
    for (; j > 0 && ranges[2 * order[j - 1]] > ranges[2 * i]; j--)
      order[j] = order[j - 1];
    order[j] = i;
  }
  return m;
}

/* ---- the node cache --------------------------------------------------------- */

static int64_t window_align(int64_t align) { return align < 4096 ? 4096 : align; }

int64_t aggio__cache_window_bytes(int64_t block, int nslots, int64_t align, int64_t hdr_fixed,
                                  int64_t hdr_per_slot) {
  align = window_align(align);
  int64_t hdr = hdr_fixed + nslots * hdr_per_slot;
  return (hdr + align - 1) / align * align + align + nslots * block;
}

void aggio__cache_geometry(int64_t budget, int64_t stripe, int64_t align, int64_t hdr_fixed,
                           int64_t hdr_per_slot, int64_t *block, int *nslots) {
  int64_t b = stripe > 0 ? stripe : AGGIO_CACHE_BLOCK;
  align = window_align(align);
  while (b > align && b * AGGIO_CACHE_MIN_SLOTS > budget)
    b /= 2;
  if (b < align)
    b = align;
  int64_t n = budget / b;
  if (n > 1024)
    n = 1024;
  while (n > 2 && aggio__cache_window_bytes(b, (int)n, align, hdr_fixed, hdr_per_slot) > budget)
    n--;
  if (n < 2)
    n = 2;
  *block = b;
  *nslots = (int)n;
}
