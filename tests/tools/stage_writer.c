/*
 * stage_writer.c - a checkpointing program for the staging tests
 * (python/tests/test_stage_c.py, docs/staging.md): every rank writes
 * blocks of its own, again and again, through a staged file, and keeps
 * a log of what it was told: "W b v" before the write of version v of its
 * block b, "A b v" once the write returned success.  The tests kill the
 * ranks (SIGKILL) at some moment, drain the stage with `aggio stage
 * drain`, and check every block against the log: the last acknowledged
 * version, or a later one whole, never anything else.
 *
 *   aggio_stage_writer FILE STAGE_DIR DRAIN BLOCKS BLOCK_BYTES WRITES LOG [MOVERS]
 *
 * WRITES: writes per rank, then close and exit 0 (0: until killed).  The
 * log of rank r is LOG.r; LOG.r.pid holds the rank's process id, written
 * once the file is open.  With WRITES > 0 the same writes also go to
 * FILE.ref through the MPI library's own MPI-IO, the test's reference.
 * With AGGIO_STAGE_WRITER_NO_CLOSE=1 in the environment the program leaves
 * the file open: MPI_Finalize closes it (and says on stderr what it could
 * not write).
 * Block b of rank r lies at (b * nranks + r) * BLOCK_BYTES; byte i of
 * version v is (i * 31 + v * 17 + 1) % 251 (i: the byte's offset in the
 * file).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <aggio.h>
#include <mpi.h>

static int rank, nranks;

static void fill(unsigned char *buf, long long off, long long len, int v) {
  for (long long i = 0; i < len; i++)
    buf[i] = (unsigned char)(((off + i) * 31 + (long long)v * 17 + 1) % 251);
}

static void say(int fd, char kind, long long b, int v) {
  char line[64];
  int n = snprintf(line, sizeof line, "%c %lld %d\n", kind, b, v);
  if (write(fd, line, (size_t)n) != n) /* the test sees a short log: no ack */
    return;
}

/* The same writes through the MPI library's MPI-IO (the reference). */
static void reference(const char *path, long long blocks, long long bs, long long writes,
                      unsigned char *buf) {
  MPI_File f;
  char ref[4200];
  snprintf(ref, sizeof ref, "%s.ref", path);
  if (MPI_File_open(MPI_COMM_WORLD, ref, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL,
                    &f) != MPI_SUCCESS)
    return;
  for (long long i = 0; i < writes; i++) {
    long long b = i % blocks, off = (b * nranks + rank) * bs;
    fill(buf, off, bs, (int)(i / blocks));
    MPI_File_write_at(f, off, buf, (int)bs, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  MPI_File_close(&f);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  aggio_init();
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (argc < 8) {
    if (rank == 0)
      fprintf(stderr, "usage: %s FILE STAGE_DIR DRAIN BLOCKS BLOCK_BYTES WRITES LOG "
              "[MOVERS]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  long long blocks = atoll(argv[4]), bs = atoll(argv[5]), writes = atoll(argv[6]);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_stage_dir", argv[2]);
  MPI_Info_set(info, "aggio_stage_drain", argv[3]);
  MPI_Info_set(info, "aggio_stage_movers", argc > 8 ? argv[8] : "2");
  aggio_file fh;
  int rc = aggio_file_open(MPI_COMM_WORLD, argv[1], MPI_MODE_CREATE | MPI_MODE_WRONLY, info,
                           &fh);
  MPI_Info_free(&info);
  if (rc != AGGIO_SUCCESS) {
    fprintf(stderr, "rank %d: open failed: %d\n", rank, rc);
    MPI_Finalize();
    return 1;
  }
  char log[4200];
  snprintf(log, sizeof log, "%s.%d", argv[7], rank);
  int lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644);
  snprintf(log, sizeof log, "%s.%d.pid", argv[7], rank);
  FILE *pf = fopen(log, "w");
  if (pf) {
    fprintf(pf, "%d\n", (int)getpid());
    fclose(pf);
  }
  unsigned char *buf = malloc((size_t)bs);
  for (long long i = 0; writes == 0 || i < writes; i++) {
    long long b = i % blocks, off = (b * nranks + rank) * bs;
    int v = (int)(i / blocks);
    fill(buf, off, bs, v);
    say(lfd, 'W', b, v);
    rc = aggio_file_write_at(fh, off, buf, (int)bs, MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc != AGGIO_SUCCESS) {
      fprintf(stderr, "rank %d: write %lld failed: %d\n", rank, i, rc);
      break;
    }
    say(lfd, 'A', b, v);
  }
  close(lfd);
  const char *keep = getenv("AGGIO_STAGE_WRITER_NO_CLOSE");
  int crc = keep && strcmp(keep, "1") == 0 ? AGGIO_SUCCESS : aggio_file_close(&fh);
  if (writes > 0)
    reference(argv[1], blocks, bs, writes, buf);
  free(buf);
  MPI_Finalize();
  return rc != AGGIO_SUCCESS || crc != AGGIO_SUCCESS;
}
