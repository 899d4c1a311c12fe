/*
 * fault.c - fault injection for the test suite (AGGIO_FAULTS, fault.h).
 *
 * Real file systems fail on demand only in a few ways (a full tmpfs, a
 * read-only file); the error paths of an I/O thread, of a failing fstat or
 * of a failed small allocation need a switch.  Each rule names an operation,
 * the rank (or every rank), the call number from which it fails and the
 * errno; counters are atomic because I/O threads call the back end too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"

#define MAX_RULES 8

struct rule {
  enum aggio__fault_op op;
  int64_t nth;   /* first failing call, from 1 */
  int onward;    /* every call from nth on, not only nth */
  int err;
};

struct aggio__faults {
  struct rule rule[MAX_RULES];
  int n;
  int64_t calls[AGGIO_FAULT_NOPS];
};

static const char *const op_names[AGGIO_FAULT_NOPS] = {
    "open", "pwrite", "pread", "fsync", "size", "truncate", "alloc", "preallocate", "window", "rma_window", "shm"};

static int parse_op(const char *s, size_t n) {
  for (int i = 0; i < AGGIO_FAULT_NOPS; i++)
    if (strlen(op_names[i]) == n && strncmp(op_names[i], s, n) == 0)
      return i;
  return -1;
}

static int parse_errno(const char *s) {
  static const struct {
    const char *name;
    int err;
  } names[] = {{"EIO", EIO},       {"ENOSPC", ENOSPC}, {"ENOMEM", ENOMEM},
               {"EACCES", EACCES}, {"EROFS", EROFS},   {"EINVAL", EINVAL}};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
    if (strcmp(s, names[i].name) == 0)
      return names[i].err;
  return EIO;
}

/* One rule "op@rank#nth[+][=ERRNO]"; 1 when it applies to `rank`. */
static int parse_rule(char *s, int rank, struct rule *r) {
  char *eq = strchr(s, '=');
  if (eq)
    *eq++ = '\0';
  char *hash = strchr(s, '#');
  if (hash)
    *hash++ = '\0';
  char *at = strchr(s, '@');
  if (at)
    *at++ = '\0';
  int op = parse_op(s, strlen(s));
  if (op < 0)
    return 0;
  if (at && strcmp(at, "*") != 0 && atoi(at) != rank)
    return 0;
  r->op = (enum aggio__fault_op)op;
  r->nth = hash ? atoll(hash) : 1;
  r->onward = hash && strchr(hash, '+') != NULL;
  r->err = eq ? parse_errno(eq) : EIO;
  return r->nth > 0;
}

struct aggio__faults *aggio__faults_new(int rank) {
  const char *spec = getenv("AGGIO_FAULTS");
  if (!spec || !*spec)
    return NULL;
  struct aggio__faults *f = calloc(1, sizeof *f);
  char *copy = strdup(spec);
  if (!f || !copy) {
    free(f);
    free(copy);
    return NULL;
  }
  for (char *save = NULL, *tok = strtok_r(copy, ",", &save); tok && f->n < MAX_RULES;
       tok = strtok_r(NULL, ",", &save))
    if (parse_rule(tok, rank, &f->rule[f->n]))
      f->n++;
  free(copy);
  if (f->n == 0) {
    free(f);
    return NULL;
  }
  return f;
}

void aggio__faults_free(struct aggio__faults *f) { free(f); }

/* Calls of each operation under a rule, in every file of the process (the
 * fault sweeps count a scenario's calls once, then fail each in turn). */
static int64_t calls_seen[AGGIO_FAULT_NOPS];

int64_t aggio__fault_calls(enum aggio__fault_op op) {
  return __atomic_load_n(&calls_seen[op], __ATOMIC_RELAXED);
}

int aggio__fault(struct aggio__faults *f, enum aggio__fault_op op) {
  if (!f)
    return 0;
  __atomic_add_fetch(&calls_seen[op], 1, __ATOMIC_RELAXED);
  int64_t k = __atomic_add_fetch(&f->calls[op], 1, __ATOMIC_RELAXED);
  for (int i = 0; i < f->n; i++) {
    const struct rule *r = &f->rule[i];
    if (r->op == op && (k == r->nth || (r->onward && k > r->nth)))
      return r->err;
  }
  return 0;
}
