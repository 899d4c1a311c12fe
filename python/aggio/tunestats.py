"""The statistics of `aggio tune`, on plain lists of measurements: no I/O,
so the tests give them fixed numbers (issue 26, item 8).

* The order of runs: interleaved rounds, each a fresh random permutation of
  the configurations (a seeded random.Random, so a run can be repeated), so
  that neither a slow spell of a shared machine nor what the previous run
  left behind (dirty pages, a warm cache, a busy disk) falls on one
  configuration more than another.  Fixed round-robin order made one MPI-IO
  variant look 3.3x faster than it was.
* The interval: a distribution-free confidence interval for the median, from
  order statistics: [x(k), x(n+1-k)] for the largest k with
  P(k <= B <= n-k) >= level, B ~ Binomial(n, 1/2).  It assumes nothing about
  the shape of the timings (they are skewed: a run can be slowed, rarely
  sped up).  At 95 % it needs 6 runs ([min, max] then covers 96.9 %).
* The verdict: the configuration with the highest median wins only when its
  interval lies wholly above the runner-up's and the baseline's; otherwise
  there is no significant difference, and tune says so.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, field
from math import comb
from statistics import median

DEFAULT_LEVEL = 0.95


def schedule(names: list, rounds: int, rng: random.Random) -> list:
    """`rounds` rounds, each every name once in a random order."""
    order = []
    for _ in range(rounds):
        order += rng.sample(list(names), len(names))
    return order


def median_interval(values: list, level: float = DEFAULT_LEVEL) -> tuple | None:
    """(low, high) confidence interval of the median at `level`; None when
    there are too few values for that level."""
    xs, n = sorted(values), len(values)
    k = 0
    for j in range(1, n // 2 + 1):
        if 1 - 2 * sum(comb(n, i) for i in range(j)) / 2 ** n < level:
            break
        k = j
    return (xs[k - 1], xs[n - k]) if k else None


def runs_needed(level: float = DEFAULT_LEVEL) -> int:
    """The fewest values for which median_interval gives an interval."""
    n = 1
    while median_interval(list(range(n)), level) is None:
        n += 1
    return n


def above(a: tuple | None, b: tuple | None) -> bool:
    """Interval a lies wholly above interval b."""
    return bool(a and b and a[0] > b[1])


@dataclass
class Verdict:
    leader: str                   # the highest median
    runner_up: str | None
    significant: bool             # the leader's interval is above the others' that matter
    beats_baseline: bool          # significant, and the leader is not the baseline
    reason: str                   # in words, for the output
    intervals: dict = field(default_factory=dict)   # name -> (low, high) or None


def decide(samples: dict, baseline: str, level: float = DEFAULT_LEVEL) -> Verdict:
    """The verdict on {name: [values, higher is better]}."""
    medians = {n: median(v) for n, v in samples.items() if v}
    ivals = {n: median_interval(v, level) for n, v in samples.items()}
    ranked = sorted(medians, key=medians.get, reverse=True)
    leader = ranked[0]
    runner = ranked[1] if len(ranked) > 1 else None
    rivals = [r for r in (runner, baseline) if r and r != leader]
    short = [n for n in [leader] + rivals if ivals[n] is None]
    if short:
        return Verdict(leader, runner, False, False, f"too few runs of {', '.join(short)} for a "
                       f"{100 * level:g}% interval (at least {runs_needed(level)})", ivals)
    loser = next((r for r in rivals if not above(ivals[leader], ivals[r])), None)
    if loser:
        return Verdict(leader, runner, False, False, f"the {100 * level:g}% intervals of "
                       f"the medians of {leader} and {loser} overlap", ivals)
    return Verdict(leader, runner, True, leader != baseline,
                   f"the {100 * level:g}% interval of the median of {leader} lies above "
                   f"that of {' and '.join(rivals) or 'the others'}", ivals)


def contenders(samples: dict, baseline: str, level: float = DEFAULT_LEVEL) -> list:
    """Who still needs runs: the leader, the baseline, and every name whose
    interval reaches the leader's (or has none yet)."""
    v = decide(samples, baseline, level)
    lead = v.intervals[v.leader]
    out = []
    for name, iv in v.intervals.items():
        if name in (v.leader, baseline) or iv is None or lead is None or iv[1] >= lead[0]:
            out.append(name)
    return out


def run_rounds(names: list, run_one, rng: random.Random, min_rounds: int, max_rounds: int,
               baseline: str, level: float = DEFAULT_LEVEL) -> tuple[dict, list]:
    """({name: values}, the order run): `min_rounds` rounds of every name,
    then rounds of the contenders alone until the verdict is significant
    or `max_rounds` rounds were run.  run_one(name) -> value is the only
    contact with the world."""
    samples, order = {n: [] for n in names}, []
    for done in range(max_rounds):
        if done >= min_rounds and decide(samples, baseline, level).significant:
            break
        now = names if done < min_rounds else contenders(samples, baseline, level)
        for name in schedule(now, 1, rng):
            samples[name].append(run_one(name))
            order.append(name)
    return samples, order
