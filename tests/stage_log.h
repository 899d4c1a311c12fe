/*
 * stage_log.h - whether the detached drainer (aggio-stage-drain, started
 * by close with aggio_stage_drain=detach) logged a drained stage in
 * <stage root>/aggio-stage-drain.log (docs/staging.md).
 */
#ifndef AGGIO_TEST_STAGE_LOG_H
#define AGGIO_TEST_STAGE_LOG_H

#include <stdio.h>
#include <string.h>

static inline int stage_log_says_drained(const char *stage_root) {
  char path[1024], line[2048];
  snprintf(path, sizeof path, "%s/aggio-stage-drain.log", stage_root);
  FILE *f = fopen(path, "r");
  int found = 0;
  while (f && fgets(line, sizeof line, f))
    found |= strstr(line, ": drained") != NULL;
  if (f)
    fclose(f);
  return found;
}

#endif
