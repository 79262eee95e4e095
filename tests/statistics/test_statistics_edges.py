"""The report's intervals and verdicts at the edges, against values worked by hand
(z = 1.96 for 95%)."""

import math
from statistics import NormalDist

import pytest

from benchkit.statistics.intervals import (
    ALL_METRICS,
    CellStats,
    intervals,
    mean_variance,
    pass_hat,
    rate_interval,
    t_quantile,
)
from benchkit.statistics.rows import TrialRow
from benchkit.statistics.verdicts import family, verdicts

Z2 = NormalDist().inv_cdf(0.975) ** 2


def cell(passes: int, trials: int, k: int = 3, costs=None) -> CellStats:
    costs = costs or [1000.0] * trials
    return CellStats([TrialRow(cost=c, raw=c, turns=4, duration=10, success=float(i < passes))
                      for i, c in enumerate(costs)], k)


def bounds(cells):
    return dict(zip(ALL_METRICS, intervals(cells), strict=True))


def test_twenty_tasks_of_three_trials_with_two_passes_each():
    cells = [cell(2, 3) for _ in range(20)]
    assert [c.pass_k for c in cells] == [0.0] * 20  # C(2,3)/C(3,3): no k-subset all passed
    found = bounds(cells)
    # n = k: each cell's estimate is "all three passed", so Var(q) = q(1-q)/20 and the
    # score interval is Wilson's for 0 of 20: [0, z^2 / (20 + z^2)].
    assert found["pass_k"] == pytest.approx((0.0, Z2 / (20 + Z2)), abs=1e-4)
    # Success 2/3 over 60 trials: Wilson's interval for 40 of 60.
    p, n = 2 / 3, 60
    centre = (p + Z2 / (2 * n)) / (1 + Z2 / n)
    half = math.sqrt(Z2) / (1 + Z2 / n) * math.sqrt(p * (1 - p) / n + Z2 / (4 * n * n))
    assert found["success"] == pytest.approx((centre - half, centre + half), abs=1e-9)


def test_all_passed_never_collapses_to_a_point():
    found = bounds([cell(3, 3) for _ in range(20)])
    assert found["success"] == pytest.approx((60 / (60 + Z2), 1.0), abs=1e-9)
    assert found["pass_k"] == pytest.approx((20 / (20 + Z2), 1.0), abs=1e-4)
    one = bounds([cell(1, 1, k=1)])
    assert one["success"] == pytest.approx((1 / (1 + Z2), 1.0), abs=1e-9)  # 1 of 1: [0.21, 1]


def test_none_passed_of_k():
    found = bounds([cell(0, 3) for _ in range(5)])
    assert found["success"] == pytest.approx((0.0, Z2 / (15 + Z2)), abs=1e-9)
    assert found["pass_k"] == pytest.approx((0.0, Z2 / (5 + Z2)), abs=1e-4)


def test_fewer_trials_than_k_leave_pass_k_undefined():
    cells = [cell(2, 2) for _ in range(4)]
    assert all(c.pass_k is None for c in cells)
    assert bounds(cells)["pass_k"] == (None, None)
    # Mixed: only the cells with n >= k count, here one of C(4,3)/C(5,3) = 0.4.
    mixed = cells + [cell(4, 5)]
    assert pass_hat(4, 5, 3) == pytest.approx(0.4)
    low, high = bounds(mixed)["pass_k"]
    assert low < 0.4 < high


def test_the_estimate_is_always_inside_its_interval():
    for passes in range(6):
        for k in (1, 2, 3, 5):
            estimate = pass_hat(passes, 5, k)
            low, high = rate_interval(estimate, [5] * 3, k, 0.95)
            assert low <= estimate <= high and low < high, (passes, k)


def exact_variance(n: int, k: int, p: float) -> float:
    """Var of C(c,k)/C(n,k) over c ~ Binomial(n, p), summed over every c."""
    values = [math.comb(c, k) / math.comb(n, k) for c in range(n + 1)]
    weights = [math.comb(n, c) * p ** c * (1 - p) ** (n - c) for c in range(n + 1)]
    mean = sum(w * v for w, v in zip(weights, values, strict=True))
    return sum(w * (v - mean) ** 2 for w, v in zip(weights, values, strict=True))


@pytest.mark.parametrize("k", [2, 3, 5])
def test_pass_k_bounds_solve_the_score_equation_with_the_exact_variance(k):
    # Unequal cells: the bounds are where (estimate - q)^2 = z^2 Var(q) / m^2 crosses
    # zero, Var(q) summing the cells' variances at rate q^(1/k), here enumerated over
    # every pass count rather than by the U-statistic's closed form the report uses.
    sizes = [k, k + 1, k + 3, 2 * k + 5, 2 * k + 5]
    estimate = sum(pass_hat(n - 1, n, k) for n in sizes) / len(sizes)

    def score(q: float) -> float:
        variance = sum(exact_variance(n, k, q ** (1 / k)) for n in sizes)
        return (estimate - q) ** 2 - Z2 * variance / len(sizes) ** 2

    low, high = rate_interval(estimate, sizes, k, 0.95)
    assert 0 < low < estimate < high < 1
    for bound, outward in ((low, -1e-5), (high, 1e-5)):
        assert score(bound - outward) <= 0 < score(bound + outward), (k, bound)


def test_student_quantiles_match_the_table():
    for df, value in ((1, 12.706), (2, 4.303), (5, 2.571), (10, 2.228), (30, 2.042)):
        assert t_quantile(0.95, df) == pytest.approx(value, abs=2e-3)
    # The tails a Bonferroni level reaches at few degrees of freedom, where the
    # Cornish-Fisher expansion came out short (6.17 for 5.841's neighbour level at df 3).
    for level, df, value in ((0.99, 3, 5.841), (0.999, 3, 12.924), (0.999, 4, 8.610),
                             (0.99, 7, 3.499), (0.999, 20, 3.850)):
        assert t_quantile(level, df) == pytest.approx(value, abs=2e-3)
    # A fractional df lies between its neighbours' quantiles, never below the larger df's.
    assert t_quantile(0.999, 4) < t_quantile(0.999, 3.5) < t_quantile(0.999, 3)


def test_pooled_relative_spread_by_hand():
    # Cells [100, 120] and [200, 240]: means 110 and 220, squares 200 and 800:
    # c^2 = (200 + 800) / (110^2 + 220^2) = 1/60.5; the variance of the mean of means is
    # c^2 (110^2/2 + 220^2/2) / 2^2 = 125; Satterthwaite's degrees of freedom
    # (110^2 + 220^2)^2 / (110^4 + 220^4) = 1.4706, taken down to 1.470, whose t quantile
    # is 6.1917 (Simpson's rule on the t density, bisected).
    mean, variance, df = mean_variance([2, 2], [110, 220], [200, 800])
    assert mean == 165 and variance == pytest.approx(125.0) and df == pytest.approx(1.4706, abs=1e-4)
    low, high = intervals([cell(2, 2, costs=[100, 120]), cell(2, 2, costs=[200, 240])])[0]
    half = 6.1917 * math.sqrt(125)
    assert (low, high) == pytest.approx((max(165 - half, 0), 165 + half), abs=0.05)


def test_one_trial_per_cell_falls_back_to_the_spread_between_tasks():
    mean, variance, df = mean_variance([1, 1, 1], [100, 200, 300], [0, 0, 0])
    assert (mean, df) == (200, 2) and variance == pytest.approx(10000 / 3)


def arm(cost: float, trials: int = 3, tasks: int = 10, wobble: float = 0.02) -> dict:
    """Cells whose trials sit at cost x (1 - wobble, 1, 1 + wobble), task t scaled by t."""
    return {t: cell(trials, trials, costs=[cost * (t + 1) * (1 + wobble * (i % 3 - 1))
                                           for i in range(trials)]) for t in range(tasks)}


def test_three_way_verdicts_and_the_method_said():
    # fuzzy's noise must reach its cells' means (a symmetric wobble alone cancels in
    # them, and the spread between tasks would then see none): each task is 40% off.
    fuzzy = {t: cell(3, 3, costs=[1000 * (t + 1) * (1 + 0.4 * (-1) ** t) * (1 + 0.5 * (i - 1))
                                  for i in range(3)]) for t in range(10)}
    cells = {"cheap": arm(1000), "same": arm(1005), "dear": arm(1400), "fuzzy": fuzzy}
    fam = family(list(cells), alpha=0.05, margin=0.05)
    found = {(p.a, p.b): p for p in verdicts(cells, fam)}
    assert found[("cheap", "dear")].verdict == "a-cheaper"
    assert found[("same", "dear")].verdict == "a-cheaper"
    assert found[("dear", "fuzzy")].says == "undecided"  # 40% apart, but 50% noise
    assert found[("cheap", "same")].verdict == "equivalent"
    assert found[("cheap", "same")].says == "equivalent within ±5%"
    assert found[("cheap", "fuzzy")].verdict == "undecided"
    for pair in found.values():
        assert pair.ratio_low <= pair.ratio <= pair.ratio_high
    assert fam.alpha_pair == pytest.approx(0.05 / 6)
    assert "6 pairs, Bonferroni, 99.17% each" in fam.method()
    baseline = family(list(cells), alpha=0.05, margin=0.05, baseline="dear")
    assert baseline.pairs == (("cheap", "dear"), ("same", "dear"), ("fuzzy", "dear"))
    assert "against the baseline dear (3 pairs" in baseline.method()
    with pytest.raises(ValueError, match="baseline 'nope'"):
        family(list(cells), alpha=0.05, margin=0.05, baseline="nope")
