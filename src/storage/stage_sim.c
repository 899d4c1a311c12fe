/*
 * stage_sim.c - staging in the SimGrid build (stage_sim.h).
 *
 * SMPI simulates MPI calls, not an application's threads or its POSIX I/O
 * (SIMULATION.md), so the stage back end, whose movers are threads that
 * copy files, cannot run there.  What a staged checkpoint costs at scale
 * is still worth seeing: the call returns at the node-local device's
 * speed, and the drain competes for the I/O nodes' links with every other
 * node's.  This file models exactly that, with simulated resources:
 *
 *   the device   one per node (host), the platform's host properties
 *                aggio_stage_write_bw and aggio_stage_read_bw (bytes/s):
 *                a single server, first come first served, shared by the
 *                node's ranks and its movers; a rank's staged write waits
 *                until the device has written it (simulated time);
 *   the movers   `movers` simulated actors per node (SimGrid actors, which
 *                SMPI does run, made by the node's first staged open):
 *                each takes the oldest queued write, reads it from the
 *                device, and sends its bytes to the rank's I/O node over
 *                the simulated network (sg_host_sendto), sharing the links
 *                with every other transfer, as the null back end's direct
 *                writes do;
 *   sync, close  wait until the movers drained every byte the rank staged
 *                (aggio_stage_sync=final, the default).
 *
 * Nothing else of the stage is modelled: no index, no records, no merging
 * of a node's adjacent records (each write drains as one transfer), no
 * failures.  The model's state lives on the heap and on the host
 * (sg_host_set_data), never in globals, because SMPI privatizes globals
 * per rank and the movers belong to no rank.
 */
#include "stage_sim.h"

#include <stdio.h>
#include <stdlib.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/semaphore.h>

#define NODE_MAGIC 0x61676773u

struct item {
  int64_t len;
  struct aggio__stage_sim *owner;
  struct item *next;
};

/* A node's device and movers: one per host, in the host's data. */
struct node_model {
  unsigned magic;
  double wbw, rbw; /* bytes/s */
  double free_at;  /* when the device is done with what it was given */
  struct item *head, *tail;
  sg_sem_t queued; /* one token per item waiting for a mover */
};

struct aggio__stage_sim {
  struct node_model *node;
  sg_host_t to;     /* the I/O node, or NULL */
  sg_sem_t drained; /* one token per item drained */
  int64_t handed, waited;
  int looked_up;    /* `to` was looked up (at the first write: the placement
                     * names the I/O node after the storage opened) */
};

static double property(sg_host_t h, const char *name) {
  const char *v = sg_host_get_property_value(h, name);
  char *end = NULL;
  double x = v ? strtod(v, &end) : 0.0;
  return v && end != v && *end == '\0' && x > 0.0 ? x : 0.0;
}

int aggio__stage_sim_available(char *why, size_t len) {
  sg_host_t h = sg_host_self();
  const struct node_model *n = sg_host_get_data(h);
  if (n && n->magic != NODE_MAGIC) {
    snprintf(why, len, "host %s's data is not aggio's", sg_host_get_name(h));
    return 0;
  }
  if (property(h, "aggio_stage_write_bw") > 0.0 &&
      property(h, "aggio_stage_read_bw") > 0.0)
    return 1;
  snprintf(why, len,
           "the simulated platform models no node-local device on %s (host properties "
           "aggio_stage_write_bw and aggio_stage_read_bw)",
           sg_host_get_name(h));
  return 0;
}

/* len bytes through the device at bw, behind what it already has. */
static void device(struct node_model *n, int64_t len, double bw) {
  double now = simgrid_get_clock(), start = n->free_at > now ? n->free_at : now;
  n->free_at = start + (double)len / bw;
  sg_actor_sleep_until(n->free_at);
}

/* A mover: forever the oldest queued write, read from the device and sent
 * to its I/O node.  A daemon: it ends with the simulation. */
static void mover(int argc, char *argv[]) {
  (void)argc;
  (void)argv;
  sg_actor_daemonize(sg_actor_self());
  sg_host_t self = sg_host_self();
  struct node_model *n = sg_host_get_data(self);
  for (;;) {
    sg_sem_acquire(n->queued);
    struct item *it = n->head;
    n->head = it->next;
    if (!n->head)
      n->tail = NULL;
    device(n, it->len, n->rbw);
    if (it->owner->to)
      sg_host_sendto(self, it->owner->to, (double)it->len);
    sg_sem_release(it->owner->drained);
    free(it);
  }
}

/* The host's model, made (with its movers) by the first rank that asks,
 * and kept for the simulation's life: later files of the host share it
 * and its movers, whatever their own aggio_stage_movers. */
static struct node_model *node_of_host(int movers) {
  sg_host_t h = sg_host_self();
  struct node_model *n = sg_host_get_data(h);
  if (n)
    return n;
  n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  n->magic = NODE_MAGIC;
  n->wbw = property(h, "aggio_stage_write_bw");
  n->rbw = property(h, "aggio_stage_read_bw");
  n->queued = sg_sem_init(0);
  sg_host_set_data(h, n);
  for (int i = 0; i < (movers > 0 ? movers : 1); i++)
    sg_actor_create("aggio-mover", h, mover, 0, NULL);
  return n;
}

struct aggio__stage_sim *aggio__stage_sim_open(int movers) {
  struct aggio__stage_sim *s = calloc(1, sizeof *s);
  if (!s)
    return NULL;
  s->node = node_of_host(movers);
  if (!s->node) {
    free(s);
    return NULL;
  }
  s->drained = sg_sem_init(0);
  return s;
}

void aggio__stage_sim_write(struct aggio__stage_sim *s, const char *io_host,
                            int64_t len) {
  if (!s->looked_up) {
    s->to = io_host && io_host[0] ? sg_host_by_name(io_host) : NULL;
    s->looked_up = 1;
  }
  struct item *it = malloc(sizeof *it);
  device(s->node, len, s->node->wbw);
  if (!it) { /* nothing to queue it with: it drains now, in the caller */
    if (s->to)
      sg_host_sendto(sg_host_self(), s->to, (double)len);
    return;
  }
  *it = (struct item){.len = len, .owner = s};
  if (s->node->tail)
    s->node->tail->next = it;
  else
    s->node->head = it;
  s->node->tail = it;
  s->handed++;
  sg_sem_release(s->node->queued);
}

void aggio__stage_sim_wait(struct aggio__stage_sim *s) {
  for (; s && s->waited < s->handed; s->waited++)
    sg_sem_acquire(s->drained);
}

void aggio__stage_sim_close(struct aggio__stage_sim *s) {
  if (!s)
    return;
  aggio__stage_sim_wait(s);
  sg_sem_destroy(s->drained);
  free(s);
}
