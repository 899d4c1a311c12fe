/*
 * storage_null.c - the null back end of the storage edge (storage.h),
 * chosen with aggio_storage=null: every write is accepted, counted in the
 * statistics and the trace like a POSIX write, and thrown away; every read
 * returns zeros.  No file is created, opened or removed.
 *
 * Why: the time of a collective write is the aggregation (exchanges,
 * copies, rounds) plus the file system.  TAPIOCA's evaluation writes to
 * /dev/null to measure the first alone; this back end does the same
 * without a device file, so it also runs where there is no file I/O at
 * all: SimGrid's SMPI simulates the network, not POSIX calls
 * (SIMULATION.md).
 *
 * What a program sees: the file behaves as an endless run of zeros that
 * swallows writes.  A read never meets end of file (it returns every byte
 * asked, zeros); get_size returns the end of the furthest byte this
 * process wrote or set (set_size, preallocate), because no process shares
 * another's null file; sync and byte-range locks succeed at once.
 *
 * In the SimGrid build, a write still travels to the rank's I/O node: on
 * the machines simulated (IBM Blue Gene/Q), compute nodes have no file
 * system of their own and every write, even to /dev/null, is shipped over
 * the network to an I/O node, which is the forwarding term C2 of
 * TAPIOCA's cost model.  When the topology file names the I/O nodes
 * (st->io_node, the one nearest to this rank's node, which the placement
 * assumed too) and the simulated platform has a host of that name, each
 * write is a simulated transfer of its bytes from this host to that one
 * (sg_host_sendto), which the writer waits for, sharing the links with
 * every other transfer.  Without a topology it ships nothing.
 *
 * With aggio_stage_dir set in the SimGrid build (st->stage.simulated), a
 * write is staged instead: it waits for the node's simulated device, and
 * the node's simulated movers ship it to the I/O node behind the program;
 * sync and close wait for them (stage_sim.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "stage_sim.h"
#include "storage.h"

#ifdef AGGIO_SIMGRID
#include <simgrid/host.h>
#endif

/* The end of what this process wrote or set (I/O threads write too, so it
 * moves with atomics), and in the SimGrid build the I/O node's host. */
struct null_state {
  int64_t end;
#ifdef AGGIO_SIMGRID
  sg_host_t io_host;
  int io_looked_up;
  struct aggio__stage_sim *stage; /* st->stage.simulated: the model's */
#endif
};

static struct null_state *ns(struct aggio__store *st) { return st->state; }

static void raise_end(struct aggio__store *st, int64_t end) {
  int64_t old = __atomic_load_n(&ns(st)->end, __ATOMIC_RELAXED);
  while (old < end &&
         !__atomic_compare_exchange_n(&ns(st)->end, &old, end, 1, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED))
    ;
}

static int null_open(struct aggio__store *st, int create, struct aggio__err *e) {
  (void)create; /* nothing to create: MPI_MODE_EXCL never finds a file */
  if (!st->state)
    st->state = aggio__fault(st->faults, AGGIO_FAULT_ALLOC)
                    ? NULL
                    : calloc(1, sizeof(struct null_state));
  if (!st->state)
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
#ifdef AGGIO_SIMGRID
  if (st->stage.simulated && !ns(st)->stage &&
      !(ns(st)->stage = aggio__stage_sim_open(st->stage.movers)))
    return aggio__fail(e, AGGIO_ERR_NOMEM, "rank %d: out of memory", st->rank);
#endif
  st->opened = 1;
  return 0;
}

/* The simulated stage's drain of this rank's writes (sync, close). */
static void wait_drained(struct aggio__store *st) {
#ifdef AGGIO_SIMGRID
  if (ns(st))
    aggio__stage_sim_wait(ns(st)->stage);
#else
  (void)st;
#endif
}

/* No file system: the smallest block, and no direct I/O to open. */
static void null_probe(struct aggio__store *st, struct aggio__fs_info *fi) {
  memset(fi, 0, sizeof *fi);
  fi->block = fi->dio_align = 4096;
  snprintf(fi->fstype, sizeof fi->fstype, "null");
  if (st->direct_wanted)
    snprintf(fi->dio_reason, sizeof fi->dio_reason, "aggio_storage=null stores nothing");
}

static void null_open_direct(struct aggio__store *st) { st->dio = AGGIO_DIO_OFF; }

static int null_close(struct aggio__store *st, struct aggio__err *e) {
  (void)e;
  wait_drained(st);
  return 0;
}

static void null_release(struct aggio__store *st) {
#ifdef AGGIO_SIMGRID
  if (st->state)
    aggio__stage_sim_close(ns(st)->stage);
#endif
  free(st->state);
  st->state = NULL;
}

/* The simulated forwarding of len bytes to the I/O node (a no-op outside
 * the SimGrid build, or without an I/O node of that name), or their
 * simulated staging. */
static void forward(struct aggio__store *st, int64_t len) {
#ifdef AGGIO_SIMGRID
  struct null_state *s = ns(st);
  if (s->stage) {
    aggio__stage_sim_write(s->stage, st->io_node, len);
    return;
  }
  if (!s->io_looked_up) { /* the placement fills io_node after the storage opens */
    s->io_host = st->io_node[0] ? sg_host_by_name(st->io_node) : NULL;
    s->io_looked_up = 1;
  }
  if (s->io_host && len > 0)
    sg_host_sendto(sg_host_self(), s->io_host, (double)len);
#else
  (void)st;
  (void)len;
#endif
}

static int null_pwrite(struct aggio__store *st, const void *buf, int64_t len, int64_t off, int flags,
                       struct aggio__err *e) {
  (void)buf;
  (void)e;
  double t0 = (st->obs->trace || st->obs->stats) ? aggio__now() : 0.0;
  forward(st, len);
  raise_end(st, off + len);
  aggio__storage_note(st, 1, off, len, 0, t0, flags);
  return 0;
}

static int null_pread(struct aggio__store *st, void *buf, int64_t len, int64_t off, int64_t *got,
                      int flags, struct aggio__err *e) {
  (void)e;
  double t0 = (st->obs->trace || st->obs->stats) ? aggio__now() : 0.0;
  memset(buf, 0, (size_t)len);
  *got = len;
  aggio__storage_note(st, 0, off, len, 0, t0, flags);
  return 0;
}

static int null_sync(struct aggio__store *st, struct aggio__err *e) {
  (void)e;
  if (st->stage.sync_final)
    wait_drained(st);
  return 0;
}

static int null_size(struct aggio__store *st, int64_t *size, struct aggio__err *e) {
  (void)e;
  *size = ns(st) ? __atomic_load_n(&ns(st)->end, __ATOMIC_RELAXED) : 0;
  return 0;
}

static int null_truncate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  (void)e;
  __atomic_store_n(&ns(st)->end, size, __ATOMIC_RELAXED);
  return 0;
}

static int null_preallocate(struct aggio__store *st, int64_t size, struct aggio__err *e) {
  (void)e;
  raise_end(st, size);
  return 0;
}

/* Nothing is stored, so there is nothing for atomic mode to order. */
static int null_lock(struct aggio__store *st, int64_t off, int64_t len, int is_write,
                     struct aggio__err *e) {
  (void)st;
  (void)off;
  (void)len;
  (void)is_write;
  (void)e;
  return 0;
}

const struct aggio__storage_ops aggio__storage_null = {
    .name = "null",
    .open = null_open,
    .probe = null_probe,
    .open_direct = null_open_direct,
    .close = null_close,
    .group_lock = NULL, /* no Lustre: the lock-mode hints are reported ignored */
    .pwrite = null_pwrite,
    .pread = null_pread,
    .sync = null_sync,
    .size = null_size,
    .truncate = null_truncate,
    .preallocate = null_preallocate,
    .lock = null_lock,
    .remove = NULL, /* no file to remove */
    .release = null_release,
};
