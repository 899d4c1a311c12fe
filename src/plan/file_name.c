/*
 * file_name.c - ROMIO's file-system prefixes (file_name.h).
 */
#include <string.h>

#include "file_name.h"

/* The prefixes ROMIO's drivers answer to that name a file system a POSIX
 * path reaches (not ftp: or gsiftp:, whose names are not paths). */
static const char *const prefixes[] = {
    "ufs",   "nfs", "lustre", "gpfs", "xfs",       "panfs", "pvfs2",
    "testfs", "bg", "bgl",    "ime",  "quobytefs", "daos",
};

const char *aggio__file_name_unprefixed(const char *name) {
  if (!name)
    return name;
  const char *colon = strchr(name, ':');
  if (!colon)
    return name;
  size_t n = (size_t)(colon - name);
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (strlen(prefixes[i]) == n && strncmp(name, prefixes[i], n) == 0)
      return colon + 1;
  return name;
}
