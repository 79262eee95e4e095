"""Per-cell statistics and the two-stage bootstrap behind every interval.

A headline figure is a mean over tasks of per-task means. Its interval resamples at
both levels: the tasks (with replacement), then each chosen cell's trials (with
replacement). It is therefore wider with few tasks, narrower with more trials, and a
little conservative, which is the honest direction.

For speed each cell draws a pool of POOL within-cell replicates once; the task-level
stage then picks from the pools, so a cell's trials are resampled POOL times however
many figures use it. Above EXACT_MAX trials a cell's resampled means come from their
normal approximation instead, at POOL evenly spaced quantiles (one per pool entry,
shared by the metrics: each interval is marginal, so their correlation is moot), and a
100,000-sample store costs what a small one does. Every RNG is `random.Random` seeded
by the figure's name: a report renders the same every time.
"""

from __future__ import annotations

import math
import random
from operator import mul
from statistics import NormalDist

# A trial row: the interval metrics, then imputed cost and whether it was reported.
METRICS = ("cost", "raw", "turns", "duration", "success", "blocked")
COST, SUCCESS, USD, HAS_USD = 0, 4, 6, 7
ALL_METRICS = METRICS + ("pass_k", "cost_usd")
EXACT_MAX = 30
POOL = 256
QUANTILES = [NormalDist().inv_cdf((i + 0.5) / POOL) for i in range(POOL)]


def pass_hat(passes: float, n: int, k: int) -> float:
    """C(passes, k) / C(n, k): the chance that k trials drawn without replacement from
    the cell's n all passed, the unbiased estimate of pass^k."""
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
    """The samples of one cell that count, as trial rows:
    (cost, raw, turns, duration, passed, blocked, cost_usd or 0, 1 if cost_usd)."""

    def __init__(self, rows: list, k: int, name: str = ""):
        self.rows, self.k, self.n, self.name = rows, k, len(rows), name
        sums = [math.fsum(column) for column in zip(*rows)]
        self.means = [s / self.n for s in sums[:len(METRICS)]]
        self.passes = round(sums[SUCCESS])
        self.pass_k = pass_hat(self.passes, self.n, k) if self.n >= k else None
        self.usd_mean = sums[USD] / sums[HAS_USD] if sums[HAS_USD] else None
        self._pool = None

    def figures(self) -> list:
        """Point figures in ALL_METRICS order (None where undefined)."""
        return self.means + [self.pass_k, self.usd_mean]

    def pool(self) -> list:
        """POOL within-cell bootstrap replicates of figures(), each as _vector()."""
        if self._pool is None:
            rng = random.Random(f"cell:{self.name}")
            if self.n <= EXACT_MAX:
                self._pool = [self._exact(rng) for _ in range(POOL)]
            else:
                self._pool = self._normal(rng)
        return self._pool

    def _exact(self, rng: random.Random) -> list:
        n, k = self.n, self.k
        sums = list(map(sum, zip(*rng.choices(self.rows, k=n))))
        means = [s / n for s in sums[:len(METRICS)]]
        pass_k = pass_hat(sums[SUCCESS], n, k) if n >= k else None
        usd = sums[USD] / sums[HAS_USD] if sums[HAS_USD] else None
        return _vector(means, pass_k, usd)

    def _normal(self, rng: random.Random) -> list:
        """The resampled means of a large cell from their normal approximation."""
        n, k = self.n, self.k
        columns = list(zip(*self.rows))
        errors = [_sd(c, m) / math.sqrt(n) for c, m in zip(columns, self.means)]
        spent = [u for u, has in zip(columns[USD], columns[HAS_USD]) if has]
        usd_error = _sd(spent, self.usd_mean) / math.sqrt(len(spent)) if spent else 0.0
        pool = []
        for z in rng.sample(QUANTILES, POOL):
            means = [m + e * z for m, e in zip(self.means, errors)]
            rate = min(max(means[SUCCESS], 0.0), 1.0)
            pass_k = pass_hat(rate * n, n, k) if n >= k else None
            pool.append(_vector(means, pass_k, self.usd_mean + usd_error * z if spent else None))
        return pool


def _sd(values, mean) -> float:
    """The plug-in (population) standard deviation, as the bootstrap resamples it."""
    return math.sqrt(max(math.fsum(map(mul, values, values)) / len(values) - mean * mean, 0.0))


def _vector(means, pass_k, usd) -> list:
    """Figures as summable values: each optional one followed by whether it is there."""
    return means + [pass_k or 0.0, pass_k is not None, usd or 0.0, usd is not None]


def _figures(total: list, count: int) -> list:
    """Mean figures in ALL_METRICS order from a sum of `count` vectors."""
    m = len(METRICS)
    pass_k = total[m] / total[m + 1] if total[m + 1] else None
    usd = total[m + 2] / total[m + 3] if total[m + 3] else None
    return [t / count for t in total[:m]] + [pass_k, usd]


def _percentiles(replicates: list, level: float):
    replicates = sorted(r for r in replicates if r is not None)
    if not replicates:
        return None, None
    tail, last = (1.0 - level) / 2.0, len(replicates) - 1
    return replicates[round(tail * last)], replicates[round((1.0 - tail) * last)]


def intervals(cells: list[CellStats], *, resamples: int, level: float, seed: str) -> list:
    """(low, high) for each of ALL_METRICS' mean over cells, by the two-stage bootstrap."""
    if not cells:
        return [(None, None)] * len(ALL_METRICS)
    rng = random.Random(seed)
    pick = rng.random
    pools = [cell.pool() for cell in cells]
    count = len(cells)
    replicates = []
    for _ in range(resamples):
        chosen = [pool[int(pick() * POOL)] for pool in rng.choices(pools, k=count)]
        replicates.append(_figures(list(map(sum, zip(*chosen))), count))
    return [_percentiles(list(column), level) for column in zip(*replicates)]


def paired_difference(pairs: list[tuple[CellStats, CellStats]], *, resamples: int,
                      level: float, seed: str):
    """Mean over tasks of (arm − reference) cost, with its paired two-stage interval:
    the same tasks are drawn for both arms, then each cell's trials independently."""
    if not pairs:
        return None, None, None
    rng = random.Random(seed)
    point = math.fsum(a.means[COST] - b.means[COST] for a, b in pairs) / len(pairs)
    pools = [(a.pool(), b.pool()) for a, b in pairs]
    pick, replicates = rng.random, []
    for _ in range(resamples):
        chosen = rng.choices(pools, k=len(pools))
        replicates.append(sum(a[int(pick() * POOL)][COST] - b[int(pick() * POOL)][COST]
                              for a, b in chosen) / len(chosen))
    low, high = _percentiles(replicates, level)
    return point, low, high
