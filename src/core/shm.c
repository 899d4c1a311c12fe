/*
 * shm.c - node-shared memory made in non-blocking steps (shm.h): the
 * communicator's first rank creates a POSIX shared-memory object and
 * reserves its pages (posix_fallocate: a full /dev/shm is then an error
 * here, not a SIGBUS in the application later), an MPI_Ibcast carries its
 * name, the other ranks map it, an MPI_Iallreduce agrees, and the name is
 * unlinked so that nothing outlives the processes that map it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm.h"

static char *map_fd(int fd, size_t len) {
  void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* A fresh object of len bytes, mapped; s->name is "" on failure. */
static void create(struct aggio__shm *s, aggio_file fh) {
  static unsigned serial; /* names differ between a process's segments */
  s->name[0] = '\0';
  if (aggio__fault(fh->faults, AGGIO_FAULT_SHM) != 0)
    return;
  for (int attempt = 0; attempt < 8; attempt++) {
    char name[AGGIO_SHM_NAME];
    unsigned k = __atomic_add_fetch(&serial, 1, __ATOMIC_RELAXED);
    snprintf(name, sizeof name, "/aggio.%ld.%u.%d", (long)getpid(), k, attempt);
    int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0)
      return;
    char *p = posix_fallocate(fd, 0, (off_t)s->len) == 0 ? map_fd(fd, s->len) : NULL;
    close(fd);
    if (p && s->init && s->init(p, s->init_arg) != 0) {
      munmap(p, s->len);
      p = NULL;
    }
    if (!p) {
      shm_unlink(name);
      return;
    }
    s->base = p;
    memcpy(s->name, name, sizeof name);
    return;
  }
}

static void attach(struct aggio__shm *s) {
  int fd = shm_open(s->name, O_RDWR, 0600);
  if (fd < 0)
    return;
  s->base = map_fd(fd, s->len);
  close(fd);
}

static int attached(struct aggio__op *op);
static int agreed(struct aggio__op *op);

int aggio__shm_make(struct aggio__op *op, struct aggio__shm *s, MPI_Comm comm, size_t len,
                    aggio__step_fn then, int phase) {
  s->base = NULL;
  s->len = len;
  s->comm = comm;
  s->then = then;
  s->phase = phase;
  MPI_Comm_rank(comm, &s->me);
  if (s->me == 0 && len > 0)
    create(s, op->fh);
  op->shm = s;
  aggio__then(op, attached, phase);
  return aggio__op_bcast(op, s->name, AGGIO_SHM_NAME, MPI_CHAR, 0, comm, phase);
}

static int attached(struct aggio__op *op) {
  struct aggio__shm *s = op->shm;
  if (s->me != 0 && s->name[0])
    attach(s);
  s->ok = s->base != NULL;
  aggio__then(op, agreed, s->phase);
  return aggio__op_allreduce(op, MPI_IN_PLACE, &s->ok, 1, MPI_INT, MPI_MIN, s->comm, s->phase);
}

/* Every rank has mapped it (or none keeps it): the name can go. */
static int agreed(struct aggio__op *op) {
  struct aggio__shm *s = op->shm;
  op->shm = NULL;
  if (s->me == 0 && s->name[0])
    shm_unlink(s->name);
  s->name[0] = '\0';
  if (!s->ok || op->err.code != 0)
    aggio__shm_free(s);
  return aggio__then(op, s->then, s->phase);
}

void aggio__shm_free(struct aggio__shm *s) {
  if (s->base)
    munmap(s->base, s->len);
  s->base = NULL;
}
