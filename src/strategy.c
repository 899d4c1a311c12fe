/*
 * strategy.c - the registry of aggregation strategies, chosen by name with
 * the aggio_strategy hint (like ROMIO's file-system table in ad_fstype.c).
 */
#include <string.h>

#include "internal.h"

static const struct aggio__strategy_ops *const registry[] = {
    &aggio__strategy_auto,
    &aggio__strategy_independent,
    &aggio__strategy_two_phase,
};

const struct aggio__strategy_ops *aggio__strategy_find(const char *name) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}
