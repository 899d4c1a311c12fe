/*
 * stage_dir.h - a stage directory on disk (stage_dir.c, docs/staging.md),
 * for the stage back end (storage_stage.c).  Every function returns 0 or
 * an errno value unless it says otherwise.
 */
#ifndef AGGIO_STAGE_DIR_H
#define AGGIO_STAGE_DIR_H

#include <stddef.h>
#include <stdint.h>

#define AGGIO_STAGE_MOVE_MAX (8 << 20) /* bytes moved (or replayed) per transfer */
/* Background movers (a rank's, storage_stage.c, or a node's, stage_node.c)
 * leave the processor to the program's own staged writes: they start a
 * record only once no write was staged for this long, in seconds (a
 * checkpoint's burst of writes is absorbed at the fast tier's rate and
 * drained in the computation after it; sync and close do not wait for
 * it).  Measured (ior-hard, 4 ranks on 2 cores): with the movers running
 * during the burst the writes returned at 680 MiB/s, without at 1800.
 * They run at the program's priority: niced (10), they got so little of
 * the processor beside a computing program that the drain was left to
 * the final sync (compute/checkpoint loop, 2 ranks on 2 cores: 1.02-1.18x
 * the direct run's time, against 0.78-0.83x at the same priority). */
#define AGGIO_STAGE_QUIET_S 0.005

/* pwrite / pread of all len bytes at off (short transfers retried; a read
 * that meets the end of the file is EIO: a staged byte is missing). */
int aggio__stage_put_all(int fd, const void *buf, int64_t len, int64_t off);
int aggio__stage_get_all(int fd, void *buf, int64_t len, int64_t off);
/* A writer's movers' progress written to its .drained (fd; -1: none):
 * records moved in order, bytes moved, when the movers started (seconds
 * since 1970), and now; at most every 0.25 s after the last one (*noted,
 * updated), unless forced (the end of a drain).  Progress only: nothing
 * trusts the file, so a failure is ignored. */
void aggio__stage_put_drained(int fd, double *noted, int force, int64_t records,
                              int64_t bytes, double started);

/* mkdir -p, each level 0700 (the stage holds the program's data). */
int aggio__stage_make_dirs(const char *path);
/* The directory's lock held exclusively: a descriptor, or -1 with errno
 * (ENOENT: the directory is gone).  Unlock with aggio__stage_unlock. */
int aggio__stage_lock(const char *dir);
void aggio__stage_unlock(int fd);
/* Writes dir's manifest for the final file abs unless there is one. */
int aggio__stage_write_manifest(const char *dir, const char *abs);
/* The last writer out removes the manifest, the lock and the directory. */
void aggio__stage_tidy(const char *dir);
/* A writer holds a shared lock on its index while its files are open
 * (taken on index_fd when it makes them; the kernel gives it back when the
 * descriptor closes, also when the process dies): a replay leaves such a
 * live writer's files alone.  0, or an errno value. */
int aggio__stage_hold_live(int index_fd);
/* Replays, under the lock, the writers of dir other than session `mine`
 * whose files no process has open (aggio__stage_hold_live) into the final
 * file, then removes their files: what a killed job, or
 * aggio_stage_drain=none, left behind.  0 also when dir is gone. */
int aggio__stage_replay(const char *dir, const char *final, const char *mine);
/* Starts `drainer --detach --log log dir` (aggio-stage-drain), without
 * LD_PRELOAD, and waits until it has detached (it forks, its first
 * process exits): 0 once the detached one runs, else an errno value. */
int aggio__stage_spawn_drainer(const char *drainer, const char *dir, const char *log);
/* Removes dir's files, whatever session wrote them, and dir, under its
 * lock (waiting for a drainer at work on it). */
void aggio__stage_remove_dir(const char *dir);
/* path with its directory made absolute (the file itself may not exist). */
int aggio__stage_absolute(const char *path, char *out, size_t len);

#endif
