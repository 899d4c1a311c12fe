/*
 * replay.c - runs a fuzz target's LLVMFuzzerTestOneInput over files, for the
 * builds without libFuzzer (gcc, the sanitizer builds): every seed of the
 * corpus is then a regression test.  Arguments: files or directories.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Runs the target on one file; 0, or 1 when it cannot be read. */
static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 1;
  }
  size_t cap = 1 << 16, n = 0;
  uint8_t *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    uint8_t *nb = realloc(buf, cap *= 2);
    if (!nb)
      free(buf);
    buf = nb;
  }
  int failed = !buf || ferror(f);
  fclose(f);
  if (!failed)
    LLVMFuzzerTestOneInput(buf, n);
  free(buf);
  return failed;
}

/* Runs the target on a file, or on every file of a directory; returns the
 * number of inputs run (negative when one could not be read). */
static int run_path(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
    return run_file(path) ? -1 : 1;
  DIR *dir = opendir(path);
  if (!dir)
    return -1;
  int count = 0;
  for (struct dirent *e; (e = readdir(dir)) != NULL;) {
    if (e->d_name[0] == '.')
      continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    int n = run_path(child);
    if (n < 0) {
      closedir(dir);
      return -1;
    }
    count += n;
  }
  closedir(dir);
  return count;
}

int main(int argc, char **argv) {
  int total = 0;
  for (int i = 1; i < argc; i++) {
    int n = run_path(argv[i]);
    if (n < 0)
      return 1;
    total += n;
  }
  printf("%d inputs replayed\n", total);
  return total > 0 ? 0 : 1; /* an empty corpus checks nothing */
}
