/*
 * request.h - non-blocking operations (request.c): the requests a file has
 * outstanding, and what the rest of the library does about them.
 */
#ifndef AGGIO_REQUEST_H
#define AGGIO_REQUEST_H

#include "internal.h"

/* Completes every operation outstanding on fh (their requests keep their
 * outcome for the user's wait).  Every call that acts on the file with
 * blocking collectives, or touches state its operations use, calls this
 * first: collective operations then take effect in the order every rank
 * started them.  Returns at once when none is outstanding. */
void aggio__requests_settle(aggio_file fh);

/* At close, after settling: the file's requests forget it (a request the
 * user has not waited for yet keeps its outcome), and an unfinished split
 * collective is freed. */
void aggio__requests_detach(aggio_file fh);

#endif
