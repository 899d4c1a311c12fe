/*
 * registry.h - the face of src/strategies: the table of every strategy by
 * id, which a file receives at open (fh->strategies, aggio__strategy_at).
 */
#ifndef AGGIO_REGISTRY_H
#define AGGIO_REGISTRY_H

#include "internal.h"

/* AGGIO_NSTRATEGIES entries, in the order of strategies.def. */
const struct aggio__strategy_ops *const *aggio__strategy_registry(void);

#endif
