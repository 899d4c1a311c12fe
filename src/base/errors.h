/*
 * errors.h - the base of the library: a call's error state, errno mapping,
 * the encoding of an outcome that agreement makes the same on every rank
 * (core/agree.c does the reduction).  It calls no MPI; every layer above
 * uses it.
 */
#ifndef AGGIO_ERRORS_H
#define AGGIO_ERRORS_H

#include <stdint.h>

#include "aggio.h"
#include "align.h"

#define AGGIO_ERRMSG_LEN 512

/* Per-call error state: the code and this rank's message. */
struct aggio__err {
  int code;
  char msg[AGGIO_ERRMSG_LEN];
};

/* Records an error (first one wins) and returns its code. */
int aggio__fail(struct aggio__err *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* errno -> AGGIO_ERR_* */
int aggio__errno_code(int err);

/* The same agreement carried in one int64 (code in the high half, rank in
 * the low half) so that it travels inside a larger reduction; MIN picks the
 * most negative code and, among equals, the lowest rank.  0 means success. */
int64_t aggio__err_encode(int code, int rank);
/* Applies an agreed encoded outcome to e (the agreed code on every rank;
 * "rank R failed: ..." unless this rank's own failure was the one chosen)
 * and returns the agreed code. */
int aggio__err_decode(int64_t agreed, int me, struct aggio__err *e);

/* The rank of an agreed encoded outcome, or -1 for success. */
int aggio__err_rank(int64_t agreed);
/* After an agreement chose rank root's failure, its message (msg, sent to
 * every rank) becomes e's on the other ranks: every rank returns the same
 * text. */
void aggio__err_take_message(int me, int root, const char *msg, struct aggio__err *e);

/* Stores e->msg as the thread's aggio_error_message() and returns e->code. */
int aggio__finish(const struct aggio__err *e);

#endif
