/*
 * use_example.c - a program using the strategy added by
 * add_strategy.cmake through the public API: aggio_strategy=example runs
 * it (aggio_strategy_selected, and the strategy's own count of calls), and
 * the bytes written collectively read back.  Prints "example strategy: ok".
 */
#include <stdio.h>
#include <string.h>

#include <aggio.h>

long aggio_example_calls(aggio_file fh);

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
  int any = 0;
  MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
  if (rank == 0)
    printf("example strategy: %s (selected \"%s\", %ld calls on rank 0)\n",
           any ? "FAILED" : "ok", sel, calls);
  if (rank == 0)
    remove(path);
  MPI_Finalize();
  return any;
}
