/*
 * gen_model.h - the random legal MPI-IO program of tests/gen: what a
 * program is (files, views, and one list of actions per rank), how it is
 * built from a seed (gen_model.c), how its accesses map memory bytes to
 * file bytes (gen_layout.c), and an independent check that it obeys the
 * legality rules (gen_check.c).  Pure C: no MPI here, so that the rules
 * are unit-tested on their own (test_gen_model.c).
 *
 * The legality rules, MPI 3.1's (chapter 13) made concrete, are written
 * down at the top of gen_model.c and in docs/testing.md.
 */
#ifndef AGGIO_GEN_MODEL_H
#define AGGIO_GEN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#define GEN_MAX_FILES 3
#define GEN_MAX_RANKS 16    /* the per-byte reader sets are 16-bit masks */
#define GEN_FILE_CAP 262144 /* no access goes beyond this byte of a file */

/* ---- byte ranges and layouts --------------------------------------------- */

/* A list of byte ranges [off, off + len), in order. */
struct gen_ranges {
  int n, cap;
  int64_t *off, *len;
};

/* One instance of a datatype: its data blocks (bytes, in typemap order)
 * and its extent; copies follow each other every `extent` bytes. */
struct gen_layout {
  struct gen_ranges blocks;
  int64_t extent;
  int64_t size; /* data bytes in one instance */
};

/* How a filetype is made (the executor builds the MPI type from this). */
enum gen_ftype {
  GEN_FT_ETYPE,    /* filetype = etype: plain bytes or ints */
  GEN_FT_VECTOR,   /* ior-hard-like: records of `rec` bytes, ranks interleaved */
  GEN_FT_INDEXED,  /* slots of a tile dealt to the ranks, MPI_Type_indexed */
  GEN_FT_SUBARRAY, /* a block of columns of a 2-D array */
};

/* One rank's view of one file: MPI_File_set_view(disp, etype, filetype). */
struct gen_view {
  int64_t disp; /* bytes */
  int esize;    /* etype: 1 MPI_BYTE, 4 MPI_INT */
  enum gen_ftype ftype;
  /* GEN_FT_VECTOR: vector(nrec, rec/esize, stride/esize) resized to extent */
  int nrec, rec, stride;
  /* GEN_FT_INDEXED: n blocks at displs[] of blens[] etypes, resized to tile */
  int nidx, *idx_displ, *idx_blen, tile;
  /* GEN_FT_SUBARRAY: rows x cols etypes, this rank's columns [col0, col0+ncols) */
  int rows, cols, col0, ncols;
  struct gen_layout lay; /* in bytes, derived from the above */
};

/* A memory datatype: `count` copies of etype (contiguous) or of
 * vector(vnb, vblen, vstride) etypes (a non-contiguous buffer). */
struct gen_memtype {
  int vector;
  int vnb, vblen, vstride; /* in etypes */
};

/* ---- actions -------------------------------------------------------------- */

/* Communicators a file is opened on: the world, a dup of it, or one half
 * of it (MPI_Comm_split by rank < nprocs/2): only the half's ranks open. */
enum gen_comm { GEN_COMM_WORLD, GEN_COMM_DUP, GEN_COMM_LOW, GEN_COMM_HIGH, GEN_NCOMMS };

enum gen_kind {
  GK_OPEN,     /* collective over the file's communicator */
  GK_CLOSE,    /* collective */
  GK_SET_VIEW, /* collective */
  GK_SYNC,     /* collective */
  GK_SET_SIZE, /* collective */
  GK_BARRIER,  /* MPI_Barrier(MPI_COMM_WORLD) */
  GK_GET_SIZE, /* local: checks a lower bound, or the exact size */
  GK_SLEEP,    /* local: compute, or a late rank */
  GK_COLL,     /* blocking collective data access (_at_all, _all) */
  GK_ICOLL,    /* start of a non-blocking collective (i..._all) */
  GK_BEGIN,    /* split collective _begin */
  GK_END,      /* split collective _end */
  GK_INDEP,    /* blocking independent access */
  GK_IINDEP,   /* start of a non-blocking independent access */
  GK_WAIT,     /* completes the requests reqs[0..nreq) */
  GK_NKINDS
};

enum gen_wait_how { GW_WAIT, GW_WAITALL, GW_TEST, GW_WAITANY };

/* One rank's part of a data access. */
struct gen_access {
  int write;
  int at;         /* 1: explicit offset (_at); 0: the individual file pointer */
  int seek;       /* pointer accesses: MPI_File_seek(offset) first */
  int64_t offset; /* in etypes of the view: where the access starts */
  int count;      /* copies of the memory type */
  struct gen_memtype mem;
  int view; /* index into the program's views of (file, rank) */
};

struct gen_act {
  enum gen_kind kind;
  int file; /* -1: none (barrier, sleep, wait) */
  int op;   /* data accesses: the operation's id, the same on every rank;
                  GK_END: the id of its GK_BEGIN */
  int sp;   /* sync point number (blocking collectives, barriers), else -1 */
  struct gen_access acc;
  int64_t size;          /* GK_SET_SIZE: the size; GK_GET_SIZE: the exact size or -1 */
  int64_t size_lo;       /* GK_GET_SIZE: lower bound; GK_SET_SIZE: first byte changed;
                      GK_INDEP with check_size: get_size's lower bound after it */
  int check_size;        /* GK_INDEP writes: MPI_File_get_size right after it */
  int usec;              /* GK_SLEEP */
  int consistency;       /* GK_BARRIER: the barrier of a sync-barrier-sync */
  enum gen_comm comm;    /* GK_OPEN */
  enum gen_wait_how how; /* GK_WAIT */
  int nreq, *reqs;       /* GK_WAIT: op ids */
  uint8_t *expect;       /* reads by the rank the program was built for: the
                            bytes expected, in stream order (NULL otherwise) */
};

struct gen_rank_prog {
  int n, cap;
  struct gen_act *acts;
};

struct gen_file_info {
  enum gen_comm comm; /* the communicator of the latest open */
  /* final content, for the check after the last close */
  int64_t size;
  int32_t *wop; /* op that wrote each byte last (-1: none: a zero) */
  int8_t *wrank;
};

struct gen_options {
  uint64_t seed;
  int nprocs;
  int steps;       /* sync points to generate (the program's length) */
  int max_files;   /* 1..GEN_MAX_FILES files; the seed picks how many */
  int me;          /* store expected read data for this rank (-1: none) */
  unsigned quirks; /* GEN_QUIRK_*: restrictions for a reference library */
};

/* Quirks: restrictions of the generated programs, each keeping clear of
 * one known deviation from MPI of a reference MPI-IO library, so that the
 * native run stays a usable reference (genrun.py picks them per library;
 * docs/testing.md).  Every restricted program is still legal.
 *
 * ompio-sync: Open MPI 4.1's OMPIO fails MPI_File_sync while any request
 *   of the process is pending, on any file (one list), and the failing
 *   rank skips the sync's barrier, so the others hang.  A rank syncs only
 *   with nothing outstanding at all.
 * ompio-coll-write: OMPIO returns from a collective write before its
 *   aggregator has written: even the writing rank reads its own bytes back
 *   stale (MPI: a process sees its own completed writes).  Bytes a
 *   collective wrote are touched again only after a sync-barrier-sync.
 * romio-progress: MPICH's ROMIO advances a non-blocking collective only
 *   while it is waited on: a rank waiting for it while another is in a
 *   blocking collective, or waits for another one first, hangs.  Non-
 *   blocking collectives complete before the next sync point, one MPI_Wait
 *   each, in the order they were made, on every rank.
 * romio-pointer: ROMIO sets the individual pointer back, when a
 *   non-blocking collective completes (even an _at_all), to where it was
 *   when it started, undoing the seeks and accesses between.  A rank does
 *   not use a file's pointer while a non-blocking collective on the file
 *   may be outstanding.
 * romio-one-nbc: ROMIO mixes up the messages of two non-blocking
 *   collectives outstanding on one file (wrong bytes, hangs, "Out of memory
 *   in ad_aggregate.c").  One at a time per file.
 * mpich-testall: MPICH 4.0's MPI_Testall over two independent non-blocking
 *   accesses fails an assertion (mpir_request.h: ref_count >= 0).  Several
 *   requests complete by MPI_Waitall or MPI_Waitany only. */
#define GEN_QUIRKS(X)                         \
  X(OMPIO_SYNC, 1u, "ompio-sync")             \
  X(OMPIO_COLL_WRITE, 2u, "ompio-coll-write") \
  X(ROMIO_PROGRESS, 4u, "romio-progress")     \
  X(ROMIO_POINTER, 8u, "romio-pointer")       \
  X(ROMIO_ONE_NBC, 16u, "romio-one-nbc")      \
  X(MPICH_TESTALL, 32u, "mpich-testall")

enum {
#define GEN__QUIRK_ENUM(name, bit, text) GEN_QUIRK_##name = bit,
  GEN_QUIRKS(GEN__QUIRK_ENUM)
#undef GEN__QUIRK_ENUM
};

/* Parses "a,b" of the quirks' names ("none": 0); -1 for an unknown name. */
int gen_quirks_parse(const char *list, unsigned *out);

struct gen_program {
  struct gen_options opt;
  int nfiles;
  int nops; /* op ids are 0..nops-1 */
  int nsp;  /* sync points are 0..nsp-1 */
  struct gen_file_info files[GEN_MAX_FILES];
  /* views[f][r]: every view rank r ever sets on file f (index 0: the
     default view, bytes from 0, which open sets) */
  struct gen_view *views[GEN_MAX_FILES][GEN_MAX_RANKS];
  int nviews[GEN_MAX_FILES][GEN_MAX_RANKS];
  struct gen_rank_prog *ranks; /* [nprocs] */
};

/* Builds the program for opt (deterministic in opt); NULL if out of memory
 * or opt is out of range. */
struct gen_program *gen_build(const struct gen_options *opt);
void gen_free(struct gen_program *p);

/* 1 if world rank r is a member of communicator c among nprocs ranks. */
int gen_comm_member(enum gen_comm c, int r, int nprocs);
/* Rank of r in c and c's size. */
int gen_comm_rank(enum gen_comm c, int r, int nprocs);
int gen_comm_size(enum gen_comm c, int nprocs);

const char *gen_kind_name(enum gen_kind k);
/* The MPI-IO call an action makes (e.g. "MPI_File_iwrite_at_all"), for
 * logs and dumps. */
const char *gen_call_name(const struct gen_act *a);
/* One line describing a, without newline. */
void gen_describe(const struct gen_program *p, int rank, const struct gen_act *a,
                  char *out, size_t cap);

/* The byte written by (op, rank) at file offset off: data is a pure
 * function of the seed, the operation, the writing rank and the byte. */
uint8_t gen_byte(uint64_t seed, int op, int rank, int64_t off);

/* ---- layouts (gen_layout.c) ------------------------------------------------ */

void gen_ranges_init(struct gen_ranges *r);
void gen_ranges_free(struct gen_ranges *r);
int gen_ranges_add(struct gen_ranges *r, int64_t off, int64_t len); /* 0 or -1 */
int64_t gen_ranges_total(const struct gen_ranges *r);
/* 1 if any byte of a is in b. */
int gen_ranges_overlap(const struct gen_ranges *a, const struct gen_ranges *b);

/* Fills v->lay from v's parameters; -1 when out of memory. */
int gen_view_layout(struct gen_view *v);
void gen_view_free(struct gen_view *v);
/* Layout of one copy of a memory type for etype size esize. */
int gen_mem_layout(const struct gen_memtype *m, int esize, struct gen_layout *out);
void gen_layout_free(struct gen_layout *l);

/* Data bytes an access moves: count copies of its memory type. */
int64_t gen_access_bytes(const struct gen_access *a, int esize);
/* Bytes of the buffer an access needs (count copies of the memory type's
 * extent). */
int64_t gen_access_buffer(const struct gen_access *a, int esize);
/* The file bytes the access touches, in stream order: nbytes data bytes
 * from etype `offset` of view v. */
int gen_view_ranges(const struct gen_view *v, int64_t offset, int64_t nbytes,
                    struct gen_ranges *out);
/* Both ends of each data byte of an access: fpos[i] its file offset and
 * mpos[i] its place in the buffer (arrays of gen_access_bytes entries,
 * malloc'd; free them). */
int gen_access_map(const struct gen_view *v, const struct gen_access *a, int64_t **fpos,
                   int64_t **mpos);

/* ---- the independent legality check (gen_check.c) -------------------------- */

/* 0 if p obeys every rule; otherwise -1 with the first violation in err. */
int gen_check(const struct gen_program *p, char *err, size_t cap);

#endif
