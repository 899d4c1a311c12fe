/*
 * registry.c - the registry of aggregation strategies: the objects of the
 * strategies listed in strategies.def, in its order (a strategy's id is
 * its position; the aggio_strategy hint's value: the names are looked up in
 * strategies.def).  Each file gets the table at open (like ROMIO's
 * file-system table, ad_fstype.c, whose entry each file descriptor keeps).
 * The one file that names every strategy: the core reaches them through
 * the file's table.
 */
#include "registry.h"

#define AGGIO_STRATEGY(ID, name, alt1, alt2, auto_may) \
  extern const struct aggio__strategy_ops aggio__strategy_##name;
#include "strategies.def"
#undef AGGIO_STRATEGY

static const struct aggio__strategy_ops *const registry[AGGIO_NSTRATEGIES] = {
#define AGGIO_STRATEGY(ID, name, alt1, alt2, auto_may) &aggio__strategy_##name,
#include "strategies.def"
#undef AGGIO_STRATEGY
};

const struct aggio__strategy_ops *const *aggio__strategy_registry(void) { return registry; }
