/*
 * vec.c - growth of the library's growable arrays (vec.h).
 */
#include "vec.h"

#include <stdint.h>
#include <stdlib.h>

void *aggio__grow(void *v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap)
    return v;
  size_t c = *cap ? *cap : 16;
  while (c < need) {
    if (c > SIZE_MAX / 2)
      return v;
    c *= 2;
  }
  if (elem && c > SIZE_MAX / elem)
    return v;
  void *w = realloc(v, c * elem);
  if (!w)
    return v;
  *cap = c;
  return w;
}
