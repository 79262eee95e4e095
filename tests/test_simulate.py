"""A fast version of benchmarks/simulate.py: benchkit's own intervals, verdicts and
until-decided planner on stores with known truth. Few replications, so the thresholds
leave room for their binomial error (the full run's figures are in docs/statistics.md)."""

import sys

import numpy as np
import pytest
from conftest import CHECKOUT

sys.path.insert(0, str(CHECKOUT / "benchmarks"))
import simulate


def test_every_interval_covers_the_truth_at_one_three_and_five_trials():
    found = simulate.coverage(np.random.default_rng(11), 30)
    assert {n for _, n in found} == {1, 3, 5}
    assert {metric for metric, _ in found} >= {"cost", "success", "pass_k", "ratio (each pair)"}
    for (metric, n), (hits, total) in found.items():
        assert hits / total >= 0.88, (metric, n, hits, total)  # 95% nominal; 120 intervals


@pytest.mark.slow
def test_equal_arms_are_rarely_called_apart_and_published_effects_never_backwards():
    rng = np.random.default_rng(12)
    equal = simulate.compare_procedures(rng, 15, {arm: 19000 for arm in simulate.PUBLISHED},
                                        interaction=0.0)
    for name, row in equal.items():
        assert row["any"] <= 2, name  # at most 2 of 15 with any arm called cheaper
    published = simulate.compare_procedures(rng, 15, simulate.PUBLISHED)
    for name, row in published.items():
        assert row["wrong"] == 0, name
    fixed, decided = published["fixed 3"], published["until-decided"]
    assert np.mean(decided["trials"]) < np.mean(fixed["trials"])  # same budget, fewer trials
