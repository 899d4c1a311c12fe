/*
 * test_one_round.c - when a collective call guesses that it runs
 * independently and does its I/O before its summary (src/plan/
 * one_round.h): only when its shape repeats the previous call's and that
 * call ran independently; never without history; a wrong guess pauses the
 * guesses for AGGIO_ONE_ROUND_PAUSE calls; then a random history against
 * the rule, step by step.
 */
#include <stdint.h>
#include <stdio.h>

#include "harness.h"
#include "one_round.h"
#include "rng.h"

static const struct aggio__call_shape W1M = {1, 1 << 20, 1}, R1M = {0, 1 << 20, 1},
                                      W2P = {1, 1 << 20, 2};

static void check_basics(void) {
  struct aggio__one_round h = {0};
  CHECK(!aggio__one_round_predict(&h, &W1M), "no guess without history");
  aggio__one_round_learn(&h, &W1M, 1, 0);
  CHECK(aggio__one_round_predict(&h, &W1M), "the same shape after an independent call");
  CHECK(!aggio__one_round_predict(&h, &R1M), "not a read after writes");
  CHECK(!aggio__one_round_predict(&h, &W2P), "not another piece count");
  struct aggio__call_shape more = W1M;
  more.bytes++;
  CHECK(!aggio__one_round_predict(&h, &more), "not another byte count");
  aggio__one_round_learn(&h, &W1M, 0, 0);
  CHECK(!aggio__one_round_predict(&h, &W1M), "not after a call that did not run independently");
}

static void check_pause(void) {
  struct aggio__one_round h = {0};
  aggio__one_round_learn(&h, &W1M, 1, 0);
  aggio__one_round_learn(&h, &W1M, 0, 1); /* guessed, wrongly */
  int guesses = 0, calls = 0;
  for (; calls < 3 * AGGIO_ONE_ROUND_PAUSE && !guesses; calls++) {
    guesses = aggio__one_round_predict(&h, &W1M);
    aggio__one_round_learn(&h, &W1M, 1, 0);
  }
  CHECK(calls == AGGIO_ONE_ROUND_PAUSE + 1, "after a wrong guess the next guess comes at call "
        "%d, expected %d", calls, AGGIO_ONE_ROUND_PAUSE + 1);
}

/* A random sequence of calls of a few shapes, each running independently
 * or not: the prediction is "same shape as the last, which ran
 * independently, and no wrong guess in the last PAUSE calls". */
static int random_run(rng_t *g) {
  struct aggio__one_round h = {0};
  struct aggio__call_shape shapes[3] = {W1M, R1M, W2P}, last = {0};
  int have = 0, last_ind = 0, since_wrong = 1 << 20, bad = 0;
  for (int i = 0; i < 200; i++) {
    struct aggio__call_shape now = shapes[rng_next(g) % 3];
    int ind = rng_next(g) % 4 != 0;
    int same = have && now.is_write == last.is_write && now.bytes == last.bytes &&
               now.pieces == last.pieces;
    int want = same && last_ind && since_wrong >= AGGIO_ONE_ROUND_PAUSE;
    int got = aggio__one_round_predict(&h, &now);
    bad += got != want;
    int wrong = got && !ind;
    aggio__one_round_learn(&h, &now, ind, wrong);
    since_wrong = wrong ? 0 : since_wrong + 1;
    last = now;
    last_ind = ind;
    have = 1;
  }
  return bad;
}

static void check_random(void) {
  rng_t g = {20261129};
  int bad = 0;
  for (int i = 0; i < 2000; i++)
    bad += random_run(&g);
  CHECK(bad == 0, "%d predictions of 2000 random histories break the rule", bad);
}

int main(void) {
  check_basics();
  check_pause();
  check_random();
  return test_summary();
}
