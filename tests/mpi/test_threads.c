/*
 * test_threads.c - aggio at MPI_THREAD_MULTIPLE with several application
 * threads on one file, for ThreadSanitizer (scripts/test runs it in the
 * TSan builds) as much as for the bytes:
 *   info    while the main thread's non-blocking collective writes set the
 *           strategies up (in aggio's progress thread, on a fresh file
 *           each round), a second thread asks get_size and get_info over
 *           and over: the fields they read are written meanwhile;
 *   types   two threads write and read independently through the same
 *           derived datatypes, made fresh each round, at once: both may
 *           find a type missing from the datatype cache, or present.
 * Each file is compared with what was written.
 *
 * aggio-test-ranks: 1 2 4
 * aggio-test-parts: info types
 */
#include <aggio.h>

#include "harness.h"

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

enum { ROUNDS = 6, BLOCK = 40000 };

static int rank, nprocs;
static char path[512];

struct poller {
  aggio_file fh;
  volatile int stop;
  int looks;
  int bad;
};

static void *poll_file(void *arg) {
  struct poller *p = arg;
  while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
    MPI_Offset size = -1;
    MPI_Info info;
    p->bad += aggio_file_get_size(p->fh, &size) != 0 || size < 0;
    if (aggio_file_get_info(p->fh, &info) == 0)
      MPI_Info_free(&info);
    else
      p->bad++;
    __atomic_add_fetch(&p->looks, 1, __ATOMIC_RELEASE);
  }
  return NULL;
}

static unsigned char datum(int r, int64_t i) { return (unsigned char)(r * 41 + i * 3 + i / 97 + 1); }

static void t_info(void) {
  static const char *strategies[] = {"auto", "two_phase", "write_behind"};
  unsigned char *buf = malloc(BLOCK), *back = malloc(BLOCK);
  for (int k = 0; k < ROUNDS; k++) {
    MPI_Info hints;
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "aggio_strategy", strategies[k % 3]);
    MPI_Info_set(hints, "cb_buffer_size", "8192");
    aggio_file fh;
    int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, hints, &fh);
    MPI_Info_free(&hints);
    CHECK(rc == 0, "open: %s", aggio_error_message());
    if (rc != 0)
      return;
    struct poller p = {.fh = fh};
    pthread_t t;
    pthread_create(&t, NULL, poll_file, &p);
    int64_t at = (int64_t)rank * BLOCK;
    for (int i = 0; i < BLOCK; i++)
      buf[i] = datum(rank + k, at + i);
    aggio_request req;
    CHECK(aggio_file_iwrite_at_all(fh, at, buf, BLOCK, MPI_BYTE, &req) == 0, "iwrite_at_all");
    CHECK(aggio_wait(&req, MPI_STATUS_IGNORE) == 0, "wait: %s", aggio_error_message());
    memset(back, 0, BLOCK);
    CHECK(aggio_file_iread_at_all(fh, at, back, BLOCK, MPI_BYTE, &req) == 0, "iread_at_all");
    CHECK(aggio_wait(&req, MPI_STATUS_IGNORE) == 0, "wait: %s", aggio_error_message());
    CHECK(memcmp(buf, back, BLOCK) == 0, "round %d (%s): rank %d read other bytes back", k,
          strategies[k % 3], rank);
    while (__atomic_load_n(&p.looks, __ATOMIC_ACQUIRE) == 0) /* it looked at least once */
      sched_yield();
    __atomic_store_n(&p.stop, 1, __ATOMIC_RELEASE);
    pthread_join(t, NULL);
    CHECK(p.bad == 0 && p.looks > 0, "round %d: %d of %d looks at size and info failed", k,
          p.bad, p.looks);
    aggio_file_close(&fh);
  }
  free(buf);
  free(back);
}

struct writer {
  aggio_file fh;
  MPI_Datatype type; /* shared by both threads */
  int id, bad;
};

/* Every other byte of 2 * BLOCK / 2 in memory; the file gets them packed. */
static void *write_and_read(void *arg) {
  struct writer *w = arg;
  enum { N = BLOCK / 2 };
  unsigned char *mem = calloc(2 * N, 1), *back = calloc(2 * N, 1);
  int64_t at = ((int64_t)rank * 2 + w->id) * N;
  for (int i = 0; i < N; i++)
    mem[2 * i] = datum(rank * 2 + w->id, at + i);
  w->bad += aggio_file_write_at(w->fh, at, mem, 1, w->type, MPI_STATUS_IGNORE) != 0;
  w->bad += aggio_file_read_at(w->fh, at, back, 1, w->type, MPI_STATUS_IGNORE) != 0;
  for (int i = 0; i < N; i++)
    w->bad += back[2 * i] != mem[2 * i];
  free(mem);
  free(back);
  return NULL;
}

static void t_types(void) {
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR,
                           MPI_INFO_NULL, &fh);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  if (rc != 0)
    return;
  for (int k = 0; k < ROUNDS * 4; k++) {
    MPI_Datatype t;
    MPI_Type_vector(BLOCK / 2, 1, 2, MPI_BYTE, &t);
    MPI_Type_commit(&t);
    struct writer w[2] = {{fh, t, 0, 0}, {fh, t, 1, 0}};
    pthread_t th;
    pthread_create(&th, NULL, write_and_read, &w[1]);
    write_and_read(&w[0]);
    pthread_join(th, NULL);
    MPI_Type_free(&t);
    CHECK(w[0].bad == 0 && w[1].bad == 0, "round %d: rank %d: %d and %d bad bytes or calls", k,
          rank, w[0].bad, w[1].bad);
  }
  aggio_file_close(&fh);
}

int main(int argc, char **argv) {
  const char *part = argc > 1 ? argv[1] : "info";
  int level = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &level);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/threads.%s.%d", test_dir(), part, id);
  if (level < MPI_THREAD_MULTIPLE) {
    if (rank == 0)
      test_skip("the MPI library gives thread level %d, not MPI_THREAD_MULTIPLE", level);
  } else if (strcmp(part, "info") == 0) {
    t_info();
  } else {
    t_types();
  }
  return test_finish_mpi(path);
}
