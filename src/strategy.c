/*
 * strategy.c - the registry of aggregation strategies, chosen by name with
 * the aggio_strategy hint (like ROMIO's file-system table in ad_fstype.c).
 * A strategy's position here is its id (its slot for per-file state).
 */
#include <string.h>

#include "internal.h"

static const struct aggio__strategy_ops *const registry[AGGIO_NSTRATEGIES] = {
    &aggio__strategy_auto,
    &aggio__strategy_independent,
    &aggio__strategy_two_phase,
    &aggio__strategy_write_behind,
    &aggio__strategy_node_local,
};

const struct aggio__strategy_ops *aggio__strategy_find(const char *name) {
  for (int i = 0; i < AGGIO_NSTRATEGIES; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}

const struct aggio__strategy_ops *aggio__strategy_at(int i) {
  return i >= 0 && i < AGGIO_NSTRATEGIES ? registry[i] : NULL;
}
