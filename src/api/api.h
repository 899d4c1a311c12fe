/*
 * api.h - the face of src/api, the public entry points: what its files
 * share among themselves.
 */
#ifndef AGGIO_API_H
#define AGGIO_API_H

#include "call.h"

/* Ordered calls, collective and blocking (the caller has settled the
 * file's outstanding operations): every rank's c->offset becomes the
 * shared pointer plus what ranks before it access, and the pointer moves
 * past all of it.  A failure on any rank goes to every rank's c->pre. */
void aggio__call_claim_ordered(struct call *c);

#endif
