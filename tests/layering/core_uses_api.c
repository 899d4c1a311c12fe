/* A core file reaching up into the public entry points: must not build. */
#include "internal.h"
#include "api.h"

int layering_bad_core(void);
int layering_bad_core(void) { return 0; }
