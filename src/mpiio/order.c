/*
 * order.c - a profiling tool preloaded after aggio is moved in front of it.
 *
 * A tool that wraps MPI_File_* (Darshan) must sit above aggio to see the
 * program's calls, and forward to aggio's PMPI_File_*, which it finds with
 * dlsym(RTLD_NEXT): that searches only the objects after the tool's.  With
 * LD_PRELOAD=libaggio-mpiio.so:libdarshan.so the program's calls reach
 * aggio first and the tool never sees them (or, for calls made by PMPI_
 * name, the tool forwards past aggio to the MPI library with aggio's
 * handle).  The dynamic linker's order cannot change once the process
 * runs, so when this library finds a tool after itself in LD_PRELOAD it
 * starts the program again, before main and before MPI_Init, with itself
 * moved behind the last tool: execv of /proc/self/exe with the same
 * arguments and environment (the same process to the MPI launcher).
 * aggio-run sets up that order in the first place.  AGGIO_MPIIO_REORDER=0
 * turns this off; AGGIO_MPIIO_REORDERED holds the order already tried, so
 * that the program is never started again for the same list.
 *
 * A tool is a preloaded object that defines MPI_File_open or
 * PMPI_File_open itself and not PMPI_Comm_rank, which the MPI library
 * defines and no MPI-IO tool does.
 */
#define _GNU_SOURCE /* dladdr1, dlinfo, RTLD_NOLOAD */
#include <dlfcn.h>
#include <fcntl.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_ENTRIES 64
#define MAX_ARGS 4096

/* The loaded object behind an LD_PRELOAD entry, or NULL. */
static struct link_map *loaded(const char *entry) {
  void *h = dlopen(entry, RTLD_LAZY | RTLD_NOLOAD);
  struct link_map *lm = NULL;
  if (h && dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0)
    lm = NULL;
  if (h)
    dlclose(h); /* NOLOAD took a reference */
  return lm;
}

static struct link_map *object_of(const void *addr) {
  Dl_info info;
  struct link_map *lm = NULL;
  if (!addr || !dladdr1(addr, &info, (void **)&lm, RTLD_DL_LINKMAP))
    return NULL;
  return lm;
}

/* 1 when lm itself defines name. */
static int defines(struct link_map *lm, const char *name) {
  void *h = dlopen(lm->l_name, RTLD_LAZY | RTLD_NOLOAD);
  int yes = h && object_of(dlsym(h, name)) == lm;
  if (h)
    dlclose(h);
  return yes;
}

static int is_tool(struct link_map *lm) {
  return lm && (defines(lm, "MPI_File_open") || defines(lm, "PMPI_File_open")) &&
         !defines(lm, "PMPI_Comm_rank");
}

/* Splits list (modified) at spaces and colons, as ld.so does. */
static int split(char *list, char **entry) {
  int n = 0;
  for (char *save = NULL, *e = strtok_r(list, ": ", &save); e && n < MAX_ENTRIES;
       e = strtok_r(NULL, ": ", &save))
    entry[n++] = e;
  return n;
}

/* The new list into out (cap bytes): entry[me] moved behind the last
 * tool after it; 0 when nothing has to move. */
static int reordered(char **entry, int n, int me, char *out, size_t cap) {
  int last = -1;
  for (int i = me + 1; i < n; i++)
    if (is_tool(loaded(entry[i])))
      last = i;
  if (last < 0)
    return 0;
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    if (i == me)
      continue;
    const char *parts[2] = {entry[i], i == last ? entry[me] : NULL};
    for (int k = 0; k < 2 && parts[k]; k++) {
      if (strlen(out) + strlen(parts[k]) + 2 > cap)
        return 0;
      if (out[0])
        strcat(out, ":");
      strcat(out, parts[k]);
    }
  }
  return 1;
}

/* The program's arguments, from /proc/self/cmdline (main's argv is not
 * ours to see in a constructor); argv NULL-terminated into buf. */
static int arguments(char *buf, size_t cap, char **argv) {
  int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return 0;
  size_t len = 0;
  for (ssize_t r; len < cap - 1 && (r = read(fd, buf + len, cap - 1 - len)) > 0;)
    len += (size_t)r;
  close(fd);
  if (len == 0 || len >= cap - 1)
    return 0;
  buf[len] = '\0';
  int argc = 0;
  for (size_t i = 0; i < len && argc < MAX_ARGS - 1; i += strlen(buf + i) + 1)
    argv[argc++] = buf + i;
  argv[argc] = NULL;
  return argc;
}

static void restart(const char *preload) {
  static char buf[1 << 17];
  static char *argv[MAX_ARGS];
  if (!arguments(buf, sizeof buf, argv))
    return;
  char *old = strdup(getenv("LD_PRELOAD"));
  if (!old || setenv("LD_PRELOAD", preload, 1) != 0 ||
      setenv("AGGIO_MPIIO_REORDERED", preload, 1) != 0) {
    free(old);
    return;
  }
  execv("/proc/self/exe", argv);
  setenv("LD_PRELOAD", old, 1); /* it did not happen: go on as we are */
  free(old);
}

__attribute__((constructor)) static void mpiio_order(void) {
  const char *pre = getenv("LD_PRELOAD"), *off = getenv("AGGIO_MPIIO_REORDER");
  const char *tried = getenv("AGGIO_MPIIO_REORDERED");
  if (!pre || (off && strcmp(off, "0") == 0) || (tried && strcmp(tried, pre) == 0))
    return;
  char list[8192], out[8192], *entry[MAX_ENTRIES];
  if (strlen(pre) >= sizeof list)
    return;
  strcpy(list, pre);
  int n = split(list, entry), me = -1;
  struct link_map *self = object_of((const void *)mpiio_order);
  for (int i = 0; i < n && me < 0; i++)
    if (self && loaded(entry[i]) == self)
      me = i;
  if (me >= 0 && reordered(entry, n, me, out, sizeof out))
    restart(out);
}
