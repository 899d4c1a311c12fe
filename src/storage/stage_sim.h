/*
 * stage_sim.h - staging as the SimGrid build models it (stage_sim.c): the
 * null back end's writes to a staged file land on a simulated node-local
 * device and a node's movers drain them to the rank's I/O node behind the
 * program (SIMULATION.md, "Staging").  Built into the SimGrid build only
 * (src/CMakeLists.txt): the other builds call none of it.
 */
#ifndef AGGIO_STAGE_SIM_H
#define AGGIO_STAGE_SIM_H

#include <stddef.h>
#include <stdint.h>

/* The platform models a node-local device on this rank's host (host
 * properties aggio_stage_write_bw and aggio_stage_read_bw, bytes/s): 1,
 * else 0 with why in `why`. */
int aggio__stage_sim_available(char *why, size_t len);

/* A rank's side of one staged file: what it handed to the movers and what
 * came back drained. */
struct aggio__stage_sim;

/* Joins this host's model (made by the first rank of the host that needs
 * it, with `movers` mover actors).  NULL out of memory. */
struct aggio__stage_sim *aggio__stage_sim_open(int movers);
/* A staged write of len bytes: the device writes it (the caller waits, in
 * simulated time, behind what the host's device has queued), then it is
 * queued for the movers, which send it to io_host (the rank's I/O node,
 * looked up at the first write; "" or an unknown host: nowhere, the
 * device's read alone). */
void aggio__stage_sim_write(struct aggio__stage_sim *s, const char *io_host,
                            int64_t len);
/* Waits until the movers drained every byte this rank staged. */
void aggio__stage_sim_wait(struct aggio__stage_sim *s);
/* Waits, then frees. */
void aggio__stage_sim_close(struct aggio__stage_sim *s);

#endif
