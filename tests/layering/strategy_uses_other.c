/* A strategy's file reaching into another strategy (write-behind's node
 * cache): must not build.  Strategies share through the core. */
#include "engine.h"
#include "cache.h"

int layering_bad_strategy(void);
int layering_bad_strategy(void) { return 0; }
