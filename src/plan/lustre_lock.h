/*
 * lustre_lock.h - Cray's write lock modes (cray_cb_write_lock_mode,
 * cray_nocb_write_lock_mode: 0 normal, 1 group lock, 2 lock ahead) on
 * Lustre.  The ioctl path is compiled only where Lustre's user headers were
 * found at configure time (AGGIO_HAVE_LUSTRE_USER); elsewhere, and on any
 * file that is not on Lustre, a mode other than 0 is kept in the hints and
 * marked ignored with the reason, which get_info and the hints display show.
 */
#ifndef AGGIO_LUSTRE_LOCK_H
#define AGGIO_LUSTRE_LOCK_H

#include "hints.h"

/* 1 when this build can take Lustre group locks. */
int aggio__lustre_locks_built(void);

/* Marks the lock-mode hints that cannot be honoured on a file of type
 * `fstype` (statfs magic, as storage_posix.c names it) in this build;
 * returns 1 when a group lock is to be taken (some mode is 1 and nothing
 * stands in its way), else 0. */
int aggio__lock_modes_mark(struct aggio__hints *h, const char *fstype);

/* The group-lock id every rank of one file uses: derived from the path so
 * that all ranks agree without a message. */
long aggio__lustre_group_id(const char *path);

/* Takes (lock 1) or gives back (lock 0) the Lustre group lock `gid` on
 * descriptor fd; a taken lock is held until given back or the descriptor
 * closes.  0 (also for fd < 0), or an errno value (ENOTSUP in builds
 * without Lustre's headers). */
int aggio__lustre_group_lock(int fd, long gid, int lock);

#endif
