/*
 * subfile_read.h - the tests' own reader of a file aggio may have stored as
 * subfiles (docs/subfiling.md): the logical bytes read with POSIX through
 * the layout's arithmetic (src/plan/subfile_map.h), not through aggio, so
 * that a check does not trust the code it checks.  An ordinary file reads
 * as itself.  Header only, for the MPI tests and the generated programs.
 */
#ifndef AGGIO_TEST_SUBFILE_READ_H
#define AGGIO_TEST_SUBFILE_READ_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "subfile_map.h"

struct subfile_read {
  int layout;                    /* 0: an ordinary file */
  char path[4096], dir[4096];
  struct aggio__subfile_map map;
  char **names;
};

/* 0, or -1 when its layout is bad.  A file that cannot be opened is taken
 * for an ordinary one (whose reads then fail). */
static inline int subfile_read_open(struct subfile_read *s, const char *path) {
  char text[1 << 16] = "", msg[160];
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", path);
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return 0;
  ssize_t n = pread(fd, text, sizeof text - 1, 0);
  close(fd);
  text[n > 0 ? n : 0] = '\0';
  if (!aggio__subfile_is_layout(text))
    return 0;
  s->layout = 1;
  const char *slash = strrchr(path, '/');
  snprintf(s->dir, sizeof s->dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
  return aggio__subfile_layout_parse(text, &s->map, &s->names, msg, sizeof msg);
}

static inline void subfile_read_close(struct subfile_read *s) {
  if (s->names)
    aggio__subfile_names_free(s->names, s->map.count);
  s->names = NULL;
}

/* Subfile k's path. */
static inline void subfile_read_part(const struct subfile_read *s, int k, char *out,
                                     size_t len) {
  snprintf(out, len, "%s/%s", s->dir, s->names[k]);
}

/* The logical size: the largest logical end of a subfile's bytes. */
static inline int64_t subfile_read_size(const struct subfile_read *s) {
  struct stat sb;
  if (!s->layout)
    return stat(s->path, &sb) == 0 ? (int64_t)sb.st_size : -1;
  int64_t end = 0;
  char part[8300];
  for (int k = 0; k < s->map.count; k++) {
    subfile_read_part(s, k, part, sizeof part);
    if (stat(part, &sb) != 0)
      return -1;
    int64_t e = aggio__subfile_logical_end(&s->map, k, sb.st_size);
    end = e > end ? e : end;
  }
  return end;
}

/* Up to len logical bytes at off, as pread: the count before the end of
 * file (a subfile shorter than its share reads zeros there, as a hole of
 * the logical file), or -1. */
static inline int64_t subfile_read_pread(const struct subfile_read *s, void *vbuf, int64_t len,
                                         int64_t off) {
  unsigned char *buf = vbuf;
  int64_t size = subfile_read_size(s), got = 0;
  if (size < 0)
    return -1;
  len = off >= size ? 0 : size - off < len ? size - off : len;
  char part[8300];
  while (got < len) {
    int k = 0;
    int64_t so = off + got, piece = len - got;
    if (s->layout)
      aggio__subfile_piece(&s->map, off + got, len - got, &k, &so, &piece);
    if (s->layout)
      subfile_read_part(s, k, part, sizeof part);
    int fd = open(s->layout ? part : s->path, O_RDONLY);
    ssize_t r = fd < 0 ? -1 : pread(fd, buf + got, (size_t)piece, so);
    if (fd >= 0)
      close(fd);
    if (r < 0)
      return -1;
    memset(buf + got + r, 0, (size_t)(piece - r));
    got += piece;
  }
  return got;
}

#endif
