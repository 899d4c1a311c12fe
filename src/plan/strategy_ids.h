/*
 * strategy_ids.h - the strategies' ids and names, made from
 * strategies.def.  No MPI: the hint parser and auto's rule use them, and
 * so does the registry of strategy objects (strategies/registry.c).
 */
#ifndef AGGIO_STRATEGY_IDS_H
#define AGGIO_STRATEGY_IDS_H

/* aggio_strategy's values (aggio__hint_value.num) and the strategies'
 * ids: AGGIO_STRAT_AUTO, AGGIO_STRAT_INDEPENDENT, ... */
enum aggio__strategy_id {
#define AGGIO_STRATEGY(ID, name, alt1, alt2, auto_may) AGGIO_STRAT_##ID,
#include "strategies.def"
#undef AGGIO_STRATEGY
  AGGIO_NSTRATEGIES
};

/* The canonical name ("two_phase"), or NULL for an id out of range. */
const char *aggio__strategy_name(int id);
/* The id of any of a strategy's spellings (text[0..len), any case), or -1. */
int aggio__strategy_lookup(const char *text, int len);
/* 1 when auto may choose the strategy. */
int aggio__strategy_auto_may(int id);
/* "auto, independent, ...": every name, for messages. */
const char *aggio__strategy_names(void);

#endif
