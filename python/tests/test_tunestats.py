"""tune's statistics on fixed numbers (issue 26, item 8): the order of runs,
the median's interval, the verdict and when to stop."""
import random

from aggio import tunestats as ts


def test_schedule_is_interleaved_random_and_repeatable():
    names = ["a", "b", "c", "d"]
    order = ts.schedule(names, 3, random.Random(7))
    assert [sorted(order[i:i + 4]) for i in (0, 4, 8)] == [names] * 3   # every name per round
    assert order == ts.schedule(names, 3, random.Random(7))             # the seed repeats it
    assert order[:4] != names or order[4:8] != names                    # not round-robin
    assert ts.schedule(names, 3, random.Random(8)) != order


def test_median_interval_from_order_statistics():
    assert ts.median_interval([5, 1, 4, 2, 3]) is None          # 5 runs: [min, max] is 93.75%
    assert ts.median_interval([6, 1, 5, 2, 4, 3]) == (1, 6)      # 6 runs: 96.9%
    assert ts.median_interval(list(range(1, 10))) == (2, 8)      # 9 runs: [x2, x8] is 96.1%
    assert ts.median_interval([1, 2, 3, 4, 5], level=0.9) == (1, 5)
    assert ts.runs_needed() == 6 and ts.runs_needed(0.9) == 5


def test_a_clear_winner():
    v = ts.decide({"default": [100, 104, 98, 101, 99, 103],
                   "fast": [150, 149, 155, 160, 152, 151],
                   "middle": [120, 118, 125, 122, 119, 121]}, "default")
    assert (v.leader, v.runner_up, v.significant, v.beats_baseline) == ("fast", "middle", True,
                                                                        True)
    assert v.intervals["fast"] == (149, 160)


def test_within_noise_is_no_significant_difference():
    v = ts.decide({"default": [100, 130, 98, 101, 99, 103],
                   "fast": [102, 140, 97, 105, 99, 104]}, "default")
    assert v.leader == "fast" and not v.significant and not v.beats_baseline
    assert "intervals of the medians of fast and default overlap" in v.reason


def test_the_leader_must_clear_the_baseline_too():
    # the runner-up is clearly behind, but the baseline's interval is wide
    v = ts.decide({"default": [90, 91, 92, 200, 93, 94], "fast": [150] * 6,
                   "slow": [100] * 6}, "default")
    assert v.runner_up == "slow" and not v.significant and "default" in v.reason


def test_the_default_can_win():
    v = ts.decide({"default": [200] * 6, "other": [100] * 6}, "default")
    assert v.significant and not v.beats_baseline and v.leader == "default"


def test_too_few_runs_is_not_a_verdict():
    v = ts.decide({"default": [100, 101, 99], "fast": [300, 310, 305]}, "default")
    assert not v.significant and "too few runs" in v.reason and "at least 6" in v.reason


def test_rounds_stop_when_separated_and_at_the_cap():
    values = {"default": iter([100, 101, 99, 102, 98, 100] * 5),
              "fast": iter([200, 201, 199, 202, 198, 200] * 5),
              "c": iter([50, 51] * 15)}
    samples, order = ts.run_rounds(list(values), lambda n: next(values[n]), random.Random(1),
                                   6, 20, "default")
    assert [len(samples[n]) for n in values] == [6, 6, 6] and len(order) == 18
    # 'c' is wide and reaches 'fast': more rounds, of the contenders only, up to the cap
    values = {"default": iter([100] * 50), "fast": iter([200, 210] * 25),
              "c": iter([180, 250] * 25), "slow": iter([10] * 50)}
    samples, order = ts.run_rounds(list(values), lambda n: next(values[n]), random.Random(1),
                                   6, 9, "default")
    assert len(samples["slow"]) == 6 and len(samples["fast"]) == 9 and len(samples["c"]) == 9
    assert not ts.decide(samples, "default").significant


def test_contenders():
    samples = {"default": [100] * 6, "fast": [200, 210, 190, 205, 195, 200],
               "near": [195, 185, 180, 190, 188, 186], "slow": [10] * 6}
    assert ts.contenders(samples, "default") == ["default", "fast", "near"]
