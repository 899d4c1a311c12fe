/*
 * storage_registry.c - the storage back ends, chosen by name with the
 * aggio_storage hint, the first one the default: one line each.  A back
 * end is one file defining a struct aggio__storage_ops (storage.h; read
 * storage_posix.c first) plus its line in the list below.
 */
#include <string.h>

#include "storage.h"

#define AGGIO_STORAGE_LIST(X) \
  X(posix)                    \
  X(null)                     \
  X(subfile)

#define DECLARE(name) extern const struct aggio__storage_ops aggio__storage_##name;
AGGIO_STORAGE_LIST(DECLARE)
#undef DECLARE

static const struct aggio__storage_ops *const backends[] = {
#define ENTRY(name) &aggio__storage_##name,
    AGGIO_STORAGE_LIST(ENTRY)
#undef ENTRY
};

/* ", posix, null": adjacent literals */
static const char names[] =
#define NAME(name) ", " #name
    AGGIO_STORAGE_LIST(NAME)
#undef NAME
    ;

const struct aggio__storage_ops *aggio__storage_find(const char *name) {
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++)
    if (strcmp(backends[i]->name, name) == 0)
      return backends[i];
  return NULL;
}

const struct aggio__storage_ops *aggio__storage_default(void) { return backends[0]; }

const char *aggio__storage_names(void) { return names + 2; }
