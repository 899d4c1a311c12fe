/*
 * test_robust.c - a process that dies holding the node cache's lock must
 * not wedge the node's other ranks (src/strategies/write_behind/cache.c: the lock is robust, and
 * the next rank to take it recovers it, EOWNERDEAD).  A child process of
 * the last rank (fork: it shares the node memory) takes the lock and
 * exits holding it; then every rank writes and reads through the cache
 * again and closes, and the bytes must be right.  Before the lock was
 * robust this hung (the alarm fails the test).
 *
 * aggio-test-ranks: 1 2 4
 */
#include <aggio.h>

#include "cache.h"
#include "harness.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum { REC = 4096 };

static void on_alarm(int sig) {
  (void)sig;
  static const char m[] = "TIMEOUT: the node cache stayed locked by a dead process\n";
  if (write(2, m, sizeof m - 1) < 0)
    _exit(4);
  _exit(4);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, nprocs;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
  signal(SIGALRM, on_alarm);
  alarm(60);
  char path[512];
  int id = (int)getpid();
  MPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);
  snprintf(path, sizeof path, "%s/robust.%d", test_dir(), id);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "write_behind");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  CHECK(rc == 0, "open: %s", aggio_error_message());
  unsigned char buf[REC], back[REC];
  for (int k = 0; rc == 0 && k < 2; k++) {
    memset(buf, 0x30 + rank + k, REC);
    MPI_Offset at = ((MPI_Offset)k * nprocs + rank) * REC;
    CHECK(aggio_file_write_at_all(fh, at, buf, REC, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "write %d: %s", k, aggio_error_message());
    struct aggio__cache *c = aggio__write_behind_cache(fh);
    CHECK(c != NULL, "rank %d: no node cache after a write through write_behind", rank);
    if (k == 0 && rank == nprocs - 1 && c) {
      pid_t child = fork();
      if (child == 0) { /* shares the node memory; takes the lock and dies */
        aggio__cache_lock_for_test(c);
        _exit(0);
      }
      int status = 0;
      waitpid(child, &status, 0);
      CHECK(WIFEXITED(status), "the child did not exit");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    memset(back, 0, REC);
    CHECK(aggio_file_read_at_all(fh, at, back, REC, MPI_BYTE, MPI_STATUS_IGNORE) == 0,
          "read %d: %s", k, aggio_error_message());
    CHECK(memcmp(buf, back, REC) == 0, "rank %d: read %d gave other bytes", rank, k);
  }
  if (rc == 0)
    CHECK(aggio_file_close(&fh) == 0, "close: %s", aggio_error_message());
  return test_finish_mpi(path);
}
