/* Forbidden: a storage back end sees the file's storage part, never the
 * handle (the core's internal.h is not on the storage layer's path). */
#include "internal.h"
#include "storage.h"

int layering_storage_uses_core(struct aggio__store *st) { return st->opened; }
