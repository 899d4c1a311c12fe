/*
 * fault.h - fault injection for the test suite (fault.c): a storage call,
 * an allocation or a window made to fail on demand.
 */
#ifndef AGGIO_FAULT_H
#define AGGIO_FAULT_H

#include <stdint.h>

/* ---- fault injection for tests (fault.c) ----------------------------------
 * AGGIO_FAULTS="op@rank#nth=ERRNO,..." makes the nth call (counted from 1;
 * "#3+" the 3rd and every later one) of a storage operation or allocation
 * fail on a rank ("@*" every rank).  ops: open, pwrite, pread, fsync, size,
 * truncate, alloc, preallocate, window, rma_window, shm (a node's shared memory, shm.c).  ERRNO: EIO (default), ENOSPC, ENOMEM, EACCES, EROFS, EINVAL.  Read once
 * at open; costs one test of a pointer per call when unset.  For the test
 * suite: it lets tests reach error paths no real file system produces on
 * demand (a failing fstat, an EIO in an I/O thread, a failed allocation). */
enum aggio__fault_op {
  AGGIO_FAULT_OPEN,
  AGGIO_FAULT_PWRITE,
  AGGIO_FAULT_PREAD,
  AGGIO_FAULT_FSYNC,
  AGGIO_FAULT_SIZE,
  AGGIO_FAULT_TRUNCATE,
  AGGIO_FAULT_ALLOC,
  AGGIO_FAULT_PREALLOCATE,
  AGGIO_FAULT_WINDOW, /* the shared file pointer's window, at open */
  AGGIO_FAULT_RMA_WINDOW, /* the RMA exchange's window (a rank's part refused) */
  AGGIO_FAULT_SHM, /* creating a node's shared memory (shm.c) */
  AGGIO_FAULT_NOPS
};
struct aggio__faults;
/* Parses AGGIO_FAULTS for this rank; NULL when none applies. */
struct aggio__faults *aggio__faults_new(int rank);
void aggio__faults_free(struct aggio__faults *f);
/* 0, or the errno the nth call of op must fail with. Thread-safe. */
int aggio__fault(struct aggio__faults *f, enum aggio__fault_op op);
/* Calls of op so far in the process's files that have AGGIO_FAULTS rules
 * (a rule that never fires still counts them): the fault sweeps' count of
 * the places a scenario could fail. */
int64_t aggio__fault_calls(enum aggio__fault_op op);

#endif
