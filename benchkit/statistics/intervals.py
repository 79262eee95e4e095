"""Per-cell statistics and the analytic intervals of every headline figure.

The estimand is the suite's: a figure is the mean over the suite's tasks of each
task's true mean, and the uncertainty is the agent's trial-to-trial variation (the
tasks are fixed; docs/statistics.md says why and what the simulation checks).

- Continuous metrics (cost, raw, turns, duration, blocked, imputed cost): a t-interval
  whose variance pools the arm's within-cell relative variance over its cells (an
  arm's spread is taken as proportional to each cell's mean); with no cell of two or
  more trials, the between-task variance of the cell means (conservative).
- Success and pass^k: score intervals (Wilson's, generalised) around the unbiased
  per-task estimate C(c,k)/C(n,k), with the variance of that U-statistic at the
  rate under test. They never collapse to a point and always contain the estimate.

No resampling, so a 100,000-sample store costs what its cells cost.
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

import numpy as np

from benchkit.statistics.rows import HAS_USD, METRICS, SUCCESS, USD, WIDTH

# A cell's figures: the means of the rows' metric columns, then pass^k and imputed cost.
ALL_METRICS = METRICS + ("pass_k", "cost_usd")
LEVEL = 0.95


def pass_hat(passes: float, n: int, k: int) -> float:
    """C(passes, k) / C(n, k): the chance that k trials drawn without replacement from
    the cell's n all passed, the unbiased estimate of pass^k (n >= k)."""
    if passes < k:
        return 0.0
    result = 1.0
    for i in range(k):
        result *= (passes - i) / (n - i)
    return result


def mean_of(values):
    values = [v for v in values if v is not None]
    return math.fsum(values) / len(values) if values else None


class CellStats:
    """The samples of one cell that count, summarised: n, per-column means and sums
    of squared deviations. `rows` is an (n, WIDTH) array-like of trial rows in the
    layout of benchkit.statistics.rows.TrialRow."""

    def __init__(self, rows, k: int, name: str = ""):
        data = np.asarray(rows, dtype=float).reshape(-1, WIDTH)
        self.k, self.n, self.name = k, len(data), name
        self.means = data[:, :len(METRICS)].mean(axis=0).tolist()
        deviations = data[:, :len(METRICS)] - data[:, :len(METRICS)].mean(axis=0)
        self.squares = (deviations * deviations).sum(axis=0).tolist()
        self.passes = round(float(data[:, SUCCESS].sum()))
        self.pass_k = pass_hat(self.passes, self.n, k) if self.n >= k else None
        spent = data[data[:, HAS_USD] > 0, USD]
        self.usd_n = len(spent)
        self.usd_mean = float(spent.mean()) if self.usd_n else None
        self.usd_squares = float(((spent - spent.mean()) ** 2).sum()) if self.usd_n else 0.0

    def figures(self) -> list:
        """Point figures in ALL_METRICS order (None where undefined)."""
        return self.means + [self.pass_k, self.usd_mean]


# --- quantiles ------------------------------------------------------------------------

def z_quantile(level: float) -> float:
    return NormalDist().inv_cdf(0.5 + level / 2)


def t_quantile(level: float, df: float) -> float:
    """Two-sided Student t quantile: exact below 30 degrees of freedom (where the
    Cornish-Fisher expansion falls short of the truth: at df 3 and a Bonferroni level by
    1%), else that expansion (relative error < 1e-4 from 30 on). A fractional df is
    taken down to the next thousandth: never narrower than the truth."""
    if df < 30:
        return _exact_t(level, math.floor(df * 1000) / 1000)
    z = NormalDist().inv_cdf(0.5 + level / 2)
    g1 = (z ** 3 + z) / 4
    g2 = (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
    g3 = (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / 384
    g4 = (79 * z ** 9 + 776 * z ** 7 + 1482 * z ** 5 - 1920 * z ** 3 - 945 * z) / 92160
    return z + g1 / df + g2 / df ** 2 + g3 / df ** 3 + g4 / df ** 4


@functools.lru_cache(maxsize=4096)
def _exact_t(level: float, df: float) -> float:
    """The t whose two-sided tail is 1 - level, by bisection on the tail
    I_{df/(df+t^2)}(df/2, 1/2) (the regularized incomplete beta function)."""
    tail = 1 - level
    low, high = 0.0, 1.0
    while _beta_tail(df, high) > tail:
        high *= 2
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if _beta_tail(df, middle) > tail else (low, middle)
    return high


def _beta_tail(df: float, t: float) -> float:
    """P(|T| > t) for Student's t with df degrees of freedom."""
    return _incomplete_beta(df / 2, 0.5, df / (df + t * t))


def _incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) by its continued fraction (modified Lentz), on the side where it
    converges fast."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                     + a * math.log(x) + b * math.log1p(-x)) / a
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return front * result


# --- continuous metrics ---------------------------------------------------------------

def pooled_spread(n, means, squares) -> tuple[float, float]:
    """(relative variance c^2, degrees of freedom) of trials within cells, taking each
    cell's spread as c x its mean: c^2 = sum SS / sum (n - 1) mean^2 over the cells with
    2+ trials (a ratio of sums: with equal n the variance it gives is exactly the sum of
    the cells' own unbiased variances). Its degrees of freedom are Satterthwaite's for
    that weighting, (sum (n-1) m^2)^2 / sum (n-1) m^4."""
    n, means, squares = (np.asarray(x, dtype=float) for x in (n, means, squares))
    pooled = (n >= 2) & (means != 0)
    if not pooled.any():
        return math.nan, 0.0
    weight = (n[pooled] - 1) * means[pooled] ** 2
    return (float(squares[pooled].sum() / weight.sum()),
            float(weight.sum() ** 2 / (weight * means[pooled] ** 2).sum()))


def mean_variance(n, means, squares) -> tuple[float, float, float]:
    """(mean over cells of cell means, its variance, degrees of freedom) for one metric.
    n, means, squares: per cell. The within-cell spread is pooled (pooled_spread); with
    no cell of two or more trials, the between-task variance of the cell means stands
    in (it also holds the tasks' spread: wider)."""
    n, means = np.asarray(n, dtype=float), np.asarray(means, dtype=float)
    cells = len(n)
    mean = float(means.mean())
    relative, df = pooled_spread(n, means, squares)
    if df > 0:
        return mean, relative * float((means ** 2 / n).sum()) / cells ** 2, df
    if cells >= 2:
        return mean, float(means.var(ddof=1)) / cells, cells - 1.0
    return mean, math.nan, 0.0


def t_interval(mean: float, variance: float, df: float, level: float, floor=0.0):
    if df <= 0 or not math.isfinite(variance):
        return None, None
    half = t_quantile(level, df) * math.sqrt(max(variance, 0.0))
    return max(mean - half, floor), mean + half


# --- rates: success and pass^k --------------------------------------------------------

def wilson(p: float, n_eff: float, z: float) -> tuple[float, float]:
    """Wilson's score interval for a rate p seen over n_eff trials."""
    z2 = z * z
    centre = (p + z2 / (2 * n_eff)) / (1 + z2 / n_eff)
    half = z / (1 + z2 / n_eff) * math.sqrt(p * (1 - p) / n_eff + z2 / (4 * n_eff ** 2))
    return max(0.0, min(centre - half, p)), min(1.0, max(centre + half, p))


def overlap_weights(n: int, k: int) -> np.ndarray:
    """The variance of C(c,k)/C(n,k) for c ~ Binomial(n, p) is the U-statistic's
    sum over overlaps j = 1..k of w_j (p^(2k-j) - p^(2k)); these are the
    w_j = C(k,j) C(n-k,k-j) / C(n,k)."""
    return np.array([math.comb(k, j) * math.comb(n - k, k - j) / math.comb(n, k)
                     for j in range(1, k + 1)])


GRID = np.linspace(0.0, 1.0, 1001)


def rate_interval(estimate: float, n, k: int, level: float):
    """Score interval for the mean over cells of the unbiased pass^k estimates (k=1:
    success): every q with (estimate - q)^2 <= z^2 Var(q), Var(q) being the variance
    of the estimate if every cell's rate were q^(1/k). Contains the estimate, and is
    never a point: Var(q) > 0 inside (0, 1)."""
    n = np.asarray(n, dtype=int)
    if not len(n):
        return None, None
    z = z_quantile(level)
    if k == 1:
        return wilson(estimate, len(n) ** 2 / float((1.0 / n).sum()), z)
    sizes, counts = np.unique(n, return_counts=True)
    # The cells' weights summed once: Var(q) is then a polynomial in p of k terms.
    weights = sum(c * overlap_weights(int(s), k) for s, c in zip(sizes, counts, strict=True))
    powers = 2 * k - np.arange(1, k + 1)

    def inside(q):
        p = (q ** (1.0 / k))[:, None]
        variance = ((p ** powers - p ** (2 * k)) * weights).sum(axis=1)
        return (estimate - q) ** 2 <= z * z * variance / len(n) ** 2

    accepted = GRID[inside(GRID)]
    low = _refine(inside, accepted.min(), -1) if accepted.size else estimate
    high = _refine(inside, accepted.max(), +1) if accepted.size else estimate
    return float(min(low, estimate)), float(max(high, estimate))


def _refine(inside, edge: float, direction: int, steps: int = 12) -> float:
    """The boundary of the accepted set beyond a grid point, by bisection."""
    step = GRID[1] - GRID[0]
    good, bad = edge, min(1.0, max(0.0, edge + direction * step))
    if good == bad or inside(np.array([bad]))[0]:
        return bad
    for _ in range(steps):
        middle = (good + bad) / 2
        if inside(np.array([middle]))[0]:
            good = middle
        else:
            bad = middle
    return good


# --- an arm's figures --------------------------------------------------------------------

def intervals(cells: list[CellStats], *, level: float = LEVEL) -> list:
    """(low, high) for each of ALL_METRICS' mean over cells."""
    if not cells:
        return [(None, None)] * len(ALL_METRICS)
    n = [c.n for c in cells]
    bounds = []
    for column in range(len(METRICS)):
        if column == SUCCESS:
            estimate = mean_of([c.means[SUCCESS] for c in cells])
            bounds.append(rate_interval(estimate, n, 1, level))
            continue
        mean, variance, df = mean_variance(n, [c.means[column] for c in cells],
                                           [c.squares[column] for c in cells])
        bounds.append(t_interval(mean, variance, df, level))
    ready = [c for c in cells if c.pass_k is not None]
    bounds.append(rate_interval(mean_of([c.pass_k for c in ready]), [c.n for c in ready],
                                cells[0].k, level) if ready else (None, None))
    spent = [c for c in cells if c.usd_n]
    if spent:
        mean, variance, df = mean_variance([c.usd_n for c in spent], [c.usd_mean for c in spent],
                                           [c.usd_squares for c in spent])
        bounds.append(t_interval(mean, variance, df, level))
    else:
        bounds.append((None, None))
    return bounds
