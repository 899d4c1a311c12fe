/* Allowed: the storage layer records into the observability layer and
 * reports errors through the base. */
#include "errors.h"
#include "observe.h"
#include "storage.h"

void layering_storage_uses_observe(struct aggio__store *st) {
  aggio__obs_count(st->obs, AGGIO_C_SYNCS, 1);
}
