"""Three-way verdicts on cost for pairs of arms, valid however often anyone looks.

For arms A and B on the tasks both ran, theta = log(M_A / M_B), M being the mean over
those tasks of the cells' mean cost-equivalent tokens. Its interval is a confidence
sequence: the two-sided normal-mixture boundary (Robbins; Howard et al. 2021, eq. 14)
on the estimate's information-time martingale, with the variance estimated (so an
asymptotic confidence sequence, Waudby-Smith et al. 2024). It holds at every sample
size at once, so reading the report after every trial, or `benchkit run
--until-decided` stopping when it is decided, does not inflate the error. The family of
pairs is Bonferroni-corrected: all pairs, or each arm against a named baseline.

    equivalent    the whole interval inside +-log(1 + margin) (the suite's margin)
    A cheaper     otherwise, the whole interval below 0
    B cheaper     otherwise, the whole interval above 0
    undecided     otherwise

`benchkit report` and `benchkit run --until-decided` (benchkit/planning/decide.py) both
call `compare`; docs/statistics.md has the reasoning and the simulation's figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations
from statistics import NormalDist

import msgspec
import numpy as np

from benchkit.statistics.intervals import pooled_spread, t_quantile, z_quantile
from benchkit.statistics.rows import COST

A_CHEAPER, B_CHEAPER, EQUIVALENT, UNDECIDED = "a-cheaper", "b-cheaper", "equivalent", "undecided"
# Within-cell degrees of freedom an arm needs before its pooled spread is used. The
# (t/z)^2 widening pays for few of them; 2 keeps every pair's df (Welch, never below
# the smaller arm's) where stats.t_quantile is exact or conservative.
MIN_DF = 2
# The mixture is tightest where the standard error of theta equals log(1 + margin):
# effects of a few margins are decided around there, and within a factor of ~10 of that
# information either way the boundary stays within ~5% of its best (about 3.65
# standard errors at 6 pairs). Fixed in advance (from the margin and alpha only), as
# validity needs.
TUNING_Z = 1.0
# Below this many common tasks, between-task evidence is widened by the t quantile of
# the boundary's own tail (Evidence.half). From 10 on, the (t / z)^2 widening keeps equal
# pairs' false calls within budget (simulated: 2.3% at 12 tasks, 2.7% at 20), and the
# wider tail match would cost the published effects trials.
FEW_TASKS = 10
# Half-widths are capped at a millionfold ratio either way: wider says nothing more,
# and exp() of the far tail of a t on 2 degrees of freedom overflows.
WIDEST = math.log(1e6)


@dataclass(frozen=True)
class Spread:
    """An arm's within-cell relative variance of cost, pooled over its cells."""
    relative: float
    df: float


def spread(cells) -> Spread:
    """The arm's cost spread, pooled over its cells as the headline's intervals pool it."""
    cells = list(cells)
    return Spread(*pooled_spread([c.n for c in cells], [c.means[COST] for c in cells],
                                 [c.squares[COST] for c in cells]))


@dataclass
class Evidence:
    """What the cells of a pair say about theta: the estimate, its variance, and (for
    the pooled method) each cell's share of the variance, weight / n."""
    tasks: list
    mean_a: float
    mean_b: float
    theta: float
    variance: float
    method: str                    # "pooled" | "between-task" | "none"
    weights: dict | None = None    # (side, task) -> weight, side "a" or "b"
    df: float = 0.0                # of the variance estimate

    def half(self, alpha: float, rho: float) -> float:
        """The confidence sequence's half-width, widened for the variance being
        estimated on `df` degrees of freedom.

        As a rule the variance is widened by (t / z)^2 at the pair's alpha, as a
        t-interval would be (the boundary itself assumes a known variance). On fewer
        than FEW_TASKS common tasks the between-task variance (tasks - 1 degrees of
        freedom) is too rough for that: the boundary at the estimated variance is c
        standard errors, and c is replaced by the Student t quantile of the same
        two-sided tail. Matching the tail rather than the 1 - alpha quantile matters
        where the boundary is far out in it: on 2 degrees of freedom (3 common tasks)
        3.5 standard errors become about 30, and the pair stays undecided rather than
        trusting a spread seen on three tasks (benchmarks/simulate.py: the (t / z)^2
        widening alone called 5.8% of equal pairs cheaper on 3 tasks, 0.8% with it)."""
        if self.df <= 0 or not math.isfinite(self.variance):
            return math.inf
        if self.method != "between-task" or self.df + 1 >= FEW_TASKS:
            ratio = t_quantile(1 - alpha, self.df) / z_quantile(1 - alpha)
            return min(half_width(self.variance * ratio * ratio, alpha, rho), WIDEST)
        known = half_width(self.variance, alpha, rho)
        if not math.isfinite(known) or self.variance <= 0:
            return known
        multiple = known / math.sqrt(self.variance)
        tail = 2 * NormalDist().cdf(-multiple)
        if tail <= 0:
            return WIDEST
        return min(known * t_quantile(1 - tail, self.df) / multiple, WIDEST)


def evidence(cells_a: dict, cells_b: dict, spread_a: Spread, spread_b: Spread) -> Evidence:
    tasks = [t for t in cells_a if t in cells_b]
    if not tasks:
        return Evidence([], math.nan, math.nan, math.nan, math.inf, "none")
    a = np.array([cells_a[t].means[COST] for t in tasks])
    b = np.array([cells_b[t].means[COST] for t in tasks])
    mean_a, mean_b = float(a.mean()), float(b.mean())
    if mean_a <= 0 or mean_b <= 0:
        return Evidence(tasks, mean_a, mean_b, math.nan, math.inf, "none")
    theta = math.log(mean_a / mean_b)
    count = len(tasks)
    if spread_a.df >= MIN_DF and spread_b.df >= MIN_DF:
        weights = {}
        for side, cells, mean, pooled in (("a", cells_a, mean_a, spread_a),
                                          ("b", cells_b, mean_b, spread_b)):
            for t in tasks:
                cell_mean = cells[t].means[COST]
                weights[(side, t)] = pooled.relative * (cell_mean / (count * mean)) ** 2
        parts = {side: sum(w / (cells_a if s == "a" else cells_b)[t].n
                           for (s, t), w in weights.items() if s == side) for side in "ab"}
        return Evidence(tasks, mean_a, mean_b, theta, parts["a"] + parts["b"], "pooled",
                        weights, welch_df(parts["a"], spread_a.df, parts["b"], spread_b.df))
    if count >= 2:
        # Paired over tasks: each task's relative deviation, A minus B. Holds the
        # tasks' differing profiles too, so it is wider than it need be: conservative.
        deviations = a / mean_a - b / mean_b
        return Evidence(tasks, mean_a, mean_b, theta, float(deviations.var(ddof=1)) / count,
                        "between-task", None, count - 1.0)
    return Evidence(tasks, mean_a, mean_b, theta, math.inf, "none")


def welch_df(variance_a: float, df_a: float, variance_b: float, df_b: float) -> float:
    """Degrees of freedom of the sum of two independent variance estimates
    (Welch-Satterthwaite): between the smaller df and their sum."""
    total = variance_a + variance_b
    spread_df = variance_a ** 2 / df_a + variance_b ** 2 / df_b
    return total * total / spread_df if spread_df > 0 else min(df_a, df_b)


# --- the confidence sequence ------------------------------------------------------------

def mixture_rho(margin: float, alpha: float) -> float:
    """The mixture's precision rho minimising the boundary at information
    (TUNING_Z / log(1 + margin))^2."""
    target = (TUNING_Z / math.log1p(margin)) ** 2

    def boundary(rho):
        return (target + rho) * math.log((target + rho) / (rho * alpha * alpha))
    low, high = target * 1e-4, target * 10.0  # golden section on log rho
    for _ in range(80):
        m1, m2 = low * (high / low) ** 0.382, low * (high / low) ** 0.618
        if boundary(m1) < boundary(m2):
            high = m2
        else:
            low = m1
    return math.sqrt(low * high)


def half_width(variance: float, alpha: float, rho: float) -> float:
    """Half-width of the two-sided normal-mixture confidence sequence at information
    1/variance: sqrt((I + rho) log((I + rho) / (rho alpha^2))) / I."""
    if not math.isfinite(variance) or variance <= 0:
        return math.inf if variance != 0 else 0.0
    information = 1.0 / variance
    return math.sqrt((information + rho) * math.log((information + rho) / (rho * alpha * alpha))) / information


def call(low: float, high: float, margin: float) -> str:
    """The verdict an interval on theta supports. An interval inside the margin is
    `equivalent` even when it excludes 0: a difference the suite calls immaterial is
    not published as one arm being cheaper."""
    delta = math.log1p(margin)
    if -delta < low and high < delta:
        return EQUIVALENT
    if high < 0:
        return A_CHEAPER
    if low > 0:
        return B_CHEAPER
    return UNDECIDED


@dataclass(frozen=True)
class Family:
    """The pairs compared and the error budget each gets."""
    pairs: tuple
    alpha: float          # family-wise
    margin: float
    baseline: str | None

    @property
    def alpha_pair(self) -> float:
        return self.alpha / max(1, len(self.pairs))

    @property
    def rho(self) -> float:
        return mixture_rho(self.margin, self.alpha_pair)

    def method(self) -> str:
        against = (f"each arm against the baseline {self.baseline}" if self.baseline
                   else "every pair of arms")
        return (f"{1 - self.alpha:.0%} family-wise: {against} ({len(self.pairs)} pairs, "
                f"Bonferroni, {1 - self.alpha_pair:.2%} each), by asymptotic confidence "
                f"sequences (normal mixture) on the log ratio of mean cost-equivalent tokens "
                f"over the tasks both ran, valid at every sample size; equivalent means "
                f"within ±{self.margin:.0%}")


def family(arms: list, *, alpha: float, margin: float, baseline: str | None = None) -> Family:
    """The headline comparison: every pair of arms (in the given order), or each arm
    against the baseline."""
    if baseline is not None:
        if baseline not in arms:
            raise ValueError(f"baseline {baseline!r} is not an arm with samples "
                             f"(arms: {', '.join(arms) or 'none'})")
        pairs = tuple((arm, baseline) for arm in arms if arm != baseline)
    else:
        pairs = tuple(combinations(arms, 2))
    return Family(pairs, alpha, margin, baseline)


class PairVerdict(msgspec.Struct):
    """One pair's three-way verdict: a's mean cost over b's as a ratio, with its
    simultaneous interval (None where the tasks both ran give none). The report shows
    and exports it field by field, in this order."""
    a: str
    b: str
    tasks: int        # the tasks both ran
    verdict: str      # a-cheaper | b-cheaper | equivalent | undecided
    a_mean: float | None
    b_mean: float | None
    ratio: float | None
    ratio_low: float | None
    ratio_high: float | None
    within_margin: bool
    variance: str     # the method its variance came from
    says: str


def compare(a: str, b: str, cells_a: dict, cells_b: dict, spreads: dict,
            fam: Family) -> PairVerdict:
    """The verdict of one pair."""
    found = evidence(cells_a, cells_b, spreads[a], spreads[b])
    half = found.half(fam.alpha_pair, fam.rho)
    bounds: tuple[float, float] | None = None
    verdict = UNDECIDED
    if found.method != "none" and math.isfinite(half):
        bounds = (found.theta - half, found.theta + half)
        verdict = call(*bounds, fam.margin)
    ratio = math.exp(found.theta) if math.isfinite(found.theta) else None
    delta = math.log1p(fam.margin)
    return PairVerdict(
        a=a, b=b, tasks=len(found.tasks), verdict=verdict,
        a_mean=_finite(found.mean_a), b_mean=_finite(found.mean_b), ratio=ratio,
        ratio_low=math.exp(bounds[0]) if bounds else None,
        ratio_high=math.exp(bounds[1]) if bounds else None,
        within_margin=bounds is not None and -delta < bounds[0] and bounds[1] < delta,
        variance=found.method, says=says(a, b, verdict, fam.margin))


def says(a: str, b: str, verdict: str, margin: float) -> str:
    return {A_CHEAPER: f"{a} cheaper", B_CHEAPER: f"{b} cheaper",
            EQUIVALENT: f"equivalent within ±{margin:.0%}"}.get(verdict, "undecided")


def _finite(value):
    return value if value is not None and math.isfinite(value) else None


def verdicts(cells: dict, fam: Family) -> list[PairVerdict]:
    """Every pair's verdict; cells: arm -> task -> CellStats."""
    spreads = {arm: spread(c.values()) for arm, c in cells.items()}
    return [compare(a, b, cells[a], cells[b], spreads, fam) for a, b in fam.pairs]
