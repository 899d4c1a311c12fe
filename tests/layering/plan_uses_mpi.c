/* Planning code calling MPI: must not build (it unit-tests without MPI). */
#include "plan.h"
#include <mpi.h>

int layering_bad_plan_mpi(void);
int layering_bad_plan_mpi(void) { return 0; }
