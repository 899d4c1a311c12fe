/*
 * sysinfo.c - what a benchmark record must say about where it ran: the MPI
 * library (MPI_Get_library_version), the host, the file system type of the
 * target directory (statfs magic numbers, as ROMIO's ad_fstype.c does) and
 * the Open MPI I/O components forced through MCA settings.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "bench.h"

static const struct {
  long magic;
  const char *name;
} fs_magics[] = {
    {0xEF53, "ext4"},          {0x58465342, "xfs"},     {0x01021994, "tmpfs"},
    {0x0BD00BD0, "lustre"},    {0x47504653, "gpfs"},    {0x6969, "nfs"},
    {0x9123683E, "btrfs"},     {0x794c7630, "overlay"}, {0x2fc12fc1, "zfs"},
    {0x19830326, "beegfs"},    {0x00c36400, "ceph"},    {0x65735546, "fuse"},
    {0xaad7aaea, "panfs"},     {0x858458f6, "ramfs"},   {0x5346414f, "afs"},
    {0x73717368, "squashfs"},  {0x61756673, "aufs"},    {0x6a656a63, "daos"},
};

static void fs_type(const char *path, char *out, size_t len) {
  char dir[BENCH_PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (!slash) snprintf(dir, sizeof dir, ".");
  else if (slash == dir) dir[1] = '\0';
  else *slash = '\0';
  struct statfs sf;
  if (statfs(dir, &sf)) {
    snprintf(out, len, "unknown");
    return;
  }
  for (size_t i = 0; i < sizeof fs_magics / sizeof fs_magics[0]; i++)
    if ((unsigned long)sf.f_type == (unsigned long)fs_magics[i].magic) {
      snprintf(out, len, "%s", fs_magics[i].name);
      return;
    }
  snprintf(out, len, "0x%lx", (unsigned long)sf.f_type);
}

static void mpi_library(struct bench_sysinfo *s) {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  text[strcspn(text, "\n")] = '\0';
  size_t n = strlen(text);
  if (n >= sizeof s->mpi_library) n = sizeof s->mpi_library - 1;
  memcpy(s->mpi_library, text, n);
  s->mpi_library[n] = '\0';
  /* MPICH's first line is just "MPICH Version: 4.0.2". */
  char *tab;
  while ((tab = strchr(s->mpi_library, '\t'))) *tab = ' ';
  MPI_Get_version(&s->mpi_version[0], &s->mpi_version[1]);
  const char *flavor = strstr(text, "Open MPI") ? "openmpi"
                       : strstr(text, "MPICH")  ? "mpich"
                                                : "other";
  snprintf(s->mpi_flavor, sizeof s->mpi_flavor, "%s", flavor);
}

static void mca_settings(char *out, size_t len) {
  static const char *keys[] = {"io", "fcoll", "fs", "fbtl", "sharedfp"};
  out[0] = '\0';
  for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
    char name[64];
    snprintf(name, sizeof name, "OMPI_MCA_%s", keys[i]);
    const char *v = getenv(name);
    if (!v) continue;
    size_t used = strlen(out);
    snprintf(out + used, len - used, "%s%s=%s", used ? "," : "", keys[i], v);
  }
}

void bench_sysinfo_get(const char *path, struct bench_sysinfo *s) {
  memset(s, 0, sizeof *s);
  mpi_library(s);
  if (gethostname(s->host, sizeof s->host - 1)) snprintf(s->host, sizeof s->host, "unknown");
  fs_type(path, s->fs_type, sizeof s->fs_type);
  mca_settings(s->mca, sizeof s->mca);
}
