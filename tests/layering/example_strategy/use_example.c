/*
 * use_example.c - a program using the strategy added by
 * add_strategy.cmake through the public API: aggio_strategy=example runs
 * it (aggio_strategy_selected, and the strategy's own count of calls), and
 * the bytes written collectively read back.  Then the storage back end it
 * added: aggio_storage=example stores a collective write (the back end's
 * own count of writes), and the file holds the bytes, read with stdio.
 * Prints "example strategy: ok; example storage: ok".
 */
#include <stdio.h>
#include <string.h>

#include <aggio.h>

long aggio_example_calls(aggio_file fh);
long aggio_example_storage_writes(void);

/* A collective write through aggio_storage=example; 0 when the file
 * holds it and the back end counted its writes. */
static int storage_example(const char *path, int rank, int np) {
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_storage", "example");
  aggio_file fh;
  int bad = aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  MPI_Info_free(&info);
  if (bad) {
    fprintf(stderr, "open with aggio_storage=example: %s\n", aggio_error_message());
    return 1;
  }
  char buf[4096];
  memset(buf, 'A' + rank, sizeof buf);
  bad |= aggio_file_write_at_all(fh, (MPI_Offset)rank * 4096, buf, 4096, MPI_BYTE,
                                 MPI_STATUS_IGNORE) != 0;
  bad |= aggio_file_close(&fh) != 0;
  long mine = aggio_example_storage_writes(), all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
  bad |= all == 0;
  FILE *f = fopen(path, "rb");
  for (int r = 0; f && r < np; r++) {
    char got[4096];
    bad |= fread(got, 1, sizeof got, f) != sizeof got;
    for (size_t i = 0; i < sizeof got; i++)
      bad |= got[i] != 'A' + r;
  }
  bad |= f == NULL;
  if (f)
    fclose(f);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    remove(path);
  return bad;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np, bad = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "aggio_strategy", "example");
  aggio_file fh;
  const char *path = argc > 1 ? argv[1] : "example.dat";
  if (aggio_file_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh) != 0) {
    fprintf(stderr, "open: %s\n", aggio_error_message());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Info_free(&info);
  char buf[4096], back[4096];
  memset(buf, 'a' + rank, sizeof buf);
  bad |= aggio_file_write_at_all(fh, (MPI_Offset)rank * 4096, buf, 4096, MPI_BYTE,
                                 MPI_STATUS_IGNORE) != 0;
  bad |= aggio_file_read_at_all(fh, (MPI_Offset)rank * 4096, back, 4096, MPI_BYTE,
                                MPI_STATUS_IGNORE) != 0;
  bad |= memcmp(buf, back, sizeof buf) != 0;
  MPI_Info used;
  char sel[64] = "";
  int flag = 0;
  if (aggio_file_get_info(fh, &used) == 0) {
    MPI_Info_get(used, "aggio_strategy_selected", sizeof sel - 1, sel, &flag);
    MPI_Info_free(&used);
  }
  bad |= strcmp(sel, "example") != 0;
  long calls = aggio_example_calls(fh);
  bad |= calls != 2;
  aggio_file_close(&fh);
  int any = 0, st_any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0)
    remove(path);
  int st_bad = storage_example(path, rank, np);
  MPI_Allreduce(&st_bad, &st_any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0)
    printf("example strategy: %s; example storage: %s (selected \"%s\", %ld calls on "
           "rank 0)\n", any ? "FAILED" : "ok", st_any ? "FAILED" : "ok", sel, calls);
  MPI_Finalize();
  return any || st_any;
}
