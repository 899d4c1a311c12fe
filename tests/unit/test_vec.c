/*
 * test_vec.c - the growable array (src/plan/vec.h): pushes keep every
 * element, reserve grows by doubling from 16 and never shrinks, and a
 * growth that cannot be made (a size past SIZE_MAX) leaves the array as
 * it was and says out of memory.
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "vec.h"

struct pair {
  int64_t a, b;
};

int main(void) {
  struct {
    struct pair *v;
    size_t n, cap;
  } a = {0};
  for (int64_t i = 0; i < 1000; i++)
    CHECK(aggio__vec_push(&a, ((struct pair){i, -i})) == 0, "push %lld", (long long)i);
  CHECK(a.n == 1000 && a.cap == 1024, "n %zu cap %zu", a.n, a.cap);
  int bad = 0;
  for (size_t i = 0; i < a.n; i++)
    bad += a.v[i].a != (int64_t)i || a.v[i].b != -(int64_t)i;
  CHECK(bad == 0, "%d elements changed", bad);
  CHECK(aggio__vec_reserve(&a, 10) == 0 && a.cap == 1024, "reserve below cap: cap %zu", a.cap);
  CHECK(aggio__vec_reserve(&a, 1025) == 0 && a.cap == 2048, "reserve 1025: cap %zu", a.cap);
  struct pair *before = a.v;
  CHECK(aggio__vec_reserve(&a, SIZE_MAX) == AGGIO_ERR_NOMEM && a.v == before && a.cap == 2048 &&
            a.n == 1000,
        "an impossible growth changed the array (cap %zu)", a.cap);
  CHECK(aggio__vec_reserve(&a, SIZE_MAX / 8) == AGGIO_ERR_NOMEM && a.v == before &&
            a.cap == 2048,
        "a growth past SIZE_MAX bytes changed the array (cap %zu)", a.cap);
  free(a.v);
  struct {
    char *v;
    size_t n, cap;
  } empty = {0};
  CHECK(aggio__vec_reserve(&empty, 1) == 0 && empty.cap == 16 && empty.v, "first growth: cap %zu",
        empty.cap);
  free(empty.v);
  return test_summary();
}
