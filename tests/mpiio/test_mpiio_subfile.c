/*
 * test_mpiio_subfile.c - an unmodified MPI-IO program writes a file with
 * subfiling asked by one hint in AGGIO_HINTS (under aggio-run: M subfiles
 * and a layout at the name; natively the MPI library ignores the hint and
 * writes one file), then communicators of other sizes (one rank, all but
 * one) read it back with no hint, collectively and independently, and
 * every byte is the program's.  Under aggio the name holds the layout,
 * which the MPI library's own MPI-IO reads as text that says how to read
 * the file: never another program's bytes.
 *
 * aggio-test-ranks: 1 2 3 4
 */
#include <unistd.h>

#include "mpiio_common.h"

#define BLOCK 65536 /* one segmented block per rank per call, a stripe each */
#define SEGMENTS 6
#define RECORD 47008 /* ior-hard's record, in a second region */
#define RECORDS 5

static int rank, nranks;

static char byte_at(MPI_Offset off) { return (char)('A' + (off * 13 + off / 4099) % 61); }

static MPI_Offset region2(void) { return (MPI_Offset)BLOCK * SEGMENTS * nranks; }
static MPI_Offset file_size(void) { return region2() + (MPI_Offset)RECORD * RECORDS * nranks; }

/* Segmented blocks with explicit offsets, then ior-hard records through a
 * strided view, all collective. */
static void write_file(const char *path) {
  setenv("AGGIO_HINTS", "*:aggio_subfiles=3:aggio_subfile_stripe=65536", 1);
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_WRONLY,
                         MPI_INFO_NULL, &fh);
  unsetenv("AGGIO_HINTS");
  CHECK(rc == MPI_SUCCESS, "open for writing failed");
  if (rc != MPI_SUCCESS)
    return;
  char *buf = malloc(BLOCK > RECORD * RECORDS ? BLOCK : RECORD * RECORDS);
  for (int s = 0; s < SEGMENTS; s++) {
    MPI_Offset off = ((MPI_Offset)s * nranks + rank) * BLOCK;
    for (int i = 0; i < BLOCK; i++)
      buf[i] = byte_at(off + i);
    rc |= MPI_File_write_at_all(fh, off, buf, BLOCK, MPI_BYTE, MPI_STATUS_IGNORE);
  }
  MPI_Datatype rec;
  MPI_Type_vector(RECORDS, RECORD, RECORD * nranks, MPI_BYTE, &rec);
  MPI_Type_commit(&rec);
  MPI_Offset disp = region2() + (MPI_Offset)rank * RECORD;
  for (int i = 0; i < RECORD * RECORDS; i++)
    buf[i] = byte_at(disp + (MPI_Offset)(i / RECORD) * RECORD * nranks + i % RECORD);
  rc |= MPI_File_set_view(fh, disp, MPI_BYTE, rec, "native", MPI_INFO_NULL);
  rc |= MPI_File_write_all(fh, buf, RECORD * RECORDS, MPI_BYTE, MPI_STATUS_IGNORE);
  rc |= MPI_File_close(&fh);
  CHECK(rc == MPI_SUCCESS, "the writes failed");
  MPI_Type_free(&rec);
  free(buf);
}

/* comm reads the whole file in round-robin chunks, collectively or not. */
static void read_file(MPI_Comm comm, const char *path, int collective) {
  int me, n;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  MPI_File fh;
  int rc = MPI_File_open(comm, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
  CHECK(rc == MPI_SUCCESS, "open on %d ranks failed", n);
  if (rc != MPI_SUCCESS)
    return;
  MPI_Offset size = -1, chunk = 100003, bad = 0;
  MPI_File_get_size(fh, &size);
  CHECK(size == file_size(), "%d ranks: size %lld, wrote %lld", n, (long long)size,
        (long long)file_size());
  char *buf = malloc((size_t)chunk);
  MPI_Offset rounds = (file_size() + chunk * n - 1) / (chunk * n);
  for (MPI_Offset r = 0; r < rounds; r++) {
    MPI_Offset off = (r * n + me) * chunk;
    MPI_Status st;
    int count = -1;
    /* no read past the end: Open MPI's OMPIO counts the bytes asked there */
    MPI_Offset want = off >= file_size() ? 0 : file_size() - off < chunk ? file_size() - off
                                                                           : chunk;
    rc = collective ? MPI_File_read_at_all(fh, off, buf, (int)want, MPI_BYTE, &st)
                    : MPI_File_read_at(fh, off, buf, (int)want, MPI_BYTE, &st);
    MPI_Get_count(&st, MPI_BYTE, &count);
    bad += rc != MPI_SUCCESS || count != want;
    for (MPI_Offset i = 0; i < want && i < count; i++)
      bad += buf[i] != byte_at(off + i);
  }
  CHECK(bad == 0, "%d ranks, %s: %lld wrong bytes or counts", n,
        collective ? "collective" : "independent", (long long)bad);
  free(buf);
  MPI_File_close(&fh);
}

static void read_with(int color_me, const char *path) {
  MPI_Comm sub;
  MPI_Comm_split(MPI_COMM_WORLD, color_me ? 0 : MPI_UNDEFINED, 0, &sub);
  if (sub != MPI_COMM_NULL) {
    read_file(sub, path, 1);
    read_file(sub, path, 0);
    MPI_Comm_free(&sub);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

/* What the name holds: under aggio the layout (read here through the MPI
 * library's own MPI-IO, as a program without aggio would), natively the
 * data. */
static void check_name(const char *path, int aggio) {
  MPI_Offset len = 0;
  char *file = mpiio_read_reference(MPI_COMM_WORLD, path, &len);
  CHECK(file != NULL, "the MPI library cannot open %s", path);
  if (!file)
    return;
  file[len] = '\0';
  if (aggio)
    CHECK(strncmp(file, "aggio subfiled file, format 1\n", 30) == 0 &&
              strstr(file, "aggio subfile join") && strstr(file, "subfiles 3\n"),
          "the name holds %.60s, not the layout", file);
  else
    CHECK(len == file_size() && file[0] == byte_at(0), "natively: %lld bytes", (long long)len);
  free(file);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  int aggio = mpiio_check_mode();
  char path[600];
  mpiio_fresh_path(path, sizeof path, "subfile");
  write_file(path);
  check_name(path, aggio);
  read_with(1, path);          /* the writers */
  read_with(rank == 0, path);  /* one rank */
  if (nranks > 2)
    read_with(rank > 0, path); /* all but one */
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    CHECK(MPI_File_delete(path, MPI_INFO_NULL) == MPI_SUCCESS, "delete failed");
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0 && aggio) {
    char sub[700];
    snprintf(sub, sizeof sub, "%s.subfile.0.of.3", path);
    CHECK(access(sub, F_OK) != 0 && access(path, F_OK) != 0, "MPI_File_delete left files");
  }
  int rc = test_summary_mpi(MPI_COMM_WORLD);
  MPI_Finalize();
  return rc;
}
