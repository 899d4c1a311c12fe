/*
 * lustre_lock.c - Lustre group locks for Cray's lock-mode hints.
 *
 * A group lock (LL_IOC_GROUP_LOCK) makes every holder of the same group id
 * one lock owner: the extent locks that two-phase aggregators or
 * independent writers would otherwise pass back and forth on shared
 * stripes are not taken at all, which is what cray_cb_write_lock_mode=1
 * and cray_nocb_write_lock_mode=1 ask for.  The lock lives with the file
 * descriptor and goes when it closes.  Lock ahead (mode 2) asks the servers
 * for extent locks before the writes (LU_LADVISE_LOCKAHEAD); aggio does not
 * request them and says so instead of pretending.
 */
#include "lustre_lock.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#ifdef AGGIO_HAVE_LUSTRE_USER
#include <sys/ioctl.h>
#include <lustre/lustre_user.h>
#endif

int aggio__lustre_locks_built(void) {
#ifdef AGGIO_HAVE_LUSTRE_USER
  return 1;
#else
  return 0;
#endif
}

/* Marks one lock-mode hint; 1 when it asks for a group lock we can take. */
static int mark_one(struct aggio__hint_value *v, const char *fstype) {
  if (v->num == 0)
    return 0;
  if (strcmp(fstype, "lustre") != 0)
    snprintf(v->ignored, sizeof v->ignored, "needs Lustre (file system %s)", fstype);
  else if (!aggio__lustre_locks_built())
    snprintf(v->ignored, sizeof v->ignored,
             "needs Lustre: this build found no Lustre user headers");
  else if (v->num == 2)
    snprintf(v->ignored, sizeof v->ignored,
             "lock ahead is not requested by aggio; mode 1 (group lock) is");
  else
    return 1;
  return 0;
}

int aggio__lock_modes_mark(struct aggio__hints *h, const char *fstype) {
  int cb = mark_one(&h->cray_cb_write_lock_mode, fstype);
  int nocb = mark_one(&h->cray_nocb_write_lock_mode, fstype);
  return cb || nocb;
}

long aggio__lustre_group_id(const char *path) {
  unsigned long x = 2166136261u; /* FNV-1a: the same on every rank */
  for (const char *p = path; p && *p; p++)
    x = (x ^ (unsigned char)*p) * 16777619u;
  return (long)(x & 0x7fffffffUL) | 1; /* Lustre refuses group id 0 */
}

int aggio__lustre_group_lock(int fd, long gid, int lock) {
#ifdef AGGIO_HAVE_LUSTRE_USER
  if (fd < 0)
    return 0;
  return ioctl(fd, lock ? LL_IOC_GROUP_LOCK : LL_IOC_GROUP_UNLOCK, gid) == 0 ? 0 : errno;
#else
  (void)fd;
  (void)gid;
  (void)lock;
  return ENOTSUP;
#endif
}
