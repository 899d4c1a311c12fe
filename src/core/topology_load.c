/*
 * topology_load.c - the aggregator placement at open: reads the topology
 * (rank 0 reads, every rank parses the same bytes, so that all agree on the
 * topology and its errors) and moves the aggregators that cb_config_list
 * and cb_nodes chose (nodes.c) to where aggio_placement wants them, keeping
 * their number.  A topology that cannot be read or parsed is never an
 * error of the open: the placement falls back to greedy and says why in
 * aggio_file_get_info (aggio_topology_error).  The planning itself is pure
 * code (placement.c, topology*.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "placement.h"
#include "topology.h"

#define SLURM_TOPOLOGY_CONF "/etc/slurm/topology.conf"
#define TOPOLOGY_MAX_BYTES (64 << 20)

enum source { SRC_NONE = 0, SRC_FILE = 1, SRC_SLURM = 2 };

/* The source the hints name (the same on every rank: the hints must match).
 * An empty aggio_topology_slurm means "the system's, if there is one",
 * which only rank 0 looks for. */
static enum source source_of(aggio_file fh, const char **path) {
  if (fh->hints.topology_file.str[0]) {
    *path = fh->hints.topology_file.str;
    return SRC_FILE;
  }
  const char *s = fh->hints.topology_slurm.str;
  if (strcmp(s, "none") == 0 || strcmp(s, "disable") == 0)
    return SRC_NONE;
  *path = s[0] ? s : SLURM_TOPOLOGY_CONF;
  return SRC_SLURM;
}

/* Rank 0's read: hdr = {source, length or -1, errno}. */
static char *read_source(aggio_file fh, int *hdr) {
  const char *path = NULL;
  enum source src = source_of(fh, &path);
  hdr[0] = (int)src;
  hdr[1] = 0;
  hdr[2] = 0;
  if (src == SRC_NONE)
    return NULL;
  if (src == SRC_SLURM && !fh->hints.topology_slurm.str[0] && access(path, R_OK) != 0) {
    hdr[0] = SRC_NONE; /* no system topology: nothing to say */
    return NULL;
  }
  FILE *f = fopen(path, "r");
  if (!f) {
    hdr[1] = -1;
    hdr[2] = errno;
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *text = malloc(cap);
  errno = 0;
  int why = text ? 0 : ENOMEM;
  while (why == 0) {
    n += fread(text + n, 1, cap - n, f);
    if (n < cap)
      break; /* the end, or an error told apart below */
    char *more = cap < TOPOLOGY_MAX_BYTES ? realloc(text, 2 * cap) : NULL;
    why = cap >= TOPOLOGY_MAX_BYTES ? EFBIG : !more ? ENOMEM : 0;
    if (more) {
      text = more;
      cap *= 2;
    }
  }
  if (why == 0 && ferror(f))
    why = errno ? errno : EIO; /* a directory: EISDIR */
  fclose(f);
  if (why) {
    hdr[1] = -1;
    hdr[2] = why;
    free(text);
    return NULL;
  }
  hdr[1] = (int)n;
  return text;
}

/* 1 when every rank says ok. */
static int all_ok(aggio_file fh, int ok) {
  int all = 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, fh->comm) != MPI_SUCCESS)
    return 0;
  return all;
}

/* Shares the topology's text and parses it on every rank.  Returns 1 with
 * a topology in *t, 0 without one (fh->topo.error says why when there was
 * one to read), or -1 when the ranks could not agree (out of memory). */
static int load(aggio_file fh, struct aggio__topology *t) {
  int hdr[3] = {0, 0, 0};
  char *text = fh->rank == 0 ? read_source(fh, hdr) : NULL;
  if (MPI_Bcast(hdr, 3, MPI_INT, 0, fh->comm) != MPI_SUCCESS)
    return -1;
  const char *path = NULL;
  source_of(fh, &path);
  const char *hint = hdr[0] == SRC_FILE ? "aggio_topology_file" : "aggio_topology_slurm";
  if (hdr[0] == SRC_NONE)
    return 0;
  if (hdr[1] < 0) {
    snprintf(fh->topo.error, sizeof fh->topo.error, "%s: cannot read %.120s (%.60s)",
             hint, path, strerror(hdr[2]));
    return 0;
  }
  if (fh->rank != 0)
    text = malloc((size_t)hdr[1] + 1);
  int ok = text != NULL;
  if (!all_ok(fh, ok) || MPI_Bcast(text, hdr[1], MPI_CHAR, 0, fh->comm) != MPI_SUCCESS) {
    free(text);
    return -1;
  }
  char why[200];
  int rc = hdr[0] == SRC_FILE ? aggio__topo_parse_file(text, (size_t)hdr[1], t, why, sizeof why)
                              : aggio__topo_parse_slurm(text, (size_t)hdr[1], t, why, sizeof why);
  free(text);
  /* A parse error is the same on every rank; running out of memory while
   * parsing may not be, so the ranks agree on it. */
  if (!all_ok(fh, rc == 0 || strstr(why, "out of memory") == NULL)) {
    if (rc == 0)
      aggio__topo_free(t);
    return -1;
  }
  if (rc != 0) {
    snprintf(fh->topo.error, sizeof fh->topo.error, "%s %.60s: %.150s", hint, path, why);
    return 0;
  }
  return 1;
}

/* A host by its name, or by its short name (Slurm names nodes "nid001"
 * where the host may call itself "nid001.cluster.site"). */
static int find_host(const struct aggio__topology *t, const char *host) {
  int i = aggio__topo_find(t, host);
  const char *dot = strchr(host, '.');
  if (i >= 0 || !dot || dot - host >= AGGIO_TOPO_NAMELEN)
    return i;
  char shortname[AGGIO_TOPO_NAMELEN];
  snprintf(shortname, sizeof shortname, "%.*s", (int)(dot - host), host);
  return aggio__topo_find(t, shortname);
}

/* The topology node of each of the file's nodes: emulated nodes take the
 * topology's compute nodes in order; real nodes are found by host name.
 * Returns how many were found. */
static int map_nodes(aggio_file fh, const struct aggio__topology *t, int *topo_node) {
  int emulated = fh->hints.emulate_nodes.num > 0, found = 0;
  for (int i = 0; i < fh->topo.nnodes; i++) {
    topo_node[i] =
        emulated ? aggio__topo_compute_node(t, i) : find_host(t, fh->topo.node_names[i]);
    found += topo_node[i] >= 0;
  }
  return found;
}

/* The I/O node nearest to this rank's node, by name, when the topology
 * knows both. */
static void remember_io_node(aggio_file fh, const struct aggio__topology *t,
                             const int *topo_node) {
  int mine = topo_node[fh->topo.node_of_rank[fh->rank]];
  int io = mine >= 0 ? aggio__topo_nearest_io(t, mine) : -1;
  if (io >= 0)
    snprintf(fh->topo.io_node, sizeof fh->topo.io_node, "%s", t->nodes[io].name);
}

static void keep_for_calls(aggio_file fh, int p, struct aggio__topology *t, int **topo_node);
static const char *scope_refused(aggio_file fh, int p);

/* aggio_placement_scope=call on a file whose placement is made without a
 * topology: marked ignored (no collective: every rank returns here). */
static void refuse_scope(aggio_file fh, int p) {
  if (strcmp(fh->hints.placement_scope.str, "file") != 0)
    snprintf(fh->hints.placement_scope.ignored, sizeof fh->hints.placement_scope.ignored,
             "%s", scope_refused(fh, p));
}

static void note(aggio_file fh, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(aggio_file fh, const char *fmt, ...) {
  if (fh->topo.error[0])
    return; /* the first reason is the one to fix */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(fh->topo.error, sizeof fh->topo.error, fmt, ap);
  va_end(ap);
}

/* Moves the aggregators to where placement p wants them; t and topo_node
 * NULL: no topology. */
static int apply(aggio_file fh, int p, const struct aggio__topology *t, const int *topo_node,
                 struct aggio__err *e) {
  int per = fh->nprocs / (fh->topo.naggr > 0 ? fh->topo.naggr : 1);
  struct aggio__place_in in = {
      .nprocs = fh->nprocs,
      .node_of_rank = fh->topo.node_of_rank,
      .nnodes = fh->topo.nnodes,
      .topo_node = topo_node,
      .topo = t,
      .volume = NULL,
      /* per file, the volumes are unknown: each rank as if it filled an
       * equal share of one aggregator's round */
      .uniform = fh->hints.cb_buffer_size.num / (per > 0 ? per : 1) + 1};
  if (aggio__place(&in, p, fh->topo.naggr, fh->topo.aggr) != 0)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  return 0;
}

/* The placement to apply, from the hint's p, given the topology (have) and
 * how many of the file's nodes it knows. */
static int decide(aggio_file fh, int p, int have, int known) {
  const char *hint = fh->hints.topology_file.str[0] ? "aggio_topology_file"
                                                    : "aggio_topology_slurm";
  if (fh->topo.error[0]) { /* a broken topology is not silently replaced */
    strncat(fh->topo.error, "; greedy placement",
            sizeof fh->topo.error - strlen(fh->topo.error) - 1);
    return AGGIO_PLACE_GREEDY;
  }
  if (have && known == 0)
    note(fh, "%s: no node of this file is in the topology; %s", hint,
         p == AGGIO_PLACE_AUTO ? "greedy placement" : "default hop distances");
  /* auto: the cost model when there is a topology that knows the nodes and
   * the user did not place the aggregators by host (cb_config_list). */
  if (p == AGGIO_PLACE_AUTO)
    p = have && known > 0 && fh->hints.cb_config_list.set == AGGIO_HS_DEFAULT
            ? AGGIO_PLACE_TOPOLOGY
            : AGGIO_PLACE_GREEDY;
  return p;
}

int aggio__place_aggregators(aggio_file fh, int ready, struct aggio__err *e) {
  fh->topo.error[0] = '\0';
  fh->topo.io_node[0] = '\0';
  snprintf(fh->topo.placement_used, sizeof fh->topo.placement_used, "greedy");
  int p = aggio__placement_parse(fh->hints.placement.str);
  if (p < 0) {
    note(fh, "aggio_placement \"%s\" is not greedy, shortest, longest, topology or auto; "
             "greedy placement", fh->hints.placement.str);
    refuse_scope(fh, -1);
    return 0;
  }
  /* greedy needs no topology, but a named file is still read for the
   * I/O nodes (the simulated forwarding, storage_null.c) */
  if (p == AGGIO_PLACE_GREEDY && !fh->hints.topology_file.str[0]) {
    refuse_scope(fh, p);
    return 0;
  }
  /* From here on collective (p is the same on every rank), also on a rank
   * that is not ready: the open's agreement that follows fails them all. */
  struct aggio__topology t;
  memset(&t, 0, sizeof t);
  int have = load(fh, &t);
  if (have < 0) {
    note(fh, "%s", "out of memory reading the topology; greedy placement");
    return 0;
  }
  int rc = 0, known = 0;
  int *topo_node =
      ready && have ? malloc((size_t)fh->topo.nnodes * sizeof *topo_node) : NULL;
  if (ready && have && !topo_node)
    rc = aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  else if (topo_node) {
    known = map_nodes(fh, &t, topo_node);
    remember_io_node(fh, &t, topo_node);
  }
  if (ready && rc == 0) {
    p = decide(fh, p, have, known);
    if (p != AGGIO_PLACE_GREEDY)
      rc = apply(fh, p, have ? &t : NULL, topo_node, e);
    if (rc == 0)
      snprintf(fh->topo.placement_used, sizeof fh->topo.placement_used, "%s",
               aggio__placement_name(p));
  }
  if (strcmp(fh->hints.placement_scope.str, "file") != 0) /* the same on every rank */
    keep_for_calls(fh, ready && rc == 0 && have ? p : -1, &t, &topo_node);
  free(topo_node);
  if (have)
    aggio__topo_free(&t);
  return rc;
}

/* ---- per-call placement ----------------------------------------------------------- */

/* What the topology placement of a call needs: the topology and each
 * node's place in it (kept from open), and scratch for the volumes and
 * the aggregators it chooses. */
struct aggio__call_placement {
  struct aggio__topology topo;
  int *topo_node;   /* [nnodes] */
  int64_t *volume;  /* [nprocs] */
  int *aggr;        /* [naggr] */
};

void aggio__call_placement_free(aggio_file fh) {
  struct aggio__call_placement *c = fh->topo.call_place;
  if (!c)
    return;
  aggio__topo_free(&c->topo);
  free(c->topo_node);
  free(c->volume);
  free(c->aggr);
  free(c);
  fh->topo.call_place = NULL;
}

/* Why aggio_placement_scope=call cannot be honoured on this file, or NULL
 * (p: the placement applied at open, -1 when there was none). */
static const char *scope_refused(aggio_file fh, int p) {
  if (strcmp(fh->hints.placement_scope.str, "call") != 0)
    return "aggio_placement_scope is file or call; file";
  if (p != AGGIO_PLACE_TOPOLOGY)
    return "only the topology placement depends on the volumes; per file";
  if (fh->hints.strategy.num != AGGIO_STRAT_TWO_PHASE)
    return "needs aggio_strategy=two_phase (the other strategies keep state on the "
           "aggregators chosen at open); per file";
  if (fh->hints.no_indep_rw.num)
    return "romio_no_indep_rw: only the aggregators chosen at open have the file open; "
           "per file";
  return NULL;
}

/* Collective (every rank, when the hint is not "file"): keeps the
 * topology (t and topo_node move into fh->topo.call_place) when every rank can,
 * else marks the hint ignored. */
static void keep_for_calls(aggio_file fh, int p, struct aggio__topology *t, int **topo_node) {
  const char *why = scope_refused(fh, p);
  struct aggio__call_placement *c = why ? NULL : calloc(1, sizeof *c);
  if (c) {
    c->volume = malloc((size_t)fh->nprocs * sizeof *c->volume);
    c->aggr = malloc((size_t)fh->topo.naggr * sizeof *c->aggr);
  }
  int ok = c && c->volume && c->aggr, all = 0;
  if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, fh->comm) != MPI_SUCCESS)
    all = 0;
  if (!all) {
    if (c) {
      free(c->volume);
      free(c->aggr);
      free(c);
    }
    snprintf(fh->hints.placement_scope.ignored, sizeof fh->hints.placement_scope.ignored,
             "%s", why ? why : "out of memory on a rank; per file");
    return;
  }
  fh->hints.placement_scope.ignored[0] = '\0';
  c->topo = *t; /* the topology's arrays move with it */
  memset(t, 0, sizeof *t);
  c->topo_node = *topo_node;
  *topo_node = NULL;
  fh->topo.call_place = c;
}

int64_t *aggio__call_volume(aggio_file fh) { return fh->topo.call_place->volume; }

int aggio__place_call(aggio_file fh, const int64_t *volume) {
  struct aggio__call_placement *c = fh->topo.call_place;
  struct aggio__place_in in = {.nprocs = fh->nprocs,
                               .node_of_rank = fh->topo.node_of_rank,
                               .nnodes = fh->topo.nnodes,
                               .topo_node = c->topo_node,
                               .topo = &c->topo,
                               .volume = volume};
  if (aggio__place(&in, AGGIO_PLACE_TOPOLOGY, fh->topo.naggr, c->aggr) != 0)
    return -1;
  return memcmp(c->aggr, fh->topo.aggr, (size_t)fh->topo.naggr * sizeof *c->aggr) != 0;
}

void aggio__place_call_commit(aggio_file fh) {
  pthread_mutex_lock(&fh->info_lock); /* get_info may list them meanwhile */
  memcpy(fh->topo.aggr, fh->topo.call_place->aggr,
         (size_t)fh->topo.naggr * sizeof *fh->topo.aggr);
  aggio__find_my_aggr(fh);
  pthread_mutex_unlock(&fh->info_lock);
}
