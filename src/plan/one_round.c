/*
 * one_round.c - the prediction that lets a collective call agree once
 * (one_round.h).
 */
#include "one_round.h"

static int same_shape(const struct aggio__call_shape *a, const struct aggio__call_shape *b) {
  return a->is_write == b->is_write && a->bytes == b->bytes && a->pieces == b->pieces;
}

int aggio__one_round_predict(const struct aggio__one_round *h,
                             const struct aggio__call_shape *now) {
  return h->known && h->pause == 0 && h->last_independent && same_shape(&h->last, now);
}

void aggio__one_round_learn(struct aggio__one_round *h, const struct aggio__call_shape *now,
                            int independent, int guessed_wrong) {
  if (guessed_wrong)
    h->pause = AGGIO_ONE_ROUND_PAUSE;
  else if (h->pause > 0)
    h->pause--;
  h->last = *now;
  h->last_independent = independent;
  h->known = 1;
}
