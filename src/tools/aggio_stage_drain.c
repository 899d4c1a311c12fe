/*
 * aggio_stage_drain.c - aggio-stage-drain [--detach] [--log FILE] DIR...:
 * writes what stage directories hold into their final files and removes
 * them (docs/staging.md, "Replaying a stage"), as `aggio stage drain`
 * does, without Python or MPI.  DIR is one file's stage directory (it
 * holds a manifest) or an aggio_stage_dir root, whose stage directories
 * are drained one after the other.
 *
 * The library starts it with --detach at the close of a file opened with
 * aggio_stage_drain=detach: it forks, its first process exits (the
 * library waits for that, so no zombie is left), and the second, in a
 * session of its own, drains while the program goes on or after it ended.
 * --log appends its lines there instead of stdout/stderr.
 *
 * Exit status 0 when every directory was drained (or held nothing), 1
 * when one could not be (its stage files stay: run it again), 2 for bad
 * arguments or a directory without a readable manifest.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "stage_dir.h"
#include "stage_format.h"

/* A line of the log: the time, the drainer's pid, the message. */
static void say(const char *fmt, ...) {
  char when[32];
  time_t now = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", localtime(&now));
  printf("%s aggio-stage-drain[%ld]: ", when, (long)getpid());
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
}

/* The final file dir's manifest names: 0; 2 with why said; -1 when dir
 * is gone (nothing to drain). */
static int final_of(const char *dir, char *final, size_t len) {
  char path[PATH_MAX + 16], text[PATH_MAX + 1024], msg[256];
  snprintf(path, sizeof path, "%s/manifest", dir);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, text, sizeof text - 1) : -1;
  int err = errno;
  if (fd >= 0)
    close(fd);
  struct stat sb;
  if (n < 0 && stat(dir, &sb) != 0 && errno == ENOENT)
    return -1; /* gone meanwhile: drained by another, or deleted */
  if (n < 0) {
    say("%s: no manifest: %s", dir, strerror(err));
    return 2;
  }
  text[n] = '\0';
  if (aggio__stage_manifest_parse(text, final, len, msg, sizeof msg) != 0) {
    say("%s: a bad manifest: %s", dir, msg);
    return 2;
  }
  return 0;
}

static int drain_one(const char *dir) {
  char final[PATH_MAX];
  int rc = final_of(dir, final, sizeof final);
  if (rc != 0)
    return rc < 0 ? 0 : rc;
  int err = aggio__stage_replay(dir, final, "");
  if (err != 0) {
    say("%s -> %s: %s (the stage files stay: run aggio-stage-drain again)", dir, final,
        strerror(err));
    return 1;
  }
  say("%s -> %s: drained", dir, final);
  return 0;
}

static int has_manifest(const char *dir) {
  char path[PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/manifest", dir);
  return access(path, F_OK) == 0;
}

/* A root: each of its stage directories; the worst status. */
static int drain_root(const char *root) {
  DIR *d = opendir(root);
  if (!d) {
    say("%s: %s", root, strerror(errno));
    return 2;
  }
  int worst = 0;
  struct dirent *ent;
  char sub[PATH_MAX];
  while ((ent = readdir(d))) {
    if (ent->d_name[0] == '.')
      continue;
    snprintf(sub, sizeof sub, "%s/%s", root, ent->d_name);
    struct stat sb;
    if (stat(sub, &sb) != 0 || !S_ISDIR(sb.st_mode) || !has_manifest(sub))
      continue;
    int rc = drain_one(sub);
    worst = rc > worst ? rc : worst;
  }
  closedir(d);
  return worst;
}

/* The first process exits once the second runs in a session of its own
 * with its output in the log. */
static int detach(const char *log) {
  pid_t pid = fork();
  if (pid < 0)
    return -1;
  if (pid > 0)
    _exit(0);
  setsid();
  /* descriptors the program left open (MPICH's launcher waits for the
   * end of its pipes: it would wait for the drain) */
  long max = sysconf(_SC_OPEN_MAX);
  for (int fd = 3; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
    close(fd);
  int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int out = log ? open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600)
                : open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (in < 0 || out < 0)
    return 0; /* draining matters more than its messages */
  dup2(in, 0);
  dup2(out, 1);
  dup2(out, 2);
  close(in);
  close(out);
  return 0;
}

int main(int argc, char **argv) {
  int detached = 0, first = 1;
  const char *log = NULL;
  for (; first < argc && argv[first][0] == '-'; first++) {
    if (!strcmp(argv[first], "--detach"))
      detached = 1;
    else if (!strcmp(argv[first], "--log") && first + 1 < argc)
      log = argv[++first];
    else
      break;
  }
  if (first >= argc || argv[first][0] == '-') {
    fprintf(stderr, "usage: aggio-stage-drain [--detach] [--log FILE] DIR...\n");
    return 2;
  }
  if (detached && detach(log) != 0) {
    perror("aggio-stage-drain: fork");
    return 1;
  }
  if (!detached && log && !freopen(log, "a", stdout)) {
    perror(log);
    return 2;
  }
  int worst = 0;
  for (int i = first; i < argc; i++) {
    struct stat sb;
    /* started by a close: another close's drainer, or the next open, may
     * have drained it all already (a missing DIR is an error by hand) */
    if (detached && stat(argv[i], &sb) != 0 && errno == ENOENT)
      continue;
    int rc = has_manifest(argv[i]) ? drain_one(argv[i]) : drain_root(argv[i]);
    worst = rc > worst ? rc : worst;
  }
  return worst;
}
