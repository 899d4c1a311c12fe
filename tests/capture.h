/*
 * capture.h - rank 0's standard output caught in a file and read back, for
 * the tests that check what aggio prints when asked (statistics, hints and
 * placement displays, the Cray-style blocks) by content.  Include after
 * harness.h (CHECK).
 */
#ifndef AGGIO_TEST_CAPTURE_H
#define AGGIO_TEST_CAPTURE_H

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct capture {
  int saved; /* the real stdout while captured, else -1 */
  char path[512];
};

/* On rank `me` == 0, sends stdout to `path` until capture_end; elsewhere
 * nothing (only rank 0 prints the blocks). */
static inline void capture_to(struct capture *c, int me, const char *path) {
  c->saved = -1;
  if (me != 0)
    return;
  snprintf(c->path, sizeof c->path, "%s", path);
  fflush(stdout);
  int fd = open(c->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CHECK(fd >= 0, "cannot create %s", c->path);
  if (fd < 0)
    return;
  c->saved = dup(1);
  dup2(fd, 1);
  close(fd);
}

/* Restores stdout; what was printed, to free (rank 0; NULL elsewhere or
 * when the capture could not be made). */
static inline char *capture_end(struct capture *c) {
  if (c->saved < 0)
    return NULL;
  fflush(stdout);
  dup2(c->saved, 1);
  close(c->saved);
  c->saved = -1;
  FILE *f = fopen(c->path, "r");
  char *text = f ? calloc(1, 1 << 20) : NULL;
  if (text)
    (void)!fread(text, 1, (1 << 20) - 1, f);
  if (f)
    fclose(f);
  unlink(c->path);
  return text;
}

#endif
