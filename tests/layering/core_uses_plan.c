/* A core file: the pure layers below are its to use. */
#include "internal.h"
#include "placement.h"

int layering_ok_core(void);
int layering_ok_core(void) { return AGGIO_NSTRATEGIES; }
