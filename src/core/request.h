/*
 * request.h - non-blocking operations (request.c): the requests a file has
 * outstanding, and what the rest of the library does about them.
 */
#ifndef AGGIO_REQUEST_H
#define AGGIO_REQUEST_H

#include "aggio.h"

struct call;

/* The file handle's part (fh->nb, request.c, under its mutex). */
struct aggio__nb_state {
  int outstanding;          /* started and not complete */
  double last_start;        /* when the last one was started */
  unsigned long pass;       /* the progress pass that found a collective
                             * operation of this file unfinished */
  struct aggio_request_s *split; /* the active split collective, or NULL */
};

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

/* Starts the call c as a request (*request; split: the file's split
 * collective, no request): its operation begins and runs ahead as far as
 * it goes without the other ranks (request.c, first_steps).  Returns 0 or
 * an argument error; without memory for a request, the call runs to
 * completion now and its outcome is returned. */
int aggio__request_start(struct call *c, aggio_request *request, int split);

/* Ends the file's split collective (kind: enum aggio__call_kind) when the
 * end call matches its begin: waits for it and fills status. */
int aggio__split_end(aggio_file fh, const void *buf, MPI_Status *status, int is_write,
                     int use_fp, int kind);

#endif
