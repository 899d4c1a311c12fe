/*
 * errors.c - error codes to text, errno mapping, the per-thread detailed
 * message, and the encoding of an outcome that agree.c's reduction makes
 * the same on every rank.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "errors.h"

/* The one piece of per-thread state: like errno, the detail of the last
 * failure on this thread, read with aggio_error_message(). */
static _Thread_local char last_message[AGGIO_ERRMSG_LEN];

const char *aggio_strerror(int code) {
  switch (code) {
  case AGGIO_SUCCESS:
    return "success";
#define AGGIO__ERR_CASE(name, value, msg) \
  case AGGIO_ERR_##name:                  \
    return msg;
    AGGIO_ERRNO_MAP(AGGIO__ERR_CASE)
#undef AGGIO__ERR_CASE
  default:
    return "unknown aggio error code";
  }
}

const char *aggio_error_message(void) { return last_message; }

int aggio__fail(struct aggio__err *e, int code, const char *fmt, ...) {
  if (e->code != 0)
    return e->code; /* the first failure is the one to report */
  e->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->msg, sizeof e->msg, fmt, ap);
  va_end(ap);
  return code;
}

int aggio__errno_code(int err) {
  switch (err) {
  case ENOENT:
    return AGGIO_ERR_NO_SUCH_FILE;
  case EEXIST:
    return AGGIO_ERR_FILE_EXISTS;
  case EACCES:
  case EPERM:
  case EROFS:
    return AGGIO_ERR_ACCESS;
  case ENOSPC:
  case EDQUOT:
  case EFBIG:
    return AGGIO_ERR_NO_SPACE;
  case ENOMEM:
    return AGGIO_ERR_NOMEM;
  case ENAMETOOLONG:
  case ENOTDIR:
  case EISDIR:
  case ELOOP:
    return AGGIO_ERR_NAME;
  case EBUSY:
  case ETXTBSY:
    return AGGIO_ERR_FILE_IN_USE;
  case EINVAL:
    return AGGIO_ERR_ARG;
  default:
    return AGGIO_ERR_IO;
  }
}

int64_t aggio__err_encode(int code, int rank) {
  return code == 0 ? 0 : (int64_t)code * ((int64_t)1 << 32) + rank;
}

/* The agreed outcome replaces this rank's own error, so that every rank
 * returns the same code (and, once the failing rank's message arrives,
 * aggio__err_take_message, the same text). */
int aggio__err_decode(int64_t agreed, int me, struct aggio__err *e) {
  if (agreed == 0)
    return e->code;
  int mine = e->code;
  if (mine != 0 && agreed == aggio__err_encode(mine, me))
    return mine; /* this rank's own failure won: its message says it all */
  /* The low half is the rank; the high half (rounded towards minus
   * infinity) is the code. */
  int64_t code = agreed >> 32;
  int rank = (int)(agreed - code * ((int64_t)1 << 32));
  e->code = (int)code;
  snprintf(e->msg, sizeof e->msg, "rank %d failed: %s", rank, aggio_strerror(e->code));
  return e->code;
}

int aggio__err_rank(int64_t agreed) {
  if (agreed == 0)
    return -1;
  int64_t code = agreed >> 32;
  return (int)(agreed - code * ((int64_t)1 << 32));
}

void aggio__err_take_message(int me, int root, const char *msg, struct aggio__err *e) {
  if (me == root || root < 0)
    return;
  size_t m = strnlen(msg, sizeof e->msg - 1);
  memcpy(e->msg, msg, m);
  e->msg[m] = '\0';
}

int aggio__finish(const struct aggio__err *e) {
  if (e->code != 0) {
    size_t n = strlen(e->msg);
    if (n >= sizeof last_message)
      n = sizeof last_message - 1;
    memcpy(last_message, e->msg, n);
    last_message[n] = '\0';
  }
  return e->code;
}
