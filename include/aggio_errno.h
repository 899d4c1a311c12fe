/*
 * aggio_errno.h - aggio's error codes, usable without MPI (aggio.h includes
 * it).  The list is the single source of truth for codes and messages.
 */
#ifndef AGGIO_ERRNO_H
#define AGGIO_ERRNO_H

/*
 * The error list: the single source of truth for codes and their messages.
 * X(NAME, value, "message")
 */
#define AGGIO_ERRNO_MAP(X)                                                        \
  X(ARG, -1, "invalid argument")                                                  \
  X(BAD_FILE, -2, "invalid file handle")                                          \
  X(AMODE, -3, "invalid or contradictory access mode")                            \
  X(NO_SUCH_FILE, -4, "file does not exist")                                      \
  X(FILE_EXISTS, -5, "file exists and MPI_MODE_EXCL was given")                   \
  X(ACCESS, -6, "permission denied")                                              \
  X(NO_SPACE, -7, "no space left on device or quota exceeded")                    \
  X(IO, -8, "input/output error")                                                 \
  X(OVERFLOW, -9, "size overflow: count times datatype size is too large")        \
  X(OFFSET, -10, "invalid (negative) offset")                                     \
  X(TYPE, -11, "invalid or unsupported datatype or file view")                    \
  X(NOMEM, -12, "out of memory")                                                  \
  X(HINT_MISMATCH, -13, "hint values differ between ranks")                       \
  X(MPI, -14, "an MPI call failed")                                               \
  X(READ_ONLY, -15, "operation not permitted by the file's access mode")          \
  X(UNSUPPORTED, -16, "operation or data representation not supported")          \
  X(NOT_SAME, -17, "collective arguments that must match differ between ranks")   \
  X(FILE_IN_USE, -18, "file is in use or busy")                                   \
  X(NAME, -19, "invalid file name")                                              \
  X(REQUEST, -20, "invalid request, or split collective not allowed in this state")

enum {
  AGGIO_SUCCESS = 0,
#define AGGIO__ERR_ENUM(name, value, msg) AGGIO_ERR_##name = value,
  AGGIO_ERRNO_MAP(AGGIO__ERR_ENUM)
#undef AGGIO__ERR_ENUM
  AGGIO_ERR_LAST = -21
};

#endif /* AGGIO_ERRNO_H */
