/*
 * one_round.h - when a collective call may do its I/O before its summary,
 * so that one agreement carries both (core/one_round.c runs it).
 *
 * A collective call agrees twice: on its summary (every rank's arguments
 * and ranges, from which the strategy is chosen) and on its outcome.  When
 * the call runs independently (every rank its own I/O: segmented layouts,
 * the I/O libraries' reads), a rank that knows this in advance can do its
 * I/O first, and the summary then carries the outcome too: one round, as
 * ROMIO's independent path has one (its allgather of offsets).  A rank
 * cannot know what the other ranks' summaries will choose; it predicts,
 * from the file's history: its own call has the shape (direction, bytes,
 * pieces) of the previous collective call of the file, and that call ran
 * independently.  The prediction is local, and only a guess: the summary
 * says whether every rank guessed, and what was chosen (core/one_round.c
 * handles each case, so a wrong guess costs time, never correctness).  A
 * wrong guess pauses the guessing for a few calls, so that a layout that
 * keeps changing pays the repeated I/O rarely.
 */
#ifndef AGGIO_ONE_ROUND_H
#define AGGIO_ONE_ROUND_H

#include <stdint.h>

/* Collective calls without a guess after a wrong one. */
#define AGGIO_ONE_ROUND_PAUSE 8

/* A call's shape, as this rank sees it. */
struct aggio__call_shape {
  int is_write;
  int64_t bytes;  /* this rank's bytes */
  int64_t pieces; /* this rank's file ranges */
};

/* The file's history (one per file handle; zeroed: no history). */
struct aggio__one_round {
  struct aggio__call_shape last; /* the previous collective call's */
  int last_independent;          /* ... which ran independently, without a flush */
  int known;                     /* last is set */
  int pause;                     /* calls left without a guess */
};

/* 1 when a call of shape `now` is predicted to run independently: do its
 * I/O before the summary. */
int aggio__one_round_predict(const struct aggio__one_round *h,
                             const struct aggio__call_shape *now);

/* After the summary of a call of shape `now` (every rank learns from its
 * own call): whether it ran independently without a flush first, and
 * whether this rank guessed (did its I/O first) and the guess was wrong
 * (the call did not run independently, so the I/O runs again). */
void aggio__one_round_learn(struct aggio__one_round *h, const struct aggio__call_shape *now,
                            int independent, int guessed_wrong);

#endif
