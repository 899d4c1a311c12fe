/* A strategy's file: the engine and the planning code are its to use. */
#include "engine.h"
#include "plan.h"

int layering_ok_strategy(struct aggio__op *op);
int layering_ok_strategy(struct aggio__op *op) { return aggio__then(op, NULL, 0); }
