/*
 * staging.c - the choice of the stage back end at open (staging.h).
 *
 * Staging wraps one ordinary POSIX file: the movers and `aggio stage
 * drain` write the final file with plain pwrite, so a subfiled file or the
 * null back end is not staged (the hint says so in MPI_File_get_info).
 * The stage holds each rank's own writes, so a staged file is written by
 * every rank (romio_no_indep_rw is ignored) through the independent
 * strategy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "stage_sim.h"
#include "staging.h"

extern const struct aggio__storage_ops aggio__storage_posix, aggio__storage_null,
    aggio__storage_stage;

static void ignored(struct aggio__hint_value *h, const char *why) {
  snprintf(h->ignored, sizeof h->ignored, "%s", why);
}

/* The index of h's value among names, or `fallback` with h marked
 * ignored (a malformed value is a warning, as for most hints). */
static int choice(struct aggio__hint_value *h, const char *const *names, int n,
                  int fallback, const char *why) {
  for (int i = 0; i < n; i++)
    if (strcmp(h->str, names[i]) == 0)
      return i;
  ignored(h, why);
  return fallback;
}

static const char *const drains[] = {"background", "at_close", "none", "detach"}; /* enum */
static const char *const syncs[] = {"stage", "final"};                   /* 1: final */
static const char *const checksums[] = {"record", "data", "auto"};       /* 2: auto */
static const char *const merges[] = {"rank", "node"};                    /* 1: node */

/* The open's session: rank 0's clock in microseconds, so that the
 * sessions of a stage directory sort by age (docs/staging.md). */
static void session_name(aggio_file fh) {
  long long us = 0;
  if (fh->rank == 0) {
    struct timeval tv;
    gettimeofday(&tv, NULL);
    us = (long long)tv.tv_sec * 1000000LL + tv.tv_usec;
  }
  MPI_Bcast(&us, 1, MPI_LONG_LONG, 0, fh->comm);
  snprintf(fh->st.stage.session, sizeof fh->st.stage.session, "%016llx",
           (unsigned long long)us);
}

/* A staged file written by every rank: romio_no_indep_rw does not apply. */
static void every_rank_writes(aggio_file fh) {
  if (fh->hints.no_indep_rw.num) {
    ignored(&fh->hints.no_indep_rw, "a staged file is written by every rank");
    fh->hints.no_indep_rw.num = 0;
  }
}

/* The null back end stores nothing to stage; the SimGrid build models a
 * stage on it where the platform has node-local devices (stage_sim.h),
 * on every rank or none.  Its movers drain in the background, and sync
 * waits for them unless aggio_stage_sync=stage. */
static int simulated(aggio_file fh) {
#ifndef AGGIO_SIMGRID
  ignored(&fh->hints.stage_dir, "the null back end stores nothing to stage");
  return 0;
#else
  char why[200];
  int mine = aggio__stage_sim_available(why, sizeof why), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, fh->comm);
  if (!all) {
    ignored(&fh->hints.stage_dir,
            mine ? "a rank's host models no node-local device" : why);
    return 0;
  }
  struct aggio__stage_conf *c = &fh->st.stage;
  snprintf(c->dir, sizeof c->dir, "%s", fh->hints.stage_dir.str);
  c->simulated = 1;
  c->drain = AGGIO_STAGE_BACKGROUND;
  if (strcmp(fh->hints.stage_drain.str, "background") != 0)
    ignored(&fh->hints.stage_drain, "the simulated stage drains in the background");
  c->sync_final =
      choice(&fh->hints.stage_sync, syncs, 2, 1, "not final or stage: final used");
  int64_t m = fh->hints.stage_movers.num; /* per node: the model's are the node's */
  c->movers = (int)(m < 1 ? 1 : m > 64 ? 64 : m);
  every_rank_writes(fh);
  return 0;
#endif
}

int aggio__staging_choose(aggio_file fh, struct aggio__err *e) {
  (void)e;
  fh->st.final_ops = NULL;
  if (fh->hints.stage_dir.str[0] == '\0')
    return 0;
  if (fh->st.ops == &aggio__storage_null)
    return simulated(fh);
  if (fh->st.ops != &aggio__storage_posix) {
    ignored(&fh->hints.stage_dir,
            "staging writes one ordinary file: this one is subfiled");
    return 0;
  }
  struct aggio__stage_conf *c = &fh->st.stage;
  snprintf(c->dir, sizeof c->dir, "%s", fh->hints.stage_dir.str);
  c->drain = choice(&fh->hints.stage_drain, drains, 4, AGGIO_STAGE_BACKGROUND,
                    "not background, at_close, none or detach: background used");
  c->sync_final = choice(&fh->hints.stage_sync, syncs, 2, 1,
                         "not final or stage: final used");
  int crc = choice(&fh->hints.stage_checksum, checksums, 3, 2,
                   "not data, record or auto: auto used");
  c->data_crc = crc == 2 ? -1 : crc; /* -1: auto, resolved by the back end */
  c->movers = 1;
  session_name(fh);
  every_rank_writes(fh);
  fh->st.final_ops = &aggio__storage_posix;
  fh->st.ops = &aggio__storage_stage;
  return 0;
}

/* aggio_stage_merge=node: this node's ranks, lowest first (the order of
 * fh->topo.node_comm), when there are two or more; 0, or -1 out of memory. */
static int node_ranks(aggio_file fh, struct aggio__err *e) {
  struct aggio__stage_conf *c = &fh->st.stage;
  int node = fh->topo.node_of_rank[fh->rank], n = 0;
  for (int r = 0; r < fh->nprocs; r++)
    n += fh->topo.node_of_rank[r] == node;
  if (n < 2)
    return 0;
  c->node_ranks = aggio__malloc(fh, (size_t)n * sizeof *c->node_ranks);
  c->node_counts = aggio__malloc(fh, (size_t)n * sizeof *c->node_counts);
  if (!c->node_ranks || !c->node_counts)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  for (int r = 0; r < fh->nprocs; r++)
    if (fh->topo.node_of_rank[r] == node)
      c->node_ranks[c->nnode++] = r;
  c->merge = 1;
  return 0;
}

int aggio__staging_resolve(aggio_file fh, struct aggio__err *e) {
  if (!aggio__staged(fh))
    return 0;
  int on_node = 1;
  if (fh->topo.node_comm != MPI_COMM_NULL)
    MPI_Comm_size(fh->topo.node_comm, &on_node);
  int merge = choice(&fh->hints.stage_merge, merges, 2, 1, "not node or rank: node used");
  if (merge && fh->topo.node_of_rank && fh->topo.node_comm != MPI_COMM_NULL &&
      node_ranks(fh, e) != 0)
    return e->code;
  /* merged, the node's first rank runs all the node's movers */
  int64_t m = fh->hints.stage_movers.num > 0 ? fh->hints.stage_movers.num : 1;
  int64_t mine = fh->st.stage.merge ? m : (m + on_node - 1) / on_node;
  fh->st.stage.movers = (int)(mine < 1 ? 1 : mine > 64 ? 64 : mine);
  return 0;
}

void aggio__staging_free(aggio_file fh) {
  free(fh->st.stage.node_ranks);
  free(fh->st.stage.node_counts);
  fh->st.stage.node_ranks = NULL;
  fh->st.stage.node_counts = NULL;
  fh->st.stage.merge = fh->st.stage.nnode = 0;
}

int aggio__staged(aggio_file fh) { return fh->st.final_ops != NULL; }

void aggio__staging_stats(aggio_file fh, FILE *f) {
  if (!aggio__staged(fh) && !fh->st.stage.simulated)
    return;
  fprintf(f, "  stage dir: %s%s\n  stage drain: %s\n", fh->st.stage.dir,
          fh->st.stage.simulated ? " (simulated: the platform's node-local device)" : "",
          drains[fh->st.stage.drain]);
}

const struct aggio__strategy_ops *
aggio__staging_strategy(aggio_file fh, const struct aggio__strategy_ops *wanted) {
  if (!aggio__staged(fh) && !fh->st.stage.simulated)
    return wanted;
  const struct aggio__strategy_ops *ind = aggio__strategy_at(fh, AGGIO_STRAT_INDEPENDENT);
  struct aggio__hint_value *h = &fh->hints.strategy;
  if (h->num != AGGIO_STRAT_AUTO && h->num != AGGIO_STRAT_INDEPENDENT)
    ignored(h, "a staged file is written by each rank into its node's stage: "
               "independent");
  return ind ? ind : wanted;
}

int64_t aggio__staging_report_unwritten(aggio_file fh, FILE *out) {
  char msg[AGGIO_ERRMSG_LEN + 2 * 4096];
  int64_t n = fh->st.ops->unwritten ? fh->st.ops->unwritten(&fh->st, msg, sizeof msg) : 0;
  if (n > 0)
    fprintf(out, "aggio: %s: %lld bytes of writes that had returned success could not be "
            "written to the file, which is incomplete: %s\n",
            fh->path, (long long)n, msg);
  return n;
}

int aggio__staging_below(aggio_file fh, int64_t size) {
  if (!aggio__staged(fh) || fh->st.write_through)
    return 0;
  int64_t end = aggio__stage_end(&fh->st), all = 0;
  MPI_Allreduce(&end, &all, 1, MPI_INT64_T, MPI_MAX, fh->comm);
  return all <= size;
}

/* ---- a drainer that outlives the program ---------------------------------------- */

static const char *drainer_path(void) {
  const char *env = getenv("AGGIO_STAGE_DRAINER");
  if (env && *env)
    return env;
  if (access(AGGIO_STAGE_DRAINER_INSTALLED, X_OK) == 0)
    return AGGIO_STAGE_DRAINER_INSTALLED;
  return access(AGGIO_STAGE_DRAINER_BUILT, X_OK) == 0 ? AGGIO_STAGE_DRAINER_BUILT : NULL;
}

void aggio__staging_hand_over(aggio_file fh, struct aggio__err *e) {
  if (!aggio__staged(fh) || fh->st.stage.drain != AGGIO_STAGE_DETACH ||
      (fh->amode & MPI_MODE_DELETE_ON_CLOSE))
    return;
  int on_node = 0; /* the node's stage directory is one: one drainer a node */
  if (fh->topo.node_comm != MPI_COMM_NULL)
    MPI_Comm_rank(fh->topo.node_comm, &on_node);
  struct aggio__err mine = {0};
  if (on_node == 0)
    aggio__stage_hand_over(&fh->st, drainer_path(), &mine);
  if (mine.code != 0 && e->code == 0)
    *e = mine;
}
