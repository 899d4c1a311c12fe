/*
 * file.c - opening, closing and managing files: access modes, hints,
 * topology and aggregators, the storage back end and what it learns of the
 * file system, views, size, sync, atomicity, info.
 *
 * Every collective here ends in aggio__agree(), so that a failure on one
 * rank (a bad argument, a refused open) is an error on all of them.  Data
 * that write-behind still holds reaches the file before sync, close,
 * set_size and atomic mode (aggio__flush_all).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cyclic.h"
#include "engine.h"
#include "file_name.h"
#include "flatten.h"
#include "info.h"
#include "lustre_lock.h"
#include "open_files.h"
#include "placement.h"
#include "pool.h"
#include "writeback.h"
#include "registry.h"
#include "request.h"
#include "shared_fp.h"
#include "staging.h"
#include "subfiling.h"

/* ---- access modes --------------------------------------------------------- */

static int check_amode(int amode, struct aggio__err *e) {
  int rw = !!(amode & MPI_MODE_RDONLY) + !!(amode & MPI_MODE_WRONLY) +
           !!(amode & MPI_MODE_RDWR);
  if (rw != 1)
    return aggio__fail(e, AGGIO_ERR_AMODE, "amode must have exactly one of "
                       "MPI_MODE_RDONLY, MPI_MODE_WRONLY, MPI_MODE_RDWR (got %#x)", amode);
  if ((amode & MPI_MODE_RDONLY) && (amode & (MPI_MODE_CREATE | MPI_MODE_EXCL)))
    return aggio__fail(e, AGGIO_ERR_AMODE, "MPI_MODE_RDONLY cannot be combined "
                       "with MPI_MODE_CREATE or MPI_MODE_EXCL");
  if ((amode & MPI_MODE_RDWR) && (amode & MPI_MODE_SEQUENTIAL))
    return aggio__fail(e, AGGIO_ERR_AMODE, "MPI_MODE_SEQUENTIAL cannot be "
                       "combined with MPI_MODE_RDWR");
  return 0;
}

/* ---- opening -------------------------------------------------------------- */

/* What the storage part (storage.h) takes from the handle: fixed at
 * open, and the hints' share again whenever they change. */
static void store_part(aggio_file fh) {
  struct aggio__store *st = &fh->st;
  st->path = fh->path;
  st->rank = fh->rank;
  st->amode = fh->amode;
  st->io_node = fh->topo.io_node;
  st->obs = &fh->obs;
  st->faults = fh->faults;
  st->dio_ignored = fh->hints.direct_io.ignored;
  st->dio_ignored_len = sizeof fh->hints.direct_io.ignored;
  st->info_lock = &fh->info_lock;
}

static void store_hints(aggio_file fh) {
  int64_t su = fh->hints.striping_unit.num;
  fh->st.direct_wanted = fh->hints.direct_io.num != AGGIO_DISABLE;
  fh->st.align_unit = su > 0 ? su : fh->st.block;
  if (fh->st.ops && fh->st.ops->configured)
    fh->st.ops->configured(&fh->st);
}

/* Rank 0 creates (and checks MPI_MODE_EXCL) first; the others open once it
 * has.  With romio_no_indep_rw only aggregators open at all.  Rank 0 probes
 * the file system and every rank takes its answer. */
static int open_everywhere(aggio_file fh, struct aggio__err *e) {
  int rc0 = 0;
  if (fh->rank == 0)
    rc0 = aggio__store_open(&fh->st, 1, e);
  MPI_Bcast(&rc0, 1, MPI_INT, 0, fh->comm);
  if (rc0 != 0) {
    if (fh->rank != 0)
      aggio__fail(e, rc0, "rank 0 failed to open %s: %s", fh->path, aggio_strerror(rc0));
    return rc0;
  }
  int needs_fd =
      !fh->hints.no_indep_rw.num || fh->topo.my_aggr_index >= 0 || fh->rank == 0;
  if (fh->rank != 0 && needs_fd)
    aggio__store_open(&fh->st, 0, e);
  struct aggio__fs_info fi = {0};
  if (fh->rank == 0)
    fh->st.ops->probe(&fh->st, &fi);
  MPI_Bcast(&fi, (int)sizeof fi, MPI_BYTE, 0, fh->comm);
  fh->st.block = fi.block;
  fh->st.subfiles = fi.subfiles; /* the layout's, whatever the hints said */
  fh->st.subfile_stripe = fi.subfile_stripe;
  fh->st.dio_align = fi.dio_align > 4096 ? fi.dio_align : 4096;
  store_hints(fh);
  snprintf(fh->fstype, sizeof fh->fstype, "%s", fi.fstype);
  if (fi.dio_reason[0])
    snprintf(fh->hints.direct_io.ignored, sizeof fh->hints.direct_io.ignored, "%s",
             fi.dio_reason);
  if (fi.dio_ok && fh->st.opened)
    fh->st.ops->open_direct(&fh->st);
  return e->code;
}

/* Cray's lock modes: a group lock on this rank's descriptors when the
 * file is on Lustre and the build can take one, held until close or until
 * the hints stop asking for it (set_info); otherwise, and when the lock is
 * refused, the hint stays, marked ignored with the reason. */
static void lock_modes(aggio_file fh) {
  int want = aggio__lock_modes_mark(&fh->hints, fh->fstype) && fh->st.opened;
  if (!want && fh->group_lock && fh->st.ops->group_lock) {
    fh->st.ops->group_lock(&fh->st, fh->group_lock, 0);
    fh->group_lock = 0;
  }
  if (!want || fh->group_lock)
    return;
  long gid = aggio__lustre_group_id(fh->path);
  int rc = fh->st.ops->group_lock ? fh->st.ops->group_lock(&fh->st, gid, 1) : ENOTSUP;
  if (rc == 0) {
    fh->group_lock = gid;
    return;
  }
  struct aggio__hint_value *m[] = {&fh->hints.cray_cb_write_lock_mode,
                                   &fh->hints.cray_nocb_write_lock_mode};
  for (int i = 0; i < 2; i++)
    if (m[i]->num == 1)
      snprintf(m[i]->ignored, sizeof m[i]->ignored, "group lock refused: %s", strerror(rc));
}

/* Hints the file system cannot honour are kept, marked "ignored". */
static void mark_unhonoured(aggio_file fh) {
  lock_modes(fh);
  struct aggio__hint_value *sf = &fh->hints.striping_factor;
  if (sf->num > 0 && strcmp(fh->fstype, "lustre") != 0)
    snprintf(sf->ignored, sizeof sf->ignored, "file system %s does not stripe",
             fh->fstype);
  else if (sf->num > 0)
    snprintf(sf->ignored, sizeof sf->ignored, "aggio sets no Lustre layout; "
             "use lfs setstripe -c %lld", (long long)sf->num);
  if (!aggio__cb_domains_known(fh->hints.cb_domains.str))
    snprintf(fh->hints.cb_domains.ignored, sizeof fh->hints.cb_domains.ignored,
             "not contiguous, stripe_cyclic or automatic: automatic");
}

static void default_view(aggio_file fh) {
  fh->view.datarep = AGGIO_DATAREP_NATIVE;
  fh->view.disp = 0;
  fh->view.etype = MPI_BYTE;
  fh->view.filetype = MPI_BYTE;
  fh->view.etype_size = 1;
  fh->view.ft = NULL;
}

static const char *getenv_nonempty(const char *name) {
  const char *v = getenv(name);
  return v && *v && strcmp(v, "0") != 0 ? v : NULL;
}

/* Statistics, timers, placement display and trace, all off unless asked. */
static int observability_open(aggio_file fh, struct aggio__err *e) {
  if (fh->hints.stats.num || fh->hints.timers.num || fh->hints.placement_display.num) {
    fh->obs.stats = aggio__stats_new((int)fh->hints.timers.num);
    if (!fh->obs.stats)
      aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", fh->rank);
  }
  int rc = aggio__trace_open(fh, fh->hints.trace.str, fh->hints.trace_memory.num,
                             &fh->obs.trace);
  if (rc != 0)
    aggio__fail(e, rc, "rank %d: cannot start the trace: %s", fh->rank,
                aggio_strerror(rc));
  if (fh->obs.trace && fh->st.opened)
    aggio__trace_record(fh->obs.trace, AGGIO_OP_POSIX_OPEN, -1, 0, 0,
                        fh->obs.posix_open_t0, fh->obs.posix_open_t1, 0);
  if (fh->hints.placement_display.num)
    aggio__placement_display(fh);
  return e->code;
}

static int is_named(MPI_Datatype t) {
  int ni, na, nd, combiner;
  MPI_Type_get_envelope(t, &ni, &na, &nd, &combiner);
  return combiner == MPI_COMBINER_NAMED;
}

/* Frees the view's copies of the user's types (named types are not ours). */
static void drop_view(struct aggio__view *v) {
  if (v->etype != MPI_DATATYPE_NULL && !is_named(v->etype))
    MPI_Type_free(&v->etype);
  if (v->filetype != MPI_DATATYPE_NULL && !is_named(v->filetype))
    MPI_Type_free(&v->filetype);
  if (v->ft)
    aggio__flat_release(v->ft);
  v->ft = NULL;
}

/* Frees every strategy's per-file state.  Collective (windows, threads):
 * close and a change of hints call it on every rank. */
static void strategies_fini(aggio_file fh) {
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++) {
    const struct aggio__strategy_ops *s = aggio__strategy_at(fh, i);
    int was = aggio__ready(fh, i);
    aggio__set_ready(fh, i, 0); /* before it goes, for any thread that looks */
    if (was && s->fini)
      s->fini(fh, fh->strategy_state[i]);
    fh->strategy_state[i] = NULL;
  }
  fh->strategy_refused = 0;
}

static void release(aggio_file fh) {
  if (!fh)
    return;
  if (fh->st.ops)
    fh->st.ops->release(&fh->st);
  drop_view(&fh->view);
  aggio__staging_free(fh);
  aggio__topology_free(fh);
  if (fh->obs.trace)
    aggio__trace_free(fh->obs.trace);
  free(fh->obs.stats);
  if (fh->summary_op != MPI_OP_NULL)
    MPI_Op_free(&fh->summary_op);
  if (fh->summary_type != MPI_DATATYPE_NULL)
    MPI_Type_free(&fh->summary_type);
  if (fh->comm != MPI_COMM_NULL)
    MPI_Comm_free(&fh->comm);
  aggio__faults_free(fh->faults);
  free(fh->path);
  pthread_mutex_destroy(&fh->obs.trace_lock);
  pthread_mutex_destroy(&fh->info_lock);
  pthread_mutex_destroy(&fh->dio_lock);
  free(fh);
}

/* The reduction of the call summary (plan.c's merge as an MPI_Op). */
static void summary_reduce(void *in, void *inout, int *len, MPI_Datatype *type) {
  (void)type;
  const struct aggio__call_summary *a = in;
  struct aggio__call_summary *b = inout;
  for (int i = 0; i < *len; i++)
    aggio__summary_merge(&a[i], &b[i]);
}

static int make_summary_op(aggio_file fh) {
  if (MPI_Type_contiguous(AGGIO_SUMMARY_FIELDS, MPI_INT64_T, &fh->summary_type) != MPI_SUCCESS ||
      MPI_Type_commit(&fh->summary_type) != MPI_SUCCESS ||
      MPI_Op_create(summary_reduce, 1, &fh->summary_op) != MPI_SUCCESS)
    return AGGIO_ERR_MPI;
  return 0;
}

/* The handle, its path and its communicator.  AGGIO_FAULTS (fault.c) is
 * read first, so that the tests reach the handle's own allocations too;
 * a rank that fails here still takes part in the dup, and the open's
 * agreement that follows fails every rank. */
static aggio_file new_handle(MPI_Comm comm, const char *filename, int amode,
                             struct aggio__err *e) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  struct aggio__faults *faults = aggio__faults_new(rank);
  aggio_file fh = aggio__fault(faults, AGGIO_FAULT_ALLOC) ? NULL : calloc(1, sizeof *fh);
  if (!fh) {
    /* the others dup the communicator below: so does this rank, in vain */
    MPI_Comm unused;
    if (MPI_Comm_dup(comm, &unused) == MPI_SUCCESS)
      MPI_Comm_free(&unused);
    aggio__faults_free(faults);
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory for the file handle", rank);
    return NULL;
  }
  fh->faults = faults;
  fh->comm = MPI_COMM_NULL;
  fh->topo.node_comm = MPI_COMM_NULL;
  fh->summary_type = MPI_DATATYPE_NULL;
  fh->summary_op = MPI_OP_NULL;
  fh->sfp.win = MPI_WIN_NULL;
  fh->st.ops = aggio__storage_default();
  fh->strategies = aggio__strategy_registry();
  pthread_mutex_init(&fh->obs.trace_lock, NULL);
  pthread_mutex_init(&fh->info_lock, NULL);
  pthread_mutex_init(&fh->dio_lock, NULL);
  fh->amode = amode;
  fh->auto_previous = -1;
  fh->early_wb_min = -1; /* until the storage is chosen */
  fh->st.block = fh->st.dio_align = 4096;
  fh->rank = rank;
  default_view(fh);
  fh->path = aggio__fault(faults, AGGIO_FAULT_ALLOC) ? NULL : strdup(filename);
  store_part(fh);
  /* collective: every rank dups, whatever failed before on this rank */
  if (MPI_Comm_dup(comm, &fh->comm) != MPI_SUCCESS)
    fh->comm = MPI_COMM_NULL;
  if (!fh->path || fh->comm == MPI_COMM_NULL) {
    aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory or MPI_Comm_dup failed", rank);
    return fh;
  }
  /* The library must never abort the application: MPI errors on the
   * file's communicator come back as codes. */
  MPI_Comm_set_errhandler(fh->comm, MPI_ERRORS_RETURN);
  MPI_Comm_size(fh->comm, &fh->nprocs);
  if (make_summary_op(fh) != 0)
    aggio__fail(e, AGGIO_ERR_MPI, "rank %d: cannot create the summary reduction", fh->rank);
  return fh;
}

/* The back end aggio_storage names (storage.h).  The hint must match on
 * every rank (checked just before), so every rank fails here alike and
 * the open's next agreement carries the outcome. */
static int choose_storage(aggio_file fh, struct aggio__err *e) {
  fh->st.ops = aggio__storage_find(fh->hints.storage.str);
  store_hints(fh);
  if (fh->st.ops) {
    if (aggio__subfiling_choose(fh, e) == 0)
      aggio__staging_choose(fh, e);
    aggio__writeback_configure(fh); /* after the back end is settled: it asks it */
    return e->code;
  }
  fh->st.ops = aggio__storage_default(); /* release() calls it on no state */
  return aggio__fail(e, AGGIO_ERR_UNSUPPORTED,
                     "rank %d: aggio_storage \"%s\" is not a storage back end "
                     "(%s)", fh->rank, fh->hints.storage.str, aggio__storage_names());
}

/* Arguments every rank checks alone, agreed over the user's communicator. */
static int check_open_args(MPI_Comm comm, const char *filename, int amode,
                           aggio_file *fh_out, struct aggio__err *e) {
  int rank;
  MPI_Comm_rank(comm, &rank);
  if (!fh_out)
    aggio__fail(e, AGGIO_ERR_ARG, "rank %d: fh is NULL", rank);
  else if (!filename || !*filename)
    aggio__fail(e, AGGIO_ERR_NAME, "rank %d: file name is NULL or empty", rank);
  else if (check_amode(amode, e) != 0)
    snprintf(e->msg + strlen(e->msg), sizeof e->msg - strlen(e->msg), " (rank %d)", rank);
  int range[2] = {amode, -amode}, agreed[2] = {0, 0};
  /* open's entry: posted, while this process's operations progress */
  if (aggio__allreduce_progress(range, agreed, 2, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
    aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allreduce failed at open", rank);
  if (e->code == 0 && agreed[0] != -agreed[1])
    aggio__fail(e, AGGIO_ERR_NOT_SAME, "rank %d: amode differs between ranks", rank);
  return aggio__agree(comm, e);
}

int aggio_file_open(MPI_Comm comm, const char *filename, int amode,
                    MPI_Info info, aggio_file *fh_out) {
  filename = aggio__file_name_unprefixed(filename); /* "ufs:/path": file_name.h */
  struct aggio__err e = {0};
  if (comm == MPI_COMM_NULL) {
    aggio__fail(&e, AGGIO_ERR_ARG, "communicator is MPI_COMM_NULL");
    return aggio__finish(&e);
  }
  double t0 = aggio__now();
  if (fh_out)
    *fh_out = AGGIO_FILE_NULL;
  if (check_open_args(comm, filename, amode, fh_out, &e) != 0)
    return aggio__finish(&e);
  aggio_file fh = new_handle(comm, filename, amode, &e);
  if (aggio__agree(comm, &e) != 0) {
    release(fh);
    return aggio__finish(&e);
  }
  aggio__hints_gather(&fh->hints, info, fh->path, fh->rank, 1);
  if (aggio__hints_check_same(fh->comm, &fh->hints, fh->rank, &e) == 0 &&
      choose_storage(fh, &e) == 0 && aggio__topology(fh, &e) == 0) {
    aggio__subfiling_resolve(fh);
    aggio__staging_resolve(fh, &e);
  }
  if (aggio__agree(fh->comm, &e) == 0)
    open_everywhere(fh, &e);
  if (aggio__agree(fh->comm, &e) == 0)
    observability_open(fh, &e);
  if (aggio__agree(fh->comm, &e) != 0) {
    release(fh);
    return aggio__finish(&e);
  }
  aggio__sfp_open(fh); /* collective; without one, only the shared calls fail */
  mark_unhonoured(fh);
  fh->strategy = aggio__strategy_at(fh, (int)fh->hints.strategy.num);
  if (!fh->strategy)
    fh->strategy = aggio__strategy_at(fh, AGGIO_STRAT_AUTO);
  fh->strategy = aggio__staging_strategy(fh, fh->strategy);
  aggio__strategies_prepare(fh);
  if (amode & MPI_MODE_APPEND) { /* the pointers start at the end, on every rank */
    MPI_Offset size = 0;
    aggio__file_size(fh, &size, &e);
    fh->fp_ind = size;
    if (fh->rank == 0 && e.code == 0 && aggio__sfp_available(fh)) /* ordered by the agreement */
      aggio__sfp_set(fh, size, &e);
    if (aggio__agree(fh->comm, &e) != 0) {
      aggio__sfp_close(fh);
      strategies_fini(fh);
      release(fh);
      return aggio__finish(&e);
    }
  }
  if (fh->rank == 0 && (getenv_nonempty("AGGIO_HINTS_DISPLAY") ||
                        getenv_nonempty("MPICH_MPIIO_HINTS_DISPLAY")))
    aggio__hints_display(&fh->hints, fh->path, stdout);
  fh->obs.open_time = aggio__now() - t0;
  if (fh->obs.stats)
    aggio__phase_add(fh->obs.stats, AGGIO_P_OPEN, fh->obs.open_time);
  if (fh->obs.trace)
    aggio__trace_record(fh->obs.trace, AGGIO_OP_OPEN, -1, 0, 0, t0, aggio__now(), 0);
  aggio__finalize_hook(aggio_file_close);
  aggio__files_add(fh);
  *fh_out = fh;
  return AGGIO_SUCCESS;
}

/* Close: what write-behind holds reaches the file (its failures, and any
 * earlier deferred one, are this close's outcome on every rank), the
 * strategies' state and the I/O threads go, then the descriptors. */
int aggio_file_close(aggio_file *fhp) {
  struct aggio__err e = {0};
  if (!fhp || !*fhp) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  aggio_file fh = *fhp;
  double t0 = aggio__now();
  aggio__requests_settle(fh); /* MPI leaves it to the user; aggio finishes them */
  aggio__requests_detach(fh);
  aggio__files_remove(fh); /* its twins stop looking at it */
  aggio__flush_all(fh, &e);
  aggio__staging_order(fh, AGGIO_STAGE_POINT_CLOSE, &e); /* collective */
  if (fh->open.finalizing) /* nobody is left to hear of what could not be written */
    aggio__report_unwritten(fh, stderr);
  strategies_fini(fh);
  aggio__pool_quiet(fh->pool); /* none of its jobs outlives it */
  fh->pool = NULL;
  aggio__writeback_free(fh);
  fh->st.ops->close(&fh->st, &e);
  if (fh->open.finalizing) /* staged bytes the movers could not write */
    aggio__staging_report_unwritten(fh, stderr);
  aggio__sfp_close(fh); /* collective: every rank is done with the pointer */
  MPI_Barrier(fh->comm); /* every rank closed before any unlink */
  aggio__staging_hand_over(fh, &e); /* detach: every rank's stage files complete */
  if ((fh->amode & MPI_MODE_DELETE_ON_CLOSE) && fh->rank == 0 && fh->st.ops->remove)
    fh->st.ops->remove(&fh->st, &e);
  if (fh->obs.stats)
    aggio__phase_add(fh->obs.stats, AGGIO_P_CLOSE, aggio__now() - t0);
  if (fh->obs.trace) {
    aggio__obs_record(&fh->obs, AGGIO_OP_CLOSE, -1, 0, 0, t0, aggio__now(), 0);
    int rc = aggio__trace_close(fh, fh->obs.trace);
    fh->obs.trace = NULL;
    if (rc != 0)
      aggio__fail(&e, rc, "rank %d: writing the trace failed: %s", fh->rank,
                  aggio_strerror(rc));
  }
  if (fh->obs.stats)
    aggio__stats_close(fh);
  aggio__agree(fh->comm, &e);
  release(fh);
  *fhp = AGGIO_FILE_NULL;
  return aggio__finish(&e);
}

/* The file, and its stage directory when the hints name one: bytes
 * staged for a deleted file must not reappear at the next open. */
int aggio_file_delete(const char *filename, MPI_Info info) {
  struct aggio__err e = {0};
  filename = aggio__file_name_unprefixed(filename);
  if (filename && *filename) {
    struct aggio__hints *h = calloc(1, sizeof *h);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (h)
      aggio__hints_gather(h, info, filename, rank, 1);
    if (h && h->stage_dir.str[0])
      aggio__stage_remove(h->stage_dir.str, filename);
    free(h);
  }
  if (!filename || !*filename)
    aggio__fail(&e, AGGIO_ERR_NAME, "file name is NULL or empty");
  else if (aggio__subfile_detect(filename)) /* the layout and its subfiles */
    aggio__subfile_remove(filename, &e);
  else if (unlink(filename) != 0)
    aggio__fail(&e, aggio__errno_code(errno), "unlink(%s): %s", filename,
                strerror(errno));
  return aggio__finish(&e);
}

/* ---- views ---------------------------------------------------------------- */

/* MPI-IO forbids overlapping regions in the etype and the filetype of a file
 * opened for writing (MPI 3.1, 13.3); reading through them is allowed. */
static int writable(aggio_file fh) {
  return (fh->amode & (MPI_MODE_WRONLY | MPI_MODE_RDWR)) != 0;
}

/* The etype: a positive size, and for a writable file, blocks in order that
 * never overlap.  Sets *esize. */
static int check_etype(aggio_file fh, MPI_Datatype etype, int64_t *esize,
                       struct aggio__err *e) {
  char msg[256] = "";
  struct aggio__flat *ef = NULL;
  int rc = aggio__flatten(etype, &ef, msg, sizeof msg);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: etype: %s", fh->rank, msg);
  *esize = ef->size;
  int disjoint = aggio__flat_is_disjoint(ef);
  aggio__flat_release(ef);
  if (*esize <= 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: etype has size 0", fh->rank);
  if (writable(fh) && !disjoint)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: etype has overlapping blocks or "
                       "decreasing displacements, which MPI-IO forbids for a file "
                       "opened for writing", fh->rank);
  return 0;
}

/* The filetype's rules, given its flattened form: whole etypes (a size of 0
 * is allowed: a rank with nothing to access), non-negative and
 * non-decreasing displacements, and no overlap for a writable file, within
 * one instance.  Between instances the rules are checked per access
 * (io.c): HDF5 builds filetypes whose data run past their extent (resized
 * and struct types) and accesses one instance of them at a time, which MPI
 * libraries accept. */
static int filetype_rules(aggio_file fh, const struct aggio__flat *ft, int64_t esize,
                          struct aggio__err *e) {
  if (ft->size % esize != 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: filetype size %lld is not a "
                       "multiple of the etype size %lld", fh->rank, (long long)ft->size,
                       (long long)esize);
  if (ft->n > 0 && ft->off[0] < 0)
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: filetype has a negative "
                       "displacement (%lld); MPI-IO requires non-negative ones",
                       fh->rank, (long long)ft->off[0]);
  if (!aggio__flat_pieces_ordered(ft, 0))
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: filetype displacements must "
                       "be monotonically non-decreasing", fh->rank);
  if (writable(fh) && !aggio__flat_pieces_ordered(ft, 1))
    return aggio__fail(e, AGGIO_ERR_TYPE, "rank %d: filetype has overlapping regions, "
                       "which MPI-IO forbids for a file opened for writing", fh->rank);
  return 0;
}

/* The data representations by name (enum aggio__datarep's order). */
static const char *const datareps[] = {"native", "internal", "external32"};

static int datarep_of(aggio_file fh, const char *datarep, int *rep, struct aggio__err *e) {
  for (int i = 0; datarep && i < 3; i++)
    if (strcasecmp(datarep, datareps[i]) == 0) {
      *rep = i;
      return 0;
    }
  return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: data representation \"%s\" is not "
                     "supported (native, internal, external32)", fh->rank,
                     datarep ? datarep : "(null)");
}

/* external32 keeps the view's layout only where each type's elements have
 * their native sizes there (with MPICH, not MPI_LONG: 4 bytes against 8). */
static int external32_same_size(aggio_file fh, MPI_Datatype t, const char *what,
                                struct aggio__err *e) {
  MPI_Aint ext = 0;
  int size = 0;
  if (MPI_Pack_external_size("external32", 1, t, &ext) == MPI_SUCCESS &&
      MPI_Type_size(t, &size) == MPI_SUCCESS && ext == size)
    return 0;
  return aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: the %s's external32 size (%lld "
                     "bytes) differs from its native size (%d): aggio's external32 keeps "
                     "the native layout", fh->rank, what, (long long)ext, size);
}

static int check_view(aggio_file fh, MPI_Offset disp, MPI_Datatype etype,
                      MPI_Datatype filetype, const char *datarep, int *rep,
                      struct aggio__flat **ft, int64_t *esize,
                      struct aggio__err *e) {
  char msg[256] = "";
  if (datarep_of(fh, datarep, rep, e) != 0)
    return e->code;
  if (disp < 0)
    return aggio__fail(e, AGGIO_ERR_OFFSET, "rank %d: negative displacement %lld",
                       fh->rank, (long long)disp);
  int rc = check_etype(fh, etype, esize, e);
  if (rc != 0)
    return rc;
  rc = aggio__flatten(filetype, ft, msg, sizeof msg);
  if (rc != 0)
    return aggio__fail(e, rc, "rank %d: filetype: %s", fh->rank, msg);
  rc = filetype_rules(fh, *ft, *esize, e);
  if (rc == 0 && *rep == AGGIO_DATAREP_EXTERNAL32)
    rc = external32_same_size(fh, etype, "etype", e) ||
         external32_same_size(fh, filetype, "filetype", e) ? e->code : 0;
  if (rc != 0) {
    aggio__flat_release(*ft);
    *ft = NULL;
  }
  return rc;
}

/* MPI_DISPLACEMENT_CURRENT (files opened MPI_MODE_SEQUENTIAL only, MPI 3.1
 * section 13.3): the view starts at the shared pointer's byte position, the
 * same on every rank. */
static int view_disp(aggio_file fh, MPI_Offset *disp, struct aggio__err *e) {
  if (*disp != MPI_DISPLACEMENT_CURRENT)
    return 0;
  if (!(fh->amode & MPI_MODE_SEQUENTIAL))
    return aggio__fail(e, AGGIO_ERR_OFFSET, "rank %d: MPI_DISPLACEMENT_CURRENT needs a file "
                       "opened MPI_MODE_SEQUENTIAL", fh->rank);
  int64_t pos = 0;
  if (aggio__sfp_get(fh, &pos, e) != 0)
    return e->code;
  int rc = aggio__view_byte_offset(fh, pos, disp, e);
  return rc;
}

static MPI_Datatype keep_type(MPI_Datatype t) {
  MPI_Datatype d = t;
  if (!is_named(t))
    MPI_Type_dup(t, &d);
  return d;
}

/* After hints change: recompute what depends on them (the strategies'
 * state was flushed and freed before). */
static void hints_changed(aggio_file fh, struct aggio__err *e) {
  fh->auto_previous = -1;
  aggio__topology_free(fh);
  aggio__topology(fh, e);
  store_hints(fh);
  if (!fh->st.direct_wanted)
    fh->st.dio = AGGIO_DIO_OFF;
  mark_unhonoured(fh);
  const struct aggio__strategy_ops *s =
      aggio__strategy_at(fh, (int)fh->hints.strategy.num);
  fh->strategy = aggio__staging_strategy(fh, s ? s : aggio__strategy_at(fh, AGGIO_STRAT_AUTO));
}

/* The back end holds the open file, so it stays what open chose; a new
 * aggio_storage value is kept in the hints, marked ignored.  A subfiled
 * file's aggio_storage is honoured when it names the file's back end
 * (subfile) or its subfiles' (posix, or null). */
static void keep_storage(aggio_file fh, struct aggio__hints *h) {
  const struct aggio__storage_ops *asked = aggio__storage_find(h->storage.str);
  if (asked == fh->st.ops || (asked && asked == fh->st.subfile_ops))
    return;
  snprintf(h->storage.ignored, sizeof h->storage.ignored,
           "the storage back end is chosen at open: still %s",
           (fh->st.subfile_ops ? fh->st.subfile_ops : fh->st.ops)->name);
}

/* The hints a set_view brings, gathered on this rank alone: they are
 * checked to agree in set_view's one reduction. */
static void new_hints(aggio_file fh, MPI_Info info, struct aggio__hints *h) {
  *h = fh->hints;
  aggio__hints_gather(h, info, fh->path, fh->rank, 0);
  keep_storage(fh, h);
}

/* The agreed new hints in effect (the same decision on every rank: their
 * must-match hints agree).  A change of a must-match hint rebuilds what
 * depends on them, which may fail on some ranks only (a topology
 * rebuild): the caller agrees afterwards. */
static int apply_hints(aggio_file fh, const struct aggio__hints *h, int changed,
                       struct aggio__err *e) {
  if (changed && aggio__flush_all(fh, e) != 0)
    return e->code;
  if (changed) { /* a twin of the file must not look at state being freed */
    aggio__files_lock();
    strategies_fini(fh);
    aggio__files_unlock();
  }
  fh->hints = *h;
  fh->hints_hashed = 0;
  aggio__writeback_configure(fh);
  if (changed)
    hints_changed(fh, e);
  else /* the hints were set again: their "ignored" reasons with them */
    aggio__lock_modes_mark(&fh->hints, fh->fstype);
  return e->code;
}

/* set_view's reduction, one round for the common case (HDF5 and PnetCDF
 * set a view for every dataset or record): the outcome of the local
 * checks, the new must-match hints' hash as its minimum and maximum, and
 * whether any rank moved the shared pointer since its last reset.  Every
 * rank takes part whatever info it passed (ranks may pass MPI_INFO_NULL
 * beside a real info), and what depends on the hints (topology, shared
 * window) is rebuilt only when a must-match hint changed, which the vote
 * makes the same decision on every rank. */
enum { VOTE_HASH_MIN, VOTE_HASH_MAX_NOT, VOTE_SFP_MOVED_NEG, VOTE_N };

/* The hints in effect's hash, made once per change (set_view votes on it
 * for every dataset or record). */
static uint64_t hints_hash(aggio_file fh) {
  if (!fh->hints_hashed) {
    fh->hints_hash = aggio__hints_match_hash(&fh->hints);
    fh->hints_hashed = 1;
  }
  return fh->hints_hash;
}

static int vote(aggio_file fh, const struct aggio__hints *h, int64_t *v,
                struct aggio__err *e) {
  uint64_t hash = h == &fh->hints ? hints_hash(fh) : aggio__hints_match_hash(h);
  int64_t x;
  memcpy(&x, &hash, sizeof x); /* compared for equality only */
  v[VOTE_HASH_MIN] = x;
  v[VOTE_HASH_MAX_NOT] = ~x;
  v[VOTE_SFP_MOVED_NEG] = -(int64_t)aggio__sfp_moved(fh);
  aggio__agree_values(fh->comm, e, v, VOTE_N);
  if (e->code == 0 && v[VOTE_HASH_MIN] != ~v[VOTE_HASH_MAX_NOT])
    aggio__hints_mismatch(fh->comm, h, fh->rank, e); /* every rank takes this path */
  return e->code;
}

/* An info that brings no hint.  The hints in effect already have the
 * environment's on top (open, and every set_view or set_info with keys
 * applies them again), so without new keys they stay as they are: the
 * hints struct is large, and HDF5 and PnetCDF set a view per dataset or
 * record. */
static int no_keys(MPI_Info info) {
  int n = 0;
  return info == MPI_INFO_NULL || (MPI_Info_get_nkeys(info, &n) == MPI_SUCCESS && n == 0);
}

/* set_view's and set_info's hints: gathered here, voted on (v: the rest
 * of the vote, out) and put in effect; a changed must-match hint rebuilds
 * what depends on it, and the ranks agree on how that went. */
static int take_hints(aggio_file fh, MPI_Info info, int64_t *v, struct aggio__err *e) {
  if (no_keys(info)) /* nothing new: the hints in effect, voted on as they are */
    return vote(fh, &fh->hints, v, e);
  struct aggio__hints h;
  new_hints(fh, info, &h);
  if (vote(fh, &h, v, e) != 0)
    return e->code;
  int changed = !aggio__hints_match_equal(&fh->hints, &h); /* agreed: same everywhere */
  apply_hints(fh, &h, changed, e);
  if (changed) /* the rebuild may have failed on some ranks only */
    aggio__agree(fh->comm, e);
  return e->code;
}

/* The set_view record (docs/trace-format.md): displacement, etype size and
 * filetype size, and flag 4 when the filetype is contiguous, so that a
 * reader can turn later offsets (in etypes) into bytes. */
static void trace_view(aggio_file fh, double t0) {
  if (!fh->obs.trace)
    return;
  const struct aggio__flat *ft = fh->view.ft;
  int contiguous = !ft || (ft->n == 1 && ft->off[0] == 0 && ft->len[0] == ft->extent);
  aggio__obs_record(&fh->obs, AGGIO_OP_SET_VIEW, fh->view.disp, fh->view.etype_size,
                             ft ? ft->size : fh->view.etype_size, t0, aggio__now(),
                             2 | (contiguous ? 4 : 0));
}

int aggio_file_set_view(aggio_file fh, MPI_Offset disp, MPI_Datatype etype,
                        MPI_Datatype filetype, const char *datarep,
                        MPI_Info info) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  struct aggio__flat *ft = NULL;
  int64_t esize = 0;
  int rep = AGGIO_DATAREP_NATIVE;
  double t0 = fh->obs.trace ? aggio__now() : 0.0;
  aggio__requests_settle(fh); /* outstanding operations keep the view they began with */
  if (view_disp(fh, &disp, &e) == 0)
    check_view(fh, disp, etype, filetype, datarep, &rep, &ft, &esize, &e);
  int64_t v[VOTE_N];
  if (take_hints(fh, info, v, &e) != 0) {
    if (ft)
      aggio__flat_release(ft);
    return aggio__finish(&e);
  }
  struct aggio__view old = fh->view;
  fh->view.datarep = rep;
  fh->view.disp = disp;
  fh->view.etype = keep_type(etype);
  fh->view.filetype = keep_type(filetype);
  fh->view.etype_size = esize;
  fh->view.ft = ft;
  drop_view(&old);
  fh->fp_ind = 0;
  /* MPI resets both pointers.  The shared one is reset only when a rank
   * moved it since its last reset (the vote says), and then the agreement
   * keeps every rank from using it before rank 0 has reset it. */
  if (v[VOTE_SFP_MOVED_NEG] < 0) {
    if (fh->rank == 0 && aggio__sfp_available(fh))
      aggio__sfp_set(fh, 0, &e);
    aggio__agree(fh->comm, &e);
  }
  aggio__sfp_mark_reset(fh);
  if (e.code == 0)
    aggio__strategies_prepare(fh); /* what the new hints need made blocking */
  trace_view(fh, t0);
  return aggio__finish(&e);
}

int aggio_file_get_view(aggio_file fh, MPI_Offset *disp, MPI_Datatype *etype,
                        MPI_Datatype *filetype, char *datarep) {
  struct aggio__err e = {0};
  if (!fh)
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
  else if (!disp || !etype || !filetype || !datarep)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: NULL argument", fh->rank);
  else {
    *disp = fh->view.disp;
    *etype = keep_type(fh->view.etype);
    *filetype = keep_type(fh->view.filetype);
    strcpy(datarep, datareps[fh->view.datarep]);
  }
  return aggio__finish(&e);
}

/* ---- size, sync, atomicity, info ------------------------------------------ */

int aggio_file_get_size(aggio_file fh, MPI_Offset *size) {
  struct aggio__err e = {0};
  if (!fh)
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
  else if (!size)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: size is NULL", fh->rank);
  else
    aggio__file_size(fh, size, &e);
  return aggio__finish(&e);
}

/* Collective check that every rank passed the same value. */
static void check_same(aggio_file fh, int64_t v, const char *what, struct aggio__err *e) {
  int64_t range[2] = {v, -v}, agreed[2] = {0, 0};
  /* the call's entry: posted, while this process's operations progress */
  if (aggio__allreduce_progress(range, agreed, 2, MPI_INT64_T, MPI_MIN, fh->comm) !=
      MPI_SUCCESS)
    aggio__fail(e, AGGIO_ERR_MPI, "rank %d: MPI_Allreduce failed", fh->rank);
  if (e->code == 0 && agreed[0] != -agreed[1])
    aggio__fail(e, AGGIO_ERR_NOT_SAME, "rank %d: %s differs between ranks", fh->rank, what);
}

/* The arguments of set_size and preallocate (`call`): a size, the same on
 * every rank, of a file opened for writing and not sequential (MPI forbids
 * both there). */
static void check_size_call(aggio_file fh, MPI_Offset size, const char *call,
                            struct aggio__err *e) {
  if (size < 0)
    aggio__fail(e, AGGIO_ERR_OFFSET, "rank %d: negative size %lld", fh->rank,
                (long long)size);
  else if (fh->amode & MPI_MODE_RDONLY)
    aggio__fail(e, AGGIO_ERR_READ_ONLY, "rank %d: file is read-only", fh->rank);
  else if (fh->amode & MPI_MODE_SEQUENTIAL)
    aggio__fail(e, AGGIO_ERR_UNSUPPORTED, "rank %d: %s on a file opened "
                "MPI_MODE_SEQUENTIAL (MPI forbids it)", fh->rank, call);
  check_same(fh, size, "size", e);
}

int aggio_file_set_size(aggio_file fh, MPI_Offset size) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  double t0 = (fh->obs.trace || fh->obs.stats) ? aggio__now() : 0.0;
  aggio__requests_settle(fh);
  check_size_call(fh, size, "set_size", &e);
  /* held data reaches the file first, so that the truncation cuts it too
   * (staged bytes all below the size may stay staged: none is cut) */
  if (aggio__agree(fh->comm, &e) == 0 && aggio__flush_all(fh, &e) == 0 &&
      (aggio__staging_below(fh, size) || aggio__flush_store(fh, &e) == 0) && fh->rank == 0)
    aggio__store_truncate(&fh->st, size, &e);
  fh->coll_end = 0; /* the flush put every node's data in the file, then cut */
  aggio__agree(fh->comm, &e);
  if (fh->obs.trace)
    aggio__obs_record(&fh->obs, AGGIO_OP_SET_SIZE, size, 0, 0, t0, aggio__now(), 2);
  if (fh->obs.stats)
    aggio__phase_add(fh->obs.stats, AGGIO_P_SYNC, aggio__now() - t0);
  return aggio__finish(&e);
}

int aggio_file_preallocate(aggio_file fh, MPI_Offset size) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  double t0 = (fh->obs.trace || fh->obs.stats) ? aggio__now() : 0.0;
  aggio__requests_settle(fh);
  check_size_call(fh, size, "preallocate", &e);
  if (aggio__agree(fh->comm, &e) == 0 && fh->rank == 0)
    aggio__store_preallocate(&fh->st, size, &e);
  aggio__agree(fh->comm, &e);
  if (fh->obs.trace)
    aggio__obs_record(&fh->obs, AGGIO_OP_PREALLOCATE, size, 0, 0, t0, aggio__now(), 2);
  if (fh->obs.stats)
    aggio__phase_add(fh->obs.stats, AGGIO_P_SYNC, aggio__now() - t0);
  return aggio__finish(&e);
}

/* The native representation: a datatype's extent in the file is its
 * extent in memory. */
int aggio_file_get_type_extent(aggio_file fh, MPI_Datatype datatype, MPI_Aint *extent) {
  struct aggio__err e = {0};
  MPI_Aint lb = 0;
  if (!fh)
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
  else if (!extent)
    aggio__fail(&e, AGGIO_ERR_ARG, "rank %d: extent is NULL", fh->rank);
  else if (datatype == MPI_DATATYPE_NULL ||
           MPI_Type_get_extent(datatype, &lb, extent) != MPI_SUCCESS)
    aggio__fail(&e, AGGIO_ERR_TYPE, "rank %d: invalid datatype", fh->rank);
  return aggio__finish(&e);
}

/* Sync: what write-behind holds reaches the file, then the file reaches
 * the device; a deferred failure is this sync's outcome on every rank. */
int aggio_file_sync(aggio_file fh) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  double t0 = (fh->obs.trace || fh->obs.stats) ? aggio__now() : 0.0;
  aggio__requests_settle(fh); /* what they wrote is synced too */
  aggio__flush_local(fh, &e);
  /* what the flush gave is a deferred failure: reported if chosen */
  int64_t deferred = aggio__err_encode(e.code, fh->rank);
  aggio__staging_order(fh, AGGIO_STAGE_POINT_SYNC, &e); /* collective */
  aggio__fsync(fh, &e);
  aggio__deferred_agreed(fh, deferred, aggio__agree_encoded(fh->comm, &e));
  fh->coll_end = 0; /* every node's held data is in the file now */
  if (fh->obs.trace)
    aggio__obs_record(&fh->obs, AGGIO_OP_SYNC, -1, 0, 0, t0, aggio__now(), 2);
  if (fh->obs.stats)
    aggio__phase_add(fh->obs.stats, AGGIO_P_SYNC, aggio__now() - t0);
  return aggio__finish(&e);
}

/* Atomic mode: held data reaches the file first, and from then on no
 * strategy holds data between calls; accesses lock their byte ranges. */
int aggio_file_set_atomicity(aggio_file fh, int flag) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  aggio__requests_settle(fh);
  check_same(fh, flag != 0, "the atomicity flag", &e);
  if (aggio__agree(fh->comm, &e) == 0 && flag && aggio__flush_all(fh, &e) == 0 &&
      aggio__flush_store(fh, &e) == 0)
    fh->atomic = 1;
  else if (e.code == 0)
    fh->atomic = 0;
  fh->st.write_through = fh->atomic; /* a staging back end writes through */
  return aggio__finish(&e);
}

int aggio_file_get_atomicity(aggio_file fh, int *flag) {
  struct aggio__err e = {0};
  if (!fh || !flag)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else
    *flag = fh->atomic;
  return aggio__finish(&e);
}

int aggio_file_get_amode(aggio_file fh, int *amode) {
  struct aggio__err e = {0};
  if (!fh || !amode)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else
    *amode = fh->amode;
  return aggio__finish(&e);
}

int aggio_file_get_group(aggio_file fh, MPI_Group *group) {
  struct aggio__err e = {0};
  if (!fh || !group)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  else
    MPI_Comm_group(fh->comm, group);
  return aggio__finish(&e);
}

int aggio_file_set_info(aggio_file fh, MPI_Info info) {
  struct aggio__err e = {0};
  if (!fh) {
    aggio__fail(&e, AGGIO_ERR_BAD_FILE, "fh is NULL");
    return aggio__finish(&e);
  }
  aggio__requests_settle(fh);
  int64_t v[VOTE_N]; /* the vote is the entry: it progresses while it waits */
  if (take_hints(fh, info, v, &e) == 0)
    aggio__strategies_prepare(fh); /* what the new hints need made blocking */
  return aggio__finish(&e);
}

/* What the placement chose, and why not the topology when it could not. */
static void placement_info(aggio_file fh, MPI_Info info) {
  char list[MPI_MAX_INFO_VAL];
  MPI_Info_set(info, "aggio_placement_selected", fh->topo.placement_used);
  aggio__format_ranks(fh->topo.aggr, fh->topo.aggr ? fh->topo.naggr : 0, list,
                      sizeof list);
  if (list[0])
    MPI_Info_set(info, "aggio_aggregators", list);
  if (fh->topo.error[0])
    MPI_Info_set(info, "aggio_topology_error", fh->topo.error);
}

int aggio_file_get_info(aggio_file fh, MPI_Info *info_used) {
  struct aggio__err e = {0};
  if (!fh || !info_used)
    aggio__fail(&e, fh ? AGGIO_ERR_ARG : AGGIO_ERR_BAD_FILE, "NULL argument");
  if (e.code != 0)
    return aggio__finish(&e);
  /* a progress pass or an I/O thread of another thread may change these */
  pthread_mutex_lock(&fh->info_lock);
  if (aggio__hints_to_info(&fh->hints, fh->topo.naggr, info_used) != 0)
    aggio__fail(&e, AGGIO_ERR_MPI, "rank %d: MPI_Info_create failed", fh->rank);
  else
    placement_info(fh, *info_used);
  if (e.code == 0 && fh->strategy_used)
    MPI_Info_set(*info_used, "aggio_strategy_selected", fh->strategy_used);
  if (e.code == 0 && fh->exchange_used[0])
    MPI_Info_set(*info_used, "aggio_exchange_selected", fh->exchange_used);
  if (e.code == 0 && fh->exchange_why[0])
    MPI_Info_set(*info_used, "aggio_exchange_error", fh->exchange_why);
  pthread_mutex_unlock(&fh->info_lock);
  return aggio__finish(&e);
}
