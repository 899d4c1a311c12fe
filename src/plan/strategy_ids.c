/*
 * strategy_ids.c - the strategies' names and spellings, from
 * strategies.def (the one list; strategy_ids.h).
 */
#include "strategy_ids.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

struct entry {
  const char *spelling[3]; /* the name first; NULL: no more */
  int auto_may;
};

static const struct entry table[AGGIO_NSTRATEGIES] = {
#define AGGIO_STRATEGY(ID, name, alt1, alt2, auto_may) {{#name, alt1, alt2}, auto_may},
#include "strategies.def"
#undef AGGIO_STRATEGY
};

/* ", auto, independent, ...": adjacent literals, one per line of the list */
static const char names[] =
#define AGGIO_STRATEGY(ID, name, alt1, alt2, auto_may) ", " #name
#include "strategies.def"
#undef AGGIO_STRATEGY
    ;

const char *aggio__strategy_name(int id) {
  return id >= 0 && id < AGGIO_NSTRATEGIES ? table[id].spelling[0] : NULL;
}

int aggio__strategy_lookup(const char *text, int len) {
  for (int id = 0; id < AGGIO_NSTRATEGIES; id++)
    for (int k = 0; k < 3 && table[id].spelling[k]; k++) {
      const char *s = table[id].spelling[k];
      if ((int)strlen(s) == len && strncasecmp(s, text, (size_t)len) == 0)
        return id;
    }
  return -1;
}

int aggio__strategy_auto_may(int id) {
  return id >= 0 && id < AGGIO_NSTRATEGIES && table[id].auto_may;
}

const char *aggio__strategy_names(void) { return names + 2; }
