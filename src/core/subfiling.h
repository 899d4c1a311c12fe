/*
 * subfiling.h - whether a file opens as one logical file over subfiles
 * (subfiling.c; the back end is storage/storage_subfile.c, the format
 * docs/subfiling.md).
 */
#ifndef AGGIO_SUBFILING_H
#define AGGIO_SUBFILING_H

#include "internal.h"

/* At open, after the back end aggio_storage names was found (collective):
 * rank 0 looks at the file at the name, and every rank switches to the
 * subfile back end when it is a layout, or when aggio_subfiles asks for a
 * new one and there is no ordinary file with data there; the hint is
 * marked ignored where it cannot be honoured.  On null, aggio_subfiles
 * gives the subfile back end over null stores, and no name is looked at.
 * A malformed aggio_subfiles, or a stripe above 2^40 bytes, is an error
 * (on every rank alike). */
int aggio__subfiling_choose(aggio_file fh, struct aggio__err *e);
/* After the topology: `auto`'s subfile count, one per node. */
void aggio__subfiling_resolve(aggio_file fh);

#endif
