/*
 * subfiling.c - the choice of the subfile back end at open (subfiling.h).
 *
 * A reader needs no hint: a layout at the name opens through its subfiles,
 * with whatever rank count.  A writer asks with aggio_subfiles; an ordinary
 * file that already holds data keeps being one (turning it into subfiles
 * would hide its bytes), and the hint says so in MPI_File_get_info.  With
 * aggio_storage=null the subfiles are null stores and the layout stays in
 * memory: nothing at the name is looked at, nothing is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "subfile_map.h"
#include "subfiling.h"

extern const struct aggio__storage_ops aggio__storage_posix, aggio__storage_null,
    aggio__storage_subfile;

enum { NAME_FREE, NAME_DATA, NAME_LAYOUT }; /* what lies at the file's name */

static int look_at_name(const char *path) {
  struct stat sb;
  if (stat(path, &sb) != 0)
    return NAME_FREE;
  if (aggio__subfile_detect(path))
    return NAME_LAYOUT;
  return S_ISREG(sb.st_mode) && sb.st_size == 0 ? NAME_FREE : NAME_DATA;
}

/* aggio_subfiles: 0 off, -1 auto, or M in 1..AGGIO_SUBFILE_MAX. */
static int subfiles_wanted(aggio_file fh, int *m, struct aggio__err *e) {
  const char *s = fh->hints.subfiles.str;
  char *end;
  if (strcmp(s, "auto") == 0 || strcmp(s, "automatic") == 0) {
    *m = -1;
    return 0;
  }
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v > AGGIO_SUBFILE_MAX)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: aggio_subfiles \"%s\" is not 0, auto "
                       "or a subfile count from 1 to %d", fh->rank, s, AGGIO_SUBFILE_MAX);
  *m = (int)v;
  return 0;
}

/* Any stripe from one byte to AGGIO_SUBFILE_STRIPE_MAX is a valid layout;
 * one that is not a multiple of the file system's block loses direct I/O
 * (the POSIX back end sends unaligned pieces through the page cache). */
static int stripe_wanted(aggio_file fh, int64_t *stripe, struct aggio__err *e) {
  int64_t s = fh->hints.subfile_stripe.num;
  if (s == 0)
    s = fh->hints.striping_unit.num > 0 ? fh->hints.striping_unit.num : AGGIO_SUBFILE_STRIPE;
  if (s > AGGIO_SUBFILE_STRIPE_MAX)
    return aggio__fail(e, AGGIO_ERR_ARG, "rank %d: the subfile stripe %lld is above 2^40 "
                       "bytes (aggio_subfile_stripe, or striping_unit)", fh->rank,
                       (long long)s);
  *stripe = s;
  return 0;
}

static void ignored(struct aggio__hint_value *h, const char *why) {
  if (h->set)
    snprintf(h->ignored, sizeof h->ignored, "%s", why);
}

/* The subfile back end, each subfile a store of `children`. */
static void subfiled(aggio_file fh, const struct aggio__storage_ops *children) {
  fh->st.ops = &aggio__storage_subfile;
  fh->st.subfile_ops = children;
}

int aggio__subfiling_choose(aggio_file fh, struct aggio__err *e) {
  int m = 0;
  int64_t stripe = 0;
  if (fh->st.ops == &aggio__storage_subfile && strcmp(fh->hints.subfiles.str, "0") == 0)
    snprintf(fh->hints.subfiles.str, sizeof fh->hints.subfiles.str, "auto");
  if (subfiles_wanted(fh, &m, e) != 0 || stripe_wanted(fh, &stripe, e) != 0)
    return e->code;
  fh->st.subfiles = m;
  fh->st.subfile_stripe = stripe;
  fh->st.subfile_ops = NULL;
  if (fh->st.ops == &aggio__storage_null) {
    /* No disk, so no file at the name to look at (reading a layout is
     * POSIX's): the subfiles of a null file are null stores, which is how
     * the SimGrid build runs subfiles per I/O node. */
    if (m != 0)
      subfiled(fh, &aggio__storage_null);
    return 0;
  }
  if (fh->st.ops != &aggio__storage_posix && fh->st.ops != &aggio__storage_subfile) {
    ignored(&fh->hints.subfiles, "this storage back end stores no subfiles");
    return 0;
  }
  int name = fh->rank == 0 ? look_at_name(fh->path) : NAME_FREE;
  MPI_Bcast(&name, 1, MPI_INT, 0, fh->comm);
  int create = (fh->amode & MPI_MODE_CREATE) != 0;
  if (name == NAME_LAYOUT) {
    ignored(&fh->hints.subfiles, "the file is subfiled already: it keeps its layout");
    subfiled(fh, &aggio__storage_posix);
  } else if (m != 0 && name == NAME_DATA) {
    ignored(&fh->hints.subfiles, "the file exists as one file with data: it stays one");
    fh->st.ops = &aggio__storage_posix;
  } else if (m != 0 && create) {
    subfiled(fh, &aggio__storage_posix);
  } else {
    fh->st.ops = &aggio__storage_posix;
  }
  return 0;
}

void aggio__subfiling_resolve(aggio_file fh) {
  if (fh->st.subfiles < 0)
    fh->st.subfiles = fh->topo.nnodes > 0 ? fh->topo.nnodes : 1;
}
