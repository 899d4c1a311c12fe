/*
 * gen_exec.h - runs this rank's part of a generated program through
 * gen_io.h (gen_exec.c), compiled once per interface: plain MPI-IO for
 * gen_mpiio, libaggio's API for gen_aggio.
 */
#ifndef AGGIO_GEN_EXEC_H
#define AGGIO_GEN_EXEC_H

#include <mpi.h>
#include <stdio.h>

#include "gen_model.h"

struct gen_exec_env {
  const struct gen_program *p;
  int me;
  FILE *log;                 /* one line per action: the outcome log */
  const char *dir;           /* where the files are */
  MPI_Comm comm[GEN_NCOMMS]; /* MPI_COMM_NULL where this rank is no member */
};

/* Runs rank env->me's actions; returns how many outcomes were wrong (a
 * failed call, a wrong count, wrong bytes, a wrong size), each also
 * reported on stderr and in the log. */
int gen_execute(const struct gen_exec_env *env);

/* The path of file f under dir. */
void gen_file_path(const char *dir, int f, char *out, size_t cap);

/* The name of the I/O interface compiled in ("MPI-IO" or "libaggio"). */
const char *gen_io_api(void);

#endif
