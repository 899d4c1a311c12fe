/*
 * requests.c - MPI_Requests for the non-blocking calls on aggio files, and
 * the MPI completion calls that drive them.
 *
 * A non-blocking call starts libaggio's operation (aggio_file_iwrite_at_all
 * and friends return at once) and hands the program a generalized request
 * (MPI_Grequest_start, MPI 3.1 chapter 12): a real MPI_Request, which may
 * share an array with the program's other requests.  Such a request
 * completes only when MPI_Grequest_complete is called, and MPI calls
 * nothing of ours while the program waits on it; so this file also defines
 * the completion calls (MPI_Wait, MPI_Test and their -all, -any and -some
 * forms, MPI_Request_get_status, MPI_Request_free).  When the array holds
 * requests of ours they drive libaggio (aggio_test, aggio_wait), complete
 * the generalized requests whose operation ended, and leave the rest to
 * PMPI_*; waiting on a mix, one loop tests both kinds, so neither waits for
 * the other.  With no request of ours alive they cost one atomic load.
 *
 * The outcome travels beside MPI, not through it: query_fn always succeeds
 * (an error there would go to the communicator's handler, fatal by
 * default), and the calls here put the file's error code in the status and
 * the return value, through the file's error handler (errors.c).
 *
 * libaggio's own MPI calls reach these definitions too (they are the
 * process's MPI_Wait...), but their arrays never hold our requests, so
 * they go straight to PMPI_*: nothing here calls back into libaggio from
 * inside it.
 */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#endif
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "mpiio.h"
#include "next.h"

struct mpiio_request {
  MPI_Request greq;     /* the program's handle */
  aggio_request ar;     /* the operation; AGGIO_REQUEST_NULL once its outcome is here */
  struct mpiio_file *f; /* its file; NULL once the file is closed */
  int amode;            /* to map the outcome to an MPI error code, */
  MPI_Count count;      /* with the count (mpiio_data_error) */
  int busy;             /* a thread is taking the outcome (claim) */
  int done;             /* the outcome is here and greq completed */
  int freed;            /* the program freed greq: nobody will wait for it */
  int orphan;           /* its file closed before the outcome was taken */
  int code;             /* the outcome, an MPI error code */
  MPI_Count bytes;      /* what the status says */
  struct mpiio_request *prev, *next;
};

/* Every request whose generalized request MPI has not freed yet. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct mpiio_request *head;
static int alive; /* how many; read without the lock as the cheap check */

static int any_alive(void) { return __atomic_load_n(&alive, __ATOMIC_ACQUIRE) > 0; }

static void link_request(struct mpiio_request *q) { /* locked */
  q->next = head;
  q->prev = NULL;
  if (head)
    head->prev = q;
  head = q;
  __atomic_add_fetch(&alive, 1, __ATOMIC_RELEASE);
}

static void unlink_request(struct mpiio_request *q) { /* locked */
  if (q->prev)
    q->prev->next = q->next;
  else
    head = q->next;
  if (q->next)
    q->next->prev = q->prev;
  __atomic_sub_fetch(&alive, 1, __ATOMIC_RELEASE);
}

/* The record behind a handle the program holds, or NULL (locked). */
static struct mpiio_request *find(MPI_Request r) {
  if (r == MPI_REQUEST_NULL)
    return NULL;
  for (struct mpiio_request *q = head; q; q = q->next)
    if (q->greq == r && !q->freed)
      return q;
  return NULL;
}

/* ---- the generalized request's callbacks ------------------------------------ */

static int query(void *extra, MPI_Status *status) {
  struct mpiio_request *q = extra;
  pthread_mutex_lock(&lock); /* written by the thread that took the outcome */
  MPI_Count bytes = q->bytes;
  pthread_mutex_unlock(&lock);
  MPI_Status_set_elements_x(status, MPI_BYTE, bytes);
  MPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return MPI_SUCCESS; /* the outcome is ours to report: see the top */
}

/* MPI frees the request: after the program's wait or test, or at once
 * when the program freed it earlier and it completes now. */
static int release(void *extra) {
  struct mpiio_request *q = extra;
  pthread_mutex_lock(&lock);
  unlink_request(q);
  pthread_mutex_unlock(&lock);
  free(q);
  return MPI_SUCCESS;
}

/* The other ranks take part in a collective operation, and an independent
 * one may have half reached the file: nothing can be undone.  The request
 * completes as usual and MPI_Test_cancelled says false. */
static int cancel(void *extra, int complete) {
  (void)extra, (void)complete;
  return MPI_SUCCESS;
}

/* ---- taking an operation's outcome ------------------------------------------ */

/* 1 when this thread may take q's outcome; it must then call take() (locked). */
static int claim(struct mpiio_request *q) {
  if (q->done || q->busy)
    return 0;
  q->busy = 1;
  return 1;
}

/* Tests (or, with block, waits for) q's operation; once it has ended,
 * records the outcome and completes the generalized request, after which
 * q may be gone (a freed request is released at once).  q is claimed.
 * Returns 1 when it ended. */
static int take(struct mpiio_request *q, int block) {
  MPI_Status st;
  int flag = 1;
  int rc = block ? aggio_wait(&q->ar, &st) : aggio_test(&q->ar, &flag, &st);
  if (!flag) {
    pthread_mutex_lock(&lock);
    q->busy = 0;
    pthread_mutex_unlock(&lock);
    return 0;
  }
  MPI_Count bytes = 0;
  MPI_Get_elements_x(&st, MPI_BYTE, &bytes);
  int code =
      mpiio_data_error(rc, q->amode, q->count); /* aggio's message is this thread's */
  pthread_mutex_lock(&lock);
  q->bytes = bytes < 0 ? 0 : bytes;
  q->code = code;
  q->done = 1;
  q->busy = 0;
  MPI_Request greq = q->greq;
  pthread_mutex_unlock(&lock);
  PMPI_Grequest_complete(greq);
  return 1;
}

/* Takes the outcome of freed requests whose operation has ended: nobody
 * waits for them, and their aggio requests are released only here.  At
 * most a batch per call: every call that holds requests of ours, and
 * every starting call, comes here. */
#define REAP_BATCH 16

static void reap_freed(void) {
  struct mpiio_request *batch[REAP_BATCH];
  int n = 0;
  pthread_mutex_lock(&lock);
  for (struct mpiio_request *q = head; q && n < REAP_BATCH; q = q->next)
    if (q->freed && claim(q))
      batch[n++] = q;
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < n; i++)
    take(batch[i], 0);
}

/* Takes the outcome of every request marked orphan (their file's close
 * or MPI_Finalize completed their operations). */
static void take_orphans(void) {
  for (;;) {
    struct mpiio_request *q;
    pthread_mutex_lock(&lock);
    for (q = head; q && !(q->orphan && claim(q)); q = q->next)
      ;
    if (q)
      q->orphan = 0;
    pthread_mutex_unlock(&lock);
    if (!q)
      return;
    take(q, 0);
  }
}

void mpiio_requests_closed(struct mpiio_file *f) {
  if (!any_alive())
    return;
  pthread_mutex_lock(&lock);
  for (struct mpiio_request *q = head; q; q = q->next)
    if (f == NULL || q->f == f) {
      q->f = NULL; /* its handler is now MPI_FILE_NULL's */
      q->orphan = !q->done;
    }
  pthread_mutex_unlock(&lock);
  take_orphans();
}

void mpiio_requests_reap(void) {
  if (any_alive())
    reap_freed();
}

/* ---- starting ------------------------------------------------------------------ */

struct mpiio_request *mpiio_request_new(struct mpiio_file *f, MPI_Count count) {
  struct mpiio_request *q = calloc(1, sizeof *q);
  if (!q)
    return NULL;
  q->f = f;
  q->amode = f->amode;
  q->count = count;
  q->greq = MPI_REQUEST_NULL;
  if (PMPI_Grequest_start(query, release, cancel, q, &q->greq) != MPI_SUCCESS) {
    free(q);
    return NULL;
  }
  pthread_mutex_lock(&lock);
  link_request(q);
  pthread_mutex_unlock(&lock);
  return q;
}

/* A request the program never sees: MPI releases it (and q) at once. */
static void discard(struct mpiio_request *q) {
  pthread_mutex_lock(&lock);
  q->done = 1;
  MPI_Request greq = q->greq;
  pthread_mutex_unlock(&lock);
  PMPI_Grequest_complete(greq);
  MPIIO_NEXT(Request_free)(&greq);
}

int mpiio_request_started(struct mpiio_file *f, struct mpiio_request *q, MPI_Count count,
                          int aggio_rc, aggio_request ar, MPI_Request *request) {
  *request = MPI_REQUEST_NULL;
  if (aggio_rc != AGGIO_SUCCESS) { /* libaggio made no request */
    if (q)
      discard(q);
    return mpiio_raise(f, mpiio_data_error(aggio_rc, f->amode, count));
  }
  if (!q) {
    /* the other ranks' operation needs this rank's: it runs to the end */
    aggio_wait(&ar, MPI_STATUS_IGNORE);
    return mpiio_raise(
        f, mpiio_error_with_message(MPI_ERR_NO_MEM,
                                    "aggio: no memory for an MPI request: the "
                                    "operation ran to its end in the starting call"));
  }
  q->ar = ar;
  *request = q->greq;
  reap_freed();
  return MPI_SUCCESS;
}

/* ---- the requests of ours in an array ------------------------------------------ */

/* One request of ours at array index `index`, with its outcome as it was
 * just before the PMPI call that may complete it (and free q). */
struct mine {
  int index;
  struct mpiio_request *q;
  int done, code;
  struct mpiio_file *f;
};

#define SCAN_LOCAL 8 /* requests of ours noted without malloc */

struct scan {
  int n;       /* requests of ours in the array */
  int pending; /* of them, whose operation has not ended */
  int others;  /* requests in the array not ours (not MPI_REQUEST_NULL) */
  struct mine *m;
  struct mine local[SCAN_LOCAL];
};

static void scan_free(struct scan *s) {
  if (s->m != s->local)
    free(s->m);
}

/* Finds the requests of ours in reqs[0..count) (locked).  Returns how many
 * are ours, filling at most cap of them into m. */
static int scan_fill(int count, const MPI_Request reqs[], struct mine *m, int cap,
                     int *others) {
  int n = 0;
  *others = 0;
  for (int i = 0; i < count; i++) {
    struct mpiio_request *q = find(reqs[i]);
    if (!q) {
      *others += reqs[i] != MPI_REQUEST_NULL;
      continue;
    }
    if (n < cap)
      m[n] = (struct mine){i, q, 0, MPI_SUCCESS, NULL};
    n++;
  }
  return n;
}

/* The requests of ours in the array, into s; their number, or -1 when
 * there is no memory to note them (then the call fails: PMPI alone would
 * wait for them forever). */
static int scan(int count, const MPI_Request reqs[], struct scan *s) {
  s->n = s->pending = s->others = 0;
  s->m = s->local;
  if (!any_alive() || count <= 0 || !reqs)
    return 0;
  pthread_mutex_lock(&lock);
  int cap = SCAN_LOCAL, n = scan_fill(count, reqs, s->local, cap, &s->others);
  if (n > cap) {
    pthread_mutex_unlock(&lock);
    s->m = malloc((size_t)n * sizeof *s->m);
    if (!s->m) {
      s->m = s->local;
      return -1;
    }
    cap = n;
    pthread_mutex_lock(&lock);
    n = scan_fill(count, reqs, s->m, cap, &s->others);
  }
  pthread_mutex_unlock(&lock);
  s->n = n < cap ? n : cap;
  return s->n;
}

/* Notes each request's outcome as it is now, before a PMPI call that may
 * complete and free it; counts those still pending. */
static void refresh(struct scan *s) {
  s->pending = 0;
  pthread_mutex_lock(&lock);
  for (int k = 0; k < s->n; k++) {
    struct mine *m = &s->m[k];
    if (m->done)
      continue; /* a done request stays done until PMPI frees it */
    m->done = m->q->done;
    m->code = m->q->code;
    m->f = m->q->f;
    s->pending += !m->done;
  }
  pthread_mutex_unlock(&lock);
}

/* One round: tests every pending operation of ours once. */
static void drive(struct scan *s) {
  for (int k = 0; k < s->n; k++) {
    struct mine *m = &s->m[k];
    if (m->done)
      continue;
    pthread_mutex_lock(&lock);
    int mine = claim(m->q);
    pthread_mutex_unlock(&lock);
    if (mine)
      take(m->q, 0);
  }
  reap_freed();
  refresh(s);
}

/* Backs off from yielding to short sleeps (mpiio.h). */
void mpiio_pause(int *round) {
  if (*round < 64) {
    (*round)++;
    sched_yield();
    return;
  }
  int shift = *round - 64 < 5 ? *round - 64 : 5;
  (*round)++;
  struct timespec ts = {0, (10L << shift) * 1000L};
  nanosleep(&ts, NULL);
}

/* Blocks until every operation of ours in the array has ended, when the
 * array holds nothing else that could wait on them. */
static void settle(struct scan *s) {
  int round = 0;
  for (int k = 0; k < s->n; k++) {
    struct mine *m = &s->m[k];
    for (;;) {
      pthread_mutex_lock(&lock);
      int finished = m->q->done, mine = !finished && claim(m->q);
      pthread_mutex_unlock(&lock);
      if (finished || (mine && take(m->q, 1)))
        break;
      mpiio_pause(&round); /* another thread takes it */
    }
  }
  reap_freed();
  refresh(s);
}

static struct mine *mine_at(struct scan *s, int index) {
  for (int k = 0; k < s->n; k++)
    if (s->m[k].index == index)
      return &s->m[k];
  return NULL;
}

/* ---- results ------------------------------------------------------------------ */

/* The end of a call that completed the request at `index` (MPI_UNDEFINED:
 * none): a failed operation of ours puts its code in the status and the
 * return value, through its file's error handler. */
static int finish_one(struct scan *s, int index, MPI_Status *status, int rc) {
  struct mine *m = index == MPI_UNDEFINED ? NULL : mine_at(s, index);
  if (rc != MPI_SUCCESS || !m || m->code == MPI_SUCCESS)
    return rc;
  if (status != MPI_STATUS_IGNORE)
    status->MPI_ERROR = m->code;
  return mpiio_raise(m->f, m->code);
}

/* The same for the calls that complete several: `indices` (NULL: every
 * index) lists the n completed ones, statuses[k] belongs to the k-th.
 * With a failure the MPI rule holds: MPI_ERR_IN_STATUS, and every status
 * says its own outcome; without statuses, the first failure's code. */
static int finish_many(struct scan *s, int n, const int *indices, MPI_Status statuses[],
                       int rc) {
  if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS)
    return rc;
  int first = MPI_SUCCESS;
  for (int k = 0; k < n; k++) {
    struct mine *m = mine_at(s, indices ? indices[k] : k);
    if (m && m->code != MPI_SUCCESS) {
      first = first != MPI_SUCCESS ? first : m->code;
      mpiio_raise(m->f, m->code);
    }
  }
  if (first == MPI_SUCCESS)
    return rc;
  if (statuses == MPI_STATUSES_IGNORE)
    return rc == MPI_ERR_IN_STATUS ? rc : first;
  for (int k = 0; k < n; k++) {
    struct mine *m = mine_at(s, indices ? indices[k] : k);
    if (m)
      statuses[k].MPI_ERROR = m->code;
    else if (rc == MPI_SUCCESS) /* MPI did not fill it in */
      statuses[k].MPI_ERROR = MPI_SUCCESS;
  }
  return MPI_ERR_IN_STATUS;
}

/* ---- the completion calls ------------------------------------------------------- */

static int no_memory(void) {
  return mpiio_error_with_message(MPI_ERR_NO_MEM,
                                  "aggio: no memory to note the requests of "
                                  "aggio files in the array");
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
  struct scan s;
  if (!request || scan(1, request, &s) <= 0)
    return MPIIO_NEXT(Wait)(request, status);
  settle(&s);
  int rc = finish_one(&s, 0, status, MPIIO_NEXT(Wait)(request, status));
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Wait)

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
  struct scan s;
  if (!request || !flag || scan(1, request, &s) <= 0)
    return MPIIO_NEXT(Test)(request, flag, status);
  drive(&s);
  int rc = MPIIO_NEXT(Test)(request, flag, status);
  rc = *flag ? finish_one(&s, 0, status, rc) : rc;
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Test)

int MPI_Waitall(int count, MPI_Request array_of_requests[],
                MPI_Status array_of_statuses[]) {
  struct scan s;
  int n = scan(count, array_of_requests, &s);
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Waitall)(count, array_of_requests, array_of_statuses)
                  : no_memory();
  if (s.others == 0) {
    settle(&s);
  } else {
    /* the others move in the same loop: PMPI_Testall cannot be true
     * while one of ours is pending, and changes nothing when false */
    int round = 0, flag = 0;
    for (drive(&s); s.pending > 0; drive(&s)) {
      MPIIO_NEXT(Testall)(count, array_of_requests, &flag, array_of_statuses);
      mpiio_pause(&round);
    }
  }
  int rc = MPIIO_NEXT(Waitall)(count, array_of_requests, array_of_statuses);
  rc = finish_many(&s, count, NULL, array_of_statuses, rc);
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Waitall)

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag,
                MPI_Status array_of_statuses[]) {
  struct scan s;
  int n = flag ? scan(count, array_of_requests, &s) : 0;
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Testall)(count, array_of_requests, flag, array_of_statuses)
                  : no_memory();
  drive(&s);
  int rc = MPIIO_NEXT(Testall)(count, array_of_requests, flag, array_of_statuses);
  rc = *flag ? finish_many(&s, count, NULL, array_of_statuses, rc) : rc;
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Testall)

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index,
                MPI_Status *status) {
  struct scan s;
  int n = index ? scan(count, array_of_requests, &s) : 0;
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Waitany)(count, array_of_requests, index, status) : no_memory();
  int rc, flag = 0, round = 0;
  for (drive(&s);; drive(&s)) {
    if (s.pending == 0) { /* what is left is MPI's to wait for */
      rc = MPIIO_NEXT(Waitany)(count, array_of_requests, index, status);
      break;
    }
    rc = MPIIO_NEXT(Testany)(count, array_of_requests, index, &flag, status);
    if (rc != MPI_SUCCESS || flag)
      break;
    mpiio_pause(&round);
  }
  rc = finish_one(&s, *index, status, rc);
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Waitany)

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag,
                MPI_Status *status) {
  struct scan s;
  int n = index && flag ? scan(count, array_of_requests, &s) : 0;
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Testany)(count, array_of_requests, index, flag, status)
                  : no_memory();
  drive(&s);
  int rc = MPIIO_NEXT(Testany)(count, array_of_requests, index, flag, status);
  rc = *flag ? finish_one(&s, *index, status, rc) : rc;
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Testany)

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  struct scan s;
  int n = outcount ? scan(incount, array_of_requests, &s) : 0;
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Waitsome)(incount, array_of_requests, outcount, array_of_indices,
                                  array_of_statuses)
                  : no_memory();
  int rc, round = 0;
  for (drive(&s);; drive(&s)) {
    if (s.pending == 0) {
      rc = MPIIO_NEXT(Waitsome)(incount, array_of_requests, outcount, array_of_indices,
                         array_of_statuses);
      break;
    }
    rc = MPIIO_NEXT(Testsome)(incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses);
    if ((rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) || *outcount != 0)
      break;
    mpiio_pause(&round);
  }
  if (*outcount != MPI_UNDEFINED)
    rc = finish_many(&s, *outcount, array_of_indices, array_of_statuses, rc);
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Waitsome)

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount,
                 int array_of_indices[], MPI_Status array_of_statuses[]) {
  struct scan s;
  int n = outcount ? scan(incount, array_of_requests, &s) : 0;
  if (n <= 0)
    return n == 0 ? MPIIO_NEXT(Testsome)(incount, array_of_requests, outcount, array_of_indices,
                                  array_of_statuses)
                  : no_memory();
  drive(&s);
  int rc = MPIIO_NEXT(Testsome)(incount, array_of_requests, outcount, array_of_indices,
                         array_of_statuses);
  if (*outcount != MPI_UNDEFINED && *outcount > 0)
    rc = finish_many(&s, *outcount, array_of_indices, array_of_statuses, rc);
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Testsome)

/* The request stays the program's: its outcome is returned and put in the
 * status, and the file's handler runs when a wait or test completes it. */
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
  struct scan s;
  if (!flag || scan(1, &request, &s) <= 0)
    return MPIIO_NEXT(Request_get_status)(request, flag, status);
  drive(&s);
  int rc = MPIIO_NEXT(Request_get_status)(request, flag, status);
  if (rc == MPI_SUCCESS && *flag && s.m[0].code != MPI_SUCCESS) {
    rc = s.m[0].code;
    if (status != MPI_STATUS_IGNORE)
      status->MPI_ERROR = rc;
  }
  scan_free(&s);
  return rc;
}
MPIIO_PROFILED(Request_get_status)

/* MPI lets the program free an active request: the operation goes on,
 * and its outcome is nobody's.  Freed requests are reaped by the calls
 * that come here, and completed at their file's close at the latest. */
int MPI_Request_free(MPI_Request *request) {
  struct mpiio_request *q = NULL;
  if (request && any_alive()) {
    pthread_mutex_lock(&lock);
    q = find(*request);
    if (q)
      q->freed = 1;
    pthread_mutex_unlock(&lock);
  }
  int rc = MPIIO_NEXT(Request_free)(request);
  if (q)
    reap_freed();
  return rc;
}
MPIIO_PROFILED(Request_free)
