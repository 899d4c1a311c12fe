/* Planning code reaching up into the core (and so MPI): must not build. */
#include "plan.h"
#include "internal.h"

int layering_bad_plan(void);
int layering_bad_plan(void) { return 0; }
